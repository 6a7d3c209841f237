"""``synthetic``: a synthetic table with the declared columns, generated from noisy marginals only
(MST, McKenna, Miklau and Sheldon 2021), written against the engine's aggregation interface.

What touches the data, and its noise (every draw by the engine's mechanisms, OpenDP's samplers):

1. **Every 1-way marginal**: each column's CategoryCounts (a numeric column's BinCounts, on the
   query's public bin edges), all drawn as one vector by the integer mechanism of the definition
   (geometric under ε-DP and Blowfish, discrete Gaussian under (ε, δ)-DP).
2. **Which 2-way marginals**: a maximum spanning tree over the columns, chosen greedily (Kruskal)
   in d − 1 rounds, each by the exponential mechanism (OpenDP's report-noisy-max, as the quantile
   kind uses it) among the pairs not yet connected. A pair's score is how badly the independent
   model built from the *noisy* 1-way marginals predicts its true 2-way table (PairCounts):
   Σ_cells |true − round(predicted)|, whole numbers (the prediction rounded first).
3. **The chosen 2-way marginals**: their PairCounts, drawn as one vector by the integer mechanism.

Everything after is post-processing of those noisy answers and public facts (the schema, the
query, the noise's variance): the closed-form consistent model on the tree (each column's counts
by inverse variance, each pair raked to them: :func:`consistent_tree`), refined by Private-PGM
(``mbi``'s mirror descent, the estimator OpenDP's own MST and AIM use, started there so it
converges), and n̂ rows are sampled
from it, each record independently, by ancestral sampling along the measured tree (our own few
lines: mbi's sampler reads numpy's global generator, which DESIGN.md rule 2 bans even for
post-processing), every draw exact over whole-number weights with bits from ``os.urandom``. n̂
is the inverse-variance weighted estimate of the number of records from the noisy marginals. A
numeric column's value is drawn uniformly within its synthetic bin.

Sensitivities (c = rows per person; h = 1 under add/remove, 2 under Blowfish's replacement):

- 1-way vector: one record is one cell of each of the d histograms: L1 c·h·d; L2 c·√d under
  (ε, δ)-DP (each histogram moves by at most c in L2).
- Scores: the prediction is fixed by step 1's noisy output (adaptive composition), so a score
  moves as far as its pair's true table in L1, c·h, exactly (integer arithmetic on a rounded,
  fixed prediction). Scores are not monotonic: OpenDP's map charges 2·Δ/s.
- Chosen pairs (d − 1 of them, a fixed number): L1 c·h·(d − 1); L2 c·√(d − 1).

Blowfish: every Blowfish neighbour replaces one record, and any replacement moves each table by
at most 2 in L1 (one cell down, one up), so h = 2 bounds every policy (the full-domain one
exactly; finer policies are not exploited). Values a policy separates into different parts
are not protected from each other, as for any Blowfish statistic.

Budget: ε is split ONEWAY_SHARE : SELECT_SHARE : PAIRS_SHARE (SELECT_SHARE goes to the others when
d = 2: one pair, no choice); δ is split evenly between the two Gaussian vectors (selection is pure
ε-DP). The ledger is charged the mechanisms' own maps, summed (sequential composition).

Columns whose declared rules can drop a record (a missing value without a fill; a category
outside the list without an other bucket) are refused: a synthetic record needs a value in every
column, and the marginals must count the same records.

The release publishes the rows, the list of marginals preserved and their noisy counts, the
mechanisms and the guarantee; it never publishes, and never computes, an error measured against
the real table (that would leak). The preview's error is measured on a public simulated table of
the declared shape (independent columns: declared categories uniform, bins in proportion to their
widths).

``mbi`` (with jax) is imported only when a table is fitted: the rest of the engine imports without
it. Dependency: ``mbi`` (pyproject.toml).

Registered by privacy_engine/kinds/synthetic.py. The published files' rows are drawn at
publication by :func:`synthetic_table` from the stored noisy marginals (post-processing), so the
stored statistic stays small whatever the table's size.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from privacy_engine.aggregates import Aggregate, BinCounts, PairCounts
from privacy_engine.consistency import non_negative, rake
from privacy_engine.definitions import ApproxDP
from privacy_engine.errors import (
    SYNTHETIC_BUCKETS,
    SYNTHETIC_COLUMNS,
    SYNTHETIC_COLUMNS_EXAMPLE,
    SYNTHETIC_DROPS,
    EngineValidationError,
)
from privacy_engine.exact_sums import sqrt_up
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    integer_mechanism,
)
from privacy_engine.kinds.marginal import Side, columns_with_edges, parse_column_edges, side_of
from privacy_engine.mechanisms import ExponentialMechanism, GaussianMechanism
from privacy_engine.random_bits import ByteSource, random_words, system_random_bytes
from privacy_engine.schema import NumericColumn, Schema
from privacy_engine.sensitivity import histogram_sensitivity
from privacy_engine.wording import CLAUSE_SEPARATOR, gettext_noop, phrase

MIN_COLUMNS = 2
MAX_COLUMNS = 10
# Buckets per column: every pair's table then has at most 2,500 cells (the marginal kind's cap).
MAX_BUCKETS = 50
# Bins of a numeric column given no edges: equal ones between its declared bounds.
DEFAULT_BINS = 10
# Rows of the published table: n̂, capped (a larger table is a sample of the model, and says so).
MAX_SYNTHETIC_ROWS = 200_000
# ε shares of the three steps (OpenDP's MST defaults are 0.5 : 0.05 : 0.45 in ρ).
ONEWAY_SHARE = 0.3
SELECT_SHARE = 0.1
PAIRS_SHARE = 0.6
# Mirror-descent iterations of the fit from the closed-form start (mbi's default is 1000, from
# nothing).
FIT_ITERATIONS = 200
# The variance an exact answer (no noise) is weighed with: tiny, not zero.
MIN_VARIANCE = 1e-9
# A probability of 0 in the start's log-potentials.
TINY_PROBABILITY = 1e-30

# The English of the statistic's rule, its parts and its simulated preview (wording.py: the web
# layer translates each phrase; published releases keep the English).
ONE_WAY = gettext_noop("ε = {epsilon} in all: every 1-way marginal measured with {mechanism} noise")
ONE_WAY_DELTA = gettext_noop(
    "ε = {epsilon}, δ = {delta} in all: every 1-way marginal measured with {mechanism} noise"
)
TWO_WAY = gettext_noop(
    "the 2-way marginals {pairs} chosen as a maximum spanning tree by the exponential mechanism "
    "on how badly the independent model of the noisy 1-way marginals predicts each pair, then "
    "measured with {mechanism} noise"
)
FITTED = gettext_noop(
    "fitted by Private-PGM (mbi) mirror descent and sampled from the fitted model "
    "(post-processing: the rows carry no privacy cost beyond the noisy marginals)"
)
DRAWN_IN_BIN = gettext_noop("numeric values drawn uniformly within their bin")
NOT_REAL = gettext_noop(
    "the rows are not real records, and no error against the real table is computed or published"
)
SAMPLED = gettext_noop(
    "the model's estimate of the number of records is {records}, so the table is a sample of "
    "{rows} rows from it"
)
ONE_WAY_ROLE = gettext_noop("each column's counts")
CHOICE_ROLE = gettext_noop("choice of pair {number} ({pair})")
PAIRS_ROLE = gettext_noop("the chosen pairs' counts")
SIMULATED_ERROR = gettext_noop(
    "On a simulated table of {records} records of the declared shape, the model this release's "
    "noise allows (before its final fit, which can move it a little either way) had each "
    "column's shares off by {one_way} on average and each pair of columns' by {two_way} (the "
    "worst pair {worst}), as total variation distance: the share of records that would have to "
    "move to match. A real table's pairs that the spanning tree leaves out can fare worse."
)
SIMULATED_TABLE = gettext_noop(
    "{records} records, independent columns: declared categories equally likely, bins in "
    "proportion to their widths (public, never the real data)"
)


@dataclass(frozen=True)
class Synthetic:
    """A synthetic table of ``columns`` (2 to MAX_COLUMNS, each categorical or a numeric column
    cut into ``bins``: one tuple of edges per column, None for a categorical one)."""

    columns: tuple[str, ...]
    weight: float = 1.0
    bins: tuple[tuple[float, ...] | None, ...] = ()
    kind: str = field(default="synthetic", init=False)
    column: None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if not self.bins:
            object.__setattr__(self, "bins", (None,) * len(self.columns))


class MaxScoreMechanism(ExponentialMechanism):
    """The exponential mechanism choosing the *largest* score (OpenDP's report-noisy-max without
    negation); the same scale and privacy map as :class:`ExponentialMechanism`, whose least-score
    choice it mirrors."""

    @functools.cached_property
    def measurement(self) -> Any:
        import opendp.prelude as dp

        return dp.m.make_noisy_max(
            dp.vector_domain(dp.atom_domain(T="u64")),
            dp.linf_distance(T="u64", monotonic=False),
            dp.max_divergence(),
            scale=self.scale,
            negate=False,
        )

    def release(self, scores: list[int]) -> int:
        """The chosen option's index. A noise source that hands the input back (tests' exact
        sources) stands for no noise: the largest score is chosen (the first on a tie)."""
        exact = [int(s) for s in scores]
        chosen = self.noise.sample(self.measurement, exact)
        if isinstance(chosen, list):
            return max(range(len(exact)), key=exact.__getitem__)
        return int(chosen)


@dataclass(frozen=True)
class Measurements:
    """Every noisy answer the release draws, and public facts: all a synthetic table is built
    from (its fit and sample are post-processing of this)."""

    columns: tuple[str, ...]
    sizes: tuple[int, ...]
    oneway: tuple[np.ndarray, ...]
    pairs: tuple[tuple[int, int], ...]
    pair_cells: tuple[np.ndarray, ...]
    oneway_std: float
    pair_std: float

    @property
    def records(self) -> float:
        """n̂: the inverse-variance weighted mean of every noisy table's total, at least 1."""
        estimates, weights = [], []
        for cells, std in [(c, self.oneway_std) for c in self.oneway] + [
            (c, self.pair_std) for c in self.pair_cells
        ]:
            estimates.append(float(np.sum(cells)))
            # An exact table (no noise) weighs as one with a tiny variance, not infinitely.
            weights.append(1.0 / (max(std * std, MIN_VARIANCE) * cells.size))
        total = sum(e * w for e, w in zip(estimates, weights, strict=True)) / sum(weights)
        return max(1.0, total)


