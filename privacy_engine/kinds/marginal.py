"""``marginal``: a contingency table (2-way marginal) of two columns, each categorical or a
numeric column cut into bins (``"bins": {"age": [0, 18, 65, 100]}``), with its row, column and
grand totals.

Each record falls in at most one cell (a record either column's rules drop is in none), so the
cell vector has the sensitivity of a histogram under the definition (histogram_sensitivity: one
cell under add/remove, two under Blowfish's replacement), times c for a person of up to c rows.
The cells get the same integer mechanism as a histogram, drawn once for the whole table.

Consistency is post-processing with public facts only: a count is never negative, so each noisy
cell below 0 is published as 0 (which never moves it away from its true count), and every total
is the sum of the published cells it covers. The published totals therefore agree with the
published table exactly. A cell's 95% interval is the mechanism's; a total's is simultaneous over
the table: every cell within its half-width h at coverage 1 − 0.05/K (K cells, Bonferroni) puts a
total of m cells within m·h.

Cells are labelled by the JSON array of their two buckets, ``["F", "north"]``, and totals by
``null`` in place of the bucket summed over (``["F", null]``, ``[null, null]``): unambiguous
whatever the category names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_engine.aggregates import Aggregate, BinCounts, CategoryCounts, PairCounts
from privacy_engine.errors import EngineValidationError
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    cleaned_numbers,
    count_interval,
    even,
    integer_mechanism,
    register,
    single,
)
from privacy_engine.kinds.histogram import bin_labels, check_edges, parse_edges
from privacy_engine.schema import CategoricalColumn, NumericColumn, Schema
from privacy_engine.sensitivity import histogram_sensitivity

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


def cell_label(row: str | None, column: str | None) -> str:
    return json.dumps([row, column], ensure_ascii=False)


def _shown(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "…"  # never echo a long input whole


def side_of(query: Marginal, index: int, schema: Schema) -> Side:
    name, edges = query.columns[index], query.bins[index]
    column = schema.columns.get(name)
    if isinstance(column, CategoricalColumn):
        if edges is not None:
            raise EngineValidationError.single("bins", f"'{_shown(name)}' is categorical: no bins")
        counts = CategoryCounts(
            column=name, categories=tuple(column.categories), other=column.other, fill=column.fill
        )
        return Side(column.buckets, column.rule(), counts, tuple(column.categories))
    if isinstance(column, NumericColumn):
        if edges is None:
            raise EngineValidationError.single(
                "bins", f"give bin edges for the numeric column '{_shown(name)}'"
            )
        check_edges(edges, column, "bins")
        labels = bin_labels(edges)
        counts = BinCounts(**cleaned_numbers(name, schema), edges=edges)
        return Side(labels, column.rule(), counts, labels)
    raise EngineValidationError.single(
        "columns", f"'{_shown(name)}' is neither a categorical nor a numeric column"
    )


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


def _cells_covered(label: list[str | None], first: Side, second: Side) -> int:
    """How many cells a published number sums: 1 for a cell, a row's or a column's worth for
    their totals, all of them for the grand total."""
    row, column = label
    rows = 1 if row is not None else len(first.buckets)
    columns = 1 if column is not None else len(second.buckets)
    return rows * columns


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
            raise EngineValidationError.single(
                "columns", 'name two different columns, e.g. ["sex", "region"]'
            )
        bins = spec.get("bins")
        if bins is not None and (
            not isinstance(bins, dict) or not set(bins) <= set(columns) or not bins
        ):
            raise EngineValidationError.single(
                "bins", 'map a numeric column to its edges, e.g. {"age": [0, 18, 65, 100]}'
            )
        edges = tuple(
            parse_edges(bins[name], "bins") if bins and name in bins else None for name in columns
        )
        return Marginal(columns=(columns[0], columns[1]), weight=weight, bins=edges)

    def validate(self, query: Marginal, schema: Schema) -> None:
        if len(query.columns) != 2 or query.columns[0] == query.columns[1]:
            raise EngineValidationError.single("columns", "name two different columns")
        first, second = _sides(query, schema)
        cells = len(first.buckets) * len(second.buckets)
        if cells > MAX_CELLS:
            raise EngineValidationError.single(
                "columns", f"the table would have {cells:,} cells; at most {MAX_CELLS:,} allowed"
            )

    def to_dict(self, query: Marginal) -> dict[str, Any]:
        out: dict[str, Any] = {"columns": list(query.columns)}
        bins = {
            name: list(edges)
            for name, edges in zip(query.columns, query.bins, strict=True)
            if edges is not None
        }
        if bins:
            out["bins"] = bins
        return out

    def columns(self, query: Marginal) -> tuple[str, ...]:
        return query.columns

    def published_cells(self, query: Marginal, schema: Schema) -> int:
        rows, columns = (len(side.buckets) for side in _sides(query, schema))
        return rows * columns + rows + columns + 1

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
        noisy = [max(0, int(v)) for v in mechanism.release(exact)]
        width = len(second.buckets)
        table = {
            (a, b): noisy[i * width + j]
            for i, a in enumerate(first.buckets)
            for j, b in enumerate(second.buckets)
        }
        cell_halfwidth = mechanism.halfwidth()
        joint_halfwidth = mechanism.halfwidth(1.0 - 0.05 / len(noisy))
        value = _with_totals(table, first, second)
        ci95 = {}
        for label, count in value.items():
            covered = _cells_covered(json.loads(label), first, second)
            is_total = None in json.loads(label)
            halfwidth = covered * joint_halfwidth if is_total else cell_halfwidth
            ci95[label] = count_interval(count, halfwidth)
        rule = (
            f"{first.rule} ({query.columns[0]}); {second.rule} ({query.columns[1]}); "
            "negative cells published as 0; each total is the sum of the published cells it "
            "covers, its interval simultaneous over the table"
        )
        return StatisticResult(
            value=value, ci95=ci95, rule=rule, columns=list(query.columns), **common
        )


KIND = register(MarginalKind())
