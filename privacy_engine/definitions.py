"""Privacy definitions a release can be made under.

- ``PureDP``: ε-differential privacy (Definition 1). Neighbours add or remove one record, so the
  number of records is itself private.
- ``ApproxDP``: (ε, δ)-differential privacy (Definition 3), same neighbours; the guarantee may fail
  with probability δ, so δ must be far below 1/n.
- ``Blowfish``: (ε, P)-Blowfish privacy (Definition 6). Neighbours *replace* one record along an
  edge of the policy's secret graph; the number of records n is public.

``epsilon`` (and ``delta``) are always the release's *total*, split over its statistics by weight.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_engine.errors import (
    MUST_BE_ABOVE_ZERO,
    MUST_BE_FROM_TO,
    MUST_BE_OBJECT,
    MUST_BE_PROBABILITY,
    ONE_OF,
    EngineValidationError,
    prefix_errors,
)
from privacy_engine.schema import MAX_BOUND, check_declared_size, finite_float
from privacy_engine.wording import gettext_noop, phrase

# Refusals of a privacy definition (ε, δ, a Blowfish policy) and the warning about a weak δ.
DELTA_AT_LEAST = gettext_noop(
    "must be at least {minimum}; for a smaller δ choose ε-differential privacy (pure_dp), which "
    "has no δ at all"
)
DELTA_ABOVE_SQUARE = gettext_noop(
    "δ = {delta} is above 1/n² = {square} for about {size} records: a mechanism that simply "
    "publishes each record with probability δ satisfies (0, δ)-DP, and would expose about "
    "{exposed} records."
)
DELTA_CAP_WITHOUT_SIZE = gettext_noop(
    "must be at most {cap} unless the table's approximate size is declared"
)
DELTA_CAP = gettext_noop(
    "must be at most 1/(10·n) = {limit} for about {size} records: publishing each record with "
    "probability δ is (0, δ)-DP, so a larger δ lets a mechanism leak whole records"
)
DISTANCE_AT_MOST = gettext_noop("must be at most {maximum}, the widest a column's range can be")
OBJECT_WITH_GRAPH = gettext_noop("must be an object with a graph")
NAME_PARTITIONED = gettext_noop("name the partitioned column")
WIDTH_OR_GROUPS = gettext_noop("give a width, or groups as a list of non-empty lists of categories")
LIST_OF_COLUMNS = gettext_noop("must be a list of column names")
NAME_DISTANCE_COLUMN = gettext_noop("name the column the distance is on")
WHOLE_AT_LEAST_ONE = gettext_noop("must be a whole number ≥ 1")
GRAPHS = gettext_noop("must be one of full_domain, partition, distance_threshold, attribute")

# A release asking for more than this is almost surely a typo; nothing meaningful is protected.
MAX_EPSILON = 20.0
# Below this the noise swamps any answer; the bound also keeps every noise scale finite.
MIN_EPSILON = 0.0001
DEFAULT_DELTA_CAP = 1e-6
# Below this δ is indistinguishable from ε-DP for any table; the floor also keeps δ exactly
# representable in the ledger (accounting.DELTA_PLACES) and log(1/δ) well away from overflow.
MIN_DELTA = 1e-30


def _check_delta_range(delta: float) -> None:
    if isinstance(delta, bool) or not math.isfinite(delta) or not 0 < delta < 1:
        raise EngineValidationError.single("delta", MUST_BE_PROBABILITY)
    if delta < MIN_DELTA:
        raise EngineValidationError.single(
            "delta", phrase(DELTA_AT_LEAST, minimum=f"{MIN_DELTA:g}")
        )


def _check_epsilon(epsilon: float) -> None:
    if isinstance(epsilon, bool) or not math.isfinite(epsilon) or epsilon <= 0:
        raise EngineValidationError.single("epsilon", MUST_BE_ABOVE_ZERO)
    if not MIN_EPSILON <= epsilon <= MAX_EPSILON:
        raise EngineValidationError.single(
            "epsilon",
            phrase(MUST_BE_FROM_TO, minimum=f"{MIN_EPSILON:g}", maximum=f"{MAX_EPSILON:g}"),
        )


@dataclass(frozen=True)
class PureDP:
    """ε-differential privacy, neighbours differ by adding or removing one record."""

    epsilon: float
    kind: str = field(default="pure_dp", init=False)
    delta: float = field(default=0.0, init=False)
    neighbours: str = field(default="add or remove one record", init=False)

    def __post_init__(self) -> None:
        _check_epsilon(self.epsilon)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "epsilon": self.epsilon}


def default_delta(declared_size: int | None) -> float:
    """min(10⁻⁶, 1/n²) on the declared size n (a whole number from 1 to ``MAX_ROWS``, else
    :class:`EngineValidationError` naming ``declared_size``)."""
    if declared_size is None:
        return DEFAULT_DELTA_CAP
    return min(DEFAULT_DELTA_CAP, 1.0 / check_declared_size(declared_size) ** 2)


def with_default_delta(definition: Any, declared_size: int | None) -> Any:
    """An (ε, δ) definition given as JSON without δ gets min(10⁻⁶, 1/n²) on the declared size."""
    if (
        isinstance(definition, Mapping)
        and definition.get("kind") == "approx_dp"
        and definition.get("delta") is None
    ):
        return {**definition, "delta": default_delta(declared_size)}
    return definition


def delta_warnings(delta: float, declared_size: int | None) -> list[str]:
    """Plain-language warnings for a δ that is allowed but weaker than the default."""
    if declared_size is not None and delta > 1.0 / declared_size**2:
        return [
            phrase(
                DELTA_ABOVE_SQUARE,
                delta=f"{delta:g}",
                square=f"{1.0 / declared_size**2:g}",
                size=f"{declared_size:,}",
                exposed=f"{delta * declared_size:.2g}",
            )
        ]
    return []


def check_delta(delta: float, declared_size: int | None) -> None:
    """Refuse δ above 1/(10·n) on the declared size (or above 10⁻⁶ without a declared size)."""
    _check_delta_range(delta)
    if declared_size is None:
        if delta > DEFAULT_DELTA_CAP:
            raise EngineValidationError.single(
                "delta", phrase(DELTA_CAP_WITHOUT_SIZE, cap=f"{DEFAULT_DELTA_CAP:g}")
            )
        return
    limit = 1.0 / (10 * declared_size)
    if delta > limit:
        raise EngineValidationError.single(
            "delta", phrase(DELTA_CAP, limit=f"{limit:g}", size=f"{declared_size:,}")
        )


@dataclass(frozen=True)
class ApproxDP:
    """(ε, δ)-differential privacy with add/remove-one-record neighbours."""

    epsilon: float
    delta: float
    kind: str = field(default="approx_dp", init=False)
    neighbours: str = field(default="add or remove one record", init=False)

    def __post_init__(self) -> None:
        _check_epsilon(self.epsilon)
        _check_delta_range(self.delta)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "epsilon": self.epsilon, "delta": self.delta}


# --- Blowfish policies: the discriminative secret graph G over record values ---------------------


@dataclass(frozen=True)
class FullDomain:
    """Every pair of values is an edge: any one record may change arbitrarily."""

    graph: str = field(default="full_domain", init=False)

    def to_dict(self) -> dict[str, Any]:
        return {"graph": self.graph}


@dataclass(frozen=True)
class CategoricalPartition:
    """Values of one categorical column are protected only from values in the same group; which
    group each person is in is not protected at all."""

    column: str
    groups: tuple[tuple[str, ...], ...]
    graph: str = field(default="partition", init=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "column": self.column,
            "groups": [list(group) for group in self.groups],
        }


@dataclass(frozen=True)
class RangePartition:
    """A numeric column split into ranges of width w from its lower bound; which range each
    person is in is not protected, values within a range are."""

    column: str
    width: float
    graph: str = field(default="partition", init=False)

    def to_dict(self) -> dict[str, Any]:
        return {"graph": self.graph, "column": self.column, "width": self.width}


@dataclass(frozen=True)
class DistanceThreshold:
    """G^{L1,θ}: values closer than θ (L1 distance over ``columns``) are neighbours; values d
    apart are protected at ⌈d/θ⌉·ε."""

    columns: tuple[str, ...]
    theta: float
    graph: str = field(default="distance_threshold", init=False)

    def to_dict(self) -> dict[str, Any]:
        if len(self.columns) == 1:
            return {"graph": self.graph, "column": self.columns[0], "theta": self.theta}
        return {"graph": self.graph, "columns": list(self.columns), "theta": self.theta}


@dataclass(frozen=True)
class AttributeGraph:
    """G^{attr,c}: records that differ in at most c attributes are neighbours."""

    c: int
    graph: str = field(default="attribute", init=False)

    def to_dict(self) -> dict[str, Any]:
        return {"graph": self.graph, "c": self.c}


Policy = FullDomain | CategoricalPartition | RangePartition | DistanceThreshold | AttributeGraph


@dataclass(frozen=True)
class Blowfish:
    """(ε, P)-Blowfish privacy: neighbours replace one record along an edge of the policy's graph,
    and the number of records is public."""

    epsilon: float
    policy: Policy
    kind: str = field(default="blowfish", init=False)
    delta: float = field(default=0.0, init=False)
    neighbours: str = field(
        default="replace one record along an edge of the secret graph", init=False
    )

    def __post_init__(self) -> None:
        _check_epsilon(self.epsilon)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "epsilon": self.epsilon, "policy": self.policy.to_dict()}


Definition = PureDP | ApproxDP | Blowfish
DEFINITION_KINDS = ("pure_dp", "approx_dp", "blowfish")


# The widest a column's range can be (bounds lie within ±MAX_BOUND): a policy's θ or range width
# beyond it protects nothing more than the full domain, and only overflows the maths.
MAX_POLICY_DISTANCE = 2 * MAX_BOUND


def _positive_number(value: Any, path: str) -> float:
    number = finite_float(value)
    if number is None or number <= 0:
        raise EngineValidationError.single(path, MUST_BE_ABOVE_ZERO)
    return number


def _policy_distance(value: Any, path: str) -> float:
    number = _positive_number(value, path)
    if number > MAX_POLICY_DISTANCE:
        raise EngineValidationError.single(
            path, phrase(DISTANCE_AT_MOST, maximum=f"{MAX_POLICY_DISTANCE:g}")
        )
    return number


def policy_from_dict(spec: Any) -> Policy:
    """Build a policy from its JSON shape; errors name fields relative to the policy. Checks
    against a schema happen in :func:`check_policy_against_schema`."""
    if not isinstance(spec, Mapping):
        raise EngineValidationError.single("", OBJECT_WITH_GRAPH)
    graph = spec.get("graph")
    if graph == "full_domain":
        return FullDomain()
    if graph == "partition":
        column = spec.get("column")
        if not isinstance(column, str):
            raise EngineValidationError.single("column", NAME_PARTITIONED)
        if "width" in spec:
            return RangePartition(column=column, width=_policy_distance(spec["width"], "width"))
        groups = spec.get("groups")
        if (
            not isinstance(groups, list)
            or not groups
            or not all(
                isinstance(g, list) and g and all(isinstance(v, str) for v in g) for g in groups
            )
        ):
            raise EngineValidationError.single("groups", WIDTH_OR_GROUPS)
        return CategoricalPartition(column=column, groups=tuple(tuple(g) for g in groups))
    if graph == "distance_threshold":
        theta = _policy_distance(spec.get("theta"), "theta")
        if "columns" in spec:
            columns = spec["columns"]
            if (
                not isinstance(columns, list)
                or not columns
                or not all(isinstance(c, str) for c in columns)
            ):
                raise EngineValidationError.single("columns", LIST_OF_COLUMNS)
            return DistanceThreshold(columns=tuple(columns), theta=theta)
        column = spec.get("column")
        if not isinstance(column, str):
            raise EngineValidationError.single("column", NAME_DISTANCE_COLUMN)
        return DistanceThreshold(columns=(column,), theta=theta)
    if graph == "attribute":
        c = spec.get("c", 1)
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise EngineValidationError.single("c", WHOLE_AT_LEAST_ONE)
        return AttributeGraph(c=c)
    raise EngineValidationError.single("graph", GRAPHS)


def definition_from_dict(spec: Mapping[str, Any] | Definition) -> Definition:
    """Build a definition from the API's JSON shape; errors name the bad field."""
    if isinstance(spec, PureDP | ApproxDP | Blowfish):
        return spec
    if not isinstance(spec, Mapping):
        raise EngineValidationError.single("", MUST_BE_OBJECT)
    kind = spec.get("kind")
    if kind not in DEFINITION_KINDS:
        raise EngineValidationError.single(
            "kind", phrase(ONE_OF, choices=", ".join(DEFINITION_KINDS))
        )
    epsilon = finite_float(spec.get("epsilon"))
    if epsilon is None:
        raise EngineValidationError.single("epsilon", MUST_BE_ABOVE_ZERO)
    if kind == "pure_dp":
        return PureDP(epsilon=epsilon)
    if kind == "approx_dp":
        delta = finite_float(spec.get("delta"))
        if delta is None:
            raise EngineValidationError.single("delta", MUST_BE_PROBABILITY)
        return ApproxDP(epsilon=epsilon, delta=delta)
    _check_epsilon(epsilon)
    try:
        policy = policy_from_dict(spec.get("policy"))
    except EngineValidationError as error:
        raise prefix_errors("policy", error) from None
    return Blowfish(epsilon=epsilon, policy=policy)
