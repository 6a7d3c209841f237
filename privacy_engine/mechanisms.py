"""Noise-adding mechanisms that carry their own accounting.

Each mechanism wraps an OpenDP ``Measurement``; ``epsilon_spent`` is what the measurement's own
privacy map reports for the declared sensitivity, and it is what the ledger is charged. The scale is
nudged up, never down, if floating-point rounding would make the map exceed the ε asked for.

Calibration (finding the scale, then reading the map) is a pure function of the mechanism's input
space, sensitivity, ε and δ: OpenDP's constructors, maps and binary search are deterministic. It is
memoized, so statistics that share those numbers, in one plan or in the many plans of a preview's
accuracy chart, search once. The cache holds numbers only: every mechanism builds its own
measurement from the cached scale, and OpenDP draws fresh noise on every call of a measurement, so
nothing that touches noise is shared.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import opendp.prelude as dp

from privacy_engine import accuracy
from privacy_engine.noise import DEFAULT_NOISE, NoiseSource
from privacy_engine.optimize import golden_minimum
from privacy_engine.wording import gettext_noop

dp.enable_features("contrib")

# Distinct calibrations kept per process (each entry is a few floats). A 100-statistic draft's
# accuracy chart needs a few per ε on its grid; this keeps many drafts' worth.
CALIBRATION_CACHE_SIZE = 8192

# A mechanism's ``space`` is what it takes: an "integer" vector (counts, histogram cells), a
# "vector" of reals (several sums answered together) or one "scalar" real (a sum). OpenDP's
# domains and metrics are immutable descriptions, built once per process and used by every
# measurement of that space.


@functools.cache
def _laplace_space(space: str) -> tuple[Any, Any]:
    if space == "integer":
        return dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l1_distance(T=dp.i64)
    if space == "vector":
        return dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    return dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)


@functools.cache
def _gaussian_space(space: str) -> tuple[Any, Any]:
    if space == "integer":
        return dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l2_distance(T=dp.i64)
    if space == "integer-real-distance":
        # Counts whose L2 sensitivity is not whole (√L for a tree of L levels).
        return dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l2_distance(T=float)
    if space == "vector":
        return dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
    return dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)


def laplace_measurement(space: str, scale: float) -> Any:
    """OpenDP's Laplace measurement (discrete on ``"integer"`` vectors) at noise scale b."""
    return dp.m.make_laplace(*_laplace_space(space), scale=scale)


def gaussian_measurement(space: str, scale: float, delta: float) -> Any:
    """OpenDP's Gaussian measurement (discrete on ``"integer"`` vectors) at noise scale σ, its
    zCDP profile converted to (ε, δ) at the fixed ``delta``."""
    gaussian = dp.m.make_gaussian(*_gaussian_space(space), scale=scale)
    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(gaussian), delta)


@functools.lru_cache(maxsize=CALIBRATION_CACHE_SIZE, typed=True)
def laplace_calibration(
    space: str, sensitivity: int | float, epsilon: float
) -> tuple[float, float]:
    """``(scale, epsilon_spent)``: b = S/ε, nudged up one float at a time while OpenDP's map of
    the measurement at b exceeds ``epsilon``, and that map. ``sensitivity`` is L1 (an int for
    ``"integer"`` answers); ``epsilon`` is this mechanism's own ε. Memoized (pure)."""
    return _nudged_up(
        functools.partial(laplace_measurement, space), sensitivity / epsilon, sensitivity, epsilon
    )


def _nudged_up(
    build: Any, scale: float, sensitivity: int | float, epsilon: float
) -> tuple[float, float]:
    """``(scale, epsilon_spent)``: ``scale`` raised one float at a time while OpenDP's map of
    ``build(scale)`` at ``sensitivity`` exceeds ``epsilon``, and that map."""
    measurement = build(scale)
    while measurement.map(sensitivity) > epsilon:
        scale = math.nextafter(scale, math.inf)
        measurement = build(scale)
    return scale, float(measurement.map(sensitivity))


def _rho_allowed(alpha: float, epsilon: float, log_delta: float) -> float:
    """The largest ρ for which the Rényi order ``alpha`` alone proves (ε, δ): the bound OpenDP's
    ``cdp_delta`` evaluates, δ ≤ exp((α−1)(αρ−ε) + α·ln(1−1/α)) / (α−1), solved for ρ."""
    alpha_minus_one = alpha - 1.0
    slack = log_delta + math.log(alpha_minus_one) - alpha * math.log1p(-1.0 / alpha)
    return (epsilon + slack / alpha_minus_one) / alpha


