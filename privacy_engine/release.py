"""Planning and running a release: ε split by weight, previews from formulas, noisy answers.

A plan needs only public facts (schema, definition, queries); it builds the mechanisms and so knows
each statistic's ε, sensitivity, noise scale and accuracy before any data is touched or any budget
is spent. ``run_queries`` is the only function here that reads data.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import heapq
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, Inexact, localcontext
from pathlib import Path
from typing import Any

import pandas as pd

from privacy_engine import consistency
from privacy_engine.accounting import LEDGER_PLACES, ledger_delta
from privacy_engine.aggregates import Aggregate, RowCount, needed_columns
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
from privacy_engine.errors import (
    AT_LEAST_ONE_STATISTIC,
    AT_MOST_ROWS,
    AT_MOST_STATISTICS,
    EVEN_LARGEST_EPSILON,
    FINITE_AT_LEAST_ZERO,
    GROUPS_PER_RELEASE,
    SIZE_FOR_MEAN,
    TABLE_LACKS_COLUMNS,
    EngineValidationError,
    prefix_errors,
)
from privacy_engine.footprint import Footprint, records_in_parallel, split_parallel
from privacy_engine.kinds import PlanContext, PlannedStatistic, StatisticResult, kind_of
from privacy_engine.kinds.base import Ask
from privacy_engine.kinds.restricted import MAX_GROUPS_NAMED, groups_named, restriction_of
from privacy_engine.noise import NoiseSource
from privacy_engine.policies import check_policy_against_schema
from privacy_engine.queries import Query, query_from_dict
from privacy_engine.schema import (
    MAX_ROWS,
    NumericColumn,
    Schema,
    schema_from_dict,
)
from privacy_engine.sensitivity import missing_is_public
from privacy_engine.wording import gettext_noop, phrase

# Bounds on one request's work: statistics per release (bins are bounded in kinds/histogram.py).
MAX_QUERIES = 100

MISSINGNESS_PUBLIC = gettext_noop(
    "under this Blowfish policy whether {columns} is missing is not protected "
    "(no fill value declared)"
)
MADE_CONSISTENT = gettext_noop(
    "made consistent with statistics {numbers} of this release (shared totals agree)"
)


def exact_sum(values: Sequence[float]) -> Decimal:
    """The exact sum of the floats' own values (each float's exact binary value, as a Decimal),
    unrounded: the privacy maps' ε (or δ) that :attr:`ReleasePlan.epsilon_spent` rounds up."""
    with localcontext() as ctx:
        # A sum of floats has at most 309 digits before the point and 1074 after it: with
        # this many, no addition rounds (Inexact would raise).
        ctx.prec = 2200
        ctx.traps[Inexact] = True
        return sum((Decimal(v) for v in values), Decimal(0))


def _rounded_up(total: Decimal, *, delta: bool = False) -> Decimal:
    """An exact amount rounded up as the ledger records it (ε to 12 places, δ to 15
    significant digits), so the ledger never charges less than the maps report."""
    if total == 0:
        return Decimal(0)
    if delta:
        return ledger_delta(total)
    with localcontext() as ctx:
        ctx.prec = 200
        return total.quantize(LEDGER_PLACES, rounding=ROUND_CEILING)


