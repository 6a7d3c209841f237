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
   ⌊Σ_cells |true − predicted| + ½⌋, the L1 distance rounded to a whole number.
3. **The chosen 2-way marginals**: their PairCounts, drawn as one vector by the integer mechanism.

Everything after is post-processing of those noisy answers and public facts (the schema, the
query, the noise's variance): a graphical model is fitted to the noisy marginals by Private-PGM
(``mbi``'s mirror descent, the estimator OpenDP's own MST and AIM use), and n̂ rows are sampled
from it (``mbi``'s sampler, each record drawn independently; numpy's generator is fine there,
as the randomness is no longer the privacy noise: it is seeded from a hash of the noisy answers,
so the table is a deterministic function of them). n̂ is the inverse-variance weighted estimate of
the number of records from the noisy marginals. A numeric column's value is drawn uniformly
within its synthetic bin.

Sensitivities (c = rows per person; h = 1 under add/remove, 2 under Blowfish's replacement):

- 1-way vector: one record is one cell of each of the d histograms: L1 c·h·d; L2 c·√d under
  (ε, δ)-DP (each histogram moves by at most c in L2).
- Scores: the prediction is fixed by step 1's noisy output (adaptive composition), so a score
  moves as far as its pair's true table in L1: c·h; rounding half up (⌊x + ½⌋, monotone, and
  ⌊x + k⌋ = ⌊x⌋ + k) keeps that bound. Scores are not monotonic: OpenDP's map charges 2·Δ/s.
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

Not registered yet: the web side (files, page, wizard) comes next; until then the kind is
registered only by its tests (``kinds.register(KIND)``, then ``kinds.unregister``).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privacy_engine.aggregates import Aggregate, BinCounts, PairCounts
from privacy_engine.definitions import ApproxDP
from privacy_engine.errors import EngineValidationError
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    integer_mechanism,
)
from privacy_engine.kinds.histogram import parse_edges
from privacy_engine.kinds.marginal import Side, side_of
from privacy_engine.mechanisms import ExponentialMechanism, GaussianMechanism
from privacy_engine.schema import NumericColumn, Schema
from privacy_engine.sensitivity import histogram_sensitivity

MIN_COLUMNS = 2
MAX_COLUMNS = 10
# Buckets per column: every pair's table then has at most 2,500 cells (the marginal kind's cap).
MAX_BUCKETS = 50
# Rows of the published table: n̂, capped (a larger table is a sample of the model, and says so).
MAX_SYNTHETIC_ROWS = 200_000
# ε shares of the three steps (OpenDP's MST defaults are 0.5 : 0.05 : 0.45 in ρ).
ONEWAY_SHARE = 0.3
SELECT_SHARE = 0.1
PAIRS_SHARE = 0.6
# Mirror-descent iterations of the fit (mbi's default is 1000; 500 is within noise here).
FIT_ITERATIONS = 500


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
            weights.append(1.0 / (std * std * cells.size) if std > 0 else 1e300)
        total = sum(e * w for e, w in zip(estimates, weights, strict=True)) / sum(weights)
        return max(1.0, total)

    def seed(self) -> int:
        """A seed that is a function of the noisy answers only (so the table is too)."""
        digest = hashlib.sha256()
        for cells in (*self.oneway, *self.pair_cells):
            digest.update(np.asarray(cells, dtype=np.int64).tobytes())
            digest.update(b"|")
        digest.update(repr(self.pairs).encode())
        return int.from_bytes(digest.digest()[:8], "little")


# --- the query --------------------------------------------------------------------------------


