"""``count``: the number of records. Sensitivity: one record (c for a person of up to c rows),
0 where the definition makes the count public (Blowfish without a person key)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_engine.aggregates import Aggregate, RowCount
from privacy_engine.definitions import Definition
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    count_interval,
    integer_mechanism,
    register,
    single,
)
from privacy_engine.schema import Schema
from privacy_engine.sensitivity import count_sensitivity


@dataclass(frozen=True)
class Count:
    """Number of records."""

    weight: float = 1.0
    kind: str = field(default="count", init=False)
    column: None = field(default=None, init=False)


class CountKind(QueryKind):
    name = "count"
    query_type = Count

    def parse(self, spec: Mapping[str, Any], weight: float) -> Count:
        return Count(weight=weight)

    def validate(self, query: Count, schema: Schema) -> None:
        return None

    def to_dict(self, query: Count) -> dict[str, Any]:
        return {}

    def columns(self, query: Count) -> tuple[str, ...]:
        return ()

    def sensitivity(self, query: Count, context: PlanContext) -> int:
        return context.rows_per_person * count_sensitivity(context.definition)

    def is_public(self, query: Count, definition: Definition) -> bool:
        return count_sensitivity(definition) == 0

    def simulated(self, query: Count, schema: Schema, n: int) -> tuple[int, int]:
        return n, n

    def plan(
        self, query: Count, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        mechanism = integer_mechanism(self.sensitivity(query, context), epsilon, delta, context)
        return single(
            query,
            epsilon if mechanism.epsilon_spent else 0.0,
            delta if mechanism.delta_spent else 0.0,
            mechanism,
        )

    def aggregates(self, query: Count, schema: Schema) -> list[Aggregate]:
        return [RowCount()]

    def release(
        self, planned: PlannedStatistic, exact: int, schema: Schema, common: dict[str, Any]
    ) -> StatisticResult:
        (mechanism,) = planned.mechanisms
        noisy = max(0, int(mechanism.release([exact])[0]))
        return StatisticResult(
            value=noisy, ci95=count_interval(noisy, mechanism.halfwidth()), rule=None, **common
        )


KIND = register(CountKind())
