"""Counting a curator's interactions with the pages (issue 13: each click, field filled or key
confirmation counts one), for the guided path's budget of 15."""

from typing import Any

GUIDED_PATH_BUDGET = 15


class InteractionBudgetExceeded(AssertionError):
    """The walk needed more interactions than its budget allows."""


class InteractionCounter:
    """Performs each interaction on a Playwright locator and counts it, refusing (before doing
    it) the first one above ``budget``. ``log`` lists what was done, one line per interaction."""

    def __init__(self, budget: int = GUIDED_PATH_BUDGET) -> None:
        self.budget = budget
        self.log: list[str] = []

    @property
    def count(self) -> int:
        return len(self.log)

    def _count(self, what: str) -> None:
        if self.count + 1 > self.budget:
            raise InteractionBudgetExceeded(
                f"interaction {self.count + 1} ({what}) is above the budget of {self.budget}; "
                "done so far:\n" + self.report()
            )
        self.log.append(what)

    def click(self, locator: Any, what: str) -> None:
        self._count(f"click {what}")
        locator.click()

    def fill(self, locator: Any, value: str, what: str) -> None:
        self._count(f"fill {what} with {value!r}")
        locator.fill(value)

    def set_input_files(self, locator: Any, path: str, what: str) -> None:
        self._count(f"choose the file {what}")
        locator.set_input_files(path)

    def select_option(self, locator: Any, value: str, what: str) -> None:
        self._count(f"select {value!r} in {what}")
        locator.select_option(value)

    def check(self, locator: Any, what: str) -> None:
        self._count(f"check {what}")
        locator.check()

    def press(self, locator: Any, key: str, what: str) -> None:
        self._count(f"press {key} in {what}")
        locator.press(key)

    def report(self) -> str:
        return "\n".join(f"{number:2d}. {what}" for number, what in enumerate(self.log, 1))
