"""Statistical privacy audit of the quantile's exponential mechanism (issue 9, point 5).

Neighbouring tables D1 = D2 + one record are turned into scores by the real path: the engine's
rank counts (aggregates.RankCounts) and the quantile kind's score function. For the median
(Δ = 500 in score units) on candidates 10 < 20 < 30 (the upper bound), D2 = {5, 5, 25, 25, 25}
scores (500, 500, 2500) and D1 = D2 + {15} scores (1000, 0, 3000): the gap between the first
two candidates moves by 2Δ, the worst case for scores that are not monotonic, so the event
"the first candidate is chosen" has a ratio close to e^ε for a correct mechanism. A Clopper–
Pearson lower bound on every event's ratio, both ways, must not exceed e^ε; the negative control
(the noise scale halved) must be caught.
"""

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from binomial_bounds import clopper_pearson_lower, clopper_pearson_upper

from privacy_engine.aggregates import RankCounts, finish, partial
from privacy_engine.columnar import TypedTable
from privacy_engine.kinds import quantile
from privacy_engine.mechanisms import ExponentialMechanism

pytestmark = pytest.mark.statistical

EPSILON = 1.0
DRAWS = 80_000
CONTROL_DRAWS = 30_000
FALSE_ALARM = 1e-6
CANDIDATES = (10.0, 20.0, 30.0)
MEDIAN = quantile.quantile_steps(0.5)
WORKERS = min(4, os.cpu_count() or 1)


def median_scores(values: list[float]) -> list[int]:
    table = TypedTable(row_count=len(values), numbers={"x": np.array(values)}, labels={})
    request = RankCounts(column="x", lower=0.0, upper=30.0, fill=None, candidates=CANDIDATES)
    below, at_most = finish(request, partial(request, table))
    return quantile.scores(MEDIAN, below, at_most)


D2 = [5.0, 5.0, 25.0, 25.0, 25.0]
D1 = [*D2, 15.0]


def choices(mechanism: ExponentialMechanism, scores: list[int], draws: int) -> np.ndarray:
    chunk = -(-draws // WORKERS)
    with ThreadPoolExecutor(WORKERS) as pool:
        parts = pool.map(
            lambda n: [mechanism.release(scores) for _ in range(n)],
            [min(chunk, draws - i * chunk) for i in range(WORKERS)],
        )
    return np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])


def worst_ratio_lower_bound(mechanism: ExponentialMechanism, draws: int) -> float:
    """The largest lower confidence bound on P(choice = j | one) / P(choice = j | other), over
    every candidate j and both directions (each bound wrong with probability FALSE_ALARM)."""
    first, second = (choices(mechanism, median_scores(d), draws) for d in (D1, D2))
    checks = 2 * len(CANDIDATES)
    miss = FALSE_ALARM / checks / 2
    worst = 0.0
    for j in range(len(CANDIDATES)):
        for more, less in ((first, second), (second, first)):
            lower = clopper_pearson_lower(int((more == j).sum()), draws, miss)
            upper = clopper_pearson_upper(int((less == j).sum()), draws, miss)
            worst = max(worst, lower / upper)
    return worst


def test_the_scores_of_the_neighbours_are_the_worst_case():
    assert median_scores(D2) == [500, 500, 2500]
    assert median_scores(D1) == [1000, 0, 3000]


def test_the_quantile_mechanism_keeps_its_epsilon():
    mechanism = ExponentialMechanism(
        sensitivity=quantile.QUANTILE_STEPS - MEDIAN, epsilon=EPSILON, candidates=3
    )

    assert worst_ratio_lower_bound(mechanism, DRAWS) <= math.exp(EPSILON)


def test_the_audit_catches_a_quantile_mechanism_with_half_the_noise():
    # given: a mechanism calibrated as if the sensitivity were half what it is
    broken = ExponentialMechanism(
        sensitivity=(quantile.QUANTILE_STEPS - MEDIAN) // 2, epsilon=EPSILON, candidates=3
    )

    # then
    assert worst_ratio_lower_bound(broken, CONTROL_DRAWS) > math.exp(EPSILON)
