"""``quantile``: quantiles (the median is 0.5) of a bounded numeric column, each chosen by the
exponential mechanism among ``CANDIDATES`` equally spaced points from the column's lower to its
upper bound, with the utility of OpenDP's ``make_quantile_score_candidates``.

For a quantile α = a/d (d = ``QUANTILE_STEPS``) and a candidate c, with lt(c) the cleaned values
below c and gt(c) those above, the score is |(d − a)·lt(c) − a·gt(c)| = d·|lt(c) − α·n| when no
value equals c: d times the rank distance, 0 at the exact quantile. The engines count lt and ≤
per candidate (RankCounts); the scores are computed here from those counts.

Sensitivity of the score vector (L∞), per record:
- ε-DP and (ε, δ)-DP (add or remove one record): one of lt(c), gt(c) moves by one, so a score by
  at most max(a, d − a); times c for a person of up to c rows.
- Blowfish (n public; a record's value is replaced): lt(c) − 1 and gt(c) + 1 at once for every
  candidate the value crosses, so d.
Several quantiles of one statistic split its ε equally (sequential composition). The mechanism is
pure ε-DP under every definition (δ spent 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_engine.aggregates import Aggregate, RankCounts
from privacy_engine.definitions import Blowfish
from privacy_engine.errors import (
    MUST_BE_DISTINCT,
    QUANTILE_VALUES,
    QUANTILES_COUNT,
    QUANTILES_LIST,
    EngineValidationError,
)
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    cleaned_numbers,
    column_named,
    numeric_column,
    register,
)
from privacy_engine.mechanisms import ExponentialMechanism
from privacy_engine.schema import NumericColumn, Schema, format_number
from privacy_engine.wording import CLAUSE_SEPARATOR, gettext_noop, phrase

# Candidate values per quantile: the released value is one of them (a resolution of 1/1000 of
# the declared range), and each costs the noisy choice one draw.
CANDIDATES = 1001
# Quantiles are multiples of 1/QUANTILE_STEPS: exact integer scores, far from 64-bit limits.
QUANTILE_STEPS = 1000
MAX_QUANTILES = 20

CHOSEN_AMONG = gettext_noop(
    "each quantile is one of {candidates} equally spaced values from {lower} to {upper}, chosen "
    "by the exponential mechanism"
)
RANK_ACCURACY = gettext_noop(
    "with 95% probability at least, its rank is within {ranks} records of the exact "
    "quantile's, beyond the values between two neighbouring candidates"
)


@dataclass(frozen=True)
class Quantile:
    """Quantiles of a numeric column after clamping to its bounds (missing values dropped or
    filled as declared); ``quantiles`` are in (0, 1), e.g. (0.25, 0.5, 0.75)."""

    column: str
    quantiles: tuple[float, ...]
    weight: float = 1.0
    kind: str = field(default="quantile", init=False)


def candidates_of(column: NumericColumn) -> tuple[float, ...]:
    """The public candidate values: CANDIDATES points from lower to upper, both included."""
    span = column.upper - column.lower
    last = CANDIDATES - 1
    return tuple(
        column.upper if i == last else column.lower + span * i / last for i in range(CANDIDATES)
    )


def quantile_steps(alpha: float) -> int:
    """a for α = a/QUANTILE_STEPS."""
    return round(alpha * QUANTILE_STEPS)


def scores(alpha_steps: int, below: list[int], at_most: list[int]) -> list[int]:
    """Each candidate's score from the counts below it and at most it (see the module)."""
    total = at_most[-1]  # every cleaned value is at most the upper bound, the last candidate
    rest = QUANTILE_STEPS - alpha_steps
    return [
        abs(rest * lt - alpha_steps * (total - le)) for lt, le in zip(below, at_most, strict=True)
    ]


def quantile_label(alpha: float) -> str:
    """The published name of quantile α, from its steps: 0.5, 0.25, 0.999."""
    return format_number(quantile_steps(alpha) / QUANTILE_STEPS)


