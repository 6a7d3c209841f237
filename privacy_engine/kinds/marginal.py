"""``marginal``: a contingency table (2-way marginal) of two columns, each categorical or a
numeric column cut into bins (``"bins": {"age": [0, 18, 65, 100]}``), with its row, column and
grand totals.

Each record falls in at most one cell (a record either column's rules drop is in none), so the
cell vector has the sensitivity of a histogram under the definition (histogram_sensitivity: one
cell under add/remove, two under Blowfish's replacement), times c for a person of up to c rows.
The cells get the same integer mechanism as a histogram, drawn once for the whole table.

Consistency is post-processing of the noisy cells with public facts only (consistency.py): the
table's row and column totals are its noisy ones made non-negative and summing to its noisy grand
total, and the cells are raked to them from the noisy cells, so every cell is non-negative and
every published total is exactly the sum of the published cells it covers. Within a release,
tables and histograms that share a column (with the same buckets) are then made consistent with
one another the same way (release.py). Each number's 95% interval is its own noisy estimate's
(a cell's noise, or the sum of the noises of the cells a total covers) widened by how far
consistency moved it.

Cells are labelled by the JSON array of their two buckets, ``["F", "north"]``, and totals by
``null`` in place of the bucket summed over (``["F", null]``, ``[null, null]``): unambiguous
whatever the category names.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privacy_engine.aggregates import Aggregate, BinCounts, CategoryCounts, PairCounts
from privacy_engine.consistency import (
    NoisyTable,
    drops_records,
    make_consistent,
    sum_halfwidth,
    variable_key,
    widened_interval,
)
from privacy_engine.errors import (
    CATEGORICAL_NO_BINS,
    EDGES_BY_COLUMN,
    GIVE_EDGES,
    NEITHER_KIND,
    TOO_MANY_CELLS,
    TWO_COLUMNS,
    TWO_COLUMNS_EXAMPLE,
    EngineValidationError,
)
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    cleaned_numbers,
    columns_rule,
    even,
    integer_mechanism,
    register,
    single,
)
from privacy_engine.kinds.histogram import bin_labels, check_edges, parse_edges
from privacy_engine.schema import CategoricalColumn, NumericColumn, Schema
from privacy_engine.sensitivity import histogram_sensitivity
from privacy_engine.wording import CLAUSE_SEPARATOR, gettext_noop, phrase

RAKED = gettext_noop(
    "the noisy table made consistent with its totals and non-negative (raking to "
    "non-negative row and column totals)"
)
WIDENED = gettext_noop(
    "each interval is widened by how far that moved the number from its own noisy estimate"
)

# Bounds one request's work and its page: cells of one table.
MAX_CELLS = 2500


@dataclass(frozen=True)
class Marginal:
    """Records per pair of buckets of two ``columns`` (rows, then columns); ``bins`` holds the
    bin edges of each numeric column, None for a categorical one."""

    columns: tuple[str, str]
    weight: float = 1.0
    bins: tuple[tuple[float, ...] | None, tuple[float, ...] | None] = (None, None)
    kind: str = field(default="marginal", init=False)
    column: None = field(default=None, init=False)


@dataclass(frozen=True)
class Side:
    """One of the table's two columns: its buckets (categories, or bins), its declared rule and
    what the engines count it by."""

    buckets: tuple[str, ...]
    rule: str
    counts: CategoryCounts | BinCounts
    # The declared categories, which a simulated table fills evenly (all bins for a numeric side).
    filled: tuple[str, ...]
    # Whether the column's rules can leave a record out of the table.
    drops: bool


def cell_label(row: str | None, column: str | None) -> str:
    return json.dumps([row, column], ensure_ascii=False)


def _shown(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "…"  # never echo a long input whole


def parse_column_edges(bins: Any, columns: list[str]) -> tuple[tuple[float, ...] | None, ...]:
    """Each column's edges from a spec's ``bins`` (``{"age": [0, 18, 65, 100]}``, numeric
    columns only), None for a column without; refused on ``bins`` or ``bins.<column>``."""
    if bins is not None and (
        not isinstance(bins, dict) or not set(bins) <= set(columns) or not bins
    ):
        raise EngineValidationError.single("bins", EDGES_BY_COLUMN)
    return tuple(
        parse_edges(bins[name], f"bins.{name}") if bins and name in bins else None
        for name in columns
    )


def columns_with_edges(
    columns: tuple[str, ...], bins: tuple[tuple[float, ...] | None, ...]
) -> dict[str, Any]:
    """The spec's ``columns`` and, when any column has edges, ``bins`` (what
    :func:`parse_column_edges` reads back)."""
    out: dict[str, Any] = {"columns": list(columns)}
    edges = {name: list(e) for name, e in zip(columns, bins, strict=True) if e is not None}
    if edges:
        out["bins"] = edges
    return out


def side_of(query: Marginal, index: int, schema: Schema) -> Side:
    name, edges = query.columns[index], query.bins[index]
    column = schema.columns.get(name)
    # Each column's edges are their own field, so a form can show the error beside them.
    field_name = f"bins.{name}"
    if isinstance(column, CategoricalColumn):
        if edges is not None:
            raise EngineValidationError.single(field_name, CATEGORICAL_NO_BINS, name=_shown(name))
        counts = CategoryCounts(
            column=name, categories=tuple(column.categories), other=column.other, fill=column.fill
        )
        return Side(
            column.buckets, column.rule(), counts, tuple(column.categories), drops_records(column)
        )
    if isinstance(column, NumericColumn):
        if edges is None:
            raise EngineValidationError.single(field_name, GIVE_EDGES, name=_shown(name))
        check_edges(edges, column, field_name)
        labels = bin_labels(edges)
        counts = BinCounts(**cleaned_numbers(name, schema), edges=edges)
        return Side(labels, column.rule(), counts, labels, drops_records(column))
    raise EngineValidationError.single("columns", NEITHER_KIND, name=_shown(name))


def _sides(query: Marginal, schema: Schema) -> tuple[Side, Side]:
    return side_of(query, 0, schema), side_of(query, 1, schema)


def _with_totals(table: dict[tuple[str, str], int], first: Side, second: Side) -> dict[str, int]:
    """The cells, then each row's, each column's and the grand total, as published labels."""
    value = {cell_label(a, b): count for (a, b), count in table.items()}
    for a in first.buckets:
        value[cell_label(a, None)] = sum(table[a, b] for b in second.buckets)
    for b in second.buckets:
        value[cell_label(None, b)] = sum(table[a, b] for a in first.buckets)
    value[cell_label(None, None)] = sum(table.values())
    return value


class MarginalKind(QueryKind):
    name = "marginal"
    query_type = Marginal

    def parse(self, spec: Mapping[str, Any], weight: float) -> Marginal:
        columns = spec.get("columns")
        if (
            not isinstance(columns, list)
            or len(columns) != 2
            or not all(isinstance(c, str) for c in columns)
            or columns[0] == columns[1]
        ):
            raise EngineValidationError.single("columns", TWO_COLUMNS_EXAMPLE)
        edges = parse_column_edges(spec.get("bins"), columns)
        return Marginal(columns=(columns[0], columns[1]), weight=weight, bins=edges)

    def validate(self, query: Marginal, schema: Schema) -> None:
        if len(query.columns) != 2 or query.columns[0] == query.columns[1]:
            raise EngineValidationError.single("columns", TWO_COLUMNS)
        first, second = _sides(query, schema)
        cells = len(first.buckets) * len(second.buckets)
        if cells > MAX_CELLS:
            raise EngineValidationError.single(
                "columns", TOO_MANY_CELLS, cells=f"{cells:,}", limit=f"{MAX_CELLS:,}"
            )

    def to_dict(self, query: Marginal) -> dict[str, Any]:
        return columns_with_edges(query.columns, query.bins)

    def columns(self, query: Marginal) -> tuple[str, ...]:
        return query.columns

    def published_cells(self, query: Marginal, schema: Schema) -> int:
        rows, columns = (len(side.buckets) for side in _sides(query, schema))
        return rows * columns + rows + columns + 1

    def disjoint_cells(self, query: Marginal, schema: Schema) -> int:
        # The noise is drawn on the rows × columns cells, a record in at most one; the totals
        # are sums of those noisy cells (post-processing), not further draws.
        rows, columns = (len(side.buckets) for side in _sides(query, schema))
        return rows * columns

    def sensitivity(self, query: Marginal, context: PlanContext) -> int:
        return context.rows_per_person * histogram_sensitivity(context.definition)

    def simulated(
        self, query: Marginal, schema: Schema, n: int
    ) -> tuple[dict[str, int], list[int]]:
        """Records spread evenly over the declared categories' (and bins') pairs (other buckets
        empty)."""
        first, second = _sides(query, schema)
        spread = iter(even(n, len(first.filled) * len(second.filled)))
        table = {
            (a, b): next(spread) if a in first.filled and b in second.filled else 0
            for a in first.buckets
            for b in second.buckets
        }
        return _with_totals(table, first, second), list(table.values())

    def plan(
        self, query: Marginal, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        mechanism = integer_mechanism(self.sensitivity(query, context), epsilon, delta, context)
        return single(query, epsilon, delta, mechanism)

    def aggregates(self, query: Marginal, schema: Schema) -> list[Aggregate]:
        first, second = _sides(query, schema)
        return [PairCounts(first=first.counts, second=second.counts)]

    def release(
        self, planned: PlannedStatistic, exact: list[int], schema: Schema, common: dict[str, Any]
    ) -> StatisticResult:
        query = planned.query
        first, second = _sides(query, schema)
        (mechanism,) = planned.mechanisms
        shape = (len(first.buckets), len(second.buckets))
        universe = tuple(
            name for name, side in zip(query.columns, (first, second), strict=True) if side.drops
        )
        noisy = np.asarray(mechanism.release(exact), dtype=np.int64).reshape(shape)
        table = NoisyTable(
            variables=tuple(
                variable_key(name, side.buckets, universe)
                for name, side in zip(query.columns, (first, second), strict=True)
            ),
            cells=noisy,
            noise=mechanism.name,
            scale=mechanism.scale,
            publish=functools.partial(_published, first, second, noisy, mechanism),
        )
        (cells,) = make_consistent([table])
        value, ci95 = table.publish(cells)
        rule = CLAUSE_SEPARATOR.join(
            [columns_rule(query.columns, schema), phrase(RAKED), phrase(WIDENED)]
        )
        return StatisticResult(
            value=value,
            ci95=ci95,
            rule=rule,
            columns=list(query.columns),
            noisy_table=table,
            **common,
        )


def _published(
    first: Side, second: Side, noisy: np.ndarray, mechanism: Any, cells: np.ndarray
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Value and intervals of consistent ``cells``: each published number p with its own noisy
    estimate n (a cell, or the sum of the noisy cells a total covers) and that estimate's 95%
    half-width h gets [p − |p − n| − h, p + |p − n| + h]."""
    rows, columns = noisy.shape
    table = {
        (a, b): float(cells[i, j])
        for i, a in enumerate(first.buckets)
        for j, b in enumerate(second.buckets)
    }
    value = _with_totals(table, first, second)
    noise, scale = mechanism.name, mechanism.scale
    cell, row, column, grand = (
        sum_halfwidth(m, noise, scale) for m in (1, columns, rows, rows * columns)
    )
    ci95 = {}
    for i, a in enumerate(first.buckets):
        for j, b in enumerate(second.buckets):
            ci95[cell_label(a, b)] = widened_interval(table[a, b], noisy[i, j], cell)
        label = cell_label(a, None)
        ci95[label] = widened_interval(value[label], noisy[i].sum(), row)
    for j, b in enumerate(second.buckets):
        label = cell_label(None, b)
        ci95[label] = widened_interval(value[label], noisy[:, j].sum(), column)
    label = cell_label(None, None)
    ci95[label] = widened_interval(value[label], noisy.sum(), grand)
    return value, {label: ci95[label] for label in value}


KIND = register(MarginalKind())
