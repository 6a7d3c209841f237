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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

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
from privacy_engine.errors import EngineValidationError
from privacy_engine.policies import check_policy_against_schema
from privacy_engine.queries import Count, Histogram, Mean, Query, Sum, query_from_dict
from privacy_engine.schema import NumericColumn, Schema, schema_from_dict

COUNT_SENSITIVITY = 1
BLOWFISH_HISTOGRAM_SENSITIVITY = 2


def _unconstrained_change(column: NumericColumn) -> float:
    """How far one replaced record can move a column's clamped sum when nothing constrains it:
    its range, or its largest magnitude when a missing value (dropped, so contributing 0) may be
    replaced by a present one."""
    if column.fill is not None:
        return column.width
    return max(column.width, column.max_magnitude)


def _blowfish_sum(columns: Mapping[str, NumericColumn], policy: Any) -> float:
    # A partition or distance policy constrains the columns it names along the edges of its
    # graph (Definition 6). A missing value has no distance or range, so it has no edge to a
    # number: whether a value is missing is not one of the policy's secrets. The release's rule
    # and the wizard say so; declaring a fill value turns missing values into numbers the policy
    # protects. Columns the policy does not name may change arbitrarily.
    widths = {name: _unconstrained_change(column) for name, column in columns.items()}
    ranges = {name: column.width for name, column in columns.items()}
    if isinstance(policy, FullDomain | CategoricalPartition):
        return math.fsum(widths.values())
    if isinstance(policy, RangePartition):
        return math.fsum(
            min(policy.width, ranges[name]) if name == policy.column else width
            for name, width in widths.items()
        )
    if isinstance(policy, DistanceThreshold):
        named = [ranges[name] for name in widths if name in policy.columns]
        free = [w for name, w in widths.items() if name not in policy.columns]
        constrained = min(policy.theta, math.fsum(named)) if named else 0.0
        return constrained + math.fsum(free)
    if isinstance(policy, AttributeGraph):
        return math.fsum(sorted(widths.values(), reverse=True)[: policy.c])
    raise TypeError(f"unsupported policy {policy!r}")


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
) -> float:
    """Sensitivity of the clamped sum of one column, or of the vector of sums of several."""
    if isinstance(columns, NumericColumn):
        columns = {"": columns}
    if isinstance(definition, PureDP | ApproxDP):
        magnitudes = [column.max_magnitude for column in columns.values()]
        if norm == "l2":
            return math.sqrt(math.fsum(m * m for m in magnitudes))
        return math.fsum(magnitudes)
    if isinstance(definition, Blowfish):
        return _blowfish_sum(columns, definition.policy)
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
    schema = schema_from_dict(schema)
    definition = definition_from_dict(with_default_delta(definition, schema.declared_size))
    if isinstance(definition, Blowfish):
        check_policy_against_schema(definition.policy, schema)
        if schema.rows_per_person > 1:
            raise EngineValidationError.single(
                "kind",
                "Blowfish here protects one record; with several rows per person use "
                "ε-DP or (ε, δ)-DP",
            )
    query = query_from_dict(query, schema)
    norm = "l2" if isinstance(definition, ApproxDP) else "l1"
    # With a person key, one protected unit is up to c rows.
    c = schema.rows_per_person
    if isinstance(query, Count):
        return c * count_sensitivity(definition)
    if isinstance(query, Histogram):
        return c * histogram_sensitivity(definition)
    if isinstance(query, Sum | Mean):
        names = query.summed_columns if isinstance(query, Sum) else (query.column,)
        columns = {name: schema.column(name) for name in names}
        assert all(isinstance(col, NumericColumn) for col in columns.values())
        return c * sum_sensitivity(columns, definition, norm=norm)  # type: ignore[arg-type]
    raise TypeError(f"unsupported query {query!r}")
