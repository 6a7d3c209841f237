"""``histogram``: records per declared category (plus the other bucket), or per bin of a numeric
column. One record moves one record between cells: the sensitivity is that of the definition
(histogram_sensitivity), times c for a person of up to c rows."""

from __future__ import annotations

from typing import Any

from privacy_engine.aggregates import Aggregate, BinCounts, CategoryCounts
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    StatisticResult,
    cleaned_numbers,
    count_interval,
    integer_mechanism,
    register,
    single,
)
from privacy_engine.queries import Histogram, bin_labels
from privacy_engine.schema import CategoricalColumn, Schema
from privacy_engine.sensitivity import histogram_sensitivity


class HistogramKind:
    name = "histogram"
    query_type = Histogram

    def columns(self, query: Histogram) -> tuple[str, ...]:
        return (query.column,)

    def plan(
        self, query: Histogram, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        sensitivity = context.rows_per_person * histogram_sensitivity(context.definition)
        return single(
            query, epsilon, delta, integer_mechanism(sensitivity, epsilon, delta, context)
        )

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

    def exact_answer(self, query: Histogram, answers: list[Any]) -> list[int]:
        (cells,) = answers
        return cells

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
        noisy_cells = [max(0, int(v)) for v in mechanism.release(exact)]
        halfwidth = mechanism.halfwidth()
        return StatisticResult(
            value=dict(zip(labels, noisy_cells, strict=True)),
            ci95={
                label: count_interval(v, halfwidth)
                for label, v in zip(labels, noisy_cells, strict=True)
            },
            rule=column.rule(),
            **common,
        )


KIND = register(HistogramKind())
