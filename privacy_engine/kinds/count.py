"""``count``: the number of records. Sensitivity: one record (c for a person of up to c rows),
0 where the definition makes the count public (Blowfish without a person key)."""

from __future__ import annotations

from typing import Any

from privacy_engine.aggregates import Aggregate, RowCount
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    StatisticResult,
    count_interval,
    integer_mechanism,
    register,
    single,
)
from privacy_engine.queries import Count
from privacy_engine.schema import Schema
from privacy_engine.sensitivity import count_sensitivity


class CountKind:
    name = "count"
    query_type = Count

    def columns(self, query: Count) -> tuple[str, ...]:
        return ()

    def plan(
        self, query: Count, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        sensitivity = context.rows_per_person * count_sensitivity(context.definition)
        mechanism = integer_mechanism(sensitivity, epsilon, delta, context)
        return single(
            query,
            epsilon if mechanism.epsilon_spent else 0.0,
            delta if mechanism.delta_spent else 0.0,
            mechanism,
        )

    def aggregates(self, query: Count, schema: Schema) -> list[Aggregate]:
        return [RowCount()]

    def exact_answer(self, query: Count, answers: list[Any]) -> int:
        (count,) = answers
        return count

    def release(
        self, planned: PlannedStatistic, exact: int, schema: Schema, common: dict[str, Any]
    ) -> StatisticResult:
        (mechanism,) = planned.mechanisms
        noisy = max(0, int(mechanism.release([exact])[0]))
        return StatisticResult(
            value=noisy, ci95=count_interval(noisy, mechanism.halfwidth()), rule=None, **common
        )


KIND = register(CountKind())
