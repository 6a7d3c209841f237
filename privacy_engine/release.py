"""Planning and running a release: ε split by weight, previews from formulas, noisy answers.

A plan needs only public facts (schema, definition, queries); it builds the mechanisms and so knows
each statistic's ε, sensitivity, noise scale and accuracy before any data is touched or any budget
is spent. ``run_queries`` is the only function here that reads data.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext
from typing import Any

import numpy as np
import pandas as pd

from privacy_engine.definitions import Definition, definition_from_dict
from privacy_engine.errors import EngineValidationError, prefix_errors
from privacy_engine.mechanisms import GeometricMechanism, LaplaceMechanism
from privacy_engine.noise import NoiseSource
from privacy_engine.queries import Count, Histogram, Mean, Query, Sum, bin_labels, query_from_dict
from privacy_engine.schema import CategoricalColumn, NumericColumn, Schema, schema_from_dict
from privacy_engine.sensitivity import count_sensitivity, sum_sensitivity

# Budget amounts are Decimals with this many places, rounded up so the ledger never under-charges.
BUDGET_PLACES = Decimal("1e-12")
# A mean's sum and count each get half of its ε; each interval is built at 97.5% so that both hold
# together with probability ≥ 95% (union bound).
MEAN_PART_COVERAGE = 0.975


def to_budget_decimal(value: float) -> Decimal:
    """Exact value of a float, rounded up to the ledger's precision."""
    return Decimal(value).quantize(BUDGET_PLACES, rounding=ROUND_CEILING)


@dataclass(frozen=True)
class PlannedStatistic:
    """One statistic with its mechanisms built: everything public about it before it runs."""

    query: Query
    epsilon: float
    mechanism: str
    sensitivity: float
    noise_scale: float
    expected_abs_error: float | None
    ci95_halfwidth: float | None
    mechanisms: tuple[GeometricMechanism | LaplaceMechanism, ...]

    @property
    def epsilon_spent(self) -> float:
        return sum(m.epsilon_spent for m in self.mechanisms)

    def to_preview(self) -> dict[str, Any]:
        return {
            "kind": self.query.kind,
            "column": self.query.column,
            "weight": self.query.weight,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "noise_scale": self.noise_scale,
            "expected_abs_error": self.expected_abs_error,
            "ci95_halfwidth": self.ci95_halfwidth,
        }


@dataclass(frozen=True)
class ReleasePlan:
    schema: Schema
    definition: Definition
    statistics: tuple[PlannedStatistic, ...]

    @property
    def epsilon_spent(self) -> Decimal:
        """Σ of the mechanisms' own privacy maps (sequential composition), for the ledger."""
        with localcontext() as ctx:
            ctx.prec = 200
            total = sum(
                (Decimal(m.epsilon_spent) for s in self.statistics for m in s.mechanisms),
                Decimal(0),
            )
            return total.quantize(BUDGET_PLACES, rounding=ROUND_CEILING)

    @property
    def delta_spent(self) -> Decimal:
        return Decimal(0)


@dataclass(frozen=True)
class StatisticResult:
    """A published statistic and everything Kerckhoffs asks to publish with it.

    ``value`` is an int (count), a float (sum, mean) or a ``{cell: count}`` dict (histogram);
    ``ci95`` is ``(low, high)`` or a dict of them per cell. ``rule`` says how out-of-bounds,
    unknown and missing values were handled, never how many rows that touched.
    """

    kind: str
    column: str | None
    value: Any
    ci95: Any
    mechanism: str
    epsilon: float
    delta: float
    sensitivity: float
    noise_scale: float
    rule: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "column": self.column,
            "value": self.value,
            "ci95": self.ci95,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sensitivity": self.sensitivity,
            "noise_scale": self.noise_scale,
            "rule": self.rule,
        }


@dataclass(frozen=True)
class ReleaseResult:
    statistics: tuple[StatisticResult, ...]
    epsilon_spent: Decimal
    delta_spent: Decimal


def split_epsilon(total: float, weights: Sequence[float]) -> list[float]:
    """Shares ε·w_i/Σw whose exact sum never exceeds ``total`` (floats can round up)."""
    weight_sum = math.fsum(weights)
    shares = [total * w / weight_sum for w in weights]
    with localcontext() as ctx:
        ctx.prec = 200
        # The cap is the smaller of the float's exact value and its shortest decimal form, so a
        # ledger that rounds up to 12 places never charges more than the ε the curator typed.
        cap = min(Decimal(total), Decimal(repr(total)))
        while sum(Decimal(s) for s in shares) > cap:
            largest = max(range(len(shares)), key=shares.__getitem__)
            shares[largest] = math.nextafter(shares[largest], 0.0)
    return shares


