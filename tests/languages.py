"""What the language tests share: the catalogues compiled as `make install` compiles them, and
the messages the templates and the code ask to translate, found as Django finds them."""

import ast
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.template import engines
from django.templatetags.i18n import BlockTranslateNode, TranslateNode

BASE_DIR = Path(settings.BASE_DIR)
CHINESE_CATALOGUE = BASE_DIR / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
# Packages whose Python code may show text on pages; the engine's own English is marked with
# privacy_engine.wording.gettext_noop (it never imports Django) and translated by the web layer.
WEB_PACKAGES = ("accounts", "audit", "config", "organisations", "releases", "privacy_engine")
TRANSLATING_CALLS = {
    "gettext": (None, 0),
    "gettext_lazy": (None, 0),
    "gettext_noop": (None, 0),
    "ngettext": (None, 0),
    "ngettext_lazy": (None, 0),
    "pgettext": (0, 1),
    "pgettext_lazy": (0, 1),
    "npgettext": (0, 1),
    "npgettext_lazy": (0, 1),
    "_": (None, 0),
}


@pytest.fixture(scope="session")
def compiled_catalogues():
    """The .mo files compiled from the .po files (as `make install` does), and Django's cached
    catalogues forgotten, so that a test run straight from pytest reads the current ones."""
    from django.utils.translation import trans_real

    call_command("compile_translations", verbosity=0)
    trans_real._translations = {}
    trans_real._default = None


def _literal(expression) -> str | None:
    return expression if isinstance(expression, str) else None


def template_messages() -> dict[tuple[str | None, str], str]:
    """Every message the templates translate, keyed by (context, msgid) exactly as Django looks
    it up at run time (a literal's "%" doubled; a block's variables as %(name)s, trimmed), with
    the template it comes from."""
    engine = engines["django"].engine
    found: dict[tuple[str | None, str], str] = {}
    for directory in engine.dirs:
        for path in sorted(Path(directory).rglob("*.html")):
            name = str(path.relative_to(directory))
            nodelist = engine.get_template(name).nodelist
            for node in nodelist.get_nodes_by_type(TranslateNode):
                literal = getattr(node.filter_expression.var, "literal", None)
                if isinstance(literal, str):
                    context = node.message_context and _literal(node.message_context.var)
                    found[context, literal.replace("%", "%%")] = name
            for node in nodelist.get_nodes_by_type(BlockTranslateNode):
                context = node.message_context and _literal(node.message_context.var)
                found[context, node.render_token_list(node.singular)[0]] = name
                if node.plural:
                    found[context, node.render_token_list(node.plural)[0]] = name
    return found


def code_messages() -> dict[tuple[str | None, str], str]:
    """Every literal message the web packages' Python code passes to gettext and its kin."""
    found: dict[tuple[str | None, str], str] = {}
    for package in WEB_PACKAGES:
        for path in sorted((BASE_DIR / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name not in TRANSLATING_CALLS:
                    continue
                context_at, message_at = TRANSLATING_CALLS[name]
                arguments = [
                    a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None
                    for a in node.args
                ]
                if len(arguments) <= message_at or arguments[message_at] is None:
                    continue
                context = arguments[context_at] if context_at is not None else None
                where = f"{path.relative_to(BASE_DIR)}:{node.lineno}"
                found[context, arguments[message_at]] = where
                plural = arguments[message_at + 1] if len(arguments) > message_at + 1 else None
                if name.startswith(("ngettext", "npgettext")) and plural is not None:
                    found[context, plural] = where
    return found
