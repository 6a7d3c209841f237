"""Statistical privacy audit of randomized response (privacy_engine/randomized_response.py).

Neighbours replace one record's category (the file discloses n). For neighbouring inputs D1, D2
and an output event E, ε-DP demands P(E | D1) ≤ e^ε · P(E | D2) both ways. From many draws with
the real CSPRNG, a Clopper–Pearson lower confidence bound on every event's ratio must not exceed
e^ε. The events are tight: for a one-record column with category a vs b, "the report is c" has
ratio exactly p'/q = e^ε (up to 2⁻³² in p') for c ∈ {a, b}, so the audit has all the power the
sample gives.

- One record: a column of one record, a vs b, every report category as an event. The main audit
  reads 1,000,000 draws as one column of 1,000,000 copies (records are randomized independently,
  which test_randomized_response.py checks); a second audit calls ``release`` on the one-record
  column itself, 20,000 times a side.
- A table: five records that differ in the first one; events on the whole released file (its
  first report, how many reports of a it holds, whether it equals the true table).

Negative controls, audited against the claimed ε, must be caught: a mechanism whose
keep-probability was computed for 2ε, one that ignores k (keeps with e^ε/(e^ε + 1) whatever k),
and one calibrated for 1.1ε (a subtle slip). The same draws pass at the ε they really give, so the
audit is tight, not lopsided.

Noise cannot be seeded, so each audit is calibrated to a false-alarm probability of 10⁻⁶.
"""

import math
from dataclasses import dataclass

import numpy as np
import pytest
from binomial_bounds import worst_ratio_lower_bound

from privacy_engine.randomized_response import (
    RandomizedResponseMechanism,
    keep_calibration,
    system_random_bytes,
)

pytestmark = pytest.mark.statistical

FALSE_ALARM = 1e-6
DRAWS = 1_000_000
SINGLE_CALL_DRAWS = 20_000
TABLE_DRAWS = 200_000
CASES = [(2, math.log(3)), (4, 1.0), (10, 0.5)]
CASE_IDS = ["k2-ln3", "k4-eps1", "k10-eps0.5"]


@dataclass(frozen=True)
class Audit:
    """The largest lower confidence bound on P(E | D1)/P(E | D2) (either way) over the events."""

    worst_event: str
    ratio_lower_bound: float
    allowed: float

    @property
    def violation(self) -> bool:
        return self.ratio_lower_bound > self.allowed


def audit(events: dict[str, tuple[np.ndarray, np.ndarray]], *, epsilon: float) -> Audit:
    """``events`` maps a name to the event's indicators under D1 and under D2 (equal draws);
    the false-alarm budget is shared by all events."""
    worst_event, worst = "", 0.0
    for name, (under_one, under_other) in events.items():
        bound = worst_ratio_lower_bound(
            (int(under_one.sum()), int(under_other.sum())),
            under_one.size,
            FALSE_ALARM / len(events),
        )
        if bound > worst:
            worst_event, worst = name, bound
    return Audit(worst_event=worst_event, ratio_lower_bound=worst, allowed=math.exp(epsilon))


