"""Plain-language translations of a privacy parameter (DESIGN.md, "Formulas from the seeds").

All functions are exact closed forms; none of them touches data.
"""

from __future__ import annotations

import math


def epsilon_to_truth_probability(epsilon: float) -> float:
    """Probability that the most revealing ε-DP mechanism answers a yes/no question about one
    person truthfully: p = e^ε / (1 + e^ε). ε = 0.1 → 0.52498; ε = 0.01 → 0.50250."""
    if not math.isfinite(epsilon) or epsilon < 0:
        raise ValueError("epsilon must be a finite number ≥ 0")
    # 1 / (1 + e^-ε) is the same number without overflow for large ε.
    return 1.0 / (1.0 + math.exp(-epsilon))


def truth_probability_to_epsilon(probability: float) -> float:
    """Inverse of :func:`epsilon_to_truth_probability`: ε = ln(p / (1 − p)), for ½ ≤ p < 1."""
    if not 0.5 <= probability < 1.0:
        raise ValueError("the probability of a truthful answer must be in [0.5, 1)")
    return math.log(probability / (1.0 - probability))


def _check_epsilon(epsilon: float) -> None:
    if isinstance(epsilon, bool) or not math.isfinite(epsilon) or epsilon < 0:
        raise ValueError("epsilon must be a finite number ≥ 0")


def posterior_bound(*, prior: float, epsilon: float) -> float:
    """Largest posterior an attacker can reach about one person after an ε-DP release, from a prior
    q: the odds move by at most e^ε, so q → e^ε·q / (1 − q + e^ε·q). q = 10%, ε = 0.2 → 11.95%."""
    if not 0.0 <= prior <= 1.0:
        raise ValueError("prior must be in [0, 1]")
    _check_epsilon(epsilon)
    # Same number as e^ε·q / (1 − q + e^ε·q), without overflow for large ε.
    return prior / (prior + (1.0 - prior) * math.exp(-epsilon))


def group_privacy(*, group_size: int, epsilon: float, delta: float = 0.0) -> tuple[float, float]:
    """Guarantee for a group of c people: (c·ε, c·e^{(c−1)ε}·δ)."""
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise ValueError("group size must be a whole number ≥ 1")
    _check_epsilon(epsilon)
    if not 0.0 <= delta <= 1.0:
        raise ValueError("delta must be in [0, 1]")
    return group_size * epsilon, group_size * math.exp((group_size - 1) * epsilon) * delta
