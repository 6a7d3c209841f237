"""Statistics a release can publish, as plain frozen data.

``weight`` is an accuracy weight: a statistic's share of the release's ε is weight / Σ weights, so
more weight means less noise.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_engine.errors import EngineValidationError
from privacy_engine.schema import (
    CategoricalColumn,
    NumericColumn,
    Schema,
    finite_float,
    format_number,
)


@dataclass(frozen=True)
class Count:
    """Number of records."""

    weight: float = 1.0
    kind: str = field(default="count", init=False)
    column: None = field(default=None, init=False)


@dataclass(frozen=True)
class Histogram:
    """Records per declared category, or per bin of a numeric column.

    ``bins`` are increasing edges from the column's lower to its upper bound; each bin is
    [a, b) except the last, which is [a, b].
    """

    column: str
    bins: tuple[float, ...] | None = None
    weight: float = 1.0
    kind: str = field(default="histogram", init=False)


@dataclass(frozen=True)
class Sum:
    """Sum of a numeric column after clamping to its public bounds, or with ``columns`` the
    vector of sums of several numeric columns (the article's q_sum), answered together."""

    column: str | None = None
    columns: tuple[str, ...] = ()
    weight: float = 1.0
    kind: str = field(default="sum", init=False)

    @property
    def summed_columns(self) -> tuple[str, ...]:
        return self.columns or ((self.column,) if self.column is not None else ())


@dataclass(frozen=True)
class Mean:
    """Mean of a numeric column, post-processed from a noisy sum and a noisy count."""

    column: str
    weight: float = 1.0
    kind: str = field(default="mean", init=False)


Query = Count | Histogram | Sum | Mean

QUERY_KINDS = ("count", "histogram", "sum", "mean")
MAX_BINS = 1000
# Accuracy weights are relative; this range keeps every share of ε and every noise scale finite.
MIN_WEIGHT = 0.001
MAX_WEIGHT = 1000.0


def bin_labels(edges: tuple[float, ...]) -> tuple[str, ...]:
    """Labels "[a, b)" per bin ("[a, b]" for the last), each edge written so that it reads back
    as exactly that edge: distinct edges always give distinct labels, hence one cell per bin."""
    last = len(edges) - 2
    return tuple(
        f"[{format_number(lo)}, {format_number(hi)}{']' if i == last else ')'}"
        for i, (lo, hi) in enumerate(itertools.pairwise(edges))
    )


def query_to_dict(query: Query) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": query.kind}
    if query.column is not None:
        out["column"] = query.column
    if isinstance(query, Sum) and query.columns:
        out["columns"] = list(query.columns)
    if isinstance(query, Histogram) and query.bins is not None:
        out["bins"] = list(query.bins)
    if query.weight != 1.0:
        out["weight"] = query.weight
    return out


def _validate_against_schema(query: Query, schema: Schema) -> None:
    if isinstance(query, Count):
        return
    if isinstance(query, Sum) and query.columns:
        # Checked here too, for queries built in Python: a repeated column would count twice in
        # the vector but once in its sensitivity.
        if len(set(query.columns)) != len(query.columns):
            raise EngineValidationError.single("columns", "must be a list of distinct names")
        for name in query.columns:
            if not isinstance(schema.columns.get(name), NumericColumn):
                raise EngineValidationError.single("columns", f"'{name}' is not a numeric column")
        return
    if query.column not in schema.columns:
        raise EngineValidationError.single("column", "no such column in the schema")
    column = schema.column(query.column)
    if isinstance(query, Histogram):
        if isinstance(column, CategoricalColumn):
            if query.bins is not None:
                raise EngineValidationError.single("bins", "bins apply only to numeric columns")
            return
        if isinstance(column, NumericColumn):
            if query.bins is None:
                raise EngineValidationError.single("bins", "a numeric histogram needs bin edges")
            edges = query.bins
            if len(edges) > MAX_BINS + 1:
                raise EngineValidationError.single("bins", f"use at most {MAX_BINS} bins")
            if len(edges) < 2 or any(b <= a for a, b in itertools.pairwise(edges)):
                raise EngineValidationError.single("bins", "need at least two increasing edges")
            if edges[0] != column.lower or edges[-1] != column.upper:
                raise EngineValidationError.single(
                    "bins", "the first and last edges must be the column's declared bounds"
                )
            return
        raise EngineValidationError.single(
            "column", "histograms need a categorical or numeric column"
        )
    if not isinstance(column, NumericColumn):
        raise EngineValidationError.single("column", f"a {query.kind} needs a numeric column")


def query_from_dict(spec: Mapping[str, Any] | Query, schema: Schema) -> Query:
    """Build one query from ``{"kind": "sum", "column": "age", "weight": 2}`` and check it
    against the declared schema; errors name fields relative to the query."""
    if isinstance(spec, Count | Histogram | Sum | Mean):
        query: Query = spec
    else:
        if not isinstance(spec, Mapping):
            raise EngineValidationError.single("", "must be an object")
        kind = spec.get("kind")
        if kind not in QUERY_KINDS:
            raise EngineValidationError.single("kind", f"must be one of: {', '.join(QUERY_KINDS)}")
        weight = spec.get("weight", 1)
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not MIN_WEIGHT <= weight <= MAX_WEIGHT
        ):
            raise EngineValidationError.single(
                "weight", f"must be a number from {MIN_WEIGHT:g} to {MAX_WEIGHT:g}"
            )
        weight = float(weight)
        column = spec.get("column")
        columns = spec.get("columns")
        if kind == "sum" and columns is not None:
            if (
                not isinstance(columns, list)
                or not columns
                or not all(isinstance(c, str) for c in columns)
                or len(set(columns)) != len(columns)
            ):
                raise EngineValidationError.single("columns", "must be a list of distinct names")
            column = None
        elif kind != "count" and not isinstance(column, str):
            raise EngineValidationError.single("column", "name the column this statistic uses")
        if kind == "count":
            query = Count(weight=weight)
        elif kind == "histogram":
            bins = spec.get("bins")
            if bins is not None:
                edges = [finite_float(b) for b in bins] if isinstance(bins, list) else [None]
                if any(edge is None for edge in edges):
                    raise EngineValidationError.single("bins", "must be a list of numbers")
                bins = tuple(edge for edge in edges if edge is not None)
            query = Histogram(column=column, bins=bins, weight=weight)
        elif kind == "sum":
            query = Sum(column=column, columns=tuple(columns or ()), weight=weight)
        elif kind == "mean":
            query = Mean(column=column, weight=weight)
        else:
            raise EngineValidationError.single("kind", f"must be one of: {', '.join(QUERY_KINDS)}")
    _validate_against_schema(query, schema)
    return query
