"""Global sensitivities under each definition's neighbours (DESIGN.md, "Formulas from the seeds").

ε-DP and (ε, δ)-DP (add or remove one record), with bounds [lower, upper]: count 1; histogram 1
(L1 and L2); sum max(|lower|, |upper|) per column (a vector of sums: L1 adds them, L2 is the root of
the sum of squares).

Blowfish (replace one record along an edge of the policy's graph; n is public): count 0 (exact);
histogram 2 (one record leaves a cell and enters another); sum of one column: full domain
upper − lower, partition into ranges of width w: w, distance threshold θ: θ, attribute graph: the
range. For a vector of sums the L1 sensitivity is the largest total change one edge allows: the
full domain adds every range; G^{L1,θ} allows θ over the columns it names; G^{attr,c} the c largest
ranges. Columns a policy does not name are unconstrained and contribute their whole range.

A sum's sensitivity covers the sums as computed (exact_sums.py): exactly, then rounded onto a
grid g of a power of two fixed by the bounds and the public row cap, so it is g·⌈Δ/g⌉ for the
exact bound Δ above, equal to Δ for whole-number parameters on ordinary bounds. Under Blowfish a
θ, w or range so small that this rounding would add more than 1% is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from privacy_engine.definitions import (
    ApproxDP,
    AttributeGraph,
    Blowfish,
    CategoricalPartition,
    Definition,
    DistanceThreshold,
    FullDomain,
    PureDP,
    RangePartition,
    definition_from_dict,
    with_default_delta,
)
from privacy_engine.errors import (
    RANGE_OF,
    RANGE_OF_THE_COLUMN,
    ROUNDING_DOMINATES,
    WIDTH_W,
    EngineValidationError,
)
from privacy_engine.exact_sums import ceil_to_grid, float_up, sqrt_up, sum_grid
from privacy_engine.policies import check_policy_against_schema
from privacy_engine.schema import MAX_ROWS, NumericColumn, Schema, format_number, schema_from_dict
from privacy_engine.wording import phrase

if TYPE_CHECKING:
    from privacy_engine.kinds import Query

COUNT_SENSITIVITY = 1
BLOWFISH_HISTOGRAM_SENSITIVITY = 2


# Rounding onto a sum's grid (exact_sums.py) may add at most this share to a sensitivity;
# smaller parameters are refused, since the noise would then mostly cover rounding.
MAX_ROUNDING_SHARE = Fraction(1, 100)


@dataclass(frozen=True)
class _Bound:
    """How far one neighbour moves part of a sum: ``exact`` for exact sums, ``rounded`` for the
    sums the engine computes (exact_sums.py). If rounding would dominate, ``field`` and ``what``
    name the parameter, and ``step`` is the most rounding can add to ``exact``."""

    exact: Fraction
    rounded: Fraction
    field: str
    step: float
    what: str


def _width(column: NumericColumn) -> Fraction:
    return Fraction(column.upper) - Fraction(column.lower)


def _column_field(name: str) -> str:
    return f"columns.{name}.lower" if name else "lower"


def _on_grid(exact: Fraction, column: NumericColumn, field: str, what: str) -> _Bound:
    grid = sum_grid(column.max_magnitude)
    return _Bound(exact, ceil_to_grid(exact, grid), field, grid, what)


def _unconstrained(name: str, column: NumericColumn) -> _Bound:
    """How far one replaced record can move a column's clamped sum when nothing constrains it:
    its range, or its largest magnitude when a missing value (dropped, so contributing 0) may be
    replaced by a present one."""
    exact = _width(column)
    if column.fill is None:
        exact = max(exact, Fraction(column.max_magnitude))
    what = phrase(RANGE_OF, name=name) if name else phrase(RANGE_OF_THE_COLUMN)
    return _on_grid(exact, column, _column_field(name), what)


def _blowfish_sum(columns: Mapping[str, NumericColumn], policy: Any) -> list[_Bound]:
    # A partition or distance policy constrains the columns it names along the edges of its
    # graph (Definition 6). A missing value has no distance or range, so it has no edge to a
    # number: whether a value is missing is not one of the policy's secrets. The release's rule
    # and the wizard say so; declaring a fill value turns missing values into numbers the policy
    # protects. Columns the policy does not name may change arbitrarily.
    free = {name: _unconstrained(name, column) for name, column in columns.items()}
    if isinstance(policy, FullDomain | CategoricalPartition):
        return list(free.values())
    if isinstance(policy, RangePartition):
        bounds = []
        for name, column in columns.items():
            if name != policy.column:
                bounds.append(free[name])
                continue
            width = Fraction(policy.width)
            if width < _width(column):
                bounds.append(_on_grid(width, column, "policy.width", phrase(WIDTH_W)))
            else:
                bounds.append(
                    _on_grid(
                        _width(column), column, _column_field(name), phrase(RANGE_OF, name=name)
                    )
                )
        return bounds
    if isinstance(policy, DistanceThreshold):
        named = [name for name in columns if name in policy.columns]
        bounds = [free[name] for name in columns if name not in policy.columns]
        ranges = [
            _on_grid(_width(columns[n]), columns[n], _column_field(n), phrase(RANGE_OF, name=n))
            for n in named
        ]
        theta = Fraction(policy.theta)
        if not named or theta >= sum(b.exact for b in ranges):
            return bounds + ranges
        # Each summed column's rounded sum may move one grid step beyond its share of θ.
        coarsest = max(sum_grid(columns[name].max_magnitude) for name in named)
        step = Fraction(coarsest)
        rounded = min(
            sum(b.rounded for b in ranges), step * (math.ceil(theta / step) + len(named) - 1)
        )
        return [*bounds, _Bound(theta, rounded, "policy.theta", len(named) * coarsest, "θ")]
    if isinstance(policy, AttributeGraph):
        return sorted(free.values(), key=lambda b: b.rounded, reverse=True)[: policy.c]
    raise TypeError(f"unsupported policy {policy!r}")


def _refuse_dominant_rounding(bounds: list[_Bound]) -> None:
    for bound in bounds:
        if bound.rounded > bound.exact * (1 + MAX_ROUNDING_SHARE):
            smallest = float_up(Fraction(bound.step) / MAX_ROUNDING_SHARE)
            raise EngineValidationError.single(
                bound.field,
                ROUNDING_DOMINATES,
                what=bound.what,
                exact=format_number(float(bound.exact)),
                rows=f"{MAX_ROWS:,}",
                step=format_number(bound.step),
                share=f"{float(MAX_ROUNDING_SHARE):.0%}",
                smallest=format_number(smallest),
            )


def missing_is_public(column_name: str, column: NumericColumn, definition: Definition) -> bool:
    """True when the definition does not protect whether this column's value is missing: a
    Blowfish partition or distance policy naming a column whose missing values are dropped."""
    if not isinstance(definition, Blowfish) or column.fill is not None:
        return False
    policy = definition.policy
    if isinstance(policy, RangePartition):
        return policy.column == column_name
    if isinstance(policy, DistanceThreshold):
        return column_name in policy.columns
    return False


def sum_sensitivity(
    columns: NumericColumn | Mapping[str, NumericColumn],
    definition: Definition,
    *,
    norm: str = "l1",
    rows_per_person: int = 1,
) -> float:
    """Sensitivity of the clamped sum of one column, or of the vector of sums of several, as the
    engine computes them (exact_sums.py): the most one protected unit (``rows_per_person`` rows)
    can move the computed answer, rounding included, in the mechanism's norm.

    Under Blowfish, raises :class:`EngineValidationError` naming ``policy.theta``,
    ``policy.width`` or ``columns.<name>.lower`` when rounding would add more than
    ``MAX_ROUNDING_SHARE`` to the sensitivity."""
    if isinstance(columns, NumericColumn):
        columns = {"": columns}
    rows = Fraction(rows_per_person)
    if isinstance(definition, PureDP | ApproxDP):
        # Adding or removing rows moves each column's exact sum by at most rows·m; m/g > 4.5·10⁵,
        # so rounding adds at most 2.2·10⁻⁶ of it (nothing for whole numbers up to 9·10⁵).
        parts = [
            ceil_to_grid(rows * Fraction(column.max_magnitude), sum_grid(column.max_magnitude))
            for column in columns.values()
        ]
        if norm == "l2":
            return sqrt_up(sum(part * part for part in parts))
        return float_up(sum(parts))
    if isinstance(definition, Blowfish):
        bounds = _blowfish_sum(columns, definition.policy)
        _refuse_dominant_rounding(bounds)
        return float_up(rows * sum(bound.rounded for bound in bounds))
    raise TypeError(f"unsupported definition {definition!r}")


def count_sensitivity(definition: Definition) -> int:
    """Sensitivity of the number of records: 0 under Blowfish, where n is public."""
    if isinstance(definition, PureDP | ApproxDP):
        return COUNT_SENSITIVITY
    if isinstance(definition, Blowfish):
        return 0
    raise TypeError(f"unsupported definition {definition!r}")


def histogram_sensitivity(definition: Definition) -> int:
    """L1 sensitivity of a histogram's cell vector (also its L2 under add/remove)."""
    if isinstance(definition, PureDP | ApproxDP):
        return COUNT_SENSITIVITY
    if isinstance(definition, Blowfish):
        return BLOWFISH_HISTOGRAM_SENSITIVITY
    raise TypeError(f"unsupported definition {definition!r}")


