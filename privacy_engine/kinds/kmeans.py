"""``kmeans``: k centroids of chosen numeric columns by private Lloyd iterations (the article's
Definition 7): ``{"kind": "kmeans", "columns": ["r", "g", "b"], "k": 4}``, with ``"iterations": T``
(1 to 20) to fix the number of iterations, else chosen when the statistic is planned (below).

The algorithm
-------------
1. Initial centroids are public and independent of the data: the first k points of the Halton
   sequence (bases 2, 3, 5, 7, …, one per column) scaled into the declared bounds. The same
   columns, bounds and k always give the same start.
2. Each iteration is two aggregations given the current (public) centroids, answered by every
   engine (aggregates.ClusterSums): q_hist, the number of records nearest to each centroid, and
   q_sum, per cluster and column the sum of x_j − m_j, with m_j the middle of the declared
   bounds (the *midpoint shift*: a record then moves a cluster's sum of column j by at most the
   half-range h_j = (upper_j − lower_j)/2, not max(|lower_j|, |upper_j|)). Records are cleaned by
   their columns' declared rules; a record missing a value in a column without a fill is left
   out.
3. The ε (and δ) of the statistic is split evenly over the iterations and, in each, half to the
   counts and half to the sums: 2·T mechanisms, each with ε/(2T) (OpenDP's samplers: geometric
   counts and a Laplace vector of sums, or discrete and continuous Gaussians under (ε, δ)-DP).
   Each iteration's requests depend only on public facts and earlier noisy answers, so the
   iterations compose sequentially, adaptively: ε in total.

   Without ``iterations`` in the query (or with null), T is chosen at plan time by Su et al.'s
   rule (Su, Cao, Li, Bertino and Jha, "Differentially private k-means clustering", CODASPY
   2016), the one diffprivlib's ``KMeans._calc_iters`` applies: with d columns, n records and
   ρ = 0.225, ε_m = √(500·k³/n² · (d + ∛(4·d·ρ²))³) and T = ⌊max(min(ε/ε_m, 7), 2)⌋, from 2 to
   7. ε is the statistic's own share, n the schema's *declared* size, a public guess: never the
   table's true number of rows, which is private under add/remove neighbours and would leak
   through the published number of iterations. Without a declared size T is
   ``UNDECLARED_ITERATIONS`` (5). Fewer iterations each get a larger share of ε: on small tables
   or at small ε that beats the article's 10 (bench/kmeans.py). The plan's mechanisms carry T
   (2·T of them); the release, its rule, its parts and the simulated preview all read it there
   (:func:`planned_iterations`), never from the query.
4. Update (post-processing): a cluster whose noisy count ñ is at most τ keeps its previous
   centroid; otherwise its centroid is m + S̃/ñ, clamped to the bounds. τ = max(1, E|noise of a
   sum coordinate| / min_j h_j): below it the new centroid's expected noise would exceed half
   the narrowest column's range. τ is public (a function of the plan).

Sensitivity (per iteration; one record, or c records for a person of up to c rows)
--------------------------------------------------------------------------------
Let G_j = g_j·⌈h_j/g_j⌉ bound how far one record moves a cluster's rounded shifted sum of column
j (exact_sums.py: the sums are exact, rounded onto a grid g_j fixed by public facts; G_j = h_j for
ordinary bounds).

- ε-DP and (ε, δ)-DP (add or remove a record): the record is in one cluster. q_hist: 1 (L1 and
  L2). q_sum: that cluster's vector moves by x − m: L1 Σ_j G_j, L2 √(Σ_j G_j²). Times c for c
  rows (they may fall in several clusters: the L1 bound adds, the L2 bound is largest when all
  are in one cluster).
- Blowfish (replace a record x by y along an edge of the policy's graph; n public). If x and y
  are nearest to the same centroid, only that cluster's sum moves, by y − x: at most
  min(θ, Σ_j 2·G_j) under G^{L1,θ}, max_j 2·G_j under G^{attr,1}. But an edge can straddle a
  cluster boundary: x in cluster A, y in cluster B. Then q_hist changes by one in two cells
  (L1 2), and q_sum changes in TWO clusters at once: A loses x − m and B gains y − m, an L1
  change of ‖x − m‖₁ + ‖y − m‖₁, up to Σ_j 2·G_j. Centroids are arbitrary (earlier noisy
  output), so a boundary may pass between two points as close as one likes near a corner of
  the box, where both terms reach Σ_j G_j: the supremum over edges is Σ_j 2·G_j for
  G^{L1,θ} whatever θ > 0, for G^{attr,c}, for partitions and for the full domain alike (a
  record dropped for a missing value and replaced by a present one moves one cluster, by at
  most Σ_j G_j). So under every Blowfish policy: q_hist 2 and q_sum 2·Σ_j G_j (L1), twice the
  add/remove values. The θ the article uses, S(q_sum, G^{L1,θ}) = θ, holds for a plain sum,
  not for sums per cluster: it ignores records that change cluster.

  Could the public centroids tighten this per iteration? Only the cross-cluster term is large,
  and it cannot fall below ε-DP's: whenever two cells of the Voronoi partition meet inside the
  box, some edge of the box (a segment on which all coordinates but one are at a bound) holds a
  point of their boundary (if every box edge lay in one cell, all corners would, and that cell,
  convex, would be the whole box). Pairs straddling the boundary there have ‖x − m‖₁ + ‖y − m‖₁
  close to 2·(Σ_j h_j − h_i) for the free coordinate i, so any sound per-iteration bound is at
  least Σ_j 2·h_j − max_j 2·h_j: in three columns of equal range, 4/3 of the add/remove bound,
  and the counts stay at 2. The engine therefore uses the global value.

The published value
-------------------
``value`` is a list of rows, one per centroid: ``{"cluster": 1, "size": 612, "<column>":
coordinate, ...}`` (a CSV holds it as one row per centroid: cluster, size, one column per
coordinate); ``ci95`` is a list of the same rows with ``[low, high]`` in place of each number.
``size`` is the last iteration's noisy count (at least 0): the records nearest to the centroid's
position before its last update. A coordinate's interval covers, with probability ≥ 95% (a union
bound over the last iteration's two 97.5% intervals, as for a mean), the mean of those records;
a centroid kept for a small noisy count gets the whole range. ``parts`` lists every
iteration's two mechanisms (ε, δ, sensitivity, noise scale); ``rule`` states the columns' rules,
the start, the number of iterations (and how it was chosen), the split, the shift, τ and the
clamping.

The preview
-----------
The plan's ``expected_abs_error`` and ``ci95_halfwidth`` are those of one coordinate of the
widest column of a final centroid from the last iteration's noise alone, at the declared size
with k equal clusters (as for a mean of n/k records); they leave out how far the noisy clustering
is from the best one. The simulated preview (guidance.simulated_preview, through
:meth:`KMeansKind.simulated_facts`) measures that: the *objective ratio*, k-means' objective
(the sum over records of the squared distance to the nearest centroid) of the private centroids
divided by that of Lloyd's algorithm without noise from the same Halton start after the same
iterations (1 = no loss), on a public simulated table of the declared shape:

- n records (the declared size), in k Gaussian blobs of equal size whose centres are spread
  apart inside the declared bounds (farthest-point choice among public pseudo-random
  candidates) and whose spread is an eighth of the closest two centres' distance, clamped to
  the bounds. The table is a fixed function of the bounds, k and n (SplitMix64 on a fixed
  seed: public numbers, never noise, and never the data).
- It holds at most ``MAX_SIMULATED_POINTS`` distinct points: beyond that, each point stands for
  ⌊n/p⌋ or ⌈n/p⌉ identical records, so the exact counts and sums the mechanisms take are those
  of a table of exactly n records. The noise does not shrink with n, so this is what makes the
  ratio the one at the declared size: subsampling without weights would simulate a table of
  p records, far noisier than the real one.
- Each simulated release takes :meth:`KMeansKind.release_rounds`' steps with the plan's own
  mechanisms (same ε split, same sensitivities, same start, same τ, the same noisy_round), its
  rounds answered on the simulated table and its centroids updated in numpy (the same float
  operations as updated_centroids, so the same centroids; tested); its noise is drawn by the
  plan's mechanisms, from the noise source every preview uses. ``SIMULATED_RUNS``
  releases (fewer, down to ``MIN_SIMULATED_RUNS``, when one release draws many numbers: OpenDP's
  exact samplers bound the time) give the median ratio and the 10th and 90th percentiles.
- Lloyd's from the Halton start can itself stop in a poor local optimum (two centroids in one
  blob, one between two): ``lloyd_to_best``, its objective over that of the blobs' own means,
  says so, and the ratio can then fall below 1 (noise shakes the centroids loose).

The simulated table has well-separated clusters, so the ratio is that of data where clustering is
easy; the spent ε is not touched (nothing is released) and the real table is never read.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from privacy_engine.aggregates import Aggregate, CleanedNumbers, ClusterSums
from privacy_engine.definitions import ApproxDP, Blowfish, Definition, PureDP
from privacy_engine.errors import (
    CLUSTERS_FROM_TO,
    KMEANS_COLUMNS,
    KMEANS_COLUMNS_EXAMPLE,
    KMEANS_NUMERIC,
    MUST_BE_FROM_TO,
    RESERVED_NAME,
    WHOLE_FROM_ONE,
    EngineValidationError,
)
from privacy_engine.exact_sums import float_up, sqrt_up
from privacy_engine.kinds.base import (
    Ask,
    Mechanism,
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    cleaned_numbers,
    count_interval,
    integer_mechanism,
    real_mechanism,
    register,
)
from privacy_engine.schema import NumericColumn, Schema
from privacy_engine.wording import CLAUSE_SEPARATOR, gettext_noop, phrase

# Bounds on one request's work: every iteration is one more pass over the table.
MIN_K = 2
MAX_K = 20
MAX_ITERATIONS = 20
# Automatic iterations (see the module): Su et al.'s rule, as diffprivlib applies it, keeps T
# from 2 to 7 with ρ = 0.225.
MIN_AUTOMATIC_ITERATIONS = 2
MAX_AUTOMATIC_ITERATIONS = 7
SU_RHO = 0.225
# Without a declared size the rule has no n. 5 is the middle of its range, so never more than 3
# from what the rule would choose at any size (it gives 5 at ε = 1, k = 4 and 3 columns for
# about 7,000 records, 2 on small tables, 7 on large ones), where the article's 10 is 8 too many
# on a small table (bench/kmeans.py); the release states the count it used.
UNDECLARED_ITERATIONS = 5
# Keys of every published row besides the coordinates: no clustered column may take them.
ROW_KEYS = ("cluster", "size")
# One Halton base per column.
HALTON_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29)
MAX_COLUMNS = len(HALTON_BASES)
# Each part of the last iteration is read at 97.5%, so a coordinate's interval holds at ≥ 95%.
PART_COVERAGE = 0.975
# The simulated preview (see the module): releases simulated per preview, the most distinct
# points of the simulated table (each standing for n/points records beyond), and the fixed seed
# of its public pseudo-random numbers.
SIMULATED_RUNS = 15
MIN_SIMULATED_RUNS = 5
SIMULATED_DRAWS = 6_000
MAX_SIMULATED_POINTS = 10_000
SIMULATION_SEED = 0x5EED_C0FFEE

# The English the statistic's rule and its simulated preview are written in (wording.py: the web
# layer translates each phrase; published releases keep the English).
LEFT_OUT = gettext_noop("a record missing a value in a column without a fill is left out")
START = gettext_noop(
    "{k} initial centroids from the Halton sequence over the declared bounds "
    "(independent of the data)"
)
# The iterations clause, with how their number was chosen when the query left it automatic.
ITERATIONS = gettext_noop(
    "{iterations} iterations, each with ε/{parts} for the counts per cluster and ε/{parts} for "
    "the sums per cluster of each value minus the middle of its column's bounds"
)
ITERATIONS_CHOSEN = gettext_noop(
    "{iterations} iterations ({chosen}), each with ε/{parts} for the counts per cluster and "
    "ε/{parts} for the sums per cluster of each value minus the middle of its column's bounds"
)
CHOSEN_DEFAULT = gettext_noop("chosen automatically: no declared size, so the default {default}")
# Two phrases for one column and several: the English says "column" or "columns".
CHOSEN_BY_RULE_ONE = gettext_noop(
    "chosen automatically by Su et al.'s rule, as diffprivlib does, from ε, k, the {columns} "
    "column and the declared size of about {size} records: from {low} to {high}"
)
CHOSEN_BY_RULE = gettext_noop(
    "chosen automatically by Su et al.'s rule, as diffprivlib does, from ε, k, the {columns} "
    "columns and the declared size of about {size} records: from {low} to {high}"
)
CROSSING = gettext_noop("the sensitivity covers a record moving from one cluster to another")
KEPT = gettext_noop(
    "a cluster whose noisy count is at most {threshold} keeps its previous centroid"
)
CLAMPED_CENTROIDS = gettext_noop("centroids clamped to the bounds")
SIZE = gettext_noop("size is the last iteration's noisy count")
INTERVAL = gettext_noop(
    "each coordinate's interval covers the mean of that cluster's records with probability "
    "≥ 95% (a kept centroid gets the whole range)"
)
# The simulated preview's sentence: {table} and {iterations} are phrases of their own (below).
OBJECTIVE_RATIO = gettext_noop(
    "On a simulated table of {table} in {k} well-separated clusters of equal size (never your "
    "data), the private centroids' k-means objective (the sum of squared distances to the "
    "nearest centroid) after {iterations} was typically {median}× that of k-means without "
    "privacy from the same start: {low}× to {high}× from the 10th to the 90th percentile of "
    "{runs} simulated releases (1× = no loss). Data whose clusters overlap more can fare "
    "differently."
)
OBJECTIVE_RATIO_STUCK = gettext_noop(
    "On a simulated table of {table} in {k} well-separated clusters of equal size (never your "
    "data), the private centroids' k-means objective (the sum of squared distances to the "
    "nearest centroid) after {iterations} was typically {median}× that of k-means without "
    "privacy from the same start: {low}× to {high}× from the 10th to the 90th percentile of "
    "{runs} simulated releases (1× = no loss). From that start, k-means without privacy itself "
    "ends {stuck}× above the table's own clusters, and noise can shake centroids out of such a "
    "clustering: a ratio below 1× means that, not a gain from privacy. Data whose clusters "
    "overlap more can fare differently."
)
SIMULATED_RECORDS = gettext_noop("{records} records")
SIMULATED_POINTS = gettext_noop(
    "{records} records ({points} distinct points, each for about {each})"
)
ONE_ITERATION = gettext_noop("{count} iteration")
SEVERAL_ITERATIONS = gettext_noop("{count} iterations")


@dataclass(frozen=True)
class KMeans:
    """k centroids of the numeric ``columns`` after ``iterations`` private Lloyd iterations
    (None: chosen when the statistic is planned, see :func:`automatic_iterations`)."""

    columns: tuple[str, ...]
    k: int
    iterations: int | None = None
    weight: float = 1.0
    kind: str = field(default="kmeans", init=False)
    column: None = field(default=None, init=False)


def automatic_iterations(epsilon: float, k: int, columns: int, declared_size: int | None) -> int:
    """The iterations of a k-means statistic whose query gives none: Su et al.'s rule from its ε
    share, k, the number of columns and the declared size, 2 to 7 (the same operations as
    diffprivlib's ``KMeans._calc_iters``, so the same number); ``UNDECLARED_ITERATIONS``
    without a declared size. Public facts only: ``declared_size`` is the curator's public guess,
    never the table's true number of rows (private; it would leak through the published
    count)."""
    if declared_size is None:
        return UNDECLARED_ITERATIONS
    # numpy's cbrt, as diffprivlib's: it can differ from math.cbrt in the last place, which
    # moves the count where ε is a whole multiple of ε_m.
    epsilon_m = np.sqrt(
        500 * k**3 / declared_size**2 * (columns + np.cbrt(4 * columns * SU_RHO**2)) ** 3
    )
    return int(max(min(epsilon / epsilon_m, MAX_AUTOMATIC_ITERATIONS), MIN_AUTOMATIC_ITERATIONS))


def planned_iterations(planned: PlannedStatistic) -> int:
    """The iterations a planned k-means statistic runs: one count and one sum mechanism each
    (the query's own number, or the automatic one resolved by the plan)."""
    return len(planned.mechanisms) // 2


def _whole(value: Any, low: int, high: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and low <= value <= high


def _numeric_columns(query: KMeans, schema: Schema) -> list[NumericColumn]:
    columns = []
    for name in query.columns:
        column = schema.columns.get(name)
        if not isinstance(column, NumericColumn):
            shown = name if len(name) <= 60 else name[:57] + "…"
            raise EngineValidationError.single("columns", KMEANS_NUMERIC, name=shown)
        columns.append(column)
    return columns


def radical_inverse(index: int, base: int) -> Fraction:
    """The index-th term of van der Corput's sequence in ``base`` (exact)."""
    result, scale = Fraction(0), Fraction(1, base)
    while index:
        index, digit = divmod(index, base)
        result += digit * scale
        scale /= base
    return result


def initial_centroids(columns: Sequence[NumericColumn], k: int) -> tuple[tuple[float, ...], ...]:
    """Points 1..k of the Halton sequence (a base per column) scaled into the bounds: public,
    reproducible, and independent of the data."""
    return tuple(
        tuple(
            float(
                Fraction(column.lower)
                + (Fraction(column.upper) - Fraction(column.lower)) * radical_inverse(i, base)
            )
            for column, base in zip(columns, HALTON_BASES, strict=False)
        )
        for i in range(1, k + 1)
    )


def cluster_sums(
    names: Sequence[str], schema: Schema, centroids: Sequence[Sequence[float]]
) -> ClusterSums:
    """One iteration's request: the columns with their declared rules, the public centroids."""
    return ClusterSums(
        columns=tuple(CleanedNumbers(**cleaned_numbers(name, schema)) for name in names),
        centroids=tuple(tuple(float(x) for x in centre) for centre in centroids),
    )


def count_part_sensitivity(definition: Definition, rows_per_person: int = 1) -> int:
    """Sensitivity of q_hist (L1, and L2 under (ε, δ)-DP): 1 per row under add/remove, 2 under
    Blowfish (a record leaves one cluster and joins another)."""
    if isinstance(definition, PureDP | ApproxDP):
        return rows_per_person
    if isinstance(definition, Blowfish):
        return 2 * rows_per_person
    raise TypeError(f"unsupported definition {definition!r}")


def sum_part_sensitivity(
    request: ClusterSums, definition: Definition, *, norm: str = "l1", rows_per_person: int = 1
) -> float:
    """Sensitivity of q_sum, the vector of every cluster's shifted sums (see the module): under
    add/remove c·Σ_j G_j (L1) or c·√(Σ_j G_j²) (L2); under every Blowfish policy 2·Σ_j G_j (L1),
    since a replacement along an edge can move a record from one cluster to another."""
    steps = [request.step_bound(j) for j in range(len(request.columns))]
    rows = Fraction(rows_per_person)
    if isinstance(definition, PureDP | ApproxDP):
        if norm == "l2":
            return sqrt_up(rows * rows * sum(step * step for step in steps))
        return float_up(rows * sum(steps))
    if isinstance(definition, Blowfish):
        return float_up(2 * rows * sum(steps))
    raise TypeError(f"unsupported definition {definition!r}")


def small_cluster_threshold(sum_part: Mechanism, request: ClusterSums) -> float:
    """τ: at or below this noisy count a cluster keeps its previous centroid (see the module)."""
    narrowest = min(float(request.half_range(j)) for j in range(len(request.columns)))
    return max(1.0, sum_part.expected_abs_error / narrowest)


def updated_centroids(
    previous: Sequence[Sequence[float]],
    noisy_counts: Sequence[int],
    noisy_sums: Sequence[float],
    request: ClusterSums,
    threshold: float,
) -> tuple[tuple[tuple[float, ...], ...], list[bool]]:
    """The next centroids from one iteration's noisy answers (post-processing), and which
    clusters were updated: m + S̃/ñ clamped to the bounds, or the previous centroid when
    ñ ≤ ``threshold``. ``noisy_sums`` is cluster-major (cluster 0's columns first)."""
    d = len(request.columns)
    centroids, updated = [], []
    for cluster, count in enumerate(noisy_counts):
        if count <= threshold:
            centroids.append(tuple(previous[cluster]))
            updated.append(False)
            continue
        centre = []
        for j, column in enumerate(request.columns):
            value = float(request.midpoint(j)) + noisy_sums[cluster * d + j] / count
            centre.append(min(column.upper, max(column.lower, value)))
        centroids.append(tuple(centre))
        updated.append(True)
    return tuple(centroids), updated


def noisy_round(
    count_part: Mechanism, sum_part: Mechanism, answer: tuple[list[int], list[list[float]]]
) -> tuple[list[int], list[float]]:
    """One iteration's noise: the counts through ``count_part``, the cluster-major vector of
    shifted sums through ``sum_part``."""
    counts, sums = answer
    noisy_counts = [int(v) for v in count_part.release(counts)]
    noisy_sums = [float(v) for v in sum_part.release([s for row in sums for s in row])]
    return noisy_counts, noisy_sums


def _even_shares(total: float, parts: int) -> float:
    """One share of ``total`` split evenly into ``parts`` whose exact sum never exceeds it."""
    # Imported here: release.py imports the kinds.
    from privacy_engine.release import split_epsilon

    return min(split_epsilon(total, [1.0] * parts))


class KMeansKind(QueryKind):
    name = "kmeans"
    query_type = KMeans
    iterative = True
    simulates_releases = True

    def parse(self, spec: Mapping[str, Any], weight: float) -> KMeans:
        columns = spec.get("columns")
        if (
            not isinstance(columns, list)
            or not 1 <= len(columns) <= MAX_COLUMNS
            or not all(isinstance(c, str) for c in columns)
            or len(set(columns)) != len(columns)
        ):
            raise EngineValidationError.single("columns", KMEANS_COLUMNS_EXAMPLE, count=MAX_COLUMNS)
        k = spec.get("k")
        if not _whole(k, MIN_K, MAX_K):
            raise EngineValidationError.single("k", CLUSTERS_FROM_TO, minimum=MIN_K, maximum=MAX_K)
        iterations = spec.get("iterations")  # absent or null: automatic
        if iterations is not None and not _whole(iterations, 1, MAX_ITERATIONS):
            raise EngineValidationError.single("iterations", WHOLE_FROM_ONE, maximum=MAX_ITERATIONS)
        return KMeans(columns=tuple(columns), k=k, iterations=iterations, weight=weight)

    def validate(self, query: KMeans, schema: Schema) -> None:
        # Checked here too, for queries built in Python.
        if not 1 <= len(query.columns) <= MAX_COLUMNS or len(set(query.columns)) != len(
            query.columns
        ):
            raise EngineValidationError.single("columns", KMEANS_COLUMNS, count=MAX_COLUMNS)
        if reserved := sorted(set(query.columns) & set(ROW_KEYS)):
            raise EngineValidationError.single("columns", RESERVED_NAME, name=reserved[0])
        if not _whole(query.k, MIN_K, MAX_K):
            raise EngineValidationError.single("k", MUST_BE_FROM_TO, minimum=MIN_K, maximum=MAX_K)
        if query.iterations is not None and not _whole(query.iterations, 1, MAX_ITERATIONS):
            raise EngineValidationError.single(
                "iterations", MUST_BE_FROM_TO, minimum=1, maximum=MAX_ITERATIONS
            )
        _numeric_columns(query, schema)

    def to_dict(self, query: KMeans) -> dict[str, Any]:
        spec: dict[str, Any] = {"columns": list(query.columns), "k": query.k}
        if query.iterations is not None:  # automatic iterations are left out, as parse reads
            spec["iterations"] = query.iterations
        return spec

    def iterations_for(self, query: KMeans, epsilon: float, schema: Schema) -> int:
        """The iterations the statistic runs with ``epsilon`` as its share: the query's own, or
        :func:`automatic_iterations` from public facts (the declared size, never the data)."""
        if query.iterations is not None:
            return query.iterations
        return automatic_iterations(epsilon, query.k, len(query.columns), schema.declared_size)

    def columns(self, query: KMeans) -> tuple[str, ...]:
        return query.columns

    def first_request(self, query: KMeans, schema: Schema) -> ClusterSums:
        """The first iteration's request, around the public initial centroids."""
        start = initial_centroids(_numeric_columns(query, schema), query.k)
        return cluster_sums(query.columns, schema, start)

    def sensitivity(self, query: KMeans, context: PlanContext) -> float:
        """That of each iteration's sums, the part whose noise dominates the centroids."""
        return sum_part_sensitivity(
            self.first_request(query, context.schema),
            context.definition,
            norm=context.norm,
            rows_per_person=context.rows_per_person,
        )

    def published_cells(self, query: KMeans, schema: Schema) -> int:
        return query.k * (len(query.columns) + 1)

    def disjoint_cells(self, query: KMeans, schema: Schema) -> int:
        # Each iteration's counts and sums are per cluster, and a record is in one cluster.
        return query.k

    def noise_draws(self, query: KMeans, schema: Schema) -> int:
        # Counted before planning, without the ε share: automatic iterations at their most.
        iterations = MAX_AUTOMATIC_ITERATIONS if query.iterations is None else query.iterations
        return iterations * query.k * (len(query.columns) + 1)

    def plan(
        self, query: KMeans, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        request = self.first_request(query, context.schema)
        iterations = self.iterations_for(query, epsilon, context.schema)
        parts = 2 * iterations
        share = _even_shares(epsilon, parts)
        delta_share = _even_shares(delta, parts) if delta else 0.0
        c = context.rows_per_person
        count_part = integer_mechanism(
            count_part_sensitivity(context.definition, c), share, delta_share, context
        )
        sum_part = real_mechanism(
            self.sensitivity(query, context), share, delta_share, context, vector=True
        )
        expected, halfwidth = _centroid_accuracy(
            request, count_part, sum_part, query.k, context.schema.declared_size
        )
        return PlannedStatistic(
            query=query,
            epsilon=epsilon,
            delta=delta,
            mechanism=f"{sum_part.name}+{count_part.name}",
            sensitivity=sum_part.sensitivity,
            noise_scale=sum_part.scale,
            expected_abs_error=expected,
            ci95_halfwidth=halfwidth,
            mechanisms=(count_part, sum_part) * iterations,
            note=(
                "error of one centroid coordinate (widest column) from the last iteration's "
                f"noise, at the declared size with {query.k} equal clusters; it leaves out how "
                "far the noisy clustering is from the best one (the simulated preview's "
                "objective ratio shows that)"
                if expected is not None
                else "declare the table's approximate size to see a centroid's expected error"
            ),
        )

    def aggregates(self, query: KMeans, schema: Schema) -> list[Aggregate]:
        return [self.first_request(query, schema)]

    def simulated(self, query: KMeans, schema: Schema, n: int) -> None:
        """No one-draw example: a release's rounds need a table (release_statistic refuses an
        iterative kind without ``ask``); the simulated preview is :meth:`simulated_facts`."""
        return None

    def simulated_facts(self, planned: PlannedStatistic, schema: Schema, n: int) -> dict[str, Any]:
        """The simulated preview's entry: ``{"objective_ratio": ...}`` (see
        :func:`simulated_objective_ratio`). Reads no data and spends no budget."""
        return {"objective_ratio": simulated_objective_ratio(planned, schema, n)}

    def release(
        self, planned: PlannedStatistic, exact: Any, schema: Schema, common: dict[str, Any]
    ) -> StatisticResult:
        raise TypeError("k-means is answered in rounds: release.py calls release_rounds")

    def release_rounds(
        self,
        planned: PlannedStatistic,
        exact: tuple[list[int], list[list[float]]],
        ask: Ask,
        schema: Schema,
        common: dict[str, Any],
    ) -> StatisticResult:
        query = planned.query
        iterations = planned_iterations(planned)
        request = self.first_request(query, schema)
        count_part, sum_part = planned.mechanisms[:2]
        threshold = small_cluster_threshold(sum_part, request)
        centroids = request.centroids
        answer = exact
        for iteration in range(iterations):
            if iteration:
                request = cluster_sums(query.columns, schema, centroids)
                (answer,) = ask([request])
            count_part, sum_part = planned.mechanisms[2 * iteration : 2 * iteration + 2]
            noisy_counts, noisy_sums = noisy_round(count_part, sum_part, answer)
            centroids, updated = updated_centroids(
                centroids, noisy_counts, noisy_sums, request, threshold
            )
        value, ci95 = _published(
            query, request, centroids, updated, noisy_counts, count_part, sum_part
        )
        rule = CLAUSE_SEPARATOR.join(
            [
                *(f"{name}: {schema.column(name).rule()}" for name in query.columns),
                phrase(LEFT_OUT),
                phrase(START, k=query.k),
                _iterations_clause(query, schema, iterations),
                phrase(CROSSING),
                phrase(KEPT, threshold=f"{threshold:.4g}"),
                phrase(CLAMPED_CENTROIDS),
                phrase(SIZE),
                phrase(INTERVAL),
            ]
        )
        parts = [
            {
                "iteration": index // 2 + 1,
                "role": "count" if index % 2 == 0 else "sum",
                "mechanism": m.name,
                "epsilon": m.epsilon_spent,
                "delta": m.delta_spent,
                "sensitivity": m.sensitivity,
                "noise_scale": m.scale,
            }
            for index, m in enumerate(planned.mechanisms)
        ]
        return StatisticResult(
            value=value,
            ci95=ci95,
            rule=rule,
            parts=parts,
            **{**common, "column": None, "columns": list(query.columns)},
        )


def _iterations_clause(query: KMeans, schema: Schema, iterations: int) -> str:
    """The rule's clause on the iterations and the split of ε, saying how their number was
    chosen when the query left it automatic."""
    parts = 2 * iterations
    if query.iterations is not None:
        return phrase(ITERATIONS, iterations=iterations, parts=parts)
    if schema.declared_size is None:
        chosen = phrase(CHOSEN_DEFAULT, default=UNDECLARED_ITERATIONS)
    else:
        chosen = phrase(
            CHOSEN_BY_RULE if len(query.columns) > 1 else CHOSEN_BY_RULE_ONE,
            columns=len(query.columns),
            size=f"{schema.declared_size:,}",
            low=MIN_AUTOMATIC_ITERATIONS,
            high=MAX_AUTOMATIC_ITERATIONS,
        )
    return phrase(ITERATIONS_CHOSEN, iterations=iterations, chosen=chosen, parts=parts)


def _centroid_accuracy(
    request: ClusterSums,
    count_part: Mechanism,
    sum_part: Mechanism,
    k: int,
    declared_size: int | None,
) -> tuple[float | None, float | None]:
    """(expected |error|, 95% half-width) of one coordinate of the widest column of a final
    centroid from the last iteration's noise, with n/k records per cluster (see the module)."""
    if declared_size is None:
        return None, None
    per_cluster = declared_size / k
    widest = max(range(len(request.columns)), key=lambda j: request.half_range(j))
    half = float(request.half_range(widest))
    width = 2 * half
    expected = (sum_part.expected_abs_error + half * count_part.expected_abs_error) / per_cluster
    halfwidth = (
        sum_part.halfwidth(PART_COVERAGE) + half * count_part.halfwidth(PART_COVERAGE)
    ) / per_cluster
    return min(expected, width), min(halfwidth, width)


def _published(
    query: KMeans,
    request: ClusterSums,
    centroids: Sequence[Sequence[float]],
    updated: list[bool],
    noisy_counts: list[int],
    count_part: Mechanism,
    sum_part: Mechanism,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One row per centroid (cluster, size, a coordinate per column) and its intervals."""
    count_half = count_part.halfwidth()
    sum_part_half = sum_part.halfwidth(PART_COVERAGE)
    count_part_half = count_part.halfwidth(PART_COVERAGE)
    value, ci95 = [], []
    for cluster, (centre, was_updated, count) in enumerate(
        zip(centroids, updated, noisy_counts, strict=True)
    ):
        size = max(0, count)
        row: dict[str, Any] = {"cluster": cluster + 1, "size": size}
        interval: dict[str, Any] = {
            "cluster": cluster + 1,
            "size": count_interval(size, count_half),
        }
        for j, (name, coordinate) in enumerate(zip(query.columns, centre, strict=True)):
            column = request.columns[j]
            row[name] = float(coordinate)
            if was_updated:
                spread = (sum_part_half + float(request.half_range(j)) * count_part_half) / count
                interval[name] = [
                    max(column.lower, coordinate - spread),
                    min(column.upper, coordinate + spread),
                ]
            else:
                interval[name] = [column.lower, column.upper]
        value.append(row)
        ci95.append(interval)
    return value, ci95


# --- the simulated preview (see the module) -----------------------------------------------------


def public_uniforms(count: int, seed: int = SIMULATION_SEED) -> np.ndarray:
    """``count`` numbers in [0, 1): SplitMix64 (Steele, Lea and Flood 2014) of seed + i·γ. A fixed
    public sequence that places the simulated table's points; never noise (noise comes from the
    mechanisms' source alone, DESIGN.md rule 2)."""
    with np.errstate(over="ignore"):
        z = np.arange(1, count + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z += np.uint64(seed)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


@dataclass(frozen=True, eq=False)
class SimulatedTable:
    """A public table of n records: row i of ``points`` (in the declared bounds) stands for
    ``weights[i]`` identical records, Σ weights = n; ``centres`` are the blobs' centres in the unit
    box. Its answers are computed as an engine computes them on those n records."""

    points: np.ndarray
    weights: np.ndarray
    middles: np.ndarray
    centres: np.ndarray

    @functools.cached_property
    def _shifted(self) -> np.ndarray:
        # Coordinates around the middle of the box, in which the clusters' sums are taken.
        return self.points - self.middles

    @functools.cached_property
    def _weighted(self) -> np.ndarray:
        return self._shifted * self.weights[:, None]

    @functools.cached_property
    def _squared_norms(self) -> np.ndarray:
        return (self._shifted**2).sum(axis=1)

    @property
    def records(self) -> int:
        return int(self.weights.sum())

    def _distances(self, centroids: Any) -> np.ndarray:
        """Squared distances of every point to every centroid, ‖x‖² − 2x·c + ‖c‖² around the
        middle of the box: one product of matrices instead of k·d passes."""
        centres = np.asarray(centroids, dtype=float) - self.middles
        distances = self._shifted @ (-2.0 * centres.T)
        distances += self._squared_norms[:, None]
        distances += (centres**2).sum(axis=1)[None, :]
        return distances

    def cluster_answer(self, centroids: Any) -> tuple[np.ndarray, np.ndarray]:
        """(counts, shifted sums) per cluster, ClusterSums' answer on the n records: each record
        to its nearest centroid (the lowest index on a tie), the sums of x_j − m_j (no value is
        missing or out of bounds; the sums are not rounded onto a grid). Counts are int64, sums
        a k × d array."""
        k = len(centroids)
        labels = self._distances(centroids).argmin(axis=1)
        counts = np.bincount(labels, weights=self.weights, minlength=k)
        sums = np.stack(
            [np.bincount(labels, weights=column, minlength=k) for column in self._weighted.T],
            axis=1,
        )
        return np.rint(counts).astype(np.int64), sums

    def answer(self, request: ClusterSums) -> tuple[list[int], list[list[float]]]:
        """``request``'s answer as an engine returns it (an ``ask`` on this table)."""
        counts, sums = self.cluster_answer(request.centroids)
        return [int(c) for c in counts], sums.tolist()

    def blob_means(self) -> np.ndarray:
        """The mean of each blob's records (point i is in blob i mod k): the table's own
        clusters, close to its best clustering (the blobs are far apart)."""
        k = len(self.centres)
        return np.stack(
            [
                self.weights[b::k] @ self.points[b::k] / self.weights[b::k].sum()
                for b in range(min(k, len(self.weights)))
            ]
        )

    def objective(self, centroids: Any) -> float:
        """k-means' objective on the n records: Σ weight · squared distance to the nearest."""
        nearest = np.maximum(self._distances(centroids).min(axis=1), 0.0)
        return float(nearest @ self.weights)


@functools.lru_cache(maxsize=8)
def simulated_table(bounds: tuple[tuple[float, float], ...], k: int, n: int) -> SimulatedTable:
    """The public simulated table (see the module) of n records in k equal blobs inside
    ``bounds`` (lower, upper per column): a fixed function of its arguments."""
    d = len(bounds)
    lower = np.array([low for low, _ in bounds], dtype=float)
    upper = np.array([high for _, high in bounds], dtype=float)
    # Blob centres in the unit box, kept a tenth of the way from its faces: the farthest-point
    # choice among 16·k public candidates, from the first.
    candidates = 0.1 + 0.8 * public_uniforms(16 * k * d).reshape(16 * k, d)
    chosen = [0]
    closest = ((candidates - candidates[0]) ** 2).sum(axis=1)
    for _ in range(k - 1):
        chosen.append(int(closest.argmax()))
        closest = np.minimum(closest, ((candidates - candidates[chosen[-1]]) ** 2).sum(axis=1))
    centres = candidates[chosen]
    gaps = ((centres[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    spread = float(np.sqrt(gaps[~np.eye(k, dtype=bool)].min())) / 8
    # p distinct points, point i in blob i mod k (equal blobs), each standing for n/p records.
    p = min(n, MAX_SIMULATED_POINTS)
    uniforms = public_uniforms(2 * p * d, seed=SIMULATION_SEED + 1).reshape(2, p, d)
    # Box–Muller: standard normal coordinates from pairs of uniforms (1 − u is in (0, 1]).
    normal = np.sqrt(-2.0 * np.log1p(-uniforms[0])) * np.cos(2.0 * np.pi * uniforms[1])
    unit = np.clip(centres[np.arange(p) % k] + spread * normal, 0.0, 1.0)
    points = np.clip(lower + unit * (upper - lower), lower, upper)
    weights = np.full(p, n // p, dtype=np.float64)
    weights[: n % p] += 1
    middles = np.array([(low + high) / 2 for low, high in bounds], dtype=float)
    for array in (points, weights, middles, centres):
        array.setflags(write=False)
    return SimulatedTable(points=points, weights=weights, middles=middles, centres=centres)


def simulated_lloyd(
    table: SimulatedTable,
    request: ClusterSums,
    iterations: int,
    rounds: Sequence[tuple[Mechanism, Mechanism]] | None = None,
    threshold: float = 0.0,
) -> np.ndarray:
    """The centroids after ``iterations`` iterations on ``table`` from ``request``'s (the
    public start). With ``rounds`` (each iteration's count and sum mechanisms), the private
    release: :meth:`KMeansKind.release_rounds`' steps (noisy_round, then updated_centroids with
    τ = ``threshold``), vectorised; without, Lloyd's algorithm (an empty cluster stays)."""
    d = len(request.columns)
    middles = np.array([float(request.midpoint(j)) for j in range(d)])
    lower = np.array([column.lower for column in request.columns], dtype=float)
    upper = np.array([column.upper for column in request.columns], dtype=float)
    centroids = np.array(request.centroids, dtype=float)
    for iteration in range(iterations):
        counts, sums = table.cluster_answer(centroids)
        if rounds is not None:
            count_part, sum_part = rounds[iteration]
            noisy_counts, noisy_sums = noisy_round(count_part, sum_part, (counts, sums))
            counts = np.asarray(noisy_counts, dtype=np.int64)
            sums = np.asarray(noisy_sums, dtype=float).reshape(len(counts), d)
        moved = counts > threshold
        with np.errstate(divide="ignore", invalid="ignore"):
            updated = np.minimum(upper, np.maximum(lower, middles + sums / counts[:, None]))
        centroids = np.where(moved[:, None], updated, centroids)
    return centroids


def simulated_runs(query: KMeans, columns: int, iterations: int) -> int:
    """Simulated releases per preview of a release of ``iterations`` iterations (the plan's):
    ``SIMULATED_RUNS``, fewer when one release draws many numbers, never fewer than
    ``MIN_SIMULATED_RUNS``. The noise is most of the time: OpenDP's exact samplers take tens of
    µs a number, and each call some 0.4 ms (counted as 10 draws)."""
    cost = iterations * (2 * 10 + query.k * (columns + 1))
    return max(MIN_SIMULATED_RUNS, min(SIMULATED_RUNS, SIMULATED_DRAWS // cost))


def simulated_objective_ratio(
    planned: PlannedStatistic, schema: Schema, n: int, *, runs: int | None = None
) -> dict[str, Any] | None:
    """How far the private centroids are from k-means without noise, on the public simulated table
    of the declared shape (see the module): the median over ``runs`` simulated releases (by
    default :func:`simulated_runs`) of the ratio of their objective to Lloyd's from the same start
    after as many iterations, its 10th and 90th percentiles, the table's facts and a sentence for
    the curator. None when Lloyd's objective is (next to) 0: with n ≤ k the centroids can sit on
    the records. Noise from ``planned``'s own mechanisms; the real table is never read."""
    query = planned.query
    assert isinstance(query, KMeans)
    columns = _numeric_columns(query, schema)
    iterations = planned_iterations(planned)
    runs = simulated_runs(query, len(columns), iterations) if runs is None else runs
    table = simulated_table(tuple((float(c.lower), float(c.upper)) for c in columns), query.k, n)
    request = KIND.first_request(query, schema)
    baseline = table.objective(simulated_lloyd(table, request, iterations))
    # Objectives this small are rounding (the expansion of the squared distances), not spread.
    negligible = 1e-9 * n * float(sum((c.upper - c.lower) ** 2 for c in columns))
    if n <= query.k or baseline <= negligible:
        return None
    mechanisms = planned.mechanisms
    rounds = [(mechanisms[2 * i], mechanisms[2 * i + 1]) for i in range(iterations)]
    threshold = small_cluster_threshold(mechanisms[1], request)
    ratios = [
        table.objective(simulated_lloyd(table, request, iterations, rounds, threshold)) / baseline
        for _ in range(runs)
    ]
    median, low, high = (float(v) for v in np.percentile(ratios, [50, 10, 90]))
    # How good Lloyd's itself is here: its objective over that of the blobs' own means.
    best = table.objective(table.blob_means())
    stuck = baseline / best if best > negligible else 1.0
    points = len(table.weights)
    sentence = phrase(
        OBJECTIVE_RATIO_STUCK if stuck > 1.05 else OBJECTIVE_RATIO,
        table=(
            phrase(
                SIMULATED_POINTS, records=f"{n:,}", points=f"{points:,}", each=f"{n / points:,.0f}"
            )
            if points < n
            else phrase(SIMULATED_RECORDS, records=f"{n:,}")
        ),
        k=query.k,
        iterations=phrase(
            ONE_ITERATION if iterations == 1 else SEVERAL_ITERATIONS, count=iterations
        ),
        median=f"{median:.2f}",
        low=f"{low:.2f}",
        high=f"{high:.2f}",
        runs=runs,
        stuck=f"{stuck:.2f}",
    )
    return {
        "median": median,
        "p10": low,
        "p90": high,
        "runs": runs,
        "records": n,
        "distinct_points": points,
        "clusters": query.k,
        "iterations": iterations,
        "lloyd_to_best": stuck,
        "sentence": sentence,
    }


def objective(points: np.ndarray, centroids: Sequence[Sequence[float]]) -> float:
    """k-means' objective (Equation 1): the sum over points of the squared distance to the nearest
    centroid. For benchmarks and tests on known data; the engine never publishes it."""
    best = np.full(len(points), np.inf)
    for centre in np.asarray(centroids, dtype=float):
        best = np.minimum(best, ((points - centre) ** 2).sum(axis=1))
    return float(best.sum())


KIND = register(KMeansKind())
