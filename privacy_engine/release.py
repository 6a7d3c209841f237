"""Planning and running a release: ε split by weight, previews from formulas, noisy answers.

A plan needs only public facts (schema, definition, queries); it builds the mechanisms and so knows
each statistic's ε, sensitivity, noise scale and accuracy before any data is touched or any budget
is spent. ``run_queries`` is the only function here that reads data.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from privacy_engine.accounting import LEDGER_PLACES, ledger_delta
from privacy_engine.columnar import Labels, TypedTable, read_typed, typed_from_frame
from privacy_engine.definitions import (
    MAX_EPSILON,
    MIN_EPSILON,
    ApproxDP,
    Blowfish,
    Definition,
    PureDP,
    check_delta,
    definition_from_dict,
    delta_warnings,
    with_default_delta,
)
from privacy_engine.errors import EngineValidationError, prefix_errors
from privacy_engine.exact_sums import grid_sum, sum_grid
from privacy_engine.mechanisms import (
    ExactRelease,
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
)
from privacy_engine.noise import NoiseSource
from privacy_engine.policies import check_policy_against_schema
from privacy_engine.queries import Count, Histogram, Mean, Query, Sum, bin_labels, query_from_dict
from privacy_engine.schema import (
    MAX_ROWS,
    CategoricalColumn,
    NumericColumn,
    Schema,
    schema_from_dict,
)
from privacy_engine.sensitivity import (
    count_sensitivity,
    histogram_sensitivity,
    missing_is_public,
    present_count_sensitivity,
    sum_sensitivity,
)

Mechanism = GeometricMechanism | LaplaceMechanism | GaussianMechanism | ExactRelease

# Bounds on one request's work: statistics per release (bins are bounded in queries.py).
MAX_QUERIES = 100
# A mean's sum and count each get half of its ε; each interval is built at 97.5% so that both hold
# together with probability ≥ 95% (union bound).
MEAN_PART_COVERAGE = 0.975


@dataclass(frozen=True)
class PlannedStatistic:
    """One statistic with its mechanisms built: everything public about it before it runs."""

    query: Query
    epsilon: float
    delta: float
    mechanism: str
    sensitivity: float
    noise_scale: float
    expected_abs_error: float | None
    ci95_halfwidth: float | None
    mechanisms: tuple[Mechanism, ...]

    @property
    def epsilon_spent(self) -> float:
        return sum(m.epsilon_spent for m in self.mechanisms)

    @property
    def delta_spent(self) -> float:
        return sum(m.delta_spent for m in self.mechanisms)

    @property
    def columns(self) -> tuple[str, ...]:
        if isinstance(self.query, Sum):
            return self.query.summed_columns
        return (self.query.column,) if self.query.column is not None else ()

    def to_preview(self) -> dict[str, Any]:
        entry = {
            "kind": self.query.kind,
            "column": self.query.column,
            "weight": self.query.weight,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sensitivity": self.sensitivity,
            "noise_scale": self.noise_scale,
            "expected_abs_error": self.expected_abs_error,
            "ci95_halfwidth": self.ci95_halfwidth,
        }
        if isinstance(self.query, Sum) and self.query.columns:
            entry["columns"] = list(self.query.columns)
        return entry


def _exact_sum(values: Sequence[float], *, delta: bool = False) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 200
        total = sum((Decimal(v) for v in values), Decimal(0))
        if total == 0:
            return Decimal(0)
        if delta:
            return ledger_delta(total)
        return total.quantize(LEDGER_PLACES, rounding=ROUND_CEILING)


@dataclass(frozen=True)
class ReleasePlan:
    schema: Schema
    definition: Definition
    statistics: tuple[PlannedStatistic, ...]
    warnings: tuple[str, ...] = ()

    @property
    def epsilon_spent(self) -> Decimal:
        """Σ of the mechanisms' own privacy maps (sequential composition), for the ledger."""
        return _exact_sum([m.epsilon_spent for s in self.statistics for m in s.mechanisms])

    @property
    def delta_spent(self) -> Decimal:
        return _exact_sum(
            [m.delta_spent for s in self.statistics for m in s.mechanisms], delta=True
        )

    def preview(self) -> list[dict[str, Any]]:
        """The API's preview entries; under Blowfish each also carries, under ``"pure_dp"``, the
        same statistic's accuracy under ε-DP at the same ε, to show what the policy buys."""
        entries = [statistic.to_preview() for statistic in self.statistics]
        if isinstance(self.definition, Blowfish):
            baseline = plan_release(
                schema=self.schema,
                definition=PureDP(self.definition.epsilon),
                queries=[s.query for s in self.statistics],
            )
            for entry, other in zip(entries, baseline.statistics, strict=True):
                entry["pure_dp"] = {
                    "expected_abs_error": other.expected_abs_error,
                    "ci95_halfwidth": other.ci95_halfwidth,
                    "sensitivity": other.sensitivity,
                }
        return entries


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
    columns: list[str] | None = None
    accounting: str | None = None
    # For statistics built from several noisy answers (a mean), each part's mechanism.
    parts: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
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
        if self.columns is not None:
            out["columns"] = self.columns
        if self.accounting is not None:
            out["accounting"] = self.accounting
        if self.parts is not None:
            out["parts"] = self.parts
        if isinstance(self.value, dict):
            # The published order of the cells (declared categories, bins, columns), as a list:
            # stores such as PostgreSQL's jsonb do not keep the order of an object's keys.
            out["cells"] = list(self.value)
        return out


