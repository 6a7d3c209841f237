"""One env-driven settings module.

Production settings are the default: DEBUG is off unless the environment says DEBUG=1 (as
`make run` and the tests do), and then SECRET_KEY and AUDIT_HMAC_KEY must be given (a missing one is
an error, never a default), cookies are HTTPS-only, HTTP redirects to HTTPS and HSTS is sent, so
`manage.py check --deploy` is clean. Embedded defaults (SQLite, a broker in a SQLite file) still
let the app run with no server; with DEBUG=1 the secrets are generated into var/.
"""

import os
from datetime import timedelta
from pathlib import Path

import environ
from csp.constants import NONE, REPORT_SAMPLE, SELF, UNSAFE_INLINE

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()
if (BASE_DIR / ".env").exists():
    env.read_env(BASE_DIR / ".env")

VAR_DIR = Path(env.str("VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)
(VAR_DIR / "staticfiles").mkdir(exist_ok=True)

DEBUG = env.bool("DEBUG", default=False)


def _development_secret_key() -> str:
    """A random key kept in var/, so sessions survive restarts without a secret in the repo."""
    import secrets

    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


if DEBUG:
    SECRET_KEY = env.str("SECRET_KEY", default="") or _development_secret_key()
else:
    # No default in production: a missing key stops the app instead of running with a known one.
    SECRET_KEY = env.str("SECRET_KEY")


def _development_audit_key() -> str:
    """The audit trail's HMAC key for development, kept in var/ beside the secret key."""
    import secrets

    key_file = VAR_DIR / "audit_hmac_key"
    if not key_file.exists():
        # Written whole under a name of its own, mode 0600 from the start, then linked into
        # place: of two processes starting at once, the first link wins and both read it.
        partial = key_file.with_name(f".audit_hmac_key.{os.getpid()}.{secrets.token_hex(8)}")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(secrets.token_hex(32))
        try:
            os.link(partial, key_file)
        except FileExistsError:
            pass
        finally:
            partial.unlink()
    return key_file.read_text().strip()


# The key of the audit trail's HMAC chain (audit/chain.py), kept outside the database so that
# whoever can write the database cannot re-hash a rewritten trail. Changing it makes every
# earlier event fail verification: keep it as carefully as SECRET_KEY, and never in a backup of
# the database. No default in production.
if DEBUG:
    AUDIT_HMAC_KEY = env.str("AUDIT_HMAC_KEY", default="") or _development_audit_key()
else:
    AUDIT_HMAC_KEY = env.str("AUDIT_HMAC_KEY")
# The hash of the last event written before the trail was keyed, "none" when there was none:
# migration audit 0003 records it outside the database (in this file, unless the environment
# sets it), so a trail rewritten as "legacy" events cannot pass for one. In production, set it
# from what the migration printed.
AUDIT_LEGACY_HEAD = env.str("AUDIT_LEGACY_HEAD", default="")
AUDIT_LEGACY_HEAD_PATH = Path(
    env.str("AUDIT_LEGACY_HEAD_PATH", default=str(VAR_DIR / "audit_legacy_head"))
)
# Identical anonymous actions from one network within this many seconds (downloads of one file,
# failed logins for one name) are counted on one audit event: releases/services/downloads.py,
# accounts/signals.py.
AUDIT_REPEAT_WINDOW = env.int("AUDIT_REPEAT_WINDOW", default=600)
# The function giving a dataset's organisation (its slug) to the events about it (audit/chain.py).
AUDIT_DATASET_ORGANISATION = "releases.selectors.dataset_organisation_slug"
# Files the app stores (uploads, tables, released files) are readable by the service's user
# only, and so are their folders; the SQLite database file too (releases/apps.py).
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
# A login lasts a working day, not Django's two weeks.
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=8 * 3600)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    # API tokens: hashed, expiring, revoked on account changes (accounts/tokens.py).
    "knox",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # Every user, dataset and event belongs to one (organisations/models.py).
    "organisations",
    "audit",
    "accounts",
    "releases",
    # Login throttling on the login page, the token endpoint and the admin (see below).
    "axes",
    # The Content-Security-Policy header (CONTENT_SECURITY_POLICY below).
    "csp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Events recorded while serving a request carry its client's truncated address.
    "audit.context.ClientAddressMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The page's language: the switcher's cookie, else the browser's Accept-Language, else
    # LANGUAGE_CODE; URLs carry no language prefix.
    "django.middleware.locale.LocaleMiddleware",
    # ...but the API answers in English whatever the client's Accept-Language.
    "config.api_language.EnglishApiMiddleware",
    # Before anything reads a body (CsrfViewMiddleware does): refuses one above its route's cap.
    "config.request_limits.RequestBodyLimitMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A logged-in user's 403s and object 404s are audit events.
    "audit.context.AccessDeniedMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes requires: answers a locked-out login with its lockout response.
    "axes.middleware.AxesMiddleware",
]