@functools.lru_cache(maxsize=CALIBRATION_CACHE_SIZE)
def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """The largest ρ whose conversion from ρ-zCDP to (ε, δ), as OpenDP's ``cdp_delta`` computes it
    (Canonne, Kamath and Steinke 2020, searching α from 1.01), gives δ(ε) ≤ ``delta``.

    δ(ε) is a minimum over α of a bound that is linear in ρ, so δ(ε) ≤ δ exactly when some α
    allows ρ: ρ* is the maximum over α of ``_rho_allowed``, a smooth one-dimensional search in
    ln(α − 1) (a coarse scan, then golden sections). It agrees with OpenDP's nested binary searches
    to a few units in the last place in microseconds instead of a tenth of a second; callers that
    spend budget still check the result with OpenDP's own map. Memoized (pure)."""
    log_delta = math.log(delta)
    # ρ + 2√(ρ·ln(1/δ)) ≤ ε is a weaker, classical conversion, so ρ* is at least its ρ, and
    # OpenDP's bound on the best α, (ε + 1)/(2ρ) + 2, is then at most the scan's upper end.
    rho_low = (math.sqrt(epsilon - log_delta) - math.sqrt(-log_delta)) ** 2
    low, high = math.log(0.01), math.log((epsilon + 1.0) / (2.0 * rho_low) + 1.0)

    def allowed(t: float) -> float:
        return _rho_allowed(1.0 + math.exp(t), epsilon, log_delta)

    steps = 48
    grid = [low + (high - low) * i / steps for i in range(steps + 1)]
    values = [allowed(t) for t in grid]
    best = max(range(steps + 1), key=values.__getitem__)
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, steps)]
    refined = -golden_minimum(lambda t: -allowed(t), low, high, rounds=60)
    return max(values[best], refined)


def estimated_gaussian_scale(sensitivity: float, epsilon: float, delta: float) -> float:
    """σ = Δ₂/√(2ρ*) for ρ* = :func:`zcdp_rho_for`: the Gaussian's scale for (ε, δ) to a few units
    in the last place, without OpenDP's check. For numbers that are only shown (the accuracy
    chart); a mechanism that draws noise uses :func:`gaussian_calibration`."""
    return float(sensitivity) / math.sqrt(2.0 * zcdp_rho_for(epsilon, delta))


# How many one-ulp nudges the scale gets before the steps grow (9 were the most seen).
_ULP_NUDGES = 32


@functools.lru_cache(maxsize=CALIBRATION_CACHE_SIZE, typed=True)
def gaussian_calibration(
    space: str, sensitivity: int | float, epsilon: float, delta: float
) -> tuple[float, float, float]:
    """``(scale, epsilon_spent, delta_spent)``: the smallest σ, from
    :func:`estimated_gaussian_scale` nudged up, at which OpenDP's measurement at L2 ``sensitivity``
    (an int for ``"integer"`` answers) maps to at most (``epsilon``, ``delta``), and that map.
    ``epsilon`` and ``delta`` are this mechanism's own shares. Memoized (pure).

    The cheap test first: the zCDP measurement's privacy profile at ε (one evaluation of
    ``cdp_delta``); then the map the ledger is charged, OpenDP's fixed-δ conversion, whose own
    search can land a few units above ε where the profile is already within δ."""
    scale = estimated_gaussian_scale(sensitivity, epsilon, delta)
    for attempt in range(_ULP_NUDGES + 64):
        gaussian = dp.m.make_gaussian(*_gaussian_space(space), scale=scale)
        profile = dp.c.make_zCDP_to_approxDP(gaussian).map(sensitivity)
        if profile.delta(epsilon) <= delta:
            spent_epsilon, spent_delta = gaussian_measurement(space, scale, delta).map(sensitivity)
            if spent_epsilon <= epsilon and spent_delta <= delta:
                return scale, float(spent_epsilon), float(spent_delta)
        scale = (
            math.nextafter(scale, math.inf)
            if attempt < _ULP_NUDGES
            else scale * (1.0 + 2.0 ** (attempt - _ULP_NUDGES - 40))
        )
    raise ValueError(f"no Gaussian scale found for ε = {epsilon!r}, δ = {delta!r}")


# The accuracy formulas of the discrete Gaussian sum over its support (thousands of terms at
# large σ); they are pure functions of σ, so they are memoized like the calibrations.
_gaussian_expected_abs_error = functools.lru_cache(maxsize=CALIBRATION_CACHE_SIZE)(
    accuracy.gaussian_expected_abs_error
)
_gaussian_halfwidth = functools.lru_cache(maxsize=CALIBRATION_CACHE_SIZE)(
    accuracy.gaussian_halfwidth
)


