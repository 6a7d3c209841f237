"""Global sensitivities under each definition's neighbours.

Under ε-DP (add/remove one record) with a column's public bounds [lower, upper]:
count 1; histogram 1 (L1: one record changes one cell by one); sum max(|lower|, |upper|);
a mean is post-processed from a sum and a count and has the sum's sensitivity plus a count's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privacy_engine.definitions import Definition, PureDP, definition_from_dict
from privacy_engine.queries import Count, Histogram, Mean, Query, Sum, query_from_dict
from privacy_engine.schema import NumericColumn, Schema, schema_from_dict

COUNT_SENSITIVITY = 1


def sum_sensitivity(column: NumericColumn, definition: Definition) -> float:
    """L1 sensitivity of the clamped sum of one numeric column."""
    if isinstance(definition, PureDP):
        return column.max_magnitude
    raise TypeError(f"unsupported definition {definition!r}")


def count_sensitivity(definition: Definition) -> int:
    """Sensitivity of a count, and the L1 sensitivity of a histogram's cell vector."""
    if isinstance(definition, PureDP):
        return COUNT_SENSITIVITY
    raise TypeError(f"unsupported definition {definition!r}")


def sensitivity(
    *,
    query: Query | Mapping[str, Any],
    schema: Schema | Mapping[str, Any],
    definition: Definition | Mapping[str, Any],
) -> float:
    """L1 global sensitivity of a query's answer under the definition's neighbours.

    For a mean this is the sensitivity of its sum part (its count part has a count's).
    Accepts the API's JSON shapes or the engine's typed objects.
    """
    schema = schema_from_dict(schema)
    definition = definition_from_dict(definition)
    query = query_from_dict(query, schema)
    if isinstance(query, Count | Histogram):
        return count_sensitivity(definition)
    if isinstance(query, Sum | Mean):
        column = schema.column(query.column)
        assert isinstance(column, NumericColumn)
        return sum_sensitivity(column, definition)
    raise TypeError(f"unsupported query {query!r}")