# Every page loads scripts, styles, fonts and images from the app's own origin only: no inline
# script or style attribute runs (pages keep their data in data- attributes and JSON blocks, and
# charts draw through Plotly's DOM calls), so an injected tag does nothing. Browser tests fail on
# any violation (tests/browser/conftest.py). data: images are Swagger UI's icons.
# Two inline exceptions, both for Plotly and neither able to run code: an EMPTY <style> element
# (the hash of ""), which Plotly adds and then fills through the CSS object model, which the
# policy does not govern; and style attributes, which Plotly sets on chart elements (a heatmap's
# image rendering, a label's font size). The app's own templates have none (a test checks).
EMPTY_STYLE_ELEMENT = "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        # report-sample: a violation's report quotes the start of what was refused.
        "script-src": [SELF, REPORT_SAMPLE],
        "style-src": [SELF, EMPTY_STYLE_ELEMENT, REPORT_SAMPLE],
        "style-src-attr": [UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.roles",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        # IMMEDIATE takes the write lock when a transaction starts, so two budget reservations
        # serialise instead of both reading the old balance; WAL lets the worker and the web
        # server read while the other writes.
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        # recursive_triggers: an INSERT OR REPLACE deletes the row it replaces, and only with
        # it on does that delete fire the DELETE triggers that keep a published version
        # immutable (releases/immutability.py).
        "init_command": (
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA recursive_triggers=ON;"
        ),
    }
    # Tests use a file, not memory, so a real worker process can share the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# django-axes checks every authenticate() (the login page, the token endpoint, the admin): after
# AXES_FAILURE_LIMIT failures for one username from one address, that pair is refused for
# AXES_COOLOFF_TIME (a 429 that says for how long: accounts/lockout.py). Attempts are counted in
# the database, so every process counts together (`manage.py axes_reset` forgets them).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "accounts.lockout.lockout_response"
AXES_CLIENT_IP_CALLABLE = "accounts.lockout.login_client"
AXES_USERNAME_CALLABLE = "accounts.lockout.login_username"
# A refused attempt during a lockout neither extends it nor is stored (otherwise one request
# every few minutes keeps an account locked, and each one grows the attempt's row).
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_VERBOSE = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# English and Simplified Chinese (issue 13). English when nothing the reader sends matches.
# Catalogues: locale/<language>/LC_MESSAGES/django.po, compiled to .mo by
# `manage.py compile_translations` (pure Python, polib), which `make install` runs.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
# The switcher's cookie: read by the server only, sent on top-level navigations from elsewhere.
LANGUAGE_COOKIE_HTTPONLY = True
LANGUAGE_COOKIE_SAMESITE = "Lax"
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "config.staticfinders.PlotlyFinder",
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Uploaded tables live here and are never served; released files are served only by a view that
# checks publication.
PRIVATE_STORAGE_ROOT = Path(env.str("PRIVATE_STORAGE_ROOT", default=str(VAR_DIR / "private")))
RELEASE_STORAGE_ROOT = Path(env.str("RELEASE_STORAGE_ROOT", default=str(VAR_DIR / "releases")))
MEDIA_ROOT = VAR_DIR / "media"
# The installation's Ed25519 private key (PEM, mode 0600), which signs every version's metadata
# file; generated on first use. Outside every served or storage directory. Back it up: a lost key
# means new versions are signed by a new one that old signatures do not match. Every web server
# and worker must read the same file (several machines: set this to a shared secret file).
SIGNING_KEY_PATH = Path(
    env.str("SIGNING_KEY_PATH", default=str(VAR_DIR / "keys" / "release-signing.pem"))
)
# S3-compatible object storage for uploads, tables and released files, so web servers and workers
# on several machines share them: set OBJECT_STORAGE_BUCKET (and the endpoint for a non-AWS store).
# Without it both stores are the directories above.
OBJECT_STORAGE_BUCKET = env.str("OBJECT_STORAGE_BUCKET", default="")
OBJECT_STORAGE = (
    {
        "bucket_name": OBJECT_STORAGE_BUCKET,
        "endpoint_url": env.str("OBJECT_STORAGE_ENDPOINT_URL", default="") or None,
        "region_name": env.str("OBJECT_STORAGE_REGION", default="") or None,
        "access_key": env.str("OBJECT_STORAGE_ACCESS_KEY", default="") or None,
        "secret_key": env.str("OBJECT_STORAGE_SECRET_KEY", default="") or None,
        # Private objects: files are served only through the app's views, never by URL.
        "default_acl": "private",
        "querystring_auth": True,
        "file_overwrite": False,
    }
    if OBJECT_STORAGE_BUCKET
    else None
)