def present_count_sensitivity(column: NumericColumn, definition: Definition) -> int:
    """Sensitivity of the number of records whose value is present (a mean's denominator).

    Under Blowfish a replacement can turn a missing value into a present one unless missing
    values are filled with a public constant, in which case the count is n, which is public."""
    if isinstance(definition, Blowfish):
        return 0 if column.fill is not None else 1
    return count_sensitivity(definition)


def sensitivity(
    *,
    query: Query | Mapping[str, Any],
    schema: Schema | Mapping[str, Any],
    definition: Definition | Mapping[str, Any],
) -> float:
    """Global sensitivity of a query's answer under the definition's neighbours, in the norm its
    mechanism uses: L1, or L2 under (ε, δ)-DP (the Gaussian mechanism's).

    For a mean this is the sensitivity of its sum part. Accepts the API's JSON shapes or the
    engine's typed objects.
    """
    # Imported here: the kinds are built on this module's formulas, so they import it first.
    from privacy_engine.kinds import PlanContext, kind_of
    from privacy_engine.queries import query_from_dict

    schema = schema_from_dict(schema)
    definition = definition_from_dict(with_default_delta(definition, schema.declared_size))
    if isinstance(definition, Blowfish):
        check_policy_against_schema(definition.policy, schema)
    query = query_from_dict(query, schema)
    return kind_of(query).sensitivity(query, PlanContext(schema, definition, noise=None))
