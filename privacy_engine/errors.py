"""Errors the engine raises. Messages never contain data values, only names and public facts."""

from __future__ import annotations

from privacy_engine.wording import gettext_noop

# Refusals several modules give (each message is a phrase: the web layer translates it).
MUST_BE_OBJECT = gettext_noop("must be an object")
MUST_BE_NUMBER = gettext_noop("must be a number")
MUST_BE_FINITE = gettext_noop("must be a finite number")
MUST_BE_ABOVE_ZERO = gettext_noop("must be a number greater than 0")
MUST_BE_PROBABILITY = gettext_noop("must be a number between 0 and 1")
MUST_BE_TRUE_OR_FALSE = gettext_noop("must be true or false")
MUST_BE_STRING = gettext_noop("must be a string")
MUST_BE_POSITIVE_WHOLE = gettext_noop("must be a positive whole number")
MUST_BE_DISTINCT_NAMES = gettext_noop("must be a list of distinct names")


class EngineValidationError(ValueError):
    """A definition, schema or query is malformed.

    ``errors`` maps a dotted field path (``"queries.1.column"``) to messages, in the shape the HTTP
    API returns for a 400.
    """

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{path}: {' '.join(msgs)}" for path, msgs in errors.items()))

    @classmethod
    def single(cls, path: str, message: str) -> EngineValidationError:
        return cls({path: [message]})


def prefix_errors(prefix: str, error: EngineValidationError) -> EngineValidationError:
    """Re-root every path of ``error`` under ``prefix`` (``"column"`` → ``"queries.2.column"``)."""
    return EngineValidationError(
        {f"{prefix}.{path}" if path else prefix: msgs for path, msgs in error.errors.items()}
    )