def _shown(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "…"


def sides(query: Synthetic, schema: Schema) -> tuple[Side, ...]:
    """Each column's buckets, rule and engine request (the marginal kind's, per column)."""
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
                "columns",
                f"name {MIN_COLUMNS} to {MAX_COLUMNS} different columns, "
                'e.g. ["sex", "region", "age"]',
            )
        bins = spec.get("bins")
        if bins is not None and (
            not isinstance(bins, dict) or not set(bins) <= set(columns) or not bins
        ):
            raise EngineValidationError.single(
                "bins", 'map a numeric column to its edges, e.g. {"age": [0, 18, 65, 100]}'
            )
        edges = tuple(
            parse_edges(bins[name], f"bins.{name}") if bins and name in bins else None
            for name in columns
        )
        return Synthetic(columns=tuple(columns), weight=weight, bins=edges)

    def validate(self, query: Synthetic, schema: Schema) -> None:
        if (
            not MIN_COLUMNS <= len(query.columns) <= MAX_COLUMNS
            or len(set(query.columns)) != len(query.columns)
            or len(query.bins) != len(query.columns)
        ):
            raise EngineValidationError.single(
                "columns", f"name {MIN_COLUMNS} to {MAX_COLUMNS} different columns"
            )
        for name, side in zip(query.columns, sides(query, schema), strict=True):
            if side.drops:
                raise EngineValidationError.single(
                    "columns",
                    f"'{_shown(name)}' can leave records out (a missing value without a fill, or "
                    "a category outside the list without an other bucket): a synthetic record "
                    "needs a value in every column, so declare a fill value (and an other "
                    "bucket for a categorical column)",
                )
            if len(side.buckets) > MAX_BUCKETS:
                raise EngineValidationError.single(
                    f"bins.{name}" if isinstance(side.counts, BinCounts) else "columns",
                    f"'{_shown(name)}' has {len(side.buckets):,} buckets; a synthetic table "
                    f"allows at most {MAX_BUCKETS} per column",
                )

    def to_dict(self, query: Synthetic) -> dict[str, Any]:
        out: dict[str, Any] = {"columns": list(query.columns)}
        bins = {
            name: list(edges)
            for name, edges in zip(query.columns, query.bins, strict=True)
            if edges is not None
        }
        if bins:
            out["bins"] = bins
        return out

    def columns(self, query: Synthetic) -> tuple[str, ...]:
        return query.columns

    def _sensitivities(self, query: Synthetic, context: PlanContext) -> tuple[Any, int, Any]:
        """(1-way vector, one score, chosen pairs' vector) in the definition's norm."""
        c = context.rows_per_person
        h = histogram_sensitivity(context.definition)
        d = len(query.columns)
        if isinstance(context.definition, ApproxDP):
            oneway: Any = c * math.isqrt(d) if math.isqrt(d) ** 2 == d else c * math.sqrt(d)
            pairs: Any = (
                c * math.isqrt(d - 1) if math.isqrt(d - 1) ** 2 == d - 1 else c * math.sqrt(d - 1)
            )
            return oneway, c * h, pairs
        return c * h * d, c * h, c * h * (d - 1)

    def sensitivity(self, query: Synthetic, context: PlanContext) -> Any:
        """That of the chosen pairs' vector, the statistic's main part."""
        return self._sensitivities(query, context)[2]

    def published_cells(self, query: Synthetic, schema: Schema) -> int:
        """The noisy counts published beside the rows (1-way cells and at most d − 1 tables)."""
        sizes = [len(side.buckets) for side in sides(query, schema)]
        largest = sorted((a * b for a, b in itertools.combinations(sizes, 2)), reverse=True)
        return sum(sizes) + sum(largest[: len(sizes) - 1])

    def noise_draws(self, query: Synthetic, schema: Schema) -> int:
        d = len(query.columns)
        return self.published_cells(query, schema) + d * (d - 1) // 2 * (d - 1)

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
        no budget."""
        query = planned.query
        columns = sides(query, schema)
        exact = simulated_answers(query, schema, n)
        measurements = measure(planned, exact)
        model = fit(measurements)
        probabilities = [_distribution(c) for c in exact[0]]
        one_way = [
            _tvd(np.asarray(_project(model, (i,))), probabilities[i]) for i in range(len(columns))
        ]
        two_way = [
            _tvd(np.asarray(_project(model, (i, j))).ravel(), _distribution(cells))
            for (i, j), cells in zip(all_pairs(len(columns)), exact[1], strict=True)
        ]
        return {
            "synthetic_error": {
                "one_way_tvd_mean": float(np.mean(one_way)),
                "two_way_tvd_mean": float(np.mean(two_way)),
                "two_way_tvd_max": float(np.max(two_way)),
                "simulated_table": (
                    f"{n:,} records, independent columns: declared categories equally likely, "
                    "bins in proportion to their widths (public, never the real data)"
                ),
            }
        }

    def release(
        self,
        planned: PlannedStatistic,
        exact: tuple[list[list[int]], list[list[int]]],
        schema: Schema,
        common: dict[str, Any],
    ) -> StatisticResult:
        query = planned.query
        columns = sides(query, schema)
        measurements = measure(planned, exact)
        # From here on only the noisy answers and public facts are read.
        del exact
        model = fit(measurements)
        records = measurements.records
        rows = min(MAX_SYNTHETIC_ROWS, max(1, round(records)))
        codes = sample(model, measurements, rows)
        table = decode(query, schema, codes, measurements.seed())
        names = query.columns
        preserved = [[name] for name in names] + [
            [names[i], names[j]] for i, j in measurements.pairs
        ]
        measured = {
            json.dumps([names[i]], ensure_ascii=False): dict(
                zip(columns[i].buckets, (int(v) for v in cells), strict=True)
            )
            for i, cells in enumerate(measurements.oneway)
        }
        for (i, j), cells in zip(measurements.pairs, measurements.pair_cells, strict=True):
            label = json.dumps([names[i], names[j]], ensure_ascii=False)
            grid = np.asarray(cells).reshape(len(columns[i].buckets), len(columns[j].buckets))
            measured[label] = {
                json.dumps([a, b], ensure_ascii=False): int(grid[x, y])
                for x, a in enumerate(columns[i].buckets)
                for y, b in enumerate(columns[j].buckets)
            }
        oneway, *_, pairs = planned.mechanisms
        guarantee = _guarantee(planned, measurements, names)
        rules = "; ".join(f"{name}: {side.rule}" for name, side in zip(names, columns, strict=True))
        sampled = (
            f"; the model's estimate of the number of records is {records:,.0f}, so the table "
            f"is a sample of {rows:,} rows from it"
            if rows < round(records)
            else ""
        )
        rule = (
            f"{rules}; {guarantee}; fitted by Private-PGM (mbi) mirror descent and sampled from "
            "the fitted model (post-processing: the rows carry no privacy cost beyond the noisy "
            "marginals); numeric values drawn uniformly within their bin; the rows are not real "
            "records, and no error against the real table is computed or published" + sampled
        )
        microdata = {
            "format": "synthetic",
            "columns": list(names),
            "rows": rows,
            "records": table,
            "marginals": preserved,
            "measured": measured,
            "records_estimate": records,
            "noise": {
                "one_way": {"mechanism": oneway.name, "scale": oneway.scale},
                "two_way": {"mechanism": pairs.name, "scale": pairs.scale},
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
            **common,
        )


def _guarantee(planned: PlannedStatistic, measurements: Measurements, names: Sequence[str]) -> str:
    pairs = ", ".join(f"{names[i]} × {names[j]}" for i, j in measurements.pairs)
    delta = f", δ = {planned.delta_spent:.3g}" if planned.delta_spent else ""
    return (
        f"ε = {planned.epsilon_spent:.6g}{delta} in all: every 1-way marginal measured with "
        f"{planned.mechanisms[0].name} noise; the 2-way marginals {pairs} chosen as a maximum "
        "spanning tree by the exponential mechanism on how badly the independent model of the "
        f"noisy 1-way marginals predicts each pair, then measured with "
        f"{planned.mechanisms[-1].name} noise"
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
    """Each candidate pair's score: ⌊‖true − predicted‖₁ + ½⌋ (see the module)."""
    d = len(oneway)
    pairs = all_pairs(d)
    out = []
    for index in candidates:
        i, j = pairs[index]
        error = np.abs(
            np.asarray(exact_pairs[index], dtype=float) - independent_prediction(oneway, i, j)
        )
        out.append(math.floor(math.fsum(error.tolist()) + 0.5))
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

