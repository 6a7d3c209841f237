"""Errors the engine raises. Messages never contain data values, only names and public facts."""

from __future__ import annotations


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
