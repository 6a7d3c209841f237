"""Where random bits come from (DESIGN.md rule 2).

Production noise is drawn by OpenDP's samplers, which sample the discrete and continuous Laplace
distributions exactly from a cryptographic source, with no floating-point tails to leak. The source
is injected so unit tests can be deterministic; statistical tests use the real one.
"""

from __future__ import annotations

from typing import Any, Protocol

import opendp.prelude as dp

dp.enable_features("contrib")


class NoiseSource(Protocol):
    def sample(self, measurement: dp.Measurement, value: Any) -> Any:
        """Return the measurement's noisy output for ``value``."""
        ...


class OpenDPNoise:
    """Invokes the OpenDP measurement itself: its samplers draw the noise."""

    def sample(self, measurement: dp.Measurement, value: Any) -> Any:
        return measurement(value)


DEFAULT_NOISE: NoiseSource = OpenDPNoise()
