"""Planning and running a release: ε split by weight, previews from formulas, noisy answers.

A plan needs only public facts (schema, definition, queries); it builds the mechanisms and so knows
each statistic's ε, sensitivity, noise scale and accuracy before any data is touched or any budget
is spent. ``run_queries`` is the only function here that reads data.
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, Inexact, localcontext
from pathlib import Path
from typing import Any

import pandas as pd

from privacy_engine.accounting import LEDGER_PLACES, ledger_delta
from privacy_engine.aggregates import (
    Aggregate,
    BinCounts,
    CategoryCounts,
    GridSum,
    PresentCount,
    RowCount,
    needed_columns,
)
from privacy_engine.columnar import typed_from_frame
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
from privacy_engine.engines import (
    Aggregated,
    Bound,
    Engine,
    EngineChoice,
    InProcessEngine,
    aggregate_table,
)
from privacy_engine.errors import EngineValidationError, prefix_errors
from privacy_engine.exact_sums import sum_grid
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
    # Which engine computed the exact aggregates (engines.py).
    engine: str = "in_process"


# Decimal digits of the sums in split_epsilon. With every share either 0 or at least 2⁻¹⁰⁰ (so a
# multiple of 2⁻¹⁵³, one nudge included) and the total below 2⁶⁰ (19 digits before the point), any
# sum of shares, in any order, has at most 153 + 19 digits: it is exact.
_SPLIT_PRECISION = 200
_SPLIT_EXACT_MIN_SHARE = 2.0**-100
_SPLIT_EXACT_MAX_TOTAL = 2.0**60


def split_epsilon(total: float, weights: Sequence[float]) -> list[float]:
    """Shares ε·w_i/Σw whose exact sum never exceeds ``total`` (floats can round up)."""
    weight_sum = math.fsum(weights)
    shares = [total * w / weight_sum for w in weights]
    with localcontext() as ctx:
        ctx.prec = _SPLIT_PRECISION
        # The cap is the smaller of the float's exact value and its shortest decimal form, so a
        # ledger that rounds up to 12 places never charges more than the ε the curator typed.
        cap = min(Decimal(total), Decimal(repr(total)))
        if total < _SPLIT_EXACT_MAX_TOTAL and all(
            s == 0.0 or s >= _SPLIT_EXACT_MIN_SHARE for s in shares
        ):
            # Every sum is exact (see above), so a running sum equals the sum taken afresh after
            # each nudge and the nudges are the same, without re-adding every share per nudge (a
            # preview's chart splits ε dozens of times). Inexact would mean a broken bound. The
            # heap yields what max() over the indices does: the largest share, first index first.
            ctx.traps[Inexact] = True
            running = sum(Decimal(s) for s in shares)
            largest_first = [(-share, index) for index, share in enumerate(shares)]
            heapq.heapify(largest_first)
            while running > cap:
                largest = largest_first[0][1]
                smaller = math.nextafter(shares[largest], 0.0)
                running -= Decimal(shares[largest]) - Decimal(smaller)
                shares[largest] = smaller
                heapq.heapreplace(largest_first, (-smaller, largest))
            return shares
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


def _plan_statistics(
    queries: Sequence[Query],
    schema: Schema,
    definition: Definition,
    noise: NoiseSource | None,
    *,
    share_identical: bool = False,
) -> tuple[PlannedStatistic, ...]:
    """Each validated query planned with its share of the definition's ε and δ.

    With ``share_identical``, statistics with the same query and the same shares (equal weights
    give equal shares) are planned once and the same :class:`PlannedStatistic` stands for all of
    them; only for numbers that are read, never for a plan that draws noise."""
    # Statistics that are public under the definition (the count under Blowfish) cost nothing,
    # so the budget is shared among the others.
    weights = [
        0.0 if isinstance(q, Count) and count_sensitivity(definition) == 0 else q.weight
        for q in queries
    ]
    if not any(weights):
        weights = [1.0] * len(queries)
    shares = split_epsilon(definition.epsilon, weights)
    delta_shares = (
        split_epsilon(definition.delta, weights) if definition.delta else [0.0] * len(queries)
    )
    if share_identical:
        try:
            hash(tuple(queries))
        except TypeError:  # a query built by hand with a list of bins
            share_identical = False
    errors: dict[str, list[str]] = {}
    planned: list[PlannedStatistic] = []
    # _plan_one is a function of these three (the schema and definition are fixed here).
    seen: dict[tuple[Query, float, float], PlannedStatistic] = {}
    for query, share, delta_share in zip(queries, shares, delta_shares, strict=True):
        key = (query, share, delta_share)
        if share_identical and key in seen:
            planned.append(seen[key])
            continue
        try:
            statistic = _plan_one(query, share, delta_share, schema, definition, noise)
        except EngineValidationError as error:
            errors.update(_rooted(error).errors)
            continue
        if share_identical:
            seen[key] = statistic
        planned.append(statistic)
    if errors:
        raise EngineValidationError(errors)
    return tuple(planned)


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
    statistics = _plan_statistics(typed, schema, definition, noise)
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
    Public facts only; used to chart the accuracy a curator buys with more ε.

    Each point plans each distinct statistic once (identical statistics share their plan) and
    each mechanism's calibration is memoized (mechanisms.py), so a point costs what the distinct
    mechanisms at that ε cost, not what the whole release does."""
    plan = plan_release(schema=schema, definition=definition, queries=queries)
    queries_typed = [s.query for s in plan.statistics]
    curve = []
    for epsilon in epsilons:
        varied = dataclasses.replace(plan.definition, epsilon=float(epsilon))
        statistics = _plan_statistics(
            queries_typed, plan.schema, varied, None, share_identical=True
        )
        curve.append(
            {
                "epsilon": float(epsilon),
                "errors": [s.expected_abs_error for s in statistics],
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


def _cleaned(name: str, schema: Schema) -> dict[str, Any]:
    column = schema.column(name)
    assert isinstance(column, NumericColumn)
    return {"column": name, "lower": column.lower, "upper": column.upper, "fill": column.fill}


def _grid_sum(name: str, schema: Schema) -> GridSum:
    column = schema.column(name)
    assert isinstance(column, NumericColumn)
    return GridSum(**_cleaned(name, schema), grid=sum_grid(column.max_magnitude))


def aggregates_for(planned: PlannedStatistic, schema: Schema) -> list[Aggregate]:
    """The exact aggregates a statistic's mechanisms take, as requests any engine answers."""
    query = planned.query
    if isinstance(query, Count):
        return [RowCount()]
    if isinstance(query, Sum):
        return [_grid_sum(name, schema) for name in query.summed_columns]
    column = schema.column(query.column)
    if isinstance(query, Mean):
        return [_grid_sum(query.column, schema), PresentCount(**_cleaned(query.column, schema))]
    assert isinstance(query, Histogram)
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
    return [BinCounts(**_cleaned(query.column, schema), edges=tuple(query.bins))]


def _exact_answer(planned: PlannedStatistic, answers: list[Any]) -> Any:
    """The answers of :func:`aggregates_for`, shaped as :func:`release_statistic` takes them."""
    query = planned.query
    if isinstance(query, Sum) and query.columns:
        return list(answers)
    if isinstance(query, Mean):
        return tuple(answers)
    (answer,) = answers
    return answer


def _bound(schema: Schema) -> Bound:
    return Bound(person_key=schema.person_key, per_person=schema.max_rows_per_person)


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


def _release_from_aggregates(
    plan: ReleasePlan, requests: list[list[Aggregate]], aggregated: Aggregated
) -> ReleaseResult:
    answers = iter(aggregated.answers)
    started = time.perf_counter()
    statistics = tuple(
        _disclose_public_missingness(
            release_statistic(
                planned, _exact_answer(planned, [next(answers) for _ in wanted]), plan.schema
            ),
            planned,
            plan,
        )
        for planned, wanted in zip(plan.statistics, requests, strict=True)
    )
    person_rule = plan.schema.person_rule()
    if person_rule is not None:
        statistics = tuple(
            dataclasses.replace(s, rule="; ".join(filter(None, [person_rule, s.rule])))
            for s in statistics
        )
    return ReleaseResult(
        statistics=statistics,
        epsilon_spent=plan.epsilon_spent,
        delta_spent=plan.delta_spent,
        timings={**aggregated.timings, "noise_s": time.perf_counter() - started},
    )


def _plan_requests(plan: ReleasePlan) -> list[list[Aggregate]]:
    return [aggregates_for(planned, plan.schema) for planned in plan.statistics]


def release_stored_table(
    path: str | Path,
    *,
    schema: Schema | Mapping[str, Any],
    definition: Definition | Mapping[str, Any],
    queries: Sequence[Query | Mapping[str, Any]],
    noise: NoiseSource | None = None,
    engine: Engine | EngineChoice | None = None,
) -> ReleaseResult:
    """Answer every query on a table stored in the columnar layout (columnar.py). ``engine``
    (engines.py; in-process by default) computes the exact aggregates, reading only the columns
    the statistics use; the noise step is the same whichever engine ran. ``timings`` holds
    read_s, compute_s and noise_s."""
    plan = plan_release(schema=schema, definition=definition, queries=queries, noise=noise)
    requests = _plan_requests(plan)
    flat = [request for wanted in requests for request in wanted]
    bound = _bound(plan.schema)
    if isinstance(engine, EngineChoice):
        engine = engine.engine_for(path, flat, bound)
    engine = engine or InProcessEngine()
    try:
        aggregated = engine.aggregate(path, flat, bound)
    except KeyError:
        raise EngineValidationError.single("columns", "the table lacks declared columns") from None
    if any(
        isinstance(request, RowCount) and answer > MAX_ROWS
        for request, answer in zip(flat, aggregated.answers, strict=True)
    ):
        raise EngineValidationError.single(
            "rows", f"the engine answers tables of at most {MAX_ROWS:,} rows"
        )
    return dataclasses.replace(
        _release_from_aggregates(plan, requests, aggregated), engine=engine.name
    )


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
    if len(frame) > MAX_ROWS:
        raise EngineValidationError.single(
            "rows", f"the engine answers tables of at most {MAX_ROWS:,} rows"
        )
    requests = _plan_requests(plan)
    flat = [request for wanted in requests for request in wanted]
    bound = _bound(plan.schema)
    numbers, labels = needed_columns(flat)
    if bound.person_key is not None:
        labels.add(bound.person_key)
    if any(name not in frame.columns for name in [*numbers, *labels]):
        raise EngineValidationError.single("columns", "the table lacks declared columns")
    started = time.perf_counter()
    table = typed_from_frame(frame, numbers=numbers, labels=labels)
    read = time.perf_counter()
    answers = aggregate_table(table, flat, bound)
    aggregated = Aggregated(
        answers, {"read_s": read - started, "compute_s": time.perf_counter() - read}
    )
    return _release_from_aggregates(plan, requests, aggregated)