# Uploads stream to disk and convert to typed columns; up to this size (2 GiB by default).
DATASET_MAX_UPLOAD_BYTES = env.int("DATASET_MAX_UPLOAD_BYTES", default=2 * 1024**3)
# Uploads up to this size convert during the request (a bad file is a 400 at once); larger ones
# answer 201 "processing" and convert in a worker.
DATASET_CONVERT_INLINE_BYTES = env.int("DATASET_CONVERT_INLINE_BYTES", default=8 * 1024**2)
# Time limits of one conversion in a worker (seconds): soft (the dataset fails with that reason),
# then hard.
DATASET_CONVERT_TIME_LIMIT = env.int("DATASET_CONVERT_TIME_LIMIT", default=3600)
# Which engine computes a release's exact aggregates (privacy_engine/engines.py): "auto" runs in
# the worker's process while the needed columns fit in RELEASE_MEMORY_BUDGET_BYTES and streams the
# file through DuckDB above it; "distributed" sends the work to the Dask cluster at
# DASK_SCHEDULER_ADDRESS.
RELEASE_ENGINE = env.str("RELEASE_ENGINE", default="auto")
RELEASE_MEMORY_BUDGET_BYTES = env.int("RELEASE_MEMORY_BUDGET_BYTES", default=1024**3)
DASK_SCHEDULER_ADDRESS = env.str("DASK_SCHEDULER_ADDRESS", default="") or None
# Public catalog pages and API answers are cached for cookieless clients (releases/public_cache.py)
# for this long, keyed by the catalog's generation, read from the database on every request (one
# small query) unless PUBLIC_CACHE_GENERATION_SECONDS > 0 lets a process reuse it for that long
# (a new version then shows within that time). CACHE_URL picks the
# cache (default: each process's memory; e.g. redis://127.0.0.1:6379/1 to share one).
PUBLIC_CACHE_SECONDS = env.int("PUBLIC_CACHE_SECONDS", default=300)
PUBLIC_CACHE_GENERATION_SECONDS = env.float("PUBLIC_CACHE_GENERATION_SECONDS", default=0.0)
CACHES = {
    "default": env.cache_url("CACHE_URL", default="locmemcache://"),
    # Rate-limit counters (releases/apis/throttles.py), apart from the public cache so pages
    # never evict them: THROTTLE_CACHE_URL, else CACHE_URL, else each process's memory (then
    # each process counts on its own: share one cache, e.g. Redis, behind several workers).
    # In memory it is a store of its own (below), never the pages'.
    "throttle": {
        **env.cache_url(
            "THROTTLE_CACHE_URL", default=env.str("CACHE_URL", default="locmemcache://")
        ),
        # Its own keys: in a shared Redis the counters stay apart from the pages.
        "KEY_PREFIX": "throttle",
    },
}
# Every request body, whatever its type, is refused with a 413 above REQUEST_MAX_BODY_BYTES
# (config/request_limits.py), except on the routes that take a table: there, up to
# DATASET_MAX_UPLOAD_BYTES more. Form fields Django reads into memory have the same cap; it is
# above the API's own JSON cap (REST_FRAMEWORK["MAX_BODY_BYTES"]), so the API answers its cap in
# JSON naming "body".
REQUEST_MAX_BODY_BYTES = env.int("REQUEST_MAX_BODY_BYTES", default=8 * 1024**2)
UPLOAD_URL_NAMES = ["api-datasets", "dataset-upload"]
# Of those, the pages whose form is read before their view checks the user: a curator only.
SESSION_UPLOAD_URL_NAMES = ["dataset-upload"]
DATA_UPLOAD_MAX_MEMORY_SIZE = REQUEST_MAX_BODY_BYTES
# Bounds on what a client can choose, so every request and every public page stays small.
DATASET_MAX_COLUMNS = env.int("DATASET_MAX_COLUMNS", default=200)
SCHEMA_MAX_CATEGORIES = env.int("SCHEMA_MAX_CATEGORIES", default=200)
RELEASE_MAX_STATISTICS = env.int("RELEASE_MAX_STATISTICS", default=50)
# Published cells (a count is 1, a histogram one per bar) per release: the public page's size.
RELEASE_MAX_CELLS = env.int("RELEASE_MAX_CELLS", default=2000)
# Noisy values a release draws (a range histogram one per tree node, about 7 µs each) and stores:
# bounds a worker's time and a release's size whatever the bins asked for.
RELEASE_MAX_NOISE_DRAWS = env.int("RELEASE_MAX_NOISE_DRAWS", default=300_000)
# Record-level files (randomized response, synthetic tables) per release: each holds a row per
# record (up to 100,000 dummy rows under (ε, δ)-DP; a synthetic table at most 200,000 rows),
# written when the release is published.
RELEASE_MAX_RECORD_FILES = env.int("RELEASE_MAX_RECORD_FILES", default=3)
# A version's API answer lists a range histogram's bins only up to this many; beyond, its files
# hold every bin and its range API answers any range (65,536 bins would be megabytes of JSON).
CATALOG_MAX_INLINE_BINS = env.int("CATALOG_MAX_INLINE_BINS", default=1024)
# Ranges one client address may ask of published range histograms (API and page together): each
# costs up to about 0.1 s of CPU and a query string bypasses the public cache. Counted per window
# of the rate's period in CACHES["throttle"].
RANGE_QUERY_RATE = env.str("RANGE_QUERY_RATE", default="120/min")
# API requests one anonymous client address may make (releases/apis/throttles.py), beyond what the
# public cache answers: a 429 with Retry-After past it.
ANONYMOUS_API_RATE = env.str("ANONYMOUS_API_RATE", default="300/min")
if CACHES["throttle"]["BACKEND"].endswith("LocMemCache"):
    CACHES["throttle"].update(LOCATION="throttle", OPTIONS={"MAX_ENTRIES": 100_000})
