"""One-sided Clopper–Pearson bounds on a binomial proportion, shared by the privacy audits."""

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