_NUMPY_GLOBAL = threading.Lock()


def _attr(index: int) -> str:
    return f"c{index}"


def fit(measurements: Measurements, iterations: int = FIT_ITERATIONS) -> Any:
    """A Markov random field fitted to the noisy marginals by Private-PGM's mirror descent."""
    try:
        from mbi import Domain, LinearMeasurement, estimation
    except ImportError as error:  # pragma: no cover - the dependency is declared
        raise RuntimeError(
            "synthetic tables need Private-PGM: install opendp[mbi] (the project's opendp version)"
        ) from error
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
    return estimation.mirror_descent(
        domain, observed, known_total=measurements.records, iters=iterations
    )


def _project(model: Any, columns: Sequence[int]) -> np.ndarray:
    """The fitted model's marginal over ``columns`` as probabilities (row-major)."""
    values = np.asarray(model.project(tuple(_attr(i) for i in columns)).datavector(), dtype=float)
    values = np.clip(values, 0.0, None)
    return values / values.sum() if values.sum() > 0 else values


def sample(model: Any, measurements: Measurements, rows: int) -> np.ndarray:
    """``rows`` records from the fitted model, as bucket codes (rows × columns), by mbi's
    sampler along the model's junction tree, each record drawn independently (``"sample"``).
    mbi's default ``"round"`` is not used: within a group of its parent's value it gives a
    column values that increase with the row's position, so two columns drawn given the same
    parent come out comonotone, a strong dependence no marginal measured (bench/synthetic.py
    shows it). mbi draws from numpy's global generator: it is seeded from the noisy answers and
    restored, under a lock."""
    d = len(measurements.sizes)
    # TID251 allowed here and below: this randomness is not privacy noise. It runs after every
    # noise draw, on noisy answers only (post-processing, DESIGN.md rule 5), is seeded from them,
    # and mbi's sampler only takes numpy's global generator.
    with _NUMPY_GLOBAL:
        state = np.random.get_state()  # noqa: TID251
        try:
            np.random.seed(measurements.seed() % (2**32))  # noqa: TID251
            frame = model.synthetic_data(rows, method="sample").df
        finally:
            np.random.set_state(state)  # noqa: TID251
    codes = np.stack([frame[_attr(i)].to_numpy().astype(np.int64) for i in range(d)], axis=1)
    # Rows in an order that follows the sampling: published shuffled.
    generator = np.random.default_rng(measurements.seed())  # noqa: TID251 (post-processing)
    return codes[generator.permutation(len(codes))]