def _mean_preview(
    column: NumericColumn,
    sum_part: LaplaceMechanism,
    count_part: GeometricMechanism,
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


def _plan_one(
    query: Query, epsilon: float, schema: Schema, definition: Definition, noise: NoiseSource | None
) -> PlannedStatistic:
    if isinstance(query, Count | Histogram):
        geometric = GeometricMechanism(
            sensitivity=count_sensitivity(definition), epsilon=epsilon, noise=noise
        )
        return PlannedStatistic(
            query=query,
            epsilon=epsilon,
            mechanism=geometric.name,
            sensitivity=geometric.sensitivity,
            noise_scale=geometric.scale,
            expected_abs_error=geometric.expected_abs_error,
            ci95_halfwidth=geometric.halfwidth(),
            mechanisms=(geometric,),
        )
    column = schema.column(query.column)
    assert isinstance(column, NumericColumn)
    if isinstance(query, Sum):
        laplace = LaplaceMechanism(
            sensitivity=sum_sensitivity(column, definition), epsilon=epsilon, noise=noise
        )
        return PlannedStatistic(
            query=query,
            epsilon=epsilon,
            mechanism=laplace.name,
            sensitivity=laplace.sensitivity,
            noise_scale=laplace.scale,
            expected_abs_error=laplace.expected_abs_error,
            ci95_halfwidth=laplace.halfwidth(),
            mechanisms=(laplace,),
        )
    if isinstance(query, Mean):
        half = epsilon / 2.0
        sum_part = LaplaceMechanism(
            sensitivity=sum_sensitivity(column, definition), epsilon=half, noise=noise
        )
        count_part = GeometricMechanism(
            sensitivity=count_sensitivity(definition), epsilon=half, noise=noise
        )
        expected, halfwidth = _mean_preview(column, sum_part, count_part, schema.declared_size)
        return PlannedStatistic(
            query=query,
            epsilon=epsilon,
            mechanism="laplace+geometric",
            sensitivity=sum_part.sensitivity,
            noise_scale=sum_part.scale,
            expected_abs_error=expected,
            ci95_halfwidth=halfwidth,
            mechanisms=(sum_part, count_part),
        )
    raise TypeError(f"unsupported query {query!r}")


def plan_release(
    *,
    schema: Schema | Mapping[str, Any],
    definition: Definition | Mapping[str, Any],
    queries: Sequence[Query | Mapping[str, Any]],
    noise: NoiseSource | None = None,
) -> ReleasePlan:
    """Validate and plan a release; raises :class:`EngineValidationError` naming bad fields."""
    errors: dict[str, list[str]] = {}
    try:
        schema = schema_from_dict(schema)
    except EngineValidationError as error:
        raise prefix_errors("schema", error) from None
    try:
        definition = definition_from_dict(definition)
    except EngineValidationError as error:
        errors.update(prefix_errors("definition", error).errors)
    typed: list[Query] = []
    if not isinstance(queries, Sequence) or isinstance(queries, str) or not queries:
        errors["queries"] = ["choose at least one statistic"]
    else:
        for index, spec in enumerate(queries):
            try:
                typed.append(query_from_dict(spec, schema))
            except EngineValidationError as error:
                errors.update(prefix_errors(f"queries.{index}", error).errors)
    if errors:
        raise EngineValidationError(errors)
    assert not isinstance(definition, Mapping)
    shares = split_epsilon(definition.epsilon, [q.weight for q in typed])
    statistics = tuple(
        _plan_one(query, share, schema, definition, noise)
        for query, share in zip(typed, shares, strict=True)
    )
    return ReleasePlan(schema=schema, definition=definition, statistics=statistics)


def preview(
    *,
    schema: Schema | Mapping[str, Any],
    definition: Definition | Mapping[str, Any],
    queries: Sequence[Query | Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The API's preview entries, in query order: ε share, sensitivity, noise scale, expected
    absolute error and 95% half-width of each statistic. Uses only the declared schema and size."""
    plan = plan_release(schema=schema, definition=definition, queries=queries)
    return [statistic.to_preview() for statistic in plan.statistics]


def accuracy_curve(
    *,
    schema: Schema | Mapping[str, Any],
    definition: Definition | Mapping[str, Any],
    queries: Sequence[Query | Mapping[str, Any]],
    epsilons: Sequence[float],
) -> list[dict[str, Any]]:
    """Expected absolute error of each statistic if the release's total ε were each value of
    ``epsilons`` (same weights, same everything else): ``[{"epsilon", "errors": [...]}, ...]``.
    Public facts only; used to chart the accuracy a curator buys with more ε."""
    plan = plan_release(schema=schema, definition=definition, queries=queries)
    queries_typed = [s.query for s in plan.statistics]
    curve = []
    for epsilon in epsilons:
        varied = dataclasses.replace(plan.definition, epsilon=float(epsilon))
        entries = plan_release(schema=plan.schema, definition=varied, queries=queries_typed)
        curve.append(
            {
                "epsilon": float(epsilon),
                "errors": [s.expected_abs_error for s in entries.statistics],
            }
        )
    return curve


# --- reading data: only below this line -------------------------------------------------------


def _clean_numeric(frame: pd.DataFrame, name: str, column: NumericColumn) -> np.ndarray:
    values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    missing = ~np.isfinite(values)
    values = np.where(missing, column.fill, values) if column.fill is not None else values[~missing]
    return np.clip(values, column.lower, column.upper)


def _categorical_counts(frame: pd.DataFrame, name: str, column: CategoricalColumn) -> list[int]:
    series = frame[name]
    missing = series.isna() | (series.astype(str).str.strip() == "")
    labels = series.astype(str).str.strip()
    labels = labels.where(~missing, column.fill) if column.fill is not None else labels[~missing]
    if column.other is not None:
        labels = labels.where(labels.isin(column.categories), column.other)
    counts = labels.value_counts()
    return [int(counts.get(bucket, 0)) for bucket in column.buckets]


def _numeric_histogram(values: np.ndarray, edges: tuple[float, ...]) -> list[int]:
    counts, _ = np.histogram(values, bins=np.asarray(edges, dtype=float))
    return [int(c) for c in counts]


def _count_interval(value: int, halfwidth: int) -> list[int]:
    return [max(0, value - halfwidth), value + halfwidth]


def _run_one(planned: PlannedStatistic, frame: pd.DataFrame, schema: Schema) -> StatisticResult:
    query = planned.query
    common = {
        "kind": query.kind,
        "column": query.column,
        "mechanism": planned.mechanism,
        "epsilon": planned.epsilon_spent,
        "delta": 0.0,
        "sensitivity": planned.sensitivity,
        "noise_scale": planned.noise_scale,
    }
    if isinstance(query, Count):
        (geometric,) = planned.mechanisms
        assert isinstance(geometric, GeometricMechanism)
        noisy = max(0, int(geometric.release([len(frame)])[0]))
        return StatisticResult(
            value=noisy, ci95=_count_interval(noisy, geometric.halfwidth()), rule=None, **common
        )
    column = schema.column(query.column)
    if isinstance(query, Histogram):
        (geometric,) = planned.mechanisms
        assert isinstance(geometric, GeometricMechanism)
        if isinstance(column, CategoricalColumn):
            labels = column.buckets
            exact = _categorical_counts(frame, query.column, column)
        else:
            assert isinstance(column, NumericColumn)
            assert query.bins is not None
            labels = bin_labels(query.bins)
            exact = _numeric_histogram(_clean_numeric(frame, query.column, column), query.bins)
        noisy = [max(0, int(v)) for v in geometric.release(exact)]
        halfwidth = geometric.halfwidth()
        return StatisticResult(
            value=dict(zip(labels, noisy, strict=True)),
            ci95={
                label: _count_interval(v, halfwidth) for label, v in zip(labels, noisy, strict=True)
            },
            rule=column.rule(),
            **common,
        )
    assert isinstance(column, NumericColumn)
    values = _clean_numeric(frame, query.column, column)
    # fsum rounds once, so the clamped sum cannot drift past its bounds through rounding error.
    exact_sum = math.fsum(values.tolist())
    if isinstance(query, Sum):
        (laplace,) = planned.mechanisms
        assert isinstance(laplace, LaplaceMechanism)
        noisy_sum = laplace.release(exact_sum)
        low, high = noisy_sum - laplace.halfwidth(), noisy_sum + laplace.halfwidth()
        # Post-processing with public facts: a sum of non-negative values is non-negative.
        if column.lower >= 0:
            noisy_sum, low, high = max(0.0, noisy_sum), max(0.0, low), max(0.0, high)
        if column.upper <= 0:
            noisy_sum, low, high = min(0.0, noisy_sum), min(0.0, low), min(0.0, high)
        return StatisticResult(value=noisy_sum, ci95=[low, high], rule=column.rule(), **common)
    assert isinstance(query, Mean)
    sum_part, count_part = planned.mechanisms
    assert isinstance(sum_part, LaplaceMechanism)
    assert isinstance(count_part, GeometricMechanism)
    noisy_sum = sum_part.release(exact_sum)
    raw_count = int(count_part.release([len(values)])[0])
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
    return StatisticResult(value=mean, ci95=interval, rule=column.rule(), **common)


def run_queries(
    frame: pd.DataFrame,
    *,
    schema: Schema | Mapping[str, Any],
    definition: Definition | Mapping[str, Any],
    queries: Sequence[Query | Mapping[str, Any]],
    noise: NoiseSource | None = None,
) -> ReleaseResult:
    """Answer every query on ``frame`` under ``definition``, drawing each noisy answer once.

    Columns are cleaned by their declared rules (clamping, other bucket, missing values) before any
    statistic is computed; the number of rows a rule touched is never reported.
    """
    plan = plan_release(schema=schema, definition=definition, queries=queries, noise=noise)
    missing = [
        name
        for s in plan.statistics
        if (name := s.query.column) is not None and name not in frame.columns
    ]
    if missing:
        raise EngineValidationError.single("columns", "the table lacks declared columns")
    statistics = tuple(_run_one(planned, frame, plan.schema) for planned in plan.statistics)
    return ReleaseResult(
        statistics=statistics, epsilon_spent=plan.epsilon_spent, delta_spent=plan.delta_spent
    )
