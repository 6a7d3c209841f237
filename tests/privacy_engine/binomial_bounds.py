"""One-sided Clopper–Pearson bounds on a binomial proportion, and the audits' shared steps."""

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import stats


def clopper_pearson_lower(successes: int, trials: int, miss: float) -> float:
    """One-sided lower confidence bound on a binomial p, wrong with probability ≤ ``miss``."""
    if successes == 0:
        return 0.0
    return float(stats.beta.ppf(miss, successes, trials - successes + 1))


def clopper_pearson_upper(successes: int, trials: int, miss: float) -> float:
    """One-sided upper confidence bound on a binomial p, wrong with probability ≤ ``miss``."""
    if successes == trials:
        return 1.0
    return float(stats.beta.isf(miss, successes + 1, trials - successes))


def worst_ratio_lower_bound(hits: tuple[int, int], draws: int, false_alarm: float) -> float:
    """The larger of the lower confidence bounds on P(E | one)/P(E | other), both ways, from an
    event's hits in ``draws`` draws under each of two inputs; wrong with probability at most
    ``false_alarm`` in all."""
    miss = false_alarm / 4
    worst = 0.0
    for more, less in ((hits[0], hits[1]), (hits[1], hits[0])):
        upper = clopper_pearson_upper(less, draws, miss)
        worst = max(worst, clopper_pearson_lower(more, draws, miss) / upper)
    return worst


def batched_draws(release, values: list[int], draws: int, batch: int = 2_000) -> np.ndarray:
    """``draws`` independent noisy copies of ``values``, one per row, by a mechanism's
    ``release`` on many copies at once (OpenDP's noise is independent per element), on threads."""
    sizes = [min(batch, draws - start) for start in range(0, draws, batch)]
    with ThreadPoolExecutor(min(4, os.cpu_count() or 1)) as pool:
        rows = pool.map(lambda k: np.asarray(release(values * k)).reshape(k, len(values)), sizes)
        return np.concatenate(list(rows))


Halfwidth = Callable[..., float]


def memoized_halfwidth(function: Halfwidth) -> Halfwidth:
    """``function`` of (weights, noise, scale, coverage), as ``ranges.error_halfwidth``, each
    answer computed once: an interval's half-width depends only on the plan, never on the noise
    drawn, yet costs milliseconds a call, so audits that repeat one release patch it in."""
    cache: dict[tuple, float] = {}

    def halfwidth(weights, noise: str, scale: float, coverage: float = 0.95) -> float:
        key = (np.asarray(weights, dtype=float).tobytes(), noise, float(scale), coverage)
        if key not in cache:
            cache[key] = function(weights, noise, scale, coverage)
        return cache[key]

    return halfwidth
