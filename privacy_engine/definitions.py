"""Privacy definitions a release can be made under.

``PureDP`` is ε-differential privacy with add/remove-one-record neighbours (Definition 1): the
number of records is itself private. ``epsilon`` is always the release's *total*, split over its
statistics by weight.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_engine.errors import EngineValidationError

# A release asking for more than this is almost surely a typo; nothing meaningful is protected.
MAX_EPSILON = 20.0
# Below this the noise swamps any answer; the bound also keeps every noise scale finite.
MIN_EPSILON = 0.0001


@dataclass(frozen=True)
class PureDP:
    """ε-differential privacy, neighbours differ by adding or removing one record."""

    epsilon: float
    kind: str = field(default="pure_dp", init=False)
    delta: float = field(default=0.0, init=False)
    neighbours: str = field(default="add/remove one record", init=False)

    def __post_init__(self) -> None:
        if not math.isfinite(self.epsilon) or self.epsilon <= 0:
            raise EngineValidationError.single("epsilon", "must be a number greater than 0")
        if not MIN_EPSILON <= self.epsilon <= MAX_EPSILON:
            raise EngineValidationError.single(
                "epsilon", f"must be from {MIN_EPSILON:g} to {MAX_EPSILON:g}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "epsilon": self.epsilon}


Definition = PureDP


def definition_from_dict(spec: Mapping[str, Any] | Definition) -> Definition:
    """Build a definition from the API's JSON shape; errors name the bad field."""
    if isinstance(spec, PureDP):
        return spec
    if not isinstance(spec, Mapping):
        raise EngineValidationError.single("", "must be an object")
    kind = spec.get("kind")
    if kind == "pure_dp":
        epsilon = spec.get("epsilon")
        if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
            raise EngineValidationError.single("epsilon", "must be a number greater than 0")
        return PureDP(epsilon=float(epsilon))
    raise EngineValidationError.single("kind", "must be one of: pure_dp")
