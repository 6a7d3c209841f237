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
# A field's value: never holds the clause separator (compose clauses with it instead), so that
# a phrase cannot swallow the clauses after it.
VALUE = r"(?:(?!; ).)+?"


def gettext_noop(template: str) -> str:
    """Registers an English template the web layer translates, and returns it unchanged."""
    if template not in PHRASES:
        PHRASES.append(template)
        phrase_pattern.cache_clear()
    return template


def phrase(template: str, **values: object) -> str:
    """The template with its fields filled in (each value as ``str`` gives it)."""
    assert template in PHRASES, f"not a registered phrase: {template!r}"
    return fill(template, {name: str(value) for name, value in values.items()})


def fill(template: str, values: dict[str, str]) -> str:
    """``{name}`` fields replaced by their values (no other brace is special)."""
    return FIELD.sub(lambda match: values[match[1]], template)


@cache
def phrase_pattern() -> list[tuple[re.Pattern[str], str]]:
    """Each registered template as a regular expression matching the English it writes (its
    fields as named groups), the most specific first: the one with the most literal text."""

    def literal_length(template: str) -> int:
        return len(FIELD.sub("", template))

    patterns = []
    for template in sorted(PHRASES, key=literal_length, reverse=True):
        seen: set[str] = set()
        parts = []
        position = 0
        for match in FIELD.finditer(template):
            parts.append(re.escape(template[position : match.start()]))
            name = match[1]
            parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>{VALUE})")
            seen.add(name)
            position = match.end()
        parts.append(re.escape(template[position:]))
        patterns.append((re.compile("".join(parts), re.DOTALL), template))
    return patterns


def phrase_match(text: str) -> tuple[str, dict[str, str]] | None:
    """The registered template that wrote ``text`` and the values of its fields, if any."""
    for pattern, template in phrase_pattern():
        match = pattern.fullmatch(text)
        if match:
            return template, match.groupdict()
    return None
