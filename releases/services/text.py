"""Free text people type for others to read (a withdrawal's reason, shown publicly; a raw-data
deletion's reason; an approval's comment): required, bounded, and free of characters that hide
or reorder what is shown."""

import unicodedata
from typing import Any

from django.utils.translation import gettext

from releases.services.errors import ValidationFailed

# Unicode categories such text never holds: controls (Cc), invisible format characters (Cf:
# bidirectional overrides such as U+202E, which reorder how the text around them is shown,
# zero-width joiners and spaces, the byte order mark) and lone surrogates (Cs).
REFUSED_CATEGORIES = ("Cc", "Cf", "Cs")


def refused_character(character: str) -> bool:
    """Control and invisible format characters other than a line break, lone surrogates and
    noncharacters: the text must read everywhere it is shown as it was written."""
    if character == "\n":
        return False
    code = ord(character)
    return (
        unicodedata.category(character) in REFUSED_CATEGORIES
        or 0xFDD0 <= code <= 0xFDEF
        or code & 0xFFFE == 0xFFFE
    )


def free_text_clean(value: Any, *, field: str, noun: str, max_length: int, missing: str) -> str:
    """``value`` as stored (trimmed, line breaks as ``\\n``); :class:`ValidationFailed` naming
    ``field`` when it is missing (``missing`` says what to write), not text, longer than
    ``max_length`` or holds a refused character. ``noun`` starts the messages ("The reason")."""
    if value is not None and not isinstance(value, str):
        raise ValidationFailed({field: [gettext("%(noun)s must be text.") % {"noun": noun}]})
    text = (value or "").replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise ValidationFailed({field: [missing]})
    if len(text) > max_length:
        raise ValidationFailed(
            {field: [gettext("Use at most %(count)s characters.") % {"count": max_length}]}
        )
    if any(refused_character(character) for character in text):
        raise ValidationFailed(
            {
                field: [
                    gettext(
                        "%(noun)s must not contain control or invisible formatting characters "
                        "(such as NUL, tab, a zero-width joiner or a right-to-left override)."
                    )
                    % {"noun": noun}
                ]
            }
        )
    return text
