"""Noise-adding mechanisms that carry their own accounting.

Each mechanism wraps an OpenDP ``Measurement``; ``epsilon_spent`` is what the measurement's own
privacy map reports for the declared sensitivity, and it is what the ledger is charged. The scale is
nudged up, never down, if floating-point rounding would make the map exceed the ε asked for.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import opendp.prelude as dp

from privacy_engine import accuracy
from privacy_engine.noise import DEFAULT_NOISE, NoiseSource

dp.enable_features("contrib")


def _calibrate(build: Any, d_in: Any, scale: float, epsilon: float) -> tuple[Any, float]:
    measurement = build(scale)
    while measurement.map(d_in) > epsilon:
        scale = math.nextafter(scale, math.inf)
        measurement = build(scale)
    return measurement, scale


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
        self.measurement, self.scale = _calibrate(
            lambda b: dp.m.make_laplace(
                dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l1_distance(T=dp.i64), scale=b
            ),
            self.sensitivity,
            self.sensitivity / epsilon,
            epsilon,
        )
        self.epsilon_spent = float(self.measurement.map(self.sensitivity))

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
        if vector:
            space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float))
        else:
            space = (dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float))
        self.measurement, self.scale = _calibrate(
            lambda b: dp.m.make_laplace(*space, scale=b),
            self.sensitivity,
            self.sensitivity / epsilon,
            epsilon,
        )
        self.epsilon_spent = float(self.measurement.map(self.sensitivity))

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
    """Gaussian noise for (ε, δ)-DP: discrete Gaussian on integer vectors, continuous on reals.

    OpenDP accounts the Gaussian in zero-concentrated DP (ρ = Δ₂²/(2σ²)) and converts the privacy
    profile to (ε, δ) at the fixed δ (``make_zCDP_to_approxDP`` then ``make_fix_delta``); σ is the
    smallest scale whose converted ε does not exceed the one asked for. ``sensitivity`` is L2.
    """

    name = "gaussian"
    accounting = "zCDP (ρ = Δ₂²/2σ²) converted to (ε, δ) by OpenDP's privacy profile"

    def __init__(
        self,
        *,
        sensitivity: float,
        epsilon: float,
        delta: float,
        integer: bool,
        noise: NoiseSource | None = None,
        vector: bool = False,
    ):
        if not math.isfinite(sensitivity) or sensitivity <= 0:
            raise ValueError("sensitivity must be a finite number > 0")
        self.integer = integer
        self.noise = noise or DEFAULT_NOISE
        self.delta = delta
        self.vector = vector
        if integer:
            if int(sensitivity) != sensitivity:
                raise ValueError("integer answers need a whole-number sensitivity")
            d_in: Any = int(sensitivity)
            space = (dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l2_distance(T=dp.i64))
        elif vector:
            d_in = float(sensitivity)
            space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float))
        else:
            d_in = float(sensitivity)
            space = (dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float))
        self.sensitivity = d_in

        def build(scale: float) -> Any:
            gaussian = dp.m.make_gaussian(*space, scale=scale)
            return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(gaussian), delta)

        # Bracket σ with zCDP facts: the converted ε is at least ρ (so ρ ≤ ε), and
        # ρ + 2√(ρ·ln(1/δ)) ≤ ε is always enough. Bounds keep OpenDP's search from overflowing.
        log_inverse_delta = math.log(1.0 / delta)
        rho_low = (math.sqrt(log_inverse_delta + epsilon) - math.sqrt(log_inverse_delta)) ** 2
        lower = float(sensitivity) / math.sqrt(2.0 * epsilon)
        upper = float(sensitivity) / math.sqrt(2.0 * rho_low * 0.99)
        # With a large δ the converted ε can fall below ρ; lower the bracket until it is below
        # the answer (its ε too large), as the search needs.
        for _ in range(64):
            if build(lower).map(d_in)[0] > epsilon:
                break
            lower /= 2.0
        self.scale = float(
            dp.binary_search_param(build, d_in=d_in, d_out=(epsilon, delta), bounds=(lower, upper))
        )
        self.measurement = build(self.scale)
        spent_epsilon, spent_delta = self.measurement.map(d_in)
        self.epsilon_spent = float(spent_epsilon)
        self.delta_spent = float(spent_delta)

    @property
    def expected_abs_error(self) -> float:
        return accuracy.gaussian_expected_abs_error(self.scale, integer=self.integer)

    def halfwidth(self, coverage: float = 0.95) -> float:
        return accuracy.gaussian_halfwidth(self.scale, coverage, integer=self.integer)

    def release(self, values: Any) -> Any:
        if self.integer:
            exact = [int(v) for v in values]
            return np.asarray(self.noise.sample(self.measurement, exact), dtype=np.int64)
        if self.vector:
            return [
                float(v) for v in self.noise.sample(self.measurement, [float(v) for v in values])
            ]
        return float(self.noise.sample(self.measurement, float(values)))