class GeometricMechanism:
    """Discrete Laplace noise on a vector of integer answers (counts, histogram cells).

    ``sensitivity`` is the L1 sensitivity of the whole vector (a whole number) under the
    definition's neighbours; ``epsilon`` is this statistic's share of the release's ε.
    """

    name = "geometric"
    delta_spent = 0.0

    def __init__(self, *, sensitivity: int, epsilon: float, noise: NoiseSource | None = None):
        if sensitivity < 1 or int(sensitivity) != sensitivity:
            raise ValueError("integer answers need a whole-number sensitivity ≥ 1")
        self.sensitivity = int(sensitivity)
        self.noise = noise or DEFAULT_NOISE
        self.scale, self.epsilon_spent = laplace_calibration("integer", self.sensitivity, epsilon)

    @functools.cached_property
    def measurement(self) -> Any:
        """Built on first use (a plan that is only previewed never needs it)."""
        return laplace_measurement("integer", self.scale)

    @property
    def expected_abs_error(self) -> float:
        return accuracy.geometric_expected_abs_error(self.scale)

    def halfwidth(self, coverage: float = 0.95) -> int:
        return accuracy.geometric_halfwidth(self.scale, coverage)

    def release(self, values: np.ndarray | list[int]) -> np.ndarray:
        exact = [int(v) for v in values]
        return np.asarray(self.noise.sample(self.measurement, exact), dtype=np.int64)


class LaplaceMechanism:
    """Continuous Laplace noise on one real answer (a sum), or with ``vector=True`` on a vector of
    real answers whose L1 sensitivity is ``sensitivity``; scale b = S/ε."""

    name = "laplace"
    delta_spent = 0.0

    def __init__(
        self,
        *,
        sensitivity: float,
        epsilon: float,
        noise: NoiseSource | None = None,
        vector: bool = False,
    ):
        if not math.isfinite(sensitivity) or sensitivity <= 0:
            raise ValueError("sensitivity must be a finite number > 0")
        self.sensitivity = float(sensitivity)
        self.noise = noise or DEFAULT_NOISE
        self.vector = vector
        self.space = "vector" if vector else "scalar"
        self.scale, self.epsilon_spent = laplace_calibration(self.space, self.sensitivity, epsilon)

    @functools.cached_property
    def measurement(self) -> Any:
        """Built on first use (a plan that is only previewed never needs it)."""
        return laplace_measurement(self.space, self.scale)

    @property
    def expected_abs_error(self) -> float:
        return accuracy.laplace_expected_abs_error(self.scale)

    def halfwidth(self, coverage: float = 0.95) -> float:
        return accuracy.laplace_halfwidth(self.scale, coverage)

    def release(self, value: Any) -> Any:
        if self.vector:
            noisy = self.noise.sample(self.measurement, [float(v) for v in value])
            return [float(v) for v in noisy]
        return float(self.noise.sample(self.measurement, float(value)))


class ExactRelease:
    """No noise, for an answer whose sensitivity is 0 under the definition (the number of records
    under Blowfish, where n is public). Costs nothing."""

    name = "none (public under the definition)"
    scale = 0.0
    sensitivity = 0
    epsilon_spent = 0.0
    delta_spent = 0.0
    expected_abs_error = 0.0

    def halfwidth(self, coverage: float = 0.95) -> int:
        return 0

    def release(self, values: Any) -> np.ndarray:
        return np.asarray([int(v) for v in values], dtype=np.int64)


