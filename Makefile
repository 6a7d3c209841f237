# One entry point. `make run` starts the app on embedded defaults; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint install browser clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

# The translation catalogues (locale/*/LC_MESSAGES/django.po) compiled to .mo in pure Python
# (polib, no GNU gettext): build products, never in git, so every install compiles them.
# DEBUG=1 only so that the settings load without production's secrets; nothing is served.
install: $(STAMP)
	DEBUG=1 $(BIN)/python manage.py compile_translations

# DEBUG=1 only here: everywhere else the settings are production's (config/settings.py).
run: install
	DEBUG=1 $(BIN)/python manage.py migrate --noinput
	DEBUG=1 $(BIN)/python manage.py demo_setup
	DEBUG=1 $(BIN)/python manage.py run_app

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# Browser tests drive Debian's Chromium; Playwright never downloads a browser of its own.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "Chromium is missing and this is not root: browser tests will skip (sudo apt-get install chromium)"; \
	  fi; \
	fi

test: install browser
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest; code=$$?; \
	if [ $$code -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit $$code

clean:
	rm -rf $(VENV) var