@dataclass(frozen=True)
class ReleasePlan:
    schema: Schema
    definition: Definition
    statistics: tuple[PlannedStatistic, ...]
    warnings: tuple[str, ...] = ()

    @property
    def parallel(self) -> bool:
        """Whether statistics restricted to disjoint groups compose in parallel here."""
        return records_in_parallel(
            rows_per_person=self.schema.rows_per_person, definition=self.definition
        )

    def footprints(self) -> tuple[Footprint, Footprint]:
        """The exact (ε, δ) footprints of the statistics (footprint.py): each statistic's
        mechanisms' own privacy maps, for everyone or, where groups compose in parallel, for
        its groups only."""
        restrictions = [restriction_of(s.query) if self.parallel else None for s in self.statistics]
        epsilons = [exact_sum([m.epsilon_spent for m in s.mechanisms]) for s in self.statistics]
        deltas = [exact_sum([m.delta_spent for m in s.mechanisms]) for s in self.statistics]
        return Footprint.of(epsilons, restrictions), Footprint.of(deltas, restrictions)

    @property
    def epsilon_spent(self) -> Decimal:
        """The worst person's ε, from the mechanisms' own privacy maps: their sum (sequential
        composition), except that statistics restricted to disjoint groups count once
        (parallel), rounded up to the ledger's places."""
        return _rounded_up(self.footprints()[0].charge())

    @property
    def delta_spent(self) -> Decimal:
        return _rounded_up(self.footprints()[1].charge(), delta=True)

    def preview(self) -> list[dict[str, Any]]:
        """The API's preview entries; under Blowfish each also carries, under ``"pure_dp"``, the
        same statistic's accuracy under ε-DP at the same ε, to show what the policy buys."""
        entries = [statistic.to_preview() for statistic in self.statistics]
        if isinstance(self.definition, Blowfish):
            queries = [s.query for s in self.statistics]
            pure = PureDP(self.definition.epsilon)
            try:
                baseline = plan_release(schema=self.schema, definition=pure, queries=queries)
            except EngineValidationError as error:
                # A statistic ε-DP cannot release (randomized records): compared without it.
                refused = {
                    int(path.split(".")[1]): messages[0]
                    for path, messages in error.errors.items()
                    if path.startswith("queries.")
                }
                kept = [q for i, q in enumerate(queries) if i not in refused]
                for index, message in refused.items():
                    entries[index]["pure_dp"] = {"refused": message}
                if not kept:
                    return entries
                baseline = plan_release(schema=self.schema, definition=pure, queries=kept)
                entries_compared = [e for i, e in enumerate(entries) if i not in refused]
            else:
                entries_compared = entries
            for entry, other in zip(entries_compared, baseline.statistics, strict=True):
                entry["pure_dp"] = {
                    "expected_abs_error": other.expected_abs_error,
                    "ci95_halfwidth": other.ci95_halfwidth,
                    "sensitivity": other.sensitivity,
                }
        return entries


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


def _plan_one(
    query: Query,
    epsilon: float,
    delta: float,
    schema: Schema,
    definition: Definition,
    noise: NoiseSource | None,
    estimate: bool = False,
) -> PlannedStatistic:
    """One statistic planned by its kind's module (privacy_engine/kinds)."""
    context = PlanContext(schema, definition, noise, estimate=estimate)
    return kind_of(query).plan(query, epsilon, delta, context)


def _rooted(error: EngineValidationError, index: int) -> EngineValidationError:
    """Paths of a planning error re-rooted at the plan: from a sum's sensitivity,
    ``policy.theta`` is the definition's and ``columns.<name>.lower`` the schema's; any other
    (a kind refusing the definition, ``kind``) is the ``index``-th query's."""
    roots = {"policy": "definition", "columns": "schema"}

    def rooted(path: str) -> str:
        first = path.split(".")[0]
        return f"{roots[first]}.{path}" if first in roots else f"queries.{index}.{path}"

    return EngineValidationError({rooted(path): msgs for path, msgs in error.errors.items()})