def one_record_events(
    mechanism: RandomizedResponseMechanism, first: int, second: int, draws: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """ "The report is c" for every category c, on a one-record column of ``first`` vs
    ``second``; ``draws`` one-record outputs each, read from one long column."""
    with_first = mechanism.release(np.full(draws, first))
    with_second = mechanism.release(np.full(draws, second))
    return {
        f"report = {c}": (with_first == c, with_second == c) for c in range(mechanism.categories)
    }


class IgnoresCategories(RandomizedResponseMechanism):
    """Broken on purpose: keeps with e^ε/(e^ε + 1), the yes/no probability, whatever k."""

    def __init__(self, *, categories: int, epsilon: float) -> None:
        super().__init__(categories=categories, epsilon=epsilon)
        self.keep_threshold = keep_calibration(2, epsilon)[0]


def broken(kind: str, categories: int, epsilon: float) -> RandomizedResponseMechanism:
    if kind == "twice epsilon":
        return RandomizedResponseMechanism(categories=categories, epsilon=2 * epsilon)
    if kind == "ignores k":
        return IgnoresCategories(categories=categories, epsilon=epsilon)
    return RandomizedResponseMechanism(categories=categories, epsilon=1.1 * epsilon)


# --- the mechanism passes -----------------------------------------------------------------------


def test_the_audited_mechanism_draws_from_the_system_csprng():
    # then
    assert RandomizedResponseMechanism(categories=3, epsilon=1.0).random_bytes is (
        system_random_bytes
    )


@pytest.mark.parametrize(("categories", "epsilon"), CASES, ids=CASE_IDS)
def test_one_record_column_passes_the_audit(categories, epsilon):
    # given
    mechanism = RandomizedResponseMechanism(categories=categories, epsilon=epsilon)

    # when
    result = audit(one_record_events(mechanism, 0, categories - 1, DRAWS), epsilon=epsilon)

    # then
    assert not result.violation, result


def test_one_record_column_released_call_by_call_passes_the_audit():
    # given: the release path on the one-record column itself, one call per draw
    categories, epsilon = 4, 1.0
    mechanism = RandomizedResponseMechanism(categories=categories, epsilon=epsilon)

    def draws(value: int) -> np.ndarray:
        column = np.array([value])
        return np.concatenate([mechanism.release(column) for _ in range(SINGLE_CALL_DRAWS)])

    with_a, with_b = draws(1), draws(2)

    # when
    result = audit(
        {f"report = {c}": (with_a == c, with_b == c) for c in range(categories)}, epsilon=epsilon
    )

    # then: and a ratio as large as the mechanism's own shows it is seen
    assert not result.violation, result
    assert result.ratio_lower_bound > 1.5, result


def table_events(
    mechanism: RandomizedResponseMechanism, draws: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Two five-record tables that differ in the first record (0 vs 1); ``draws`` released files
    of each, drawn as one column of ``draws`` copies of the table and cut back into files."""
    rest = [2 % mechanism.categories, 0, 1, mechanism.categories - 1]
    first_table, second_table = np.array([0, *rest]), np.array([1, *rest])
    files_one = mechanism.release(np.tile(first_table, draws)).reshape(draws, 5)
    files_two = mechanism.release(np.tile(second_table, draws)).reshape(draws, 5)
    events = {
        f"first report = {c}": (files_one[:, 0] == c, files_two[:, 0] == c)
        for c in range(mechanism.categories)
    }
    for at_least in (1, 2, 3):
        events[f"≥ {at_least} reports of 0"] = (
            (files_one == 0).sum(axis=1) >= at_least,
            (files_two == 0).sum(axis=1) >= at_least,
        )
    events["file = first table"] = (
        (files_one == first_table).all(axis=1),
        (files_two == first_table).all(axis=1),
    )
    return events


@pytest.mark.parametrize(("categories", "epsilon"), CASES, ids=CASE_IDS)
def test_tables_differing_in_one_record_pass_the_audit(categories, epsilon):
    # given
    mechanism = RandomizedResponseMechanism(categories=categories, epsilon=epsilon)

    # when
    result = audit(table_events(mechanism, TABLE_DRAWS), epsilon=epsilon)

    # then
    assert not result.violation, result


# --- negative controls --------------------------------------------------------------------------


# Ignoring k changes nothing for a yes/no column, so that control runs for k > 2 only.
CONTROLS = [
    pytest.param(kind, categories, epsilon, id=f"{kind.replace(' ', '-')}-{case_id}")
    for kind in ("twice epsilon", "ignores k", "ten percent")
    for (categories, epsilon), case_id in zip(CASES, CASE_IDS, strict=True)
    if not (kind == "ignores k" and categories == 2)
]


@pytest.mark.parametrize(("kind", "categories", "epsilon"), CONTROLS)
def test_audit_catches_a_broken_mechanism(kind, categories, epsilon):
    # given
    mechanism = broken(kind, categories, epsilon)

    # when
    result = audit(one_record_events(mechanism, 0, categories - 1, DRAWS), epsilon=epsilon)

    # then
    assert result.violation, result


@pytest.mark.parametrize("kind", ["twice epsilon", "ignores k"])
def test_table_audit_catches_a_broken_mechanism(kind):
    # given
    categories, epsilon = 4, 1.0
    mechanism = broken(kind, categories, epsilon)

    # when
    result = audit(table_events(mechanism, TABLE_DRAWS // 4), epsilon=epsilon)

    # then
    assert result.violation, result


def test_audit_of_the_twice_epsilon_mechanism_at_its_true_epsilon_passes():
    # given: the same kind of draws as the control, audited at the ε they really give
    categories, epsilon = 4, 1.0
    mechanism = broken("twice epsilon", categories, epsilon)

    # when
    result = audit(one_record_events(mechanism, 0, categories - 1, DRAWS), epsilon=2 * epsilon)

    # then
    assert not result.violation, result
    assert result.ratio_lower_bound > math.exp(1.9 * epsilon), result