class QuantileKind(QueryKind):
    name = "quantile"
    query_type = Quantile

    def parse(self, spec: Mapping[str, Any], weight: float) -> Quantile:
        column = column_named(spec)
        raw = spec.get("quantiles")
        if (
            not isinstance(raw, list)
            or not raw
            or len(raw) > MAX_QUANTILES
            or any(isinstance(q, bool) or not isinstance(q, int | float) for q in raw)
        ):
            raise EngineValidationError.single("quantiles", QUANTILES_LIST, count=MAX_QUANTILES)
        return Quantile(column=column, quantiles=tuple(float(q) for q in raw), weight=weight)

    def validate(self, query: Quantile, schema: Schema) -> None:
        numeric_column(query, schema)
        alphas = query.quantiles
        if not 1 <= len(alphas) <= MAX_QUANTILES:
            raise EngineValidationError.single("quantiles", QUANTILES_COUNT, count=MAX_QUANTILES)
        for alpha in alphas:
            if (
                not math.isfinite(alpha)
                or not 1 <= quantile_steps(alpha) <= QUANTILE_STEPS - 1
                or abs(alpha * QUANTILE_STEPS - quantile_steps(alpha)) > 1e-9
            ):
                raise EngineValidationError.single("quantiles", QUANTILE_VALUES)
        if len({quantile_steps(a) for a in alphas}) != len(alphas):
            raise EngineValidationError.single("quantiles", MUST_BE_DISTINCT)

    def to_dict(self, query: Quantile) -> dict[str, Any]:
        return {"column": query.column, "quantiles": list(query.quantiles)}

    def columns(self, query: Quantile) -> tuple[str, ...]:
        return (query.column,)

    def _alpha_sensitivity(self, alpha: float, context: PlanContext) -> int:
        a = quantile_steps(alpha)
        if isinstance(context.definition, Blowfish):
            return QUANTILE_STEPS
        return context.rows_per_person * max(a, QUANTILE_STEPS - a)

    def sensitivity(self, query: Quantile, context: PlanContext) -> int:
        """The largest of its quantiles' score sensitivities (L∞)."""
        return max(self._alpha_sensitivity(alpha, context) for alpha in query.quantiles)

    def published_cells(self, query: Quantile, schema: Schema) -> int:
        return len(query.quantiles)

    def simulated(
        self, query: Quantile, schema: Schema, n: int
    ) -> tuple[dict[str, float], list[list[int]]]:
        """n values evenly spread over the range, x_i = lower + (i + ½)/n·span: each quantile is
        lower + α·span, and the counts below and at most each candidate are computed, not
        counted (the declared size may be 10¹⁰)."""
        column = schema.column(query.column)
        assert isinstance(column, NumericColumn)
        span = column.upper - column.lower
        shown = {quantile_label(a): column.lower + a * span for a in query.quantiles}
        below, at_most = [], []
        for candidate in candidates_of(column):
            # x_i < c ⇔ i < t·n − ½, with t the candidate's place in the range
            position = (candidate - column.lower) / span * n - 0.5 if span else n
            below.append(min(n, max(0, math.ceil(position))))
            at_most.append(min(n, max(0, math.floor(position) + 1)))
        return shown, [below, at_most]

    def plan(
        self, query: Quantile, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        share = epsilon / len(query.quantiles)
        mechanisms = tuple(
            ExponentialMechanism(
                sensitivity=self._alpha_sensitivity(alpha, context),
                epsilon=share,
                candidates=CANDIDATES,
                noise=context.noise,
            )
            for alpha in query.quantiles
        )
        # Accuracy in ranks (records): a score excess of x is a rank distance of x/d, plus at
        # most one candidate's worth of values the grid cannot separate (data-dependent, so not
        # counted here; the rule says so).
        worst = max(mechanisms, key=lambda m: m.scale)
        return PlannedStatistic(
            query=query,
            epsilon=epsilon,
            delta=0.0,
            mechanism=worst.name,
            sensitivity=self.sensitivity(query, context),
            noise_scale=worst.scale,
            expected_abs_error=worst.expected_score_excess / QUANTILE_STEPS,
            ci95_halfwidth=worst.score_excess(0.95) / QUANTILE_STEPS,
            mechanisms=mechanisms,
        )

    def aggregates(self, query: Quantile, schema: Schema) -> list[Aggregate]:
        column = schema.column(query.column)
        assert isinstance(column, NumericColumn)
        return [
            RankCounts(**cleaned_numbers(query.column, schema), candidates=candidates_of(column))
        ]

    def release(
        self,
        planned: PlannedStatistic,
        exact: list[list[int]],
        schema: Schema,
        common: dict[str, Any],
    ) -> StatisticResult:
        query = planned.query
        column = schema.column(query.column)
        assert isinstance(column, NumericColumn)
        grid = candidates_of(column)
        below, at_most = exact
        chosen = [
            grid[mechanism.release(scores(quantile_steps(alpha), below, at_most))]
            for alpha, mechanism in zip(query.quantiles, planned.mechanisms, strict=True)
        ]
        # Post-processing: quantiles never decrease with α, so the chosen values are published
        # in increasing order of α (each choice's guarantee holds for the sorted set too).
        order = sorted(query.quantiles)
        in_order = dict(zip(order, sorted(chosen), strict=True))
        value = {quantile_label(alpha): in_order[alpha] for alpha in query.quantiles}
        ranks = planned.ci95_halfwidth
        chosen_among = phrase(
            CHOSEN_AMONG,
            candidates=f"{CANDIDATES:,}",
            lower=format_number(column.lower),
            upper=format_number(column.upper),
        )
        rank_accuracy = phrase(RANK_ACCURACY, ranks=f"{ranks:,.1f}")
        rule = CLAUSE_SEPARATOR.join([column.rule(), chosen_among, rank_accuracy])
        return StatisticResult(value=value, ci95=None, rule=rule, **common)


KIND = register(QuantileKind())