def _plan_statistics(
    queries: Sequence[Query],
    schema: Schema,
    definition: Definition,
    noise: NoiseSource | None,
    *,
    share_identical: bool = False,
    estimate: bool = False,
) -> tuple[PlannedStatistic, ...]:
    """Each validated query planned with its share of the definition's ε and δ.

    With ``share_identical``, statistics with the same query and the same shares (equal weights
    give equal shares) are planned once and the same :class:`PlannedStatistic` stands for all of
    them; with ``estimate``, Gaussian scales are estimated (``PlanContext.estimate``). Both only
    for numbers that are read, never for a plan that draws noise."""
    # Statistics that are public under the definition (the count under Blowfish) cost nothing,
    # so the budget is shared among the others.
    weights = [0.0 if kind_of(q).is_public(q, definition) else q.weight for q in queries]
    if not any(weights):
        weights = [1.0] * len(queries)
    restrictions = [restriction_of(q) for q in queries]
    if any(restrictions) and records_in_parallel(
        rows_per_person=schema.rows_per_person, definition=definition
    ):
        # Statistics restricted to disjoint groups each get the share they would get alone.
        def split(total: float) -> list[float]:
            return split_parallel(total, weights, restrictions)
    else:
        split = functools.partial(split_epsilon, weights=weights)
    shares = split(definition.epsilon)
    delta_shares = split(definition.delta) if definition.delta else [0.0] * len(queries)
    if share_identical:
        try:
            hash(tuple(queries))
        except TypeError:  # a query built by hand with a list of bins
            share_identical = False
    errors: dict[str, list[str]] = {}
    planned: list[PlannedStatistic] = []
    # _plan_one is a function of these three (the schema and definition are fixed here).
    seen: dict[tuple[Query, float, float], PlannedStatistic] = {}
    for index, (query, share, delta_share) in enumerate(
        zip(queries, shares, delta_shares, strict=True)
    ):
        key = (query, share, delta_share)
        if share_identical and key in seen:
            planned.append(seen[key])
            continue
        try:
            statistic = _plan_one(query, share, delta_share, schema, definition, noise, estimate)
        except EngineValidationError as error:
            errors.update(_rooted(error, index).errors)
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
        errors["queries"] = [AT_LEAST_ONE_STATISTIC]
    elif len(queries) > MAX_QUERIES:
        errors["queries"] = [phrase(AT_MOST_STATISTICS, count=MAX_QUERIES)]
    else:
        for index, spec in enumerate(queries):
            try:
                typed.append(query_from_dict(spec, schema))
            except EngineValidationError as error:
                errors.update(prefix_errors(f"queries.{index}", error).errors)
        if groups_named(typed) > MAX_GROUPS_NAMED:
            errors["queries"] = [phrase(GROUPS_PER_RELEASE, count=f"{MAX_GROUPS_NAMED:,}")]
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
        raise EngineValidationError.single("ci95_halfwidth", FINITE_AT_LEAST_ZERO)
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
            raise EngineValidationError.single("query", SIZE_FOR_MEAN)
        return entry.ci95_halfwidth

    low, high = MIN_EPSILON, MAX_EPSILON
    if halfwidth_at(high) > ci95_halfwidth:
        raise EngineValidationError.single(
            "ci95_halfwidth", EVEN_LARGEST_EPSILON, epsilon=f"{MAX_EPSILON:g}"
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

    Each point plans each distinct statistic once (identical statistics share their plan), each
    mechanism's calibration is memoized (mechanisms.py) and Gaussian scales are estimated (to a
    few units in the last place, without OpenDP's check), so a point costs what the distinct
    mechanisms at that ε cost, not what the whole release does."""
    plan = plan_release(schema=schema, definition=definition, queries=queries)
    queries_typed = [s.query for s in plan.statistics]
    curve = []
    for epsilon in epsilons:
        varied = dataclasses.replace(plan.definition, epsilon=float(epsilon))
        statistics = _plan_statistics(
            queries_typed, plan.schema, varied, None, share_identical=True, estimate=True
        )
        curve.append(
            {
                "epsilon": float(epsilon),
                "errors": [s.expected_abs_error for s in statistics],
            }
        )
    return curve


def release_statistic(
    planned: PlannedStatistic, exact: Any, schema: Schema, ask: Ask | None = None
) -> StatisticResult:
    """Draw one statistic's noise on its exact answer and post-process it with public facts only.

    ``exact`` is what the statistic's mechanisms take, shaped by its kind's ``exact_answer`` (a
    count; a histogram's cell counts in cell order; a sum, or a list of sums in column order,
    computed as exact_sums.py says; a mean's (sum, count); an iterative kind's first round).
    Reads no data itself: :func:`run_queries` passes answers computed from the table, the
    simulated preview answers computed from the declared shape. An iterative kind (k-means)
    also needs ``ask``, bound to the table, for its later rounds (kinds/base.py)."""
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
    kind = kind_of(query)
    if kind.iterative:
        if ask is None:
            raise TypeError(
                f"a {query.kind} statistic is answered in rounds: release it on a table "
                "(run_queries or release_stored_table)"
            )
        return kind.release_rounds(planned, exact, ask, schema, common)
    return kind.release(planned, exact, schema, common)


# --- reading data: only below this line -------------------------------------------------------


def aggregates_for(planned: PlannedStatistic, schema: Schema) -> list[Aggregate]:
    """The exact aggregates a statistic's mechanisms take, as requests any engine answers."""
    return kind_of(planned.query).aggregates(planned.query, schema)


def _exact_answer(planned: PlannedStatistic, answers: list[Any]) -> Any:
    """The answers of :func:`aggregates_for`, shaped as :func:`release_statistic` takes them."""
    return kind_of(planned.query).exact_answer(planned.query, answers)


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
    note = phrase(MISSINGNESS_PUBLIC, columns=", ".join(names))
    return dataclasses.replace(result, rule="; ".join(filter(None, [result.rule, note])))


def _consistent_across(statistics: tuple[StatisticResult, ...]) -> tuple[StatisticResult, ...]:
    """Tables and histograms of the release that share a column (with the same buckets) made
    consistent with one another (consistency.py): post-processing of their noisy cells."""
    holders = [i for i, s in enumerate(statistics) if s.noisy_table is not None]
    tables = [statistics[i].noisy_table for i in holders]
    out = list(statistics)
    for group in consistency.components(tables):
        if len(group) < 2:
            continue
        linked = ", ".join(str(holders[g] + 1) for g in group)
        for g, cells in zip(
            group, consistency.make_consistent([tables[g] for g in group]), strict=True
        ):
            value, ci95 = tables[g].publish(cells)
            note = phrase(MADE_CONSISTENT, numbers=linked)
            out[holders[g]] = dataclasses.replace(
                out[holders[g]],
                value=value,
                ci95=ci95,
                rule="; ".join(filter(None, [out[holders[g]].rule, note])),
            )
    return tuple(out)


class _Rounds:
    """An iterative kind's ``ask`` (kinds/base.py): exact answers from the release's engine on the
    release's table, the seconds each round took added to the release's timings."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.timings: dict[str, float] = {}

    def __call__(self, requests: Sequence[Aggregate]) -> list[Any]:
        aggregated = self.answer(list(requests))
        for key, seconds in aggregated.timings.items():
            self.timings[key] = self.timings.get(key, 0.0) + seconds
        return aggregated.answers


def _release_from_aggregates(
    plan: ReleasePlan,
    requests: list[list[Aggregate]],
    aggregated: Aggregated,
    rounds: _Rounds,
) -> ReleaseResult:
    answers = iter(aggregated.answers)
    started = time.perf_counter()
    statistics = tuple(
        _disclose_public_missingness(
            release_statistic(
                planned,
                _exact_answer(planned, [next(answers) for _ in wanted]),
                plan.schema,
                rounds,
            ),
            planned,
            plan,
        )
        for planned, wanted in zip(plan.statistics, requests, strict=True)
    )
    statistics = _consistent_across(statistics)
    person_rule = plan.schema.person_rule()
    if person_rule is not None:
        statistics = tuple(
            dataclasses.replace(s, rule="; ".join(filter(None, [person_rule, s.rule])))
            for s in statistics
        )
    # Later rounds' reading and computing count as such, not as noise.
    timings = dict(aggregated.timings)
    for key, seconds in rounds.timings.items():
        timings[key] = timings.get(key, 0.0) + seconds
    noise = time.perf_counter() - started - sum(rounds.timings.values())
    return ReleaseResult(
        statistics=statistics,
        epsilon_spent=plan.epsilon_spent,
        delta_spent=plan.delta_spent,
        timings={**timings, "noise_s": max(0.0, noise)},
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
    the statistics use; the noise step is the same whichever engine ran. An iterative kind
    (k-means) asks the same engine for one more pass per later round (kinds/base.py).
    ``timings`` holds read_s, compute_s and noise_s, every round included."""
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
        raise EngineValidationError.single("columns", TABLE_LACKS_COLUMNS) from None
    if any(
        isinstance(request, RowCount) and answer > MAX_ROWS
        for request, answer in zip(flat, aggregated.answers, strict=True)
    ):
        raise EngineValidationError.single("rows", AT_MOST_ROWS, count=f"{MAX_ROWS:,}")
    chosen = engine

    def later_round(wanted: list[Aggregate]) -> Aggregated:
        try:
            return chosen.aggregate(path, wanted, bound)
        except KeyError:
            raise EngineValidationError.single("columns", TABLE_LACKS_COLUMNS) from None

    return dataclasses.replace(
        _release_from_aggregates(plan, requests, aggregated, _Rounds(later_round)),
        engine=engine.name,
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
    statistic is computed; the number of rows a rule touched is never reported. An iterative
    kind's later rounds (kinds/base.py) read the same typed rows, bounded by the same rule.
    """
    plan = plan_release(schema=schema, definition=definition, queries=queries, noise=noise)
    if len(frame) > MAX_ROWS:
        raise EngineValidationError.single("rows", AT_MOST_ROWS, count=f"{MAX_ROWS:,}")
    requests = _plan_requests(plan)
    flat = [request for wanted in requests for request in wanted]
    bound = _bound(plan.schema)
    numbers, labels = needed_columns(flat)
    if bound.person_key is not None:
        labels.add(bound.person_key)
    if any(name not in frame.columns for name in [*numbers, *labels]):
        raise EngineValidationError.single("columns", TABLE_LACKS_COLUMNS)
    started = time.perf_counter()
    table = typed_from_frame(frame, numbers=numbers, labels=labels)
    read = time.perf_counter()
    answers = aggregate_table(table, flat, bound)
    aggregated = Aggregated(
        answers, {"read_s": read - started, "compute_s": time.perf_counter() - read}
    )

    def later_round(wanted: list[Aggregate]) -> Aggregated:
        # The same rows, bounded by the same stable rule as the first round.
        computing = time.perf_counter()
        answers = aggregate_table(table, wanted, bound)
        return Aggregated(answers, {"compute_s": time.perf_counter() - computing})

    return _release_from_aggregates(plan, requests, aggregated, _Rounds(later_round))
