"""One-dimensional search shared by the calibrations and the accuracy bounds."""

from __future__ import annotations

import math
from collections.abc import Callable

_RATIO = (math.sqrt(5.0) - 1.0) / 2.0


def golden_minimum(
    function: Callable[[float], float], low: float, high: float, rounds: int
) -> float:
    """The least value golden-section search finds for a unimodal ``function`` on [low, high]
    in ``rounds`` rounds (each one evaluation)."""
    c, d = high - _RATIO * (high - low), low + _RATIO * (high - low)
    at_c, at_d = function(c), function(d)
    for _ in range(rounds):
        if at_c < at_d:
            high, d, at_d = d, c, at_c
            c = high - _RATIO * (high - low)
            at_c = function(c)
        else:
            low, c, at_c = c, d, at_d
            d = low + _RATIO * (high - low)
            at_d = function(d)
    return min(at_c, at_d)
