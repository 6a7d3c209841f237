"""``mean``: a noisy sum over a noisy count of the present values, each with half of the ε (all
of it to the sum when the count is public), post-processed into the bounds. Its interval holds
with probability ≥ 95% by a union bound over the parts' 97.5% intervals."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_engine.aggregates import Aggregate, PresentCount
from privacy_engine.kinds.base import (
    Mechanism,
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    cleaned_numbers,
    column_named,
    integer_mechanism,
    numeric_column,
    real_mechanism,
    register,
)
from privacy_engine.kinds.sum import grid_sum_of, typical_of
from privacy_engine.schema import NumericColumn, Schema
from privacy_engine.sensitivity import present_count_sensitivity, sum_sensitivity

# Each part's interval is built at 97.5% so that both hold together with probability ≥ 95%.
MEAN_PART_COVERAGE = 0.975


@dataclass(frozen=True)
class Mean:
    """Mean of a numeric column, post-processed from a noisy sum and a noisy count."""

    column: str
    weight: float = 1.0
    kind: str = field(default="mean", init=False)


def _mean_preview(
    column: NumericColumn,
    sum_part: Mechanism,
    count_part: Mechanism,
    declared_size: int | None,
) -> tuple[float | None, float | None]:
    if declared_size is None:
        return None, None
    n = float(declared_size)
    magnitude = column.max_magnitude
    expected = (sum_part.expected_abs_error + magnitude * count_part.expected_abs_error) / n
    halfwidth = (
        sum_part.halfwidth(MEAN_PART_COVERAGE)
        + magnitude * count_part.halfwidth(MEAN_PART_COVERAGE)
    ) / n
    return min(expected, column.width), min(halfwidth, column.width)


class MeanKind(QueryKind):
    name = "mean"
    query_type = Mean

    def parse(self, spec: Mapping[str, Any], weight: float) -> Mean:
        return Mean(column=column_named(spec), weight=weight)

    def validate(self, query: Mean, schema: Schema) -> None:
        numeric_column(query, schema)

    def to_dict(self, query: Mean) -> dict[str, Any]:
        return {"column": query.column}

    def columns(self, query: Mean) -> tuple[str, ...]:
        return (query.column,)

    def sensitivity(self, query: Mean, context: PlanContext) -> float:
        """That of the sum part, the one a mean's preview and result publish."""
        column = context.schema.column(query.column)
        assert isinstance(column, NumericColumn)
        return sum_sensitivity(
            {query.column: column},
            context.definition,
            norm=context.norm,
            rows_per_person=context.rows_per_person,
        )

    def simulated_typical_columns(self, query: Mean) -> tuple[str, ...]:
        return (query.column,)

    def simulated(self, query: Mean, schema: Schema, n: int) -> tuple[float, tuple[float, int]]:
        typical = typical_of(query.column, schema)
        return typical, (n * typical, n)

    def plan(
        self, query: Mean, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        column = context.schema.column(query.column)
        assert isinstance(column, NumericColumn)
        c = context.rows_per_person
        count_part_sensitivity = c * present_count_sensitivity(column, context.definition)
        # The count part is free when it is public (Blowfish with filled missing values).
        share = 0.5 if count_part_sensitivity else 1.0
        sum_part = real_mechanism(
            self.sensitivity(query, context),
            epsilon * share,
            delta * share,
            context,
        )
        count_part = integer_mechanism(
            count_part_sensitivity, epsilon * share, delta * share, context
        )
        expected, halfwidth = _mean_preview(
            column, sum_part, count_part, context.schema.declared_size
        )
        return PlannedStatistic(
            query=query,
            epsilon=epsilon,
            delta=delta,
            mechanism=f"{sum_part.name}+{count_part.name}"
            if count_part_sensitivity
            else sum_part.name,
            sensitivity=sum_part.sensitivity,
            noise_scale=sum_part.scale,
            expected_abs_error=expected,
            ci95_halfwidth=halfwidth,
            mechanisms=(sum_part, count_part),
        )

    def aggregates(self, query: Mean, schema: Schema) -> list[Aggregate]:
        return [
            grid_sum_of(query.column, schema),
            PresentCount(**cleaned_numbers(query.column, schema)),
        ]

    def exact_answer(self, query: Mean, answers: list[Any]) -> tuple[float, int]:
        exact_sum, exact_count = answers
        return exact_sum, exact_count

    def release(
        self,
        planned: PlannedStatistic,
        exact: tuple[float, int],
        schema: Schema,
        common: dict[str, Any],
    ) -> StatisticResult:
        column = schema.column(planned.query.column)
        assert isinstance(column, NumericColumn)
        exact_sum, exact_count = exact
        sum_part, count_part = planned.mechanisms
        noisy_sum = sum_part.release(exact_sum)
        raw_count = int(count_part.release([exact_count])[0])
        denominator = max(1, raw_count)
        mean = min(column.upper, max(column.lower, noisy_sum / denominator))
        if raw_count >= 1:
            spread = (
                sum_part.halfwidth(MEAN_PART_COVERAGE)
                + column.max_magnitude * count_part.halfwidth(MEAN_PART_COVERAGE)
            ) / denominator
            interval = [max(column.lower, mean - spread), min(column.upper, mean + spread)]
        else:
            interval = [column.lower, column.upper]
        parts = [
            {
                "role": role,
                "mechanism": m.name,
                "epsilon": m.epsilon_spent,
                "delta": m.delta_spent,
                "sensitivity": m.sensitivity,
                "noise_scale": m.scale,
            }
            for role, m in (("sum", sum_part), ("count", count_part))
        ]
        return StatisticResult(value=mean, ci95=interval, rule=column.rule(), parts=parts, **common)


KIND = register(MeanKind())
