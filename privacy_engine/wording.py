"""The engine's English, written once as phrases the web layer can translate.

The engine never imports Django (DESIGN.md), yet what it writes (a statistic's published rules,
a refusal, a line of the risk card, a ledger's composition rules) is shown on pages in the
reader's language, and published releases keep the English they were signed with. So every
sentence the engine shows is built from a *phrase*: an English template with named fields,

    phrase(KEEP_PROBABILITY, p="0.731")   # "each record reports its own category with …"

where the template is marked with :func:`gettext_noop` (the name Django's ``makemessages``
extracts, so the template is its message id) and thereby registered in :data:`PHRASES`. The web
layer matches stored English against the registered templates (:func:`phrase_pattern`),
translates the template and puts the matched values back: it works for releases published
before a reader asked for Chinese, and nothing in the engine depends on a language.

Fields are ``{name}`` (no format specification: the caller formats its numbers) and their
values never hold ``"; "``: a text made of several phrases joins them with :data:`CLAUSE_SEPARATOR`
(the clauses of a rule), which the web layer splits on.
"""

import re
from functools import cache

PHRASES: list[str] = []
FIELD = re.compile(r"\{(\w+)\}")
# Between the clauses of a rule.
CLAUSE_SEPARATOR = "; "


def gettext_noop(template: str) -> str:
    """Registers an English template the web layer translates, and returns it unchanged."""
    if template not in PHRASES:
        PHRASES.append(template)
        _parsed.cache_clear()
    return template


def phrase(template: str, **values: object) -> str:
    """The template with its fields filled in (each value as ``str`` gives it)."""
    assert template in PHRASES, f"not a registered phrase: {template!r}"
    return fill(template, {name: str(value) for name, value in values.items()})


def fill(template: str, values: dict[str, str]) -> str:
    """``{name}`` fields replaced by their values (no other brace is special)."""
    return FIELD.sub(lambda match: values[match[1]], template)


@cache
def _parsed() -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """Each registered template as its literal pieces and field names (pieces = fields + 1), the
    most specific first: the one with the most literal text."""
    parsed = []
    for template in PHRASES:
        pieces = tuple(FIELD.split(template)[0::2])
        names = tuple(FIELD.findall(template))
        parsed.append((template, pieces, names))
    parsed.sort(key=lambda entry: sum(map(len, entry[1])), reverse=True)
    return parsed


def _fields(text: str, pieces: tuple[str, ...], names: tuple[str, ...]) -> dict[str, str] | None:
    """The fields' values when ``text`` is the template's pieces with values between them: each
    piece found leftmost after the last (one pass, no backtracking: linear in the text), every
    value non-empty and free of the clause separator, a repeated field the same each time."""
    first, last = pieces[0], pieces[-1]
    if not text.startswith(first) or not text.endswith(last):
        return None
    if len(text) < len(first) + len(last) + len(names):
        return None
    end = len(text) - len(last)
    cursor = len(first)
    values: dict[str, str] = {}
    for index, name in enumerate(names):
        if index + 1 < len(names):
            found = text.find(pieces[index + 1], cursor + 1, end)
            if found < 0:
                return None
        else:
            found = end
        value = text[cursor:found]
        if not value or CLAUSE_SEPARATOR in value or values.setdefault(name, value) != value:
            return None
        cursor = found + len(pieces[index + 1])
    return values if cursor == len(text) else None


def phrase_match(text: str) -> tuple[str, dict[str, str]] | None:
    """The registered template that wrote ``text`` and the values of its fields, if any: the
    most specific template that matches, each field's value the shortest that lets the next
    literal follow (linear time in the text for each template)."""
    for template, pieces, names in _parsed():
        if not names:
            if text == template:
                return template, {}
            continue
        values = _fields(text, pieces, names)
        if values is not None:
            return template, values
    return None
