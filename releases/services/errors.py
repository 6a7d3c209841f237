"""Errors services raise; interfaces turn them into 400/409 responses or form errors."""


class ValidationFailed(Exception):
    def __init__(self, errors: dict[str, list[str]], detail: str = "Invalid input.") -> None:
        self.errors = errors
        self.detail = detail
        super().__init__(detail)


class Conflict(Exception):
    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)