# --- the query --------------------------------------------------------------------------------


def _shown(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "…"


def default_edges(column: NumericColumn) -> tuple[float, ...]:
    """DEFAULT_BINS equal bins between a numeric column's declared bounds (public facts), their
    inner edges rounded to 6 significant digits for readable labels unless that would merge
    two of them (bounds such as 10¹² and 10¹² + 100), then exact."""
    lower, upper = float(column.lower), float(column.upper)
    exact = [lower + (upper - lower) * i / DEFAULT_BINS for i in range(1, DEFAULT_BINS)]
    for inner in ([float(f"{e:.6g}") for e in exact], exact):
        edges = (lower, *inner, upper)
        if all(a < b for a, b in itertools.pairwise(edges)):
            return edges
    # Bounds so close that a tenth of their range is below a double's resolution: fewer bins.
    return tuple(dict.fromkeys(e for e in (lower, *exact, upper) if lower <= e <= upper))


def with_edges(query: Synthetic, schema: Schema) -> Synthetic:
    """The query with every numeric column's edges: its own, or :func:`default_edges`."""
    bins = tuple(
        default_edges(column)
        if edges is None and isinstance(column := schema.columns.get(name), NumericColumn)
        else edges
        for name, edges in zip(query.columns, query.bins, strict=True)
    )
    return query if bins == query.bins else replace(query, bins=bins)


def sides(query: Synthetic, schema: Schema) -> tuple[Side, ...]:
    """Each column's buckets, rule and engine request (the marginal kind's, per column; numeric
    columns without edges cut by :func:`default_edges`)."""
    query = with_edges(query, schema)
    return tuple(side_of(query, index, schema) for index in range(len(query.columns)))  # type: ignore[arg-type]


def all_pairs(d: int) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(d), 2))


def _stage_epsilons(epsilon: float, d: int) -> tuple[float, float, float]:
    from privacy_engine.release import split_epsilon  # release.py imports the kinds

    select = SELECT_SHARE if d > 2 else 0.0
    oneway, chosen, pairs = split_epsilon(epsilon, [ONEWAY_SHARE, select, PAIRS_SHARE])
    return oneway, chosen, pairs