@dataclass(frozen=True)
class ReleaseResult:
    statistics: tuple[StatisticResult, ...]
    epsilon_spent: Decimal
    delta_spent: Decimal
    # Seconds spent reading columns, computing exact aggregates and drawing noise.
    timings: Mapping[str, float] = dataclasses.field(default_factory=dict)


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


def _integer_mechanism(
    sensitivity: int,
    epsilon: float,
    delta: float,
    definition: Definition,
    noise: NoiseSource | None,
) -> Mechanism:
    """Noise for whole-number answers: none when the answer is public, discrete Gaussian under
    (ε, δ)-DP, geometric otherwise."""
    if sensitivity == 0:
        return ExactRelease()
    if isinstance(definition, ApproxDP):
        return GaussianMechanism(
            sensitivity=sensitivity, epsilon=epsilon, delta=delta, integer=True, noise=noise
        )
    return GeometricMechanism(sensitivity=sensitivity, epsilon=epsilon, noise=noise)


def _real_mechanism(
    sensitivity: float,
    epsilon: float,
    delta: float,
    definition: Definition,
    noise: NoiseSource | None,
    *,
    vector: bool = False,
) -> Mechanism:
    if isinstance(definition, ApproxDP):
        return GaussianMechanism(
            sensitivity=sensitivity,
            epsilon=epsilon,
            delta=delta,
            integer=False,
            noise=noise,
            vector=vector,
        )
    return LaplaceMechanism(sensitivity=sensitivity, epsilon=epsilon, noise=noise, vector=vector)


def _single(query: Query, epsilon: float, delta: float, mechanism: Mechanism) -> PlannedStatistic:
    return PlannedStatistic(
        query=query,
        epsilon=epsilon,
        delta=delta,
        mechanism=mechanism.name,
        sensitivity=mechanism.sensitivity,
        noise_scale=mechanism.scale,
        expected_abs_error=mechanism.expected_abs_error,
        ci95_halfwidth=mechanism.halfwidth(),
        mechanisms=(mechanism,),
    )


def _plan_one(
    query: Query,
    epsilon: float,
    delta: float,
    schema: Schema,
    definition: Definition,
    noise: NoiseSource | None,
) -> PlannedStatistic:
    # ε-DP-style sensitivities are L1; the Gaussian mechanism needs L2 ones. A person with up to
    # c rows changes every answer up to c times as much as one record (in L1 and in L2).
    norm = "l2" if isinstance(definition, ApproxDP) else "l1"
    c = schema.rows_per_person
    if isinstance(query, Count):
        mechanism = _integer_mechanism(
            c * count_sensitivity(definition), epsilon, delta, definition, noise
        )
        return _single(
            query,
            epsilon if mechanism.epsilon_spent else 0.0,
            delta if mechanism.delta_spent else 0.0,
            mechanism,
        )
    if isinstance(query, Histogram):
        return _single(
            query,
            epsilon,
            delta,
            _integer_mechanism(
                c * histogram_sensitivity(definition), epsilon, delta, definition, noise
            ),
        )
    if isinstance(query, Sum):
        columns = {name: schema.column(name) for name in query.summed_columns}
        sensitivity = sum_sensitivity(
            columns,  # type: ignore[arg-type]
            definition,
            norm=norm,
            rows_per_person=c,
        )
        return _single(
            query,
            epsilon,
            delta,
            _real_mechanism(
                sensitivity, epsilon, delta, definition, noise, vector=bool(query.columns)
            ),
        )
    if isinstance(query, Mean):
        column = schema.column(query.column)
        assert isinstance(column, NumericColumn)
        count_part_sensitivity = c * present_count_sensitivity(column, definition)
        # The count part is free when it is public (Blowfish with filled missing values).
        share = 0.5 if count_part_sensitivity else 1.0
        sum_part = _real_mechanism(
            sum_sensitivity({query.column: column}, definition, norm=norm, rows_per_person=c),
            epsilon * share,
            delta * share,
            definition,
            noise,
        )
        count_part = _integer_mechanism(
            count_part_sensitivity, epsilon * share, delta * share, definition, noise
        )
        expected, halfwidth = _mean_preview(column, sum_part, count_part, schema.declared_size)
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
    raise TypeError(f"unsupported query {query!r}")