DEFAULT_BUDGET_EPSILON = env.str("DEFAULT_BUDGET_EPSILON", default="1.0")
DEFAULT_BUDGET_DELTA = env.str("DEFAULT_BUDGET_DELTA", default="0")

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.tokens.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_THROTTLE_CLASSES": ["releases.apis.throttles.AnonymousApiThrottle"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Bounded parsers: a body can neither crash the server (deep JSON) nor exhaust its memory.
    "DEFAULT_PARSER_CLASSES": [
        "releases.apis.parsers.JSONParser",
        "releases.apis.parsers.FormParser",
        "releases.apis.parsers.MultiPartParser",
    ],
    # Read by releases.apis.parsers (DRF itself ignores them): JSON and form bodies, in bytes;
    # nesting of JSON arrays and objects, in levels.
    "MAX_BODY_BYTES": env.int("API_MAX_BODY_BYTES", default=2 * 1024 * 1024),
    "MAX_JSON_DEPTH": env.int("API_MAX_JSON_DEPTH", default=32),
    "DEFAULT_PAGINATION_CLASS": "releases.apis.pagination.Pagination",
    "PAGE_SIZE": env.int("API_PAGE_SIZE", default=20),
    # Proxies in front of the app that each append the address they saw to X-Forwarded-For (nginx:
    # proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for): the rate limits count the
    # address the nearest one saw. 0 (the default) reads REMOTE_ADDR only, so a client cannot
    # pick its address by a header; behind a proxy that does not append, keep 0.
    "NUM_PROXIES": env.int("NUM_PROXIES", default=0),
    "EXCEPTION_HANDLER": "releases.apis.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Guided data release API",
    "DESCRIPTION": "Publish statistics of sensitive tables under formal privacy guarantees. "
    "Errors are {detail, errors?: {field: [messages]}}; see README.md.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI's files from drf-spectacular-sidecar, served by the app itself.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Deep links put a link inside each operation's expand button, which screen readers and
    # keyboards cannot reach (axe-core's nested-interactive).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
    "REDOC_DIST": "SIDECAR",
    # Three models have a "status": one enum each, named after its model.
    "ENUM_NAME_OVERRIDES": {
        "DatasetStatusEnum": "releases.models.Dataset.Status",
        "ReleaseStatusEnum": "releases.models.Release.Status",
        "BudgetIncreaseStatusEnum": "releases.models.BudgetIncrease.Status",
    },
}