def decode(query: Synthetic, schema: Schema, codes: np.ndarray, seed: int) -> dict[str, list[Any]]:
    """The rows as published, column by column: a categorical column's bucket label, a numeric
    column's value drawn uniformly within its bin ([a, b), the last [a, b])."""
    generator = np.random.default_rng([seed, 1])  # noqa: TID251 (post-processing)
    out: dict[str, list[Any]] = {}
    for index, (name, side) in enumerate(zip(query.columns, sides(query, schema), strict=True)):
        column = schema.column(name)
        these = codes[:, index]
        if isinstance(column, NumericColumn):
            edges = np.asarray(query.bins[index], dtype=float)
            low, high = edges[these], edges[these + 1]
            values = low + generator.random(len(these)) * (high - low)
            out[name] = [float(v) for v in np.minimum(values, high)]
        else:
            labels = np.asarray(side.buckets, dtype=object)
            out[name] = labels[these].tolist()
    return out


def synthetic_frame(microdata: Mapping[str, Any]) -> Any:
    """A published synthetic table's rows as a pandas DataFrame, in its column order (for the
    files: csv, json, parquet)."""
    import pandas as pd

    return pd.DataFrame({name: microdata["records"][name] for name in microdata["columns"]})


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
    shares = [_declared_shares(s, e) for s, e in zip(columns, query.bins, strict=True)]
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


# Registered by whoever offers the kind (its tests, for now): see the module's last paragraph.
KIND = SyntheticKind()