def _rooted(error: EngineValidationError) -> EngineValidationError:
    """Paths from a sum's sensitivity re-rooted at the plan: ``policy.theta`` is the
    definition's, ``columns.<name>.lower`` the schema's."""
    roots = {"policy": "definition", "columns": "schema"}
    return EngineValidationError(
        {
            f"{roots[path.split('.')[0]]}.{path}" if path.split(".")[0] in roots else path: msgs
            for path, msgs in error.errors.items()
        }
    )


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
        definition = definition_from_dict(with_default_delta(definition, schema.declared_size))
        if isinstance(definition, ApproxDP):
            check_delta(definition.delta, schema.declared_size)
        if isinstance(definition, Blowfish):
            check_policy_against_schema(definition.policy, schema)
    except EngineValidationError as error:
        errors.update(prefix_errors("definition", error).errors)
    typed: list[Query] = []
    if not isinstance(queries, Sequence) or isinstance(queries, str) or not queries:
        errors["queries"] = ["choose at least one statistic"]
    elif len(queries) > MAX_QUERIES:
        errors["queries"] = [f"choose at most {MAX_QUERIES} statistics per release"]
    else:
        for index, spec in enumerate(queries):
            try:
                typed.append(query_from_dict(spec, schema))
            except EngineValidationError as error:
                errors.update(prefix_errors(f"queries.{index}", error).errors)
    if errors:
        raise EngineValidationError(errors)
    assert not isinstance(definition, Mapping)
    # Statistics that are public under the definition (the count under Blowfish) cost nothing,
    # so the budget is shared among the others.
    weights = [
        0.0 if isinstance(q, Count) and count_sensitivity(definition) == 0 else q.weight
        for q in typed
    ]
    if not any(weights):
        weights = [1.0] * len(typed)
    shares = split_epsilon(definition.epsilon, weights)
    delta_shares = (
        split_epsilon(definition.delta, weights) if definition.delta else [0.0] * len(typed)
    )
    planned: list[PlannedStatistic] = []
    for query, share, delta_share in zip(typed, shares, delta_shares, strict=True):
        try:
            planned.append(_plan_one(query, share, delta_share, schema, definition, noise))
        except EngineValidationError as error:
            errors.update(_rooted(error).errors)
    if errors:
        raise EngineValidationError(errors)
    statistics = tuple(planned)
    warnings = (
        tuple(delta_warnings(definition.delta, schema.declared_size))
        if isinstance(definition, ApproxDP)
        else ()
    )
    return ReleasePlan(
        schema=schema, definition=definition, statistics=statistics, warnings=warnings
    )


