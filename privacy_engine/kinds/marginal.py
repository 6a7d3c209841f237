"""``marginal``: a contingency table (2-way marginal) of two categorical columns, with its row,
column and grand totals.

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

from privacy_engine.aggregates import Aggregate, CategoryCounts, PairCounts
from privacy_engine.errors import EngineValidationError
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    count_interval,
    even,
    integer_mechanism,
    register,
    single,
)
from privacy_engine.schema import CategoricalColumn, Schema
from privacy_engine.sensitivity import histogram_sensitivity

# Bounds one request's work and its page: cells of one table.
MAX_CELLS = 2500


@dataclass(frozen=True)
class Marginal:
    """Records per pair of buckets of two categorical ``columns`` (rows, then columns)."""

    columns: tuple[str, str]
    weight: float = 1.0
    kind: str = field(default="marginal", init=False)
    column: None = field(default=None, init=False)


def cell_label(row: str | None, column: str | None) -> str:
    return json.dumps([row, column], ensure_ascii=False)


def _categorical(name: str, schema: Schema) -> CategoricalColumn:
    column = schema.columns.get(name)
    if not isinstance(column, CategoricalColumn):
        shown = name if len(name) <= 60 else name[:57] + "…"  # never echo a long input whole
        raise EngineValidationError.single("columns", f"'{shown}' is not a categorical column")
    return column


def _counts(name: str, schema: Schema) -> CategoryCounts:
    column = _categorical(name, schema)
    return CategoryCounts(
        column=name, categories=tuple(column.categories), other=column.other, fill=column.fill
    )


def _with_totals(
    table: dict[tuple[str, str], int], first: CategoricalColumn, second: CategoricalColumn
) -> dict[str, int]:
    """The cells, then each row's, each column's and the grand total, as published labels."""
    value = {cell_label(a, b): count for (a, b), count in table.items()}
    for a in first.buckets:
        value[cell_label(a, None)] = sum(table[a, b] for b in second.buckets)
    for b in second.buckets:
        value[cell_label(None, b)] = sum(table[a, b] for a in first.buckets)
    value[cell_label(None, None)] = sum(table.values())
    return value


def _cells_covered(
    label: list[str | None], first: CategoricalColumn, second: CategoricalColumn
) -> int:
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
                "columns", 'name two different categorical columns, e.g. ["sex", "region"]'
            )
        return Marginal(columns=(columns[0], columns[1]), weight=weight)

    def validate(self, query: Marginal, schema: Schema) -> None:
        if len(query.columns) != 2 or query.columns[0] == query.columns[1]:
            raise EngineValidationError.single("columns", "name two different columns")
        first, second = (_categorical(name, schema) for name in query.columns)
        cells = len(first.buckets) * len(second.buckets)
        if cells > MAX_CELLS:
            raise EngineValidationError.single(
                "columns", f"the table would have {cells:,} cells; at most {MAX_CELLS:,} allowed"
            )

    def to_dict(self, query: Marginal) -> dict[str, Any]:
        return {"columns": list(query.columns)}

    def columns(self, query: Marginal) -> tuple[str, ...]:
        return query.columns

    def published_cells(self, query: Marginal, schema: Schema) -> int:
        rows, columns = (len(_categorical(name, schema).buckets) for name in query.columns)
        return rows * columns + rows + columns + 1

    def sensitivity(self, query: Marginal, context: PlanContext) -> int:
        return context.rows_per_person * histogram_sensitivity(context.definition)

    def simulated(
        self, query: Marginal, schema: Schema, n: int
    ) -> tuple[dict[str, int], list[int]]:
        """Records spread evenly over the declared categories' pairs (other buckets empty)."""
        first, second = (_categorical(name, schema) for name in query.columns)
        spread = iter(even(n, len(first.categories) * len(second.categories)))
        table = {
            (a, b): next(spread) if a in first.categories and b in second.categories else 0
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
        first, second = (_counts(name, schema) for name in query.columns)
        return [PairCounts(first=first, second=second)]

    def release(
        self, planned: PlannedStatistic, exact: list[int], schema: Schema, common: dict[str, Any]
    ) -> StatisticResult:
        query = planned.query
        first, second = (_categorical(name, schema) for name in query.columns)
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
            f"{first.rule()} ({query.columns[0]}); {second.rule()} ({query.columns[1]}); "
            "negative cells published as 0; each total is the sum of the published cells it "
            "covers, its interval simultaneous over the table"
        )
        return StatisticResult(
            value=value, ci95=ci95, rule=rule, columns=list(query.columns), **common
        )


KIND = register(MarginalKind())
