"""``sum``: the sum of a numeric column after clamping to its public bounds, or with ``columns``
the vector of sums of several (the article's q_sum), answered together. Sums are computed exactly
on their grid (exact_sums.py) and the sensitivity covers that rounding (sum_sensitivity)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_engine.aggregates import Aggregate, GridSum
from privacy_engine.errors import (
    MUST_BE_DISTINCT_NAMES,
    NOT_NUMERIC,
    EngineValidationError,
)
from privacy_engine.exact_sums import sum_grid
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    cleaned_numbers,
    column_named,
    columns_rule,
    numeric_column,
    real_mechanism,
    register,
    signed_clamp,
    single,
)
from privacy_engine.schema import NumericColumn, Schema
from privacy_engine.sensitivity import sum_sensitivity


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


def grid_sum_of(name: str, schema: Schema) -> GridSum:
    """The exact-sum aggregate of one numeric column, on the grid its sensitivity assumes."""
    column = schema.column(name)
    assert isinstance(column, NumericColumn)
    return GridSum(**cleaned_numbers(name, schema), grid=sum_grid(column.max_magnitude))


def typical_of(name: str, schema: Schema) -> float:
    """A simulated table's every value of a numeric column: its declared typical value, else
    the middle of its declared range (NumericColumn.simulated_value)."""
    column = schema.column(name)
    assert isinstance(column, NumericColumn)
    return column.simulated_value


class SumKind(QueryKind):
    name = "sum"
    query_type = Sum

    def parse(self, spec: Mapping[str, Any], weight: float) -> Sum:
        columns = spec.get("columns")
        if columns is None:
            return Sum(column=column_named(spec), weight=weight)
        if (
            not isinstance(columns, list)
            or not columns
            or not all(isinstance(c, str) for c in columns)
            or len(set(columns)) != len(columns)
        ):
            raise EngineValidationError.single("columns", MUST_BE_DISTINCT_NAMES)
        return Sum(columns=tuple(columns), weight=weight)

    def validate(self, query: Sum, schema: Schema) -> None:
        if not query.columns:
            numeric_column(query, schema)
            return
        # Checked here too, for queries built in Python: a repeated column would count twice in
        # the vector but once in its sensitivity.
        if len(set(query.columns)) != len(query.columns):
            raise EngineValidationError.single("columns", MUST_BE_DISTINCT_NAMES)
        for name in query.columns:
            if not isinstance(schema.columns.get(name), NumericColumn):
                raise EngineValidationError.single("columns", NOT_NUMERIC, name=name)

    def to_dict(self, query: Sum) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if query.column is not None:
            out["column"] = query.column
        if query.columns:
            out["columns"] = list(query.columns)
        return out

    def columns(self, query: Sum) -> tuple[str, ...]:
        return query.summed_columns

    def sensitivity(self, query: Sum, context: PlanContext) -> float:
        columns = {name: context.schema.column(name) for name in query.summed_columns}
        return sum_sensitivity(
            columns,  # type: ignore[arg-type]  # validate checked they are numeric
            context.definition,
            norm=context.norm,
            rows_per_person=context.rows_per_person,
        )

    def published_cells(self, query: Sum, schema: Schema) -> int:
        return len(query.summed_columns)

    def simulated_typical_columns(self, query: Sum) -> tuple[str, ...]:
        return query.summed_columns

    def simulated(self, query: Sum, schema: Schema, n: int) -> tuple[Any, Any]:
        """n times each column's typical value (the middle of its range without one)."""
        totals = {name: n * typical_of(name, schema) for name in query.summed_columns}
        if query.columns:
            return totals, [totals[name] for name in query.columns]
        (total,) = totals.values()
        return total, total

    def plan(
        self, query: Sum, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        mechanism = real_mechanism(
            self.sensitivity(query, context), epsilon, delta, context, vector=bool(query.columns)
        )
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
            return StatisticResult(
                value=value,
                ci95=ci95,
                rule=columns_rule(query.columns, schema),
                **{**common, "column": None, "columns": list(query.columns)},
            )
        column = schema.column(query.column)
        assert isinstance(column, NumericColumn)
        noisy_sum = mechanism.release(exact)
        value, low, high = signed_clamp(noisy_sum, noisy_sum - half, noisy_sum + half, column)
        return StatisticResult(value=value, ci95=[low, high], rule=column.rule(), **common)


KIND = register(SumKind())
