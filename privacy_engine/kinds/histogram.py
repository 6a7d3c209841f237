"""``histogram``: records per declared category (plus the other bucket), or per bin of a numeric
column. One record moves one record between cells: the sensitivity is that of the definition
(histogram_sensitivity), times c for a person of up to c rows."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privacy_engine.aggregates import Aggregate, BinCounts, CategoryCounts
from privacy_engine.consistency import (
    NoisyTable,
    drops_records,
    variable_key,
    widened_interval,
)
from privacy_engine.errors import (
    AT_MOST_BINS,
    BINS_NUMERIC_ONLY,
    EDGES_AT_BOUNDS,
    HISTOGRAM_COLUMN,
    INCREASING_EDGES,
    MUST_BE_LIST_OF_NUMBERS,
    NEEDS_EDGES,
    EngineValidationError,
)
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    cleaned_numbers,
    column_named,
    count_interval,
    declared_column,
    even,
    integer_mechanism,
    register,
    single,
)
from privacy_engine.schema import (
    CategoricalColumn,
    NumericColumn,
    Schema,
    finite_float,
    format_number,
)
from privacy_engine.sensitivity import histogram_sensitivity

# Bounds one request's work: cells per histogram.
MAX_BINS = 1000


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


def bin_labels(edges: tuple[float, ...]) -> tuple[str, ...]:
    """Labels "[a, b)" per bin ("[a, b]" for the last), each edge written so that it reads back
    as exactly that edge: distinct edges always give distinct labels, hence one cell per bin."""
    last = len(edges) - 2
    return tuple(
        f"[{format_number(lo)}, {format_number(hi)}{']' if i == last else ')'}"
        for i, (lo, hi) in enumerate(itertools.pairwise(edges))
    )


def check_edges(edges: tuple[float, ...], column: NumericColumn, field_name: str) -> None:
    """Bin edges must increase from the column's lower to its upper bound, at most MAX_BINS."""
    if len(edges) > MAX_BINS + 1:
        raise EngineValidationError.single(field_name, AT_MOST_BINS, count=MAX_BINS)
    if len(edges) < 2 or any(b <= a for a, b in itertools.pairwise(edges)):
        raise EngineValidationError.single(field_name, INCREASING_EDGES)
    if edges[0] != column.lower or edges[-1] != column.upper:
        raise EngineValidationError.single(field_name, EDGES_AT_BOUNDS)


def parse_edges(bins: Any, field_name: str) -> tuple[float, ...]:
    """Bin edges from a JSON list of numbers."""
    edges = [finite_float(b) for b in bins] if isinstance(bins, list) else [None]
    if any(edge is None for edge in edges):
        raise EngineValidationError.single(field_name, MUST_BE_LIST_OF_NUMBERS)
    return tuple(edge for edge in edges if edge is not None)


class HistogramKind(QueryKind):
    name = "histogram"
    query_type = Histogram

    def parse(self, spec: Mapping[str, Any], weight: float) -> Histogram:
        column = column_named(spec)
        bins = spec.get("bins")
        edges = parse_edges(bins, "bins") if bins is not None else None
        return Histogram(column=column, bins=edges, weight=weight)

    def validate(self, query: Histogram, schema: Schema) -> None:
        column = declared_column(query, schema)
        if isinstance(column, CategoricalColumn):
            if query.bins is not None:
                raise EngineValidationError.single("bins", BINS_NUMERIC_ONLY)
            return
        if not isinstance(column, NumericColumn):
            raise EngineValidationError.single("column", HISTOGRAM_COLUMN)
        if query.bins is None:
            raise EngineValidationError.single("bins", NEEDS_EDGES)
        check_edges(query.bins, column, "bins")

    def to_dict(self, query: Histogram) -> dict[str, Any]:
        out: dict[str, Any] = {"column": query.column}
        if query.bins is not None:
            out["bins"] = list(query.bins)
        return out

    def columns(self, query: Histogram) -> tuple[str, ...]:
        return (query.column,)

    def sensitivity(self, query: Histogram, context: PlanContext) -> int:
        return context.rows_per_person * histogram_sensitivity(context.definition)

    def published_cells(self, query: Histogram, schema: Schema) -> int:
        column = schema.column(query.column)
        if isinstance(column, CategoricalColumn):
            return len(column.buckets)
        return len(query.bins or ()) - 1

    def disjoint_cells(self, query: Histogram, schema: Schema) -> int:
        # A record is counted in one bucket or bin (or, dropped, in none).
        return self.published_cells(query, schema)

    def simulated(
        self, query: Histogram, schema: Schema, n: int
    ) -> tuple[dict[str, int], list[int]]:
        """Categories in turn; bins in proportion to their widths."""
        column = schema.column(query.column)
        if isinstance(column, CategoricalColumn):
            counts = dict(zip(column.categories, even(n, len(column.categories)), strict=True))
            cells = {cell: counts.get(cell, 0) for cell in column.buckets}
        else:
            assert query.bins is not None
            widths = [b - a for a, b in itertools.pairwise(query.bins)]
            total = sum(widths)
            cells = dict(
                zip(bin_labels(query.bins), [round(n * w / total) for w in widths], strict=True)
            )
        return cells, list(cells.values())

    def plan(
        self, query: Histogram, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        mechanism = integer_mechanism(self.sensitivity(query, context), epsilon, delta, context)
        return single(query, epsilon, delta, mechanism)

    def aggregates(self, query: Histogram, schema: Schema) -> list[Aggregate]:
        column = schema.column(query.column)
        if isinstance(column, CategoricalColumn):
            return [
                CategoryCounts(
                    column=query.column,
                    categories=tuple(column.categories),
                    other=column.other,
                    fill=column.fill,
                )
            ]
        assert query.bins is not None
        return [BinCounts(**cleaned_numbers(query.column, schema), edges=tuple(query.bins))]

    def release(
        self, planned: PlannedStatistic, exact: list[int], schema: Schema, common: dict[str, Any]
    ) -> StatisticResult:
        query = planned.query
        column = schema.column(query.column)
        (mechanism,) = planned.mechanisms
        if isinstance(column, CategoricalColumn):
            labels = column.buckets
        else:
            assert query.bins is not None
            labels = bin_labels(query.bins)
        noisy = np.asarray(mechanism.release(exact), dtype=np.int64)
        noisy_cells = [max(0, int(v)) for v in noisy]
        halfwidth = mechanism.halfwidth()
        return StatisticResult(
            value=dict(zip(labels, noisy_cells, strict=True)),
            ci95={
                label: count_interval(v, halfwidth)
                for label, v in zip(labels, noisy_cells, strict=True)
            },
            rule=column.rule(),
            # A table of the same column in the release makes this histogram consistent with it.
            noisy_table=NoisyTable(
                variables=(
                    variable_key(
                        query.column,
                        tuple(labels),
                        (query.column,) if drops_records(column) else (),
                    ),
                ),
                cells=noisy,
                noise=mechanism.name,
                scale=mechanism.scale,
                publish=functools.partial(_published, tuple(labels), noisy, halfwidth),
            ),
            **common,
        )


def _published(
    labels: tuple[str, ...], noisy: np.ndarray, halfwidth: float, cells: np.ndarray
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Consistent ``cells`` as published, each interval widened by how far consistency moved
    the cell from its noisy count."""
    value = {label: float(c) for label, c in zip(labels, cells, strict=True)}
    ci95 = {
        label: widened_interval(value[label], int(n), halfwidth)
        for label, n in zip(labels, noisy, strict=True)
    }
    return value, ci95


KIND = register(HistogramKind())
