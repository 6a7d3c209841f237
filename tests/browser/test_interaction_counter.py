"""The guided path's interaction counter (tests/browser/interactions.py), without a browser."""

import pytest

from tests.browser.interactions import (
    GUIDED_PATH_BUDGET,
    InteractionBudgetExceeded,
    InteractionCounter,
)


class FakeLocator:
    """Records what a counted interaction did to it."""

    def __init__(self) -> None:
        self.done: list[tuple] = []

    def click(self):
        self.done.append(("click",))

    def fill(self, value):
        self.done.append(("fill", value))

    def set_input_files(self, path):
        self.done.append(("set_input_files", path))

    def select_option(self, value):
        self.done.append(("select_option", value))

    def check(self):
        self.done.append(("check",))

    def press(self, key):
        self.done.append(("press", key))


def test_each_kind_of_interaction_counts_one_and_is_done():
    # given
    counter = InteractionCounter()
    target = FakeLocator()

    # when
    counter.click(target, "Upload")
    counter.fill(target, "0", "lower bound of wage")
    counter.set_input_files(target, "/tmp/survey.csv", "survey.csv")
    counter.select_option(target, "histogram", "Statistic")
    counter.check(target, "Low harm")
    counter.press(target, "Enter", "categories of region")

    # then
    assert counter.count == 6
    assert target.done == [
        ("click",),
        ("fill", "0"),
        ("set_input_files", "/tmp/survey.csv"),
        ("select_option", "histogram"),
        ("check",),
        ("press", "Enter"),
    ]
    assert counter.report().splitlines() == [
        " 1. click Upload",
        " 2. fill lower bound of wage with '0'",
        " 3. choose the file survey.csv",
        " 4. select 'histogram' in Statistic",
        " 5. check Low harm",
        " 6. press Enter in categories of region",
    ]


def test_the_budget_is_15_and_the_16th_interaction_fails_without_being_done():
    # given 15 interactions done
    counter = InteractionCounter()
    target = FakeLocator()
    for number in range(15):
        counter.click(target, f"button {number + 1}")

    # when the 16th is attempted
    with pytest.raises(InteractionBudgetExceeded) as raised:
        counter.fill(target, "M", "categories of sex")

    # then it fails the budget, saying what was done, and nothing more was done
    assert GUIDED_PATH_BUDGET == 15
    assert str(raised.value).startswith(
        "interaction 16 (fill categories of sex with 'M') is above the budget of 15"
    )
    assert "15. click button 15" in str(raised.value)
    assert counter.count == 15
    assert len(target.done) == 15
    assert isinstance(raised.value, AssertionError)  # a failed test, not an error
