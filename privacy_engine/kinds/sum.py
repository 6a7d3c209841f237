"""``sum``: the sum of a numeric column after clamping to its public bounds, or with ``columns``
the vector of sums of several (the article's q_sum), answered together. Sums are computed exactly
on their grid (exact_sums.py) and the sensitivity covers that rounding (sum_sensitivity)."""

from __future__ import annotations

from typing import Any

from privacy_engine.aggregates import Aggregate, GridSum
from privacy_engine.exact_sums import sum_grid
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    StatisticResult,
    cleaned_numbers,
    real_mechanism,
    register,
    signed_clamp,
    single,
)
from privacy_engine.queries import Sum
from privacy_engine.schema import NumericColumn, Schema
from privacy_engine.sensitivity import sum_sensitivity


def grid_sum_of(name: str, schema: Schema) -> GridSum:
    """The exact-sum aggregate of one numeric column, on the grid its sensitivity assumes."""
    column = schema.column(name)
    assert isinstance(column, NumericColumn)
    return GridSum(**cleaned_numbers(name, schema), grid=sum_grid(column.max_magnitude))


class SumKind:
    name = "sum"
    query_type = Sum

    def columns(self, query: Sum) -> tuple[str, ...]:
        return query.summed_columns

    def plan(
        self, query: Sum, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        columns = {name: context.schema.column(name) for name in query.summed_columns}
        sensitivity = sum_sensitivity(
            columns,  # type: ignore[arg-type]
            context.definition,
            norm=context.norm,
            rows_per_person=context.rows_per_person,
        )
        mechanism = real_mechanism(sensitivity, epsilon, delta, context, vector=bool(query.columns))
        return single(query, epsilon, delta, mechanism)

    def aggregates(self, query: Sum, schema: Schema) -> list[Aggregate]:
        return [grid_sum_of(name, schema) for name in query.summed_columns]

    def exact_answer(self, query: Sum, answers: list[Any]) -> float | list[float]:
        if query.columns:
            return list(answers)
        (total,) = answers
        return total

    def release(
        self, planned: PlannedStatistic, exact: Any, schema: Schema, common: dict[str, Any]
    ) -> StatisticResult:
        query = planned.query
        (mechanism,) = planned.mechanisms
        half = mechanism.halfwidth()
        if query.columns:
            value, ci95 = {}, {}
            for name, noisy in zip(query.columns, mechanism.release(exact), strict=True):
                column = schema.column(name)
                assert isinstance(column, NumericColumn)
                v, low, high = signed_clamp(noisy, noisy - half, noisy + half, column)
                value[name], ci95[name] = v, [low, high]
            rules = "; ".join(f"{name}: {schema.column(name).rule()}" for name in query.columns)
            return StatisticResult(
                value=value,
                ci95=ci95,
                rule=rules,
                **{**common, "column": None, "columns": list(query.columns)},
            )
        column = schema.column(query.column)
        assert isinstance(column, NumericColumn)
        noisy_sum = mechanism.release(exact)
        value, low, high = signed_clamp(noisy_sum, noisy_sum - half, noisy_sum + half, column)
        return StatisticResult(value=value, ci95=[low, high], rule=column.rule(), **common)


KIND = register(SumKind())