def preview(
    *,
    schema: Schema | Mapping[str, Any],
    definition: Definition | Mapping[str, Any],
    queries: Sequence[Query | Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The API's preview entries, in query order: ε share, sensitivity, noise scale, expected
    absolute error and 95% half-width of each statistic. Uses only the declared schema and size."""
    return plan_release(schema=schema, definition=definition, queries=queries).preview()


def epsilon_for_accuracy(
    *,
    schema: Schema | Mapping[str, Any],
    definition: Definition | Mapping[str, Any],
    query: Query | Mapping[str, Any],
    ci95_halfwidth: float,
) -> float:
    """Accuracy first: the smallest ε (to 0.1%) at which this statistic, released alone under the
    definition, has a 95% half-width of at most ``ci95_halfwidth``. The reverse is
    :func:`preview`. Raises :class:`EngineValidationError` if no allowed ε is accurate enough."""
    target = math.nan
    if isinstance(ci95_halfwidth, int | float) and not isinstance(ci95_halfwidth, bool):
        with contextlib.suppress(OverflowError):  # a whole number beyond any float
            target = float(ci95_halfwidth)
    if not math.isfinite(target) or target < 0:
        raise EngineValidationError.single("ci95_halfwidth", "must be a finite number ≥ 0")
    ci95_halfwidth = target
    plan = plan_release(schema=schema, definition=definition, queries=[query])
    (statistic,) = plan.statistics
    if statistic.epsilon_spent == 0:
        return 0.0  # public under the definition: exact at no cost

    def halfwidth_at(epsilon: float) -> float:
        varied = dataclasses.replace(plan.definition, epsilon=epsilon)
        entry = plan_release(
            schema=plan.schema, definition=varied, queries=[statistic.query]
        ).statistics[0]
        if entry.ci95_halfwidth is None:
            raise EngineValidationError.single(
                "query", "declare the table's approximate size to solve for a mean's accuracy"
            )
        return entry.ci95_halfwidth

    low, high = MIN_EPSILON, MAX_EPSILON
    if halfwidth_at(high) > ci95_halfwidth:
        raise EngineValidationError.single(
            "ci95_halfwidth", f"even ε = {MAX_EPSILON:g} cannot make this statistic that accurate"
        )
    if halfwidth_at(low) <= ci95_halfwidth:
        return low
    # Bisection on log ε: the half-width falls as ε grows.
    while high / low > 1.001:
        middle = math.sqrt(low * high)
        if halfwidth_at(middle) <= ci95_halfwidth:
            high = middle
        else:
            low = middle
    return high


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


def _count_interval(value: int, halfwidth: float) -> list[int]:
    return [max(0, value - int(halfwidth)), value + int(halfwidth)]


def _signed_clamp(value: float, low: float, high: float, column: NumericColumn) -> list[float]:
    """Post-processing with public facts: a sum of non-negative values is non-negative, a sum of
    non-positive values non-positive."""
    if column.lower >= 0:
        value, low, high = max(0.0, value), max(0.0, low), max(0.0, high)
    if column.upper <= 0:
        value, low, high = min(0.0, value), min(0.0, low), min(0.0, high)
    return [value, low, high]


def release_statistic(planned: PlannedStatistic, exact: Any, schema: Schema) -> StatisticResult:
    """Draw one statistic's noise on its exact answer and post-process it with public facts only.

    ``exact`` is what the statistic's mechanisms take: a count; a histogram's cell counts in
    cell order; a sum (or a list of sums, in column order) computed as exact_sums.py says; a
    mean's (sum, count). Reads no data: :func:`run_queries` passes answers computed from the
    table, the simulated preview answers computed from the declared shape."""
    query = planned.query
    common = {
        "kind": query.kind,
        "column": query.column,
        "mechanism": planned.mechanism,
        "epsilon": planned.epsilon_spent,
        "delta": planned.delta_spent,
        "sensitivity": planned.sensitivity,
        "noise_scale": planned.noise_scale,
        "accounting": "; ".join(
            sorted({m.accounting for m in planned.mechanisms if hasattr(m, "accounting")})
        )
        or None,
    }
    if isinstance(query, Count):
        (mechanism,) = planned.mechanisms
        noisy = max(0, int(mechanism.release([exact])[0]))
        return StatisticResult(
            value=noisy, ci95=_count_interval(noisy, mechanism.halfwidth()), rule=None, **common
        )
    if isinstance(query, Sum) and query.columns:
        (mechanism,) = planned.mechanisms
        columns = [schema.column(name) for name in query.columns]
        half = mechanism.halfwidth()
        value, ci95 = {}, {}
        for name, column, noisy in zip(
            query.columns, columns, mechanism.release(exact), strict=True
        ):
            assert isinstance(column, NumericColumn)
            v, low, high = _signed_clamp(noisy, noisy - half, noisy + half, column)
            value[name], ci95[name] = v, [low, high]
        rules = "; ".join(f"{name}: {schema.column(name).rule()}" for name in query.columns)
        return StatisticResult(
            value=value,
            ci95=ci95,
            rule=rules,
            **{**common, "column": None, "columns": list(query.columns)},
        )
    column = schema.column(query.column)
    if isinstance(query, Histogram):
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
                label: _count_interval(v, halfwidth)
                for label, v in zip(labels, noisy_cells, strict=True)
            },
            rule=column.rule(),
            **common,
        )
    assert isinstance(column, NumericColumn)
    if isinstance(query, Sum):
        (mechanism,) = planned.mechanisms
        noisy_sum = mechanism.release(exact)
        half = mechanism.halfwidth()
        value, low, high = _signed_clamp(noisy_sum, noisy_sum - half, noisy_sum + half, column)
        return StatisticResult(value=value, ci95=[low, high], rule=column.rule(), **common)
    assert isinstance(query, Mean)
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


# --- reading data: only below this line -------------------------------------------------------


def _clean_numeric(values: np.ndarray, column: NumericColumn) -> np.ndarray:
    """The column's values by its declared rules, before any arithmetic: a number beyond a bound
    is clamped to it however large it is (``1e400`` and ``inf`` read as infinity, a number above
    the upper bound); a missing or non-numeric value (NaN) is replaced by ``fill`` or dropped.
    So no value can make a sum overflow or fail."""
    missing = np.isnan(values)
    values = np.where(missing, column.fill, values) if column.fill is not None else values[~missing]
    return np.clip(values, column.lower, column.upper)


def _needed_columns(plan: ReleasePlan) -> tuple[set[str], set[str]]:
    """The columns a plan reads: (as numbers, as labels)."""
    numbers: set[str] = set()
    labels: set[str] = set()
    for statistic in plan.statistics:
        for name in statistic.columns:
            if isinstance(plan.schema.column(name), CategoricalColumn):
                labels.add(name)
            else:
                numbers.add(name)
    if plan.schema.person_key is not None:
        labels.add(plan.schema.person_key)
    return numbers, labels


def _exact_answer(planned: PlannedStatistic, table: TypedTable, schema: Schema) -> Any:
    """What the statistic's mechanisms take, computed exactly from the cleaned typed columns (see
    :func:`release_statistic`); sums as exact_sums.py says, so the sensitivity covers them."""
    query = planned.query
    if isinstance(query, Count):
        return table.row_count
    if isinstance(query, Sum) and query.columns:
        sums = []
        for name in query.columns:
            column = schema.column(name)
            assert isinstance(column, NumericColumn)
            sums.append(_column_sum(_clean_numeric(table.numbers[name], column), column))
        return sums
    column = schema.column(query.column)
    if isinstance(query, Histogram):
        if isinstance(column, CategoricalColumn):
            return _categorical_counts(table.labels[query.column], column)
        assert isinstance(column, NumericColumn)
        assert query.bins is not None
        return _numeric_histogram(_clean_numeric(table.numbers[query.column], column), query.bins)
    assert isinstance(column, NumericColumn)
    values = _clean_numeric(table.numbers[query.column], column)
    if isinstance(query, Sum):
        return _column_sum(values, column)
    return _column_sum(values, column), len(values)


def _column_sum(values: np.ndarray, column: NumericColumn) -> float:
    return grid_sum(values, sum_grid(column.max_magnitude))


def _categorical_counts(labels: Labels, column: CategoricalColumn) -> list[int]:
    """Records per bucket: a missing value ("") becomes ``fill`` or is dropped; a value outside
    the categories goes to ``other`` or is dropped. Maps each distinct value once, then counts
    codes, so the cost is one pass over integers."""
    buckets = list(column.buckets)
    categories = pa.array(list(column.categories), type=pa.string())
    # Bucket of each distinct value: its category, else the other bucket, else none (-1).
    bucket_of_value = (
        pc.fill_null(pc.index_in(labels.dictionary, value_set=categories), -1)
        .to_numpy(zero_copy_only=False)
        .astype(np.int64)
    )
    if column.other is not None:
        bucket_of_value[bucket_of_value < 0] = buckets.index(column.other)
    missing = labels.code_of("")
    if missing is not None:
        fill = column.fill
        if fill is None:
            bucket_of_value[missing] = -1
        elif fill in column.categories:
            bucket_of_value[missing] = list(column.categories).index(fill)
        else:
            bucket_of_value[missing] = buckets.index(column.other) if column.other else -1
    per_value = np.bincount(labels.codes, minlength=len(bucket_of_value))
    kept = bucket_of_value >= 0
    counts = np.bincount(bucket_of_value[kept], weights=per_value[kept], minlength=len(buckets))
    return [int(c) for c in counts]


def _numeric_histogram(values: np.ndarray, edges: tuple[float, ...]) -> list[int]:
    counts, _ = np.histogram(values, bins=np.asarray(edges, dtype=float))
    return [int(c) for c in counts]


def _bound_contributions(table: TypedTable, schema: Schema) -> TypedTable:
    """Keep at most c rows per person (first in file order) and drop rows without a key: a
    stable rule that uses the key only to bound contributions."""
    if schema.person_key is None:
        return table
    keys = table.labels[schema.person_key]
    codes = keys.codes
    # Rank of each row within its person, in file order: sort stably by key, number each run.
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    run_lengths = np.diff(np.r_[starts, len(codes)])
    rank = np.empty(len(codes), dtype=np.int64)
    rank[order] = np.arange(len(codes)) - np.repeat(starts, run_lengths)
    keep = rank < schema.max_rows_per_person
    missing = keys.code_of("")
    if missing is not None:
        keep &= codes != missing
    return table.take(keep)


def _disclose_public_missingness(
    result: StatisticResult, planned: PlannedStatistic, plan: ReleasePlan
) -> StatisticResult:
    names = [
        name
        for name in planned.columns
        if isinstance(column := plan.schema.column(name), NumericColumn)
        and missing_is_public(name, column, plan.definition)
    ]
    if not names:
        return result
    note = (
        f"under this Blowfish policy whether {', '.join(names)} is missing is not protected "
        "(no fill value declared)"
    )
    return dataclasses.replace(result, rule="; ".join(filter(None, [result.rule, note])))


def _release_typed(
    plan: ReleasePlan, table: TypedTable, timings: dict[str, float]
) -> ReleaseResult:
    if table.row_count > MAX_ROWS:
        raise EngineValidationError.single(
            "rows", f"the engine answers tables of at most {MAX_ROWS:,} rows"
        )
    started = time.perf_counter()
    table = _bound_contributions(table, plan.schema)
    exact = [_exact_answer(planned, table, plan.schema) for planned in plan.statistics]
    computed = time.perf_counter()
    statistics = tuple(
        _disclose_public_missingness(release_statistic(planned, answer, plan.schema), planned, plan)
        for planned, answer in zip(plan.statistics, exact, strict=True)
    )
    person_rule = plan.schema.person_rule()
    if person_rule is not None:
        statistics = tuple(
            dataclasses.replace(s, rule="; ".join(filter(None, [person_rule, s.rule])))
            for s in statistics
        )
    timings = {
        **timings,
        "compute_s": computed - started,
        "noise_s": time.perf_counter() - computed,
    }
    return ReleaseResult(
        statistics=statistics,
        epsilon_spent=plan.epsilon_spent,
        delta_spent=plan.delta_spent,
        timings=timings,
    )


def release_stored_table(
    path: str | Path,
    *,
    schema: Schema | Mapping[str, Any],
    definition: Definition | Mapping[str, Any],
    queries: Sequence[Query | Mapping[str, Any]],
    noise: NoiseSource | None = None,
) -> ReleaseResult:
    """Answer every query on a table stored in the columnar layout (columnar.py), reading only
    the columns the statistics use. ``timings`` holds read_s, compute_s and noise_s."""
    plan = plan_release(schema=schema, definition=definition, queries=queries, noise=noise)
    numbers, labels = _needed_columns(plan)
    started = time.perf_counter()
    try:
        table = read_typed(path, numbers=numbers, labels=labels)
    except KeyError:
        raise EngineValidationError.single("columns", "the table lacks declared columns") from None
    return _release_typed(plan, table, {"read_s": time.perf_counter() - started})


def run_queries(
    frame: pd.DataFrame,
    *,
    schema: Schema | Mapping[str, Any],
    definition: Definition | Mapping[str, Any],
    queries: Sequence[Query | Mapping[str, Any]],
    noise: NoiseSource | None = None,
) -> ReleaseResult:
    """Answer every query on ``frame`` (raw strings, as a CSV reads) under ``definition``, drawing
    each noisy answer once. The frame goes through the same typed conversion as a stored table.

    Columns are cleaned by their declared rules (clamping, other bucket, missing values) before any
    statistic is computed; the number of rows a rule touched is never reported.
    """
    plan = plan_release(schema=schema, definition=definition, queries=queries, noise=noise)
    numbers, labels = _needed_columns(plan)
    if any(name not in frame.columns for name in [*numbers, *labels]):
        raise EngineValidationError.single("columns", "the table lacks declared columns")
    started = time.perf_counter()
    table = typed_from_frame(frame, numbers=numbers, labels=labels)
    return _release_typed(plan, table, {"read_s": time.perf_counter() - started})