# API tokens (django-rest-knox): stored as SHA-512 digests, each expiring API_TOKEN_TTL_HOURS
# after it was issued (no silent renewal: a script logs in again); a user keeps at most
# API_TOKENS_PER_USER live tokens, the oldest going first.
REST_KNOX = {
    "TOKEN_TTL": timedelta(hours=env.int("API_TOKEN_TTL_HOURS", default=10)),
    "AUTO_REFRESH": False,
    "TOKEN_LIMIT_PER_USER": env.int("API_TOKENS_PER_USER", default=10),
}

CELERY_BROKER_URL = env.str(
    "CELERY_BROKER_URL", default=f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite'}"
)
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
# A task whose worker dies is redelivered instead of acknowledged: the run service resumes it
# from stored answers and never draws twice.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=600)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=660)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker holding a release refreshes its heartbeat this often; a running release whose
# heartbeat is older than RELEASE_STALE_SECONDS has lost its worker and is redelivered.
RELEASE_HEARTBEAT_SECONDS = env.float("RELEASE_HEARTBEAT_SECONDS", default=5.0)
RELEASE_STALE_SECONDS = env.float("RELEASE_STALE_SECONDS", default=60.0)
# A release whose worker stopped this many times fails with that reason instead of looping.
RELEASE_MAX_DELIVERIES = env.int("RELEASE_MAX_DELIVERIES", default=3)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

if not DEBUG:
    # What `manage.py check --deploy` asks of a site served over HTTPS only.
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
    LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
    if env.bool("BEHIND_TLS_PROXY", default=False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Raw data retention (releases/services/raw_data.py) ------------------------------------------
# Days after its upload that a dataset's raw data (the uploaded file and its converted table) is
# deleted; its releases, ledger and audit trail stay. 0 keeps it until its curator deletes it.
# Every Celery worker applies it hourly; `manage.py delete_expired_raw_data` applies it at once.
RAW_DATA_RETENTION_DAYS = env.int("RAW_DATA_RETENTION_DAYS", default=0)
if RAW_DATA_RETENTION_DAYS < 0:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("RAW_DATA_RETENTION_DAYS must be 0 (keep until deleted) or more")