class GaussianMechanism:
    """Gaussian noise for (ε, δ)-DP: discrete Gaussian on integer vectors (whose L2 sensitivity
    may be any real), continuous on reals.

    OpenDP accounts the Gaussian in zero-concentrated DP (ρ = Δ₂²/(2σ²)) and converts the privacy
    profile to (ε, δ) at the fixed δ (``make_zCDP_to_approxDP`` then ``make_fix_delta``); σ is the
    smallest scale whose converted ε does not exceed the one asked for. ``sensitivity`` is L2.

    With ``estimate=True`` the scale is :func:`estimated_gaussian_scale`, unchecked, and the
    mechanism is for reading accuracy only (the chart of error against ε): it draws no noise and
    reports the shares it was given as spent.
    """

    name = "gaussian"
    # Published with each statistic it answers (its ``accounting``), translated on the pages.
    accounting = gettext_noop("zCDP (ρ = Δ₂²/2σ²) converted to (ε, δ) by OpenDP's privacy profile")

    def __init__(
        self,
        *,
        sensitivity: float,
        epsilon: float,
        delta: float,
        integer: bool,
        noise: NoiseSource | None = None,
        vector: bool = False,
        estimate: bool = False,
    ):
        if not math.isfinite(sensitivity) or sensitivity <= 0:
            raise ValueError("sensitivity must be a finite number > 0")
        self.estimate = estimate
        self.integer = integer
        self.noise = noise or DEFAULT_NOISE
        self.delta = delta
        self.vector = vector
        if integer and int(sensitivity) == sensitivity:
            d_in: Any = int(sensitivity)
            self.space = "integer"
        elif integer:
            d_in = float(sensitivity)
            self.space = "integer-real-distance"
        else:
            d_in = float(sensitivity)
            self.space = "vector" if vector else "scalar"
        self.sensitivity = d_in
        if estimate:
            self.scale = estimated_gaussian_scale(d_in, epsilon, delta)
            self.epsilon_spent, self.delta_spent = epsilon, delta
        else:
            self.scale, self.epsilon_spent, self.delta_spent = gaussian_calibration(
                self.space, d_in, epsilon, delta
            )

    @functools.cached_property
    def measurement(self) -> Any:
        """Built on first use (a plan that is only previewed never needs it)."""
        if self.estimate:
            raise RuntimeError("an estimated Gaussian is for reading accuracy; it draws no noise")
        return gaussian_measurement(self.space, self.scale, self.delta)

    @property
    def expected_abs_error(self) -> float:
        return _gaussian_expected_abs_error(self.scale, integer=self.integer)

    def halfwidth(self, coverage: float = 0.95) -> float:
        return _gaussian_halfwidth(self.scale, coverage, integer=self.integer)

    def release(self, values: Any) -> Any:
        if self.integer:
            exact = [int(v) for v in values]
            return np.asarray(self.noise.sample(self.measurement, exact), dtype=np.int64)
        if self.vector:
            return [
                float(v) for v in self.noise.sample(self.measurement, [float(v) for v in values])
            ]
        return float(self.noise.sample(self.measurement, float(values)))


@functools.cache
def _score_space() -> tuple[Any, Any]:
    # Scores are whole numbers; a neighbour moves any of them by at most the sensitivity, in any
    # direction (not monotonic).
    return dp.vector_domain(dp.atom_domain(T="u64")), dp.linf_distance(T="u64", monotonic=False)


def noisy_min_measurement(scale: float) -> Any:
    """OpenDP's report-noisy-max on negated scores (the least score wins), exponential noise of
    scale ``scale``: the exponential mechanism, pure ε-DP."""
    return dp.m.make_noisy_max(*_score_space(), dp.max_divergence(), scale=scale, negate=True)


@functools.lru_cache(maxsize=CALIBRATION_CACHE_SIZE)
def noisy_min_calibration(sensitivity: int, epsilon: float) -> tuple[float, float]:
    """``(scale, epsilon_spent)``: s = 2Δ/ε (scores that are not monotonic), nudged up while
    OpenDP's map at Δ exceeds ``epsilon``, and that map. Memoized (pure)."""
    return _nudged_up(noisy_min_measurement, 2.0 * sensitivity / epsilon, sensitivity, epsilon)


class ExponentialMechanism:
    """Chooses one of ``candidates`` options by score, the least most likely: the exponential
    mechanism, as OpenDP's report-noisy-max with exponential noise (permute-and-flip's
    equivalent). ``sensitivity`` bounds how far one protected unit moves any score (L∞).

    Accuracy, in score units: the chosen option's score exceeds the least by more than
    s·(ln k + t) with probability at most e^{−t}, for k options and noise scale s."""

    name = "exponential"
    delta_spent = 0.0

    def __init__(
        self,
        *,
        sensitivity: int,
        epsilon: float,
        candidates: int,
        noise: NoiseSource | None = None,
    ):
        if sensitivity < 1 or int(sensitivity) != sensitivity:
            raise ValueError("scores need a whole-number sensitivity ≥ 1")
        if candidates < 1:
            raise ValueError("choose among at least one candidate")
        self.sensitivity = int(sensitivity)
        self.candidates = candidates
        self.noise = noise or DEFAULT_NOISE
        self.scale, self.epsilon_spent = noisy_min_calibration(self.sensitivity, epsilon)

    @functools.cached_property
    def measurement(self) -> Any:
        return noisy_min_measurement(self.scale)

    def score_excess(self, coverage: float = 0.95) -> float:
        """The score excess not exceeded with probability ``coverage``: s·ln(k/(1 − coverage))."""
        return self.scale * math.log(self.candidates / (1.0 - coverage))

    @property
    def expected_score_excess(self) -> float:
        """A bound on the expected excess: ∫ P(excess > x) dx ≤ s·(ln k + 1)."""
        return self.scale * (math.log(self.candidates) + 1.0)

    def release(self, scores: list[int]) -> int:
        """The chosen option's index. A noise source that hands the input back (tests' exact
        sources) stands for no noise: the least score is chosen."""
        exact = [int(s) for s in scores]
        chosen = self.noise.sample(self.measurement, exact)
        if isinstance(chosen, list):
            return min(range(len(exact)), key=exact.__getitem__)
        return int(chosen)
