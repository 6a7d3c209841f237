"""The engine's refusals as pages show them: in the reader's language.

A refusal (privacy_engine.errors.EngineValidationError, passed on by the services as
releases.services.errors.ValidationFailed) and a table that could not be read (a dataset's
``failure_reason``) are written in English by phrases (privacy_engine/wording.py). The API, the
audit trail and the stored reasons keep that English; a page passes each message through
:func:`refusal_text` when it shows it, so what no phrase wrote is shown as written.
"""

from releases.translations import engine_text


def refusal_text(message: str) -> str:
    """One refusal message in the active language (as written when no phrase wrote it)."""
    return engine_text(message) or message


def refusal_errors(errors: dict[str, list[str]]) -> dict[str, list[str]]:
    """A refusal's messages by field path (the shape the API returns) in the active language,
    for a page or its script; the paths stay as they are (they name fields, not words)."""
    return {path: [refusal_text(message) for message in texts] for path, texts in errors.items()}
