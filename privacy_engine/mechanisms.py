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
    """Continuous Laplace noise on one real answer (a sum), scale b = S/ε."""

    name = "laplace"

    def __init__(self, *, sensitivity: float, epsilon: float, noise: NoiseSource | None = None):
        if not math.isfinite(sensitivity) or sensitivity <= 0:
            raise ValueError("sensitivity must be a finite number > 0")
        self.sensitivity = float(sensitivity)
        self.noise = noise or DEFAULT_NOISE
        self.measurement, self.scale = _calibrate(
            lambda b: dp.m.make_laplace(
                dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=b
            ),
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

    def release(self, value: float) -> float:
        return float(self.noise.sample(self.measurement, float(value)))
