"""Exact accuracy formulas of the noise distributions (DESIGN.md, "Formulas from the seeds").

``scale`` is always the noise scale b: Laplace density ∝ e^{−|x|/b}; the geometric (discrete
Laplace) mechanism has P(K = k) ∝ α^{|k|} with α = e^{−1/b}, i.e. α = e^{−ε/S} for b = S/ε.
Discrete answers use the discrete formulas, never the continuous ones.
"""

from __future__ import annotations

import math


def laplace_expected_abs_error(scale: float) -> float:
    """E|noise| = b."""
    return scale


def laplace_tail(threshold: float, scale: float) -> float:
    """P(|noise| > t) = e^{−t/b}."""
    return math.exp(-threshold / scale)


def laplace_halfwidth(scale: float, coverage: float = 0.95) -> float:
    """Half-width h with P(|noise| ≤ h) = coverage: b·ln(1/(1 − coverage)); b·ln 20 at 95%."""
    return scale * math.log(1.0 / (1.0 - coverage))


def geometric_alpha(scale: float) -> float:
    return math.exp(-1.0 / scale)


def geometric_expected_abs_error(scale: float) -> float:
    """E|K| = 2α / (1 − α²)."""
    alpha = geometric_alpha(scale)
    return 2.0 * alpha / (1.0 - alpha * alpha)


def geometric_tail(threshold: int, scale: float) -> float:
    """P(|K| ≥ t) = 2α^t / (1 + α) for integer t ≥ 1."""
    if threshold < 1:
        return 1.0
    alpha = geometric_alpha(scale)
    return 2.0 * alpha**threshold / (1.0 + alpha)


def geometric_halfwidth(scale: float, coverage: float = 0.95) -> int:
    """Smallest integer h ≥ 0 with P(|K| ≤ h) ≥ coverage, i.e. P(|K| ≥ h + 1) ≤ 1 − coverage."""
    alpha = geometric_alpha(scale)
    miss = 1.0 - coverage
    if alpha == 0.0:
        return 0
    # Solve 2α^{h+1}/(1+α) ≤ miss, then settle rounding at the boundary by checking neighbours.
    estimate = max(0, math.ceil(math.log(miss * (1.0 + alpha) / 2.0) / math.log(alpha)) - 1)
    while estimate > 0 and geometric_tail(estimate, scale) <= miss:
        estimate -= 1
    while geometric_tail(estimate + 1, scale) > miss:
        estimate += 1
    return estimate