def noise_std(mechanism: Any) -> float:
    """The standard deviation of one cell's noise: discrete Laplace of scale b has variance
    2α/(1 − α)², α = e^{−1/b}; the (discrete) Gaussian's is σ (to within 10⁻⁹ of the
    continuous one for σ ≥ 1)."""
    if mechanism.scale == 0:
        return 0.0
    if isinstance(mechanism, GaussianMechanism):
        return float(mechanism.scale)
    alpha = math.exp(-1.0 / mechanism.scale)
    return math.sqrt(2.0 * alpha) / (1.0 - alpha)


class SyntheticKind(QueryKind):
    name = "synthetic"
    query_type = Synthetic

    def parse(self, spec: Mapping[str, Any], weight: float) -> Synthetic:
        columns = spec.get("columns")
        if (
            not isinstance(columns, list)
            or not MIN_COLUMNS <= len(columns) <= MAX_COLUMNS
            or not all(isinstance(c, str) for c in columns)
            or len(set(columns)) != len(columns)
        ):
            raise EngineValidationError.single(
                "columns", SYNTHETIC_COLUMNS_EXAMPLE, minimum=MIN_COLUMNS, maximum=MAX_COLUMNS
            )
        edges = parse_column_edges(spec.get("bins"), columns)
        return Synthetic(columns=tuple(columns), weight=weight, bins=edges)

    def validate(self, query: Synthetic, schema: Schema) -> None:
        if (
            not MIN_COLUMNS <= len(query.columns) <= MAX_COLUMNS
            or len(set(query.columns)) != len(query.columns)
            or len(query.bins) != len(query.columns)
        ):
            raise EngineValidationError.single(
                "columns", SYNTHETIC_COLUMNS, minimum=MIN_COLUMNS, maximum=MAX_COLUMNS
            )
        for name, side in zip(query.columns, sides(query, schema), strict=True):
            if side.drops:
                raise EngineValidationError.single("columns", SYNTHETIC_DROPS, name=_shown(name))
            if len(side.buckets) > MAX_BUCKETS:
                raise EngineValidationError.single(
                    f"bins.{name}" if isinstance(side.counts, BinCounts) else "columns",
                    SYNTHETIC_BUCKETS,
                    name=_shown(name),
                    count=f"{len(side.buckets):,}",
                    limit=MAX_BUCKETS,
                )

    def to_dict(self, query: Synthetic) -> dict[str, Any]:
        return columns_with_edges(query.columns, query.bins)

    def columns(self, query: Synthetic) -> tuple[str, ...]:
        return query.columns

    def _sensitivities(self, query: Synthetic, context: PlanContext) -> tuple[Any, int, Any]:
        """(1-way vector, one score, chosen pairs' vector) in the definition's norm."""
        c = context.rows_per_person
        h = histogram_sensitivity(context.definition)
        d = len(query.columns)
        if isinstance(context.definition, ApproxDP):
            # Whole where the root is whole; else rounded up, never a float below the truth.
            def root(cells: int) -> Any:
                whole = math.isqrt(cells)
                return c * whole if whole * whole == cells else sqrt_up(Fraction(c * c * cells))

            return root(d), c * h, root(d - 1)
        return c * h * d, c * h, c * h * (d - 1)

    def sensitivity(self, query: Synthetic, context: PlanContext) -> Any:
        """That of the chosen pairs' vector, the statistic's main part."""
        return self._sensitivities(query, context)[2]

    def published_cells(self, query: Synthetic, schema: Schema) -> int:
        """The numbers the page lists: each column's noisy counts (one per bucket); the 2-way
        tables are in the files, like the rows."""
        return sum(len(side.buckets) for side in sides(query, schema))

    def noise_draws(self, query: Synthetic, schema: Schema) -> int:
        """1-way cells, at most d − 1 of the largest tables, and d − 1 selections."""
        sizes = [len(side.buckets) for side in sides(query, schema)]
        largest = sorted((a * b for a, b in itertools.combinations(sizes, 2)), reverse=True)
        d = len(sizes)
        return sum(sizes) + sum(largest[: d - 1]) + d * (d - 1) // 2 * (d - 1)

    def plan(
        self, query: Synthetic, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        d = len(query.columns)
        eps_oneway, eps_select, eps_pairs = _stage_epsilons(epsilon, d)
        delta_half = delta / 2.0
        oneway_sens, score_sens, pairs_sens = self._sensitivities(query, context)
        oneway = integer_mechanism(oneway_sens, eps_oneway, delta_half, context)
        selectors: tuple[Any, ...] = ()
        if d > 2:
            from privacy_engine.release import split_epsilon

            step_epsilons = split_epsilon(eps_select, [1.0] * (d - 1))
            selectors = tuple(
                MaxScoreMechanism(
                    sensitivity=score_sens,
                    epsilon=step,
                    candidates=d * (d - 1) // 2,
                    noise=context.noise,
                )
                for step in step_epsilons
            )
        pairs = integer_mechanism(pairs_sens, eps_pairs, delta_half, context)
        mechanisms = (oneway, *selectors, pairs)
        name = "+".join(dict.fromkeys(m.name for m in mechanisms))
        return PlannedStatistic(
            query=query,
            epsilon=epsilon,
            delta=delta,
            mechanism=name,
            sensitivity=pairs.sensitivity,
            noise_scale=pairs.scale,
            expected_abs_error=pairs.expected_abs_error,
            ci95_halfwidth=pairs.halfwidth(),
            mechanisms=mechanisms,
            note=(
                "noise of one cell of each preserved 2-way marginal as measured; the generated "
                "table adds the model's error (the simulated preview measures both on a public "
                "table of the declared shape)"
            ),
        )

    def aggregates(self, query: Synthetic, schema: Schema) -> list[Aggregate]:
        """Every column's counts, then every pair's table (PairCounts, in combinations order):
        the pairs' scores need them all, and one pass computes them."""
        columns = sides(query, schema)
        return [
            *(side.counts for side in columns),
            *(
                PairCounts(first=columns[i].counts, second=columns[j].counts)
                for i, j in all_pairs(len(columns))
            ),
        ]

    def exact_answer(
        self, query: Synthetic, answers: list[Any]
    ) -> tuple[list[list[int]], list[list[int]]]:
        d = len(query.columns)
        return [list(a) for a in answers[:d]], [list(a) for a in answers[d:]]

    def simulated(self, query: Synthetic, schema: Schema, n: int) -> None:
        """No one-draw example (a fit takes seconds): see :meth:`simulated_facts`."""
        return None

    def simulated_facts(self, planned: PlannedStatistic, schema: Schema, n: int) -> dict[str, Any]:
        """``{"synthetic_error": {...}}``: the total variation distance of every 1- and 2-way
        marginal of the fitted model from that of a public simulated table of n records of the
        declared shape (independent columns: declared categories uniform, bins in proportion to
        their widths), one simulated release with the plan's mechanisms. Reads no data, spends
        no budget. The model is :func:`consistent_tree`, where the release's fit starts
        (milliseconds, no jax in the web process). The fit moves it, sometimes closer to the
        truth and sometimes not: on bench tables (6 columns, 2,000 and 10,000 rows, ε = 0.3 and
        1, 8 runs each) the median 2-way error was the same to within 0.0015 and the fit better
        in 15 of 32 runs; on tables far noisier than their size it can differ more, which the
        sentence says."""
        query = planned.query
        columns = sides(query, schema)
        exact = simulated_answers(query, schema, n)
        measurements = measure(planned, exact)
        model = consistent_tree(measurements)
        probabilities = [_distribution(c) for c in exact[0]]
        one_way = [_tvd(model.marginal(i), probabilities[i]) for i in range(len(columns))]
        two_way = [
            _tvd(model.pair(i, j).ravel(), _distribution(cells))
            for (i, j), cells in zip(all_pairs(len(columns)), exact[1], strict=True)
        ]
        one_mean, two_mean, two_max = (
            float(np.mean(one_way)),
            float(np.mean(two_way)),
            float(np.max(two_way)),
        )
        sentence = phrase(
            SIMULATED_ERROR,
            records=f"{n:,}",
            one_way=f"{one_mean:.1%}",
            two_way=f"{two_mean:.1%}",
            worst=f"{two_max:.1%}",
        )
        return {
            "synthetic_error": {
                "one_way_tvd_mean": one_mean,
                "two_way_tvd_mean": two_mean,
                "two_way_tvd_max": two_max,
                "simulated_table": phrase(SIMULATED_TABLE, records=f"{n:,}"),
                "sentence": sentence,
            }
        }

    def release(
        self,
        planned: PlannedStatistic,
        exact: tuple[list[list[int]], list[list[int]]],
        schema: Schema,
        common: dict[str, Any],
    ) -> StatisticResult:
        """The noisy marginals and everything public needed to generate the rows
        (:func:`synthetic_table`, at publication: post-processing), never the rows themselves, so
        the stored statistic stays small whatever the table's size."""
        query = planned.query
        columns = sides(query, schema)
        measurements = measure(planned, exact)
        del exact  # from here on only the noisy answers and public facts are read
        names = query.columns
        records = measurements.records
        rows = min(MAX_SYNTHETIC_ROWS, max(1, round(records)))
        oneway, *_, pairs = planned.mechanisms
        guarantee = _guarantee(planned, measurements, names)
        rule = CLAUSE_SEPARATOR.join(
            [
                *(f"{name}: {side.rule}" for name, side in zip(names, columns, strict=True)),
                guarantee,
                phrase(FITTED),
                phrase(DRAWN_IN_BIN),
                phrase(NOT_REAL),
                *(
                    [phrase(SAMPLED, records=f"{records:,.0f}", rows=f"{rows:,}")]
                    if rows < round(records)
                    else []
                ),
            ]
        )
        sizes = measurements.sizes
        marginals = [
            {"columns": [names[i]], "counts": [int(v) for v in cells]}
            for i, cells in enumerate(measurements.oneway)
        ] + [
            {
                "columns": [names[i], names[j]],
                "counts": np.asarray(cells, dtype=np.int64).reshape(sizes[i], sizes[j]).tolist(),
            }
            for (i, j), cells in zip(measurements.pairs, measurements.pair_cells, strict=True)
        ]
        microdata = {
            "format": "synthetic",
            "columns": list(names),
            "buckets": [list(side.buckets) for side in columns],
            "edges": [
                list(edges) if edges is not None else None
                for edges in with_edges(query, schema).bins
            ],
            "rows": rows,
            "records_estimate": records,
            "marginals": marginals,
            "noise": {
                "one_way": {
                    "mechanism": oneway.name,
                    "scale": oneway.scale,
                    "std": measurements.oneway_std,
                },
                "two_way": {
                    "mechanism": pairs.name,
                    "scale": pairs.scale,
                    "std": measurements.pair_std,
                },
                "selection": {
                    "mechanism": "exponential",
                    "scale": planned.mechanisms[1].scale if len(planned.mechanisms) > 2 else None,
                },
            },
            "guarantee": guarantee,
        }
        return StatisticResult(
            value=rows,
            ci95=None,
            rule=rule,
            columns=list(names),
            microdata=microdata,
            parts=_parts(planned, names, measurements),
            **common,
        )


def _parts(
    planned: PlannedStatistic, names: Sequence[str], measurements: Measurements
) -> list[dict[str, Any]]:
    """Every mechanism of the release with its ε, δ, sensitivity, noise scale and one noisy
    cell's 95% half-width (DESIGN.md rule 3): the 1-way vector, each choice of the tree, the
    chosen pairs' vector."""
    oneway, *selectors, pairs = planned.mechanisms
    chosen = [f"{names[i]} × {names[j]}" for i, j in measurements.pairs]

    def part(role: str, mechanism: Any) -> dict[str, Any]:
        halfwidth = getattr(mechanism, "halfwidth", None)
        return {
            "role": role,
            "mechanism": mechanism.name,
            "epsilon": mechanism.epsilon_spent,
            "delta": getattr(mechanism, "delta_spent", 0.0),
            "sensitivity": mechanism.sensitivity,
            "noise_scale": mechanism.scale,
            "ci95_halfwidth": halfwidth() if callable(halfwidth) else None,
        }

    return [
        part(phrase(ONE_WAY_ROLE), oneway),
        *(
            part(phrase(CHOICE_ROLE, number=index + 1, pair=chosen[index]), selector)
            for index, selector in enumerate(selectors)
        ),
        part(phrase(PAIRS_ROLE), pairs),
    ]


def _guarantee(planned: PlannedStatistic, measurements: Measurements, names: Sequence[str]) -> str:
    pairs = ", ".join(f"{names[i]} × {names[j]}" for i, j in measurements.pairs)
    epsilon = f"{planned.epsilon_spent:.6g}"
    oneway = planned.mechanisms[0].name
    return CLAUSE_SEPARATOR.join(
        [
            phrase(
                ONE_WAY_DELTA, epsilon=epsilon, delta=f"{planned.delta_spent:.3g}", mechanism=oneway
            )
            if planned.delta_spent
            else phrase(ONE_WAY, epsilon=epsilon, mechanism=oneway),
            phrase(TWO_WAY, pairs=pairs, mechanism=planned.mechanisms[-1].name),
        ]
    )


# --- the noisy answers: the only step that reads exact answers --------------------------------


def independent_prediction(oneway: Sequence[np.ndarray], i: int, j: int) -> np.ndarray:
    """The pair (i, j)'s table as the independent model of the noisy 1-way marginals predicts
    it, row-major: n̂·p̂_i ⊗ p̂_j, with n̂ the mean noisy total and p̂ the noisy counts made
    non-negative and normalised (uniform when none is positive). Post-processing."""
    total = max(1.0, float(np.mean([np.sum(cells) for cells in oneway])))
    shares = []
    for cells in (oneway[i], oneway[j]):
        positive = np.clip(np.asarray(cells, dtype=float), 0.0, None)
        shares.append(
            positive / positive.sum()
            if positive.sum() > 0
            else np.full(len(positive), 1.0 / len(positive))
        )
    return total * np.outer(shares[0], shares[1]).ravel()


def scores(
    oneway: Sequence[np.ndarray], exact_pairs: Sequence[Sequence[int]], candidates: Sequence[int]
) -> list[int]:
    """Each candidate pair's score: ‖true − round(predicted)‖₁, in whole numbers. The prediction
    is rounded first (it is post-processing of noisy answers), so the score is exact integer
    arithmetic and moves by exactly as much as the true table in L1 (see the module)."""
    d = len(oneway)
    pairs = all_pairs(d)
    out = []
    for index in candidates:
        i, j = pairs[index]
        predicted = np.rint(independent_prediction(oneway, i, j)).astype(np.int64)
        true = np.asarray(exact_pairs[index], dtype=np.int64)
        out.append(int(np.abs(true - predicted).sum()))
    return out


def select_tree(
    selectors: Sequence[Any], oneway: Sequence[np.ndarray], exact_pairs: Sequence[Sequence[int]]
) -> list[tuple[int, int]]:
    """The d − 1 pairs of a spanning tree, each chosen by its own exponential mechanism among
    the pairs that join two components (Kruskal), scored once on the noisy 1-way marginals."""
    d = len(oneway)
    pairs = all_pairs(d)
    if d == 2:
        return [pairs[0]]
    component = list(range(d))

    def root(x: int) -> int:
        while component[x] != x:
            component[x] = component[component[x]]
            x = component[x]
        return x

    all_scores = scores(oneway, exact_pairs, range(len(pairs)))
    chosen = []
    for selector in selectors:
        candidates = [k for k, (i, j) in enumerate(pairs) if root(i) != root(j)]
        pick = candidates[selector.release([all_scores[k] for k in candidates])]
        i, j = pairs[pick]
        component[root(i)] = root(j)
        chosen.append((i, j))
    return chosen


def measure(
    planned: PlannedStatistic, exact: tuple[Sequence[Sequence[int]], Sequence[Sequence[int]]]
) -> Measurements:
    """Every noise draw of the release, in order (1-way vector, the tree, the chosen pairs'
    vector); what is returned is noisy answers and public facts only."""
    exact_oneway, exact_pairs = exact
    d = len(exact_oneway)
    oneway_mechanism, *selectors, pairs_mechanism = planned.mechanisms
    sizes = tuple(len(cells) for cells in exact_oneway)
    flat = [int(v) for cells in exact_oneway for v in cells]
    noisy = np.asarray(oneway_mechanism.release(flat), dtype=np.int64)
    oneway = tuple(np.split(noisy, np.cumsum(sizes)[:-1]))
    tree = select_tree(selectors, oneway, exact_pairs)
    index = {pair: k for k, pair in enumerate(all_pairs(d))}
    chosen = [[int(v) for v in exact_pairs[index[pair]]] for pair in tree]
    noisy_pairs = np.asarray(
        pairs_mechanism.release([v for cells in chosen for v in cells]), dtype=np.int64
    )
    pair_cells = tuple(np.split(noisy_pairs, np.cumsum([len(c) for c in chosen])[:-1]))
    return Measurements(
        columns=tuple(planned.query.columns),
        sizes=sizes,
        oneway=oneway,
        pairs=tuple(tree),
        pair_cells=pair_cells,
        oneway_std=noise_std(oneway_mechanism),
        pair_std=noise_std(pairs_mechanism),
    )


# --- post-processing: fit and sample (mbi imported here only) ---------------------------------


def _attr(index: int) -> str:
    return f"c{index}"


@dataclass(frozen=True)
class TreeModel:
    """A fitted distribution over the columns' buckets whose graph is the measured spanning
    tree, as numpy arrays: the root column's probabilities and every other column's conditional
    given its parent (parent buckets × its buckets, each row adding up to 1). Any marginal of one
    or two columns follows in closed form, without the graphical-model library."""

    sizes: tuple[int, ...]
    order: tuple[tuple[int | None, int], ...]
    root: np.ndarray
    conditionals: Mapping[int, np.ndarray]

    @functools.cached_property
    def _parents(self) -> dict[int, int | None]:
        return {column: parent for parent, column in self.order}

    @functools.cached_property
    def _marginals(self) -> dict[int, np.ndarray]:
        out = {self.order[0][1]: self.root}
        for parent, column in self.order[1:]:
            out[column] = out[parent] @ self.conditionals[column]  # type: ignore[index]
        return out

    def marginal(self, column: int) -> np.ndarray:
        """P(column) as probabilities."""
        return self._marginals[column]

    def _step(self, start: int, end: int) -> np.ndarray:
        """P(end | start) for two columns joined by a tree edge (Bayes against its direction)."""
        if self._parents[end] == start:
            return self.conditionals[end]
        joint = self.conditionals[start] * self._marginals[end][:, None]  # P(end, start)
        totals = joint.sum(axis=0, keepdims=True)
        uniform = np.full_like(joint, 1.0 / joint.shape[0])
        return np.where(totals > 0, joint / np.where(totals > 0, totals, 1.0), uniform).T

    def _path(self, start: int, end: int) -> list[int]:
        def ancestors(column: int) -> list[int]:
            chain = [column]
            while (parent := self._parents[chain[-1]]) is not None:
                chain.append(parent)
            return chain

        up, down = ancestors(start), ancestors(end)
        common = next(c for c in up if c in set(down))
        return up[: up.index(common) + 1] + down[: down.index(common)][::-1]

    def pair(self, first: int, second: int) -> np.ndarray:
        """P(first, second) (first's buckets × second's): the product of the conditionals along
        the tree's path between them."""
        path = self._path(first, second)
        joint = np.diag(self._marginals[first])
        for start, end in itertools.pairwise(path):
            joint = joint @ self._step(start, end)
        return joint


def _conditional(joint: np.ndarray) -> np.ndarray:
    """Rows of a joint table made conditionals (a row without mass: uniform)."""
    joint = np.clip(joint, 0.0, None)
    totals = joint.sum(axis=1, keepdims=True)
    uniform = np.full_like(joint, 1.0 / joint.shape[1])
    return np.where(totals > 0, joint / np.where(totals > 0, totals, 1.0), uniform)


def consistent_tree(measurements: Measurements) -> TreeModel:
    """The closed-form model of the noisy marginals on their tree (consistency.py's method, as
    for published tables): each column's counts the inverse-variance mean of its own noisy
    counts and of every measured pair's sums over it, shifted to n̂ and made non-negative; each
    measured pair's table raked to its two columns' counts; the tree's distribution is then the
    root's counts and each pair's rows as conditionals. Post-processing, milliseconds."""
    d = len(measurements.sizes)
    total = measurements.records
    one_var = max(measurements.oneway_std**2, MIN_VARIANCE)
    pair_var = max(measurements.pair_std**2, MIN_VARIANCE)
    tables = {
        (i, j): np.asarray(cells, dtype=float).reshape(measurements.sizes[i], measurements.sizes[j])
        for (i, j), cells in zip(measurements.pairs, measurements.pair_cells, strict=True)
    }
    counts = []
    for column in range(d):
        weighted = np.asarray(measurements.oneway[column], dtype=float) / one_var
        weight = 1.0 / one_var
        for (i, j), table in tables.items():
            if column in (i, j):
                axis, summed = (
                    (1, measurements.sizes[j]) if column == i else (0, measurements.sizes[i])
                )
                weighted = weighted + table.sum(axis=axis) / (summed * pair_var)
                weight += 1.0 / (summed * pair_var)
        mean = weighted / weight
        counts.append(non_negative(mean + (total - mean.sum()) / len(mean), total))
    raked = {(i, j): rake(table, counts[i], counts[j]) for (i, j), table in tables.items()}
    order = tuple(tree_order(d, measurements.pairs))
    return TreeModel(
        sizes=tuple(measurements.sizes),
        order=order,
        root=_conditional(counts[order[0][1]][None, :])[0],
        conditionals={
            child: _conditional(
                raked[parent, child] if (parent, child) in raked else raked[child, parent].T
            )
            for parent, child in order[1:]
            if parent is not None
        },
    )


def fit(measurements: Measurements, iterations: int = FIT_ITERATIONS) -> TreeModel:
    """The model a release samples from: Private-PGM's maximum-likelihood fit (mbi's mirror
    descent over the measured cliques, every noisy marginal weighed by its noise), started at
    :func:`consistent_tree` and read out along the tree as a :class:`TreeModel`. Started from
    nothing, 500 of its iterations stayed 0.4 (total variation) from a 50 × 50 pair at 10⁶
    records where the noise allows 0.017; from the closed form they converge
    (tests/privacy_engine/test_synthetic.py). About 1.5 s (jax compiles the fit)."""
    start = consistent_tree(measurements)
    # The CPU: jax would otherwise probe for accelerators (and log each one missing).
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import jax.numpy as jnp
        from mbi import CliqueVector, Domain, Factor, LinearMeasurement, estimation
    except ImportError as error:  # pragma: no cover - the dependency is declared
        raise RuntimeError("synthetic tables need Private-PGM: install mbi") from error
    d = len(measurements.sizes)
    domain = Domain([_attr(i) for i in range(d)], list(measurements.sizes))
    # A zero standard deviation (an exact answer) gets a tiny one: the fit weighs by 1/σ.
    floor = 1e-3
    observed = [
        LinearMeasurement(
            np.asarray(cells, dtype=float), (_attr(i),), stddev=max(floor, measurements.oneway_std)
        )
        for i, cells in enumerate(measurements.oneway)
    ] + [
        LinearMeasurement(
            np.asarray(cells, dtype=float),
            (_attr(i), _attr(j)),
            stddev=max(floor, measurements.pair_std),
        )
        for (i, j), cells in zip(measurements.pairs, measurements.pair_cells, strict=True)
    ]
    # The start as log-potentials on the measured cliques: each pair's clique carries its
    # child's log-conditional, the root's clique also the root's log-probabilities, so that
    # exp(Σ) is the start's distribution (a probability of 0 becomes a very small one).
    cliques = [(_attr(i), _attr(j)) for i, j in measurements.pairs]
    logs = {
        clique: np.zeros([measurements.sizes[i] for i in pair])
        for clique, pair in zip(cliques, measurements.pairs, strict=True)
    }
    root = start.order[0][1]
    for parent, child in start.order[1:]:
        log_conditional = np.log(np.maximum(start.conditionals[child], TINY_PROBABILITY))
        if (parent, child) in measurements.pairs:
            logs[_attr(parent), _attr(child)] += log_conditional
        else:
            logs[_attr(child), _attr(parent)] += log_conditional.T
    first = next(c for c, pair in zip(cliques, measurements.pairs, strict=True) if root in pair)
    log_root = np.log(np.maximum(start.root, TINY_PROBABILITY))
    logs[first] += log_root[:, None] if first[0] == _attr(root) else log_root[None, :]
    potentials = CliqueVector(
        domain,
        cliques,
        {clique: Factor(domain.project(clique), jnp.asarray(logs[clique])) for clique in cliques},
    )
    model = estimation.mirror_descent(
        domain,
        observed,
        known_total=measurements.records,
        potentials=potentials,
        iters=iterations,
    )

    def project(columns: Sequence[int]) -> np.ndarray:
        # mbi projects onto the attributes in the order asked (rows: the first's buckets).
        values = np.asarray(model.project(tuple(_attr(i) for i in columns)).datavector())
        return values.astype(float).reshape([measurements.sizes[i] for i in columns])

    return TreeModel(
        sizes=start.sizes,
        order=start.order,
        root=_conditional(project([root])[None, :])[0],
        conditionals={
            child: _conditional(project([parent, child]))
            for parent, child in start.order[1:]
            if parent is not None
        },
    )


# Sampling thresholds are whole numbers out of 2^SAMPLE_BITS: a draw is one uniform word.
SAMPLE_BITS = 32
_SAMPLE_SCALE = 1 << SAMPLE_BITS
# A numeric value within its bin: a uniform 53-bit fraction (a double's full precision).
_FRACTION_BITS = 53


def integer_weights(probabilities: np.ndarray) -> np.ndarray:
    """Each row of ``probabilities`` (clipped at 0; a row without mass becomes uniform) as whole
    weights adding up to 2^SAMPLE_BITS, by largest remainders: every positive share keeps at
    least its floor, and sampling by these weights is exact (one uniform word per draw)."""
    shares = np.atleast_2d(np.asarray(probabilities, dtype=float))
    if not np.all(np.isfinite(shares)):
        raise ValueError("probabilities must be finite")
    shares = np.clip(shares, 0.0, None)
    totals = shares.sum(axis=1, keepdims=True)
    shares = np.where(totals > 0, shares / np.where(totals > 0, totals, 1.0), 1.0 / shares.shape[1])
    raw = shares * _SAMPLE_SCALE
    weights = np.floor(raw).astype(np.int64)
    rest = _SAMPLE_SCALE - weights.sum(axis=1)
    order = np.argsort(-(raw - weights), axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(shares.shape[1])[None, :], axis=1)
    return weights + (ranks < rest[:, None])


def draw_codes(
    weights: np.ndarray, given: np.ndarray | None, count: int, source: ByteSource
) -> np.ndarray:
    """``count`` codes, row r drawn from ``weights[given[r]]`` (``weights[0]`` when ``given``
    is None): code k with probability weights[.., k]/2^SAMPLE_BITS exactly. One uniform 32-bit
    word per draw, located in its row's cumulative weights; the rows' cumulative weights are laid
    end to end (row v offset by v·2^SAMPLE_BITS), so one sorted search serves every row."""
    rows, width = weights.shape
    cumulative = np.cumsum(weights, axis=1) + (
        np.arange(rows, dtype=np.int64)[:, None] << SAMPLE_BITS
    )
    parents = np.zeros(count, dtype=np.int64) if given is None else given.astype(np.int64)
    keys = (parents << SAMPLE_BITS) + random_words(count, source, "<u4").astype(np.int64)
    return np.searchsorted(cumulative.ravel(), keys, side="right") - parents * width


def tree_order(d: int, pairs: Sequence[tuple[int, int]]) -> list[tuple[int | None, int]]:
    """(parent, column) for every column, each parent before its children: a breadth-first walk
    of the spanning tree from column 0 (the root has no parent)."""
    neighbours: dict[int, list[int]] = {i: [] for i in range(d)}
    for i, j in pairs:
        neighbours[i].append(j)
        neighbours[j].append(i)
    order: list[tuple[int | None, int]] = [(None, 0)]
    seen = {0}
    for _, column in order:
        for child in neighbours[column]:
            if child not in seen:
                seen.add(child)
                order.append((column, child))
    if len(order) != d:
        raise ValueError("the measured pairs do not span the columns")
    return order


def sample(model: TreeModel, rows: int, random_bytes: ByteSource | None = None) -> np.ndarray:
    """``rows`` records from the fitted model, as bucket codes (rows × columns), each drawn
    independently by ancestral sampling along the tree: the root column from its marginal, every
    other column from its conditional given its parent's drawn bucket; exactly the model's
    distribution (to the 2^-32 of :func:`integer_weights`). The bits come from ``os.urandom``
    (DESIGN.md rule 2; mbi's own sampler reads numpy's global generator, so it is not used)."""
    source = random_bytes or system_random_bytes
    codes = np.zeros((rows, len(model.sizes)), dtype=np.int64)
    for parent, column in model.order:
        if parent is None:
            codes[:, column] = draw_codes(integer_weights(model.root), None, rows, source)
        else:
            weights = integer_weights(model.conditionals[column])
            codes[:, column] = draw_codes(weights, codes[:, parent], rows, source)
    return codes


def uniform_fractions(count: int, source: ByteSource) -> np.ndarray:
    """``count`` fractions k/2^53, k uniform over 0..2^53 − 1 (the top 53 bits of a word)."""
    words = random_words(count, source, "<u8") >> np.uint64(64 - _FRACTION_BITS)
    return words.astype(np.float64) / float(1 << _FRACTION_BITS)


def decode(
    edges: Sequence[Sequence[float] | None],
    codes: np.ndarray,
    random_bytes: ByteSource | None = None,
) -> tuple[np.ndarray | None, ...]:
    """Each numeric column's (one with ``edges``) values, drawn uniformly within their rows'
    bins ([a, b); the last bin [a, b]) from ``os.urandom`` bits as :func:`sample`; None for a
    categorical column (its rows are its bucket codes)."""
    source = random_bytes or system_random_bytes
    out: list[np.ndarray | None] = []
    for index, cuts in enumerate(edges):
        if cuts is None:
            out.append(None)
            continue
        these = codes[:, index]
        bounds = np.asarray(cuts, dtype=float)
        low, high = bounds[these], bounds[these + 1]
        values = low + uniform_fractions(len(these), source) * (high - low)
        # Rounding may land on b: keep a value inside its half-open bin.
        last = these == len(bounds) - 2
        out.append(np.minimum(values, np.where(last, high, np.nextafter(high, low))))
    return tuple(out)


def measurements_of(microdata: Mapping[str, Any]) -> Measurements:
    """The noisy answers a published synthetic statistic stored (:meth:`SyntheticKind.release`)."""
    names = list(microdata["columns"])
    oneway = tuple(
        np.asarray(m["counts"], dtype=np.int64) for m in microdata["marginals"][: len(names)]
    )
    tables = microdata["marginals"][len(names) :]
    return Measurements(
        columns=tuple(names),
        sizes=tuple(len(b) for b in microdata["buckets"]),
        oneway=oneway,
        pairs=tuple((names.index(t["columns"][0]), names.index(t["columns"][1])) for t in tables),
        pair_cells=tuple(np.asarray(t["counts"], dtype=np.int64).ravel() for t in tables),
        oneway_std=float(microdata["noise"]["one_way"]["std"]),
        pair_std=float(microdata["noise"]["two_way"]["std"]),
    )


@dataclass(frozen=True)
class SyntheticTable:
    """Generated rows as arrays: ``codes`` (rows × columns, each row's bucket per column),
    ``numbers[c]`` a numeric column's values (None for a categorical one, whose value is its
    bucket's label), and each column's count of rows per bucket (what the page sets beside the
    published marginals). Arrays, not Python lists: 200,000 rows of 10 columns stay in tens of
    megabytes."""

    columns: tuple[str, ...]
    buckets: tuple[tuple[str, ...], ...]
    codes: np.ndarray
    numbers: tuple[np.ndarray | None, ...]
    bucket_counts: tuple[list[int], ...]

    @property
    def rows(self) -> int:
        return int(self.codes.shape[0])

    def column(self, index: int, start: int = 0, stop: int | None = None) -> list[Any]:
        """Column ``index``'s values of rows start to stop: labels, or numbers."""
        numbers = self.numbers[index]
        if numbers is not None:
            return numbers[start:stop].tolist()
        labels = np.asarray(self.buckets[index], dtype=object)
        return labels[self.codes[start:stop, index]].tolist()

    def frame(self) -> Any:
        """The rows as a pandas DataFrame (tests and the bench)."""
        import pandas as pd

        return pd.DataFrame({name: self.column(i) for i, name in enumerate(self.columns)})


def synthetic_table(
    microdata: Mapping[str, Any], random_bytes: ByteSource | None = None
) -> SyntheticTable:
    """The rows of a synthetic statistic: the model fitted to its stored noisy marginals, then
    ``microdata["rows"]`` records sampled from it (post-processing: nothing here reads the real
    table; a new call draws new rows from the same model). Seconds: the fit compiles with jax."""
    measurements = measurements_of(microdata)
    model = fit(measurements)
    codes = sample(model, int(microdata["rows"]), random_bytes)
    numbers = decode(microdata["edges"], codes, random_bytes)
    counts = tuple(
        np.bincount(codes[:, i], minlength=size).tolist()
        for i, size in enumerate(measurements.sizes)
    )
    return SyntheticTable(
        columns=measurements.columns,
        buckets=tuple(tuple(b) for b in microdata["buckets"]),
        codes=codes.astype(np.uint8 if max(measurements.sizes) <= 256 else np.uint16),
        numbers=numbers,
        bucket_counts=counts,
    )


def synthetic_frame(microdata: Mapping[str, Any], random_bytes: ByteSource | None = None) -> Any:
    """Rows generated from a synthetic statistic as a pandas DataFrame (tests, the bench)."""
    return synthetic_table(microdata, random_bytes).frame()


# --- the simulated preview and the bench's measures --------------------------------------------


def _largest_remainder(total: int, shares: np.ndarray) -> list[int]:
    raw = total * shares
    base = np.floor(raw).astype(np.int64)
    rest = total - int(base.sum())
    order = np.argsort(-(raw - base), kind="stable")
    base[order[:rest]] += 1
    return [int(v) for v in base]


def _declared_shares(side: Side, edges: tuple[float, ...] | None) -> np.ndarray:
    if edges is not None:
        widths = np.diff(np.asarray(edges, dtype=float))
        return widths / widths.sum()
    return np.asarray([1.0 if b in side.filled else 0.0 for b in side.buckets]) / len(side.filled)


def simulated_answers(
    query: Synthetic, schema: Schema, n: int
) -> tuple[list[list[int]], list[list[int]]]:
    """The aggregates of a public table of n records of the declared shape with independent
    columns, computed (never built): 1-way and pair counts by largest remainders."""
    columns = sides(query, schema)
    edges = with_edges(query, schema).bins
    shares = [_declared_shares(s, e) for s, e in zip(columns, edges, strict=True)]
    oneway = [_largest_remainder(n, p) for p in shares]
    pairs = [
        _largest_remainder(n, np.outer(shares[i], shares[j]).ravel())
        for i, j in all_pairs(len(columns))
    ]
    return oneway, pairs


def _distribution(cells: Sequence[int]) -> np.ndarray:
    values = np.asarray(cells, dtype=float)
    return values / values.sum() if values.sum() > 0 else values


def _tvd(p: np.ndarray, q: np.ndarray) -> float:
    return 0.5 * float(np.abs(np.asarray(p, dtype=float) - np.asarray(q, dtype=float)).sum())


def marginal_errors(
    generated: Mapping[str, Sequence[Any]],
    real: Mapping[str, Sequence[Any]],
    columns: Sequence[str],
) -> tuple[list[float], list[float]]:
    """Total variation distances of every 1- and 2-way marginal of two tables given as
    ``{column: values}`` of bucket labels. For the bench only: a release never calls this on
    the real table."""
    import pandas as pd

    left, right = pd.DataFrame(generated), pd.DataFrame(real)

    def tvd(names: list[str]) -> float:
        a = left.groupby(names).size() / len(left)
        b = right.groupby(names).size() / len(right)
        joined = pd.concat([a, b], axis=1).fillna(0.0)
        return 0.5 * float((joined.iloc[:, 0] - joined.iloc[:, 1]).abs().sum())

    one = [tvd([c]) for c in columns]
    two = [tvd([a, b]) for a, b in itertools.combinations(columns, 2)]
    return one, two
