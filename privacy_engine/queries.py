"""Statistics a release can publish: a query's JSON spec, read and checked by its kind.

Each kind's query type, its fields and its checks against the schema live in its module in
privacy_engine/kinds; this module holds what every kind shares (the ``kind`` and the ``weight``)
and re-exports the built-in query types, which the web app imports from here.

``where`` restricts any statistic to groups of a categorical column (kinds/restricted.py).

``weight`` is an accuracy weight: a statistic's share of the release's ε is weight / Σ weights, so
more weight means less noise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privacy_engine.errors import (
    MUST_BE_OBJECT,
    ONE_OF,
    WEIGHT_FROM_TO,
    EngineValidationError,
    prefix_errors,
)
from privacy_engine.kinds import Query, QueryKind, kind_named, kind_of, registered_kinds
from privacy_engine.kinds.count import Count
from privacy_engine.kinds.histogram import MAX_BINS, Histogram, bin_labels
from privacy_engine.kinds.mean import Mean
from privacy_engine.kinds.restricted import Restricted, Where, parse_where
from privacy_engine.kinds.sum import Sum
from privacy_engine.schema import Schema

__all__ = [
    "MAX_BINS",
    "MAX_WEIGHT",
    "MIN_WEIGHT",
    "QUERY_KINDS",
    "Count",
    "Histogram",
    "Mean",
    "Query",
    "Restricted",
    "Sum",
    "Where",
    "bin_labels",
    "query_from_dict",
    "query_to_dict",
]

# The kinds the engine ships, in registration order (the web form offers these).
QUERY_KINDS = registered_kinds()
# Accuracy weights are relative; this range keeps every share of ε and every noise scale finite.
MIN_WEIGHT = 0.001
MAX_WEIGHT = 1000.0


def query_to_dict(query: Query) -> dict[str, Any]:
    """The JSON spec that :func:`query_from_dict` reads back as ``query``."""
    out: dict[str, Any] = {"kind": query.kind, **kind_of(query).to_dict(query)}
    if query.weight != 1.0:
        out["weight"] = query.weight
    return out


def _parse(spec: Mapping[str, Any]) -> tuple[QueryKind, Query]:
    kinds = registered_kinds()
    kind = spec.get("kind")
    if kind not in kinds:
        raise EngineValidationError.single("kind", ONE_OF, choices=", ".join(kinds))
    weight = spec.get("weight", 1)
    if (
        isinstance(weight, bool)
        or not isinstance(weight, int | float)
        or not MIN_WEIGHT <= weight <= MAX_WEIGHT
    ):
        raise EngineValidationError.single(
            "weight", WEIGHT_FROM_TO, minimum=f"{MIN_WEIGHT:g}", maximum=f"{MAX_WEIGHT:g}"
        )
    query_kind = kind_named(kind)
    query = query_kind.parse(spec, float(weight))
    if spec.get("where") is None:
        return query_kind, query
    try:
        where = parse_where(spec["where"])
    except EngineValidationError as error:
        raise prefix_errors("where", error) from None
    restricted = Restricted(query=query, where=where)
    return kind_of(restricted), restricted


def query_from_dict(spec: Mapping[str, Any] | Query, schema: Schema) -> Query:
    """Build one query from ``{"kind": "sum", "column": "age", "weight": 2}`` (or take one built
    in Python) and check it against the declared schema; errors name fields relative to the
    query."""
    if isinstance(spec, Mapping):
        query_kind, query = _parse(spec)
    else:
        try:
            query_kind = kind_of(spec)
        except TypeError:
            raise EngineValidationError.single("", MUST_BE_OBJECT) from None
        if not isinstance(spec, query_kind.query_type):
            raise EngineValidationError.single("", MUST_BE_OBJECT)
        query = spec
    query_kind.validate(query, schema)
    return query
