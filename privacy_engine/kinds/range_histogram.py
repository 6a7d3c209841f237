"""``range_histogram``: records per equal-width bin of a numeric column, published so that the sum
over any range of bins is accurate: the hierarchical mechanism of ranges.py (a b-ary tree of bin
counts, noise on every node, OpenDP's consistency), or flat bins when a tree would not help.

Sensitivity: each noisy level of the tree (of a forest: ranges.TreeShape) is a histogram of the
records, so one record moves the tree by L times a histogram's L1 sensitivity (OpenDP's map of
``make_b_ary_tree``), or √L times its L2 sensitivity under (ε, δ)-DP, times c for a person of up
to c rows. Under Blowfish that is 2 per level (a replacement moves one record between bins), a
rooted tree's root included although n is public: a little more noise than needed, never less.

The published bins are consistent: the answer for bins i..j is the sum of their published values
(:func:`range_answer`), and its 95% interval comes from the estimator's exact weights on the
nodes' noises (ranges.error_halfwidth). A bin's value can be slightly negative; an answer is
clamped at 0, which never moves it away from the true count.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from privacy_engine import ranges
from privacy_engine.aggregates import Aggregate, BinCounts
from privacy_engine.definitions import ApproxDP
from privacy_engine.errors import (
    ABOVE_FROM,
    BINS_FROM_TO,
    BOUNDS_APART,
    EDGES_COINCIDE,
    EQUAL_WIDTH_BINS,
    RANGE_OVERLAP,
    EngineValidationError,
)
from privacy_engine.exact_sums import sqrt_up
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    cleaned_numbers,
    column_named,
    even,
    integer_mechanism,
    numeric_column,
    register,
)
from privacy_engine.kinds.histogram import bin_labels
from privacy_engine.schema import NumericColumn, Schema, format_number
from privacy_engine.sensitivity import histogram_sensitivity
from privacy_engine.wording import CLAUSE_SEPARATOR, gettext_noop, phrase

MIN_BINS = 2
# Bounds one request's work: at most 4× as many tree nodes get noise (10 µs each, in the worker).
MAX_BINS = 65_536
# The wizard's simulated example draws at most this many bins.
SIMULATED_BINS = 100

FLAT_BINS = gettext_noop("flat bins (no tree helps ranges of this few bins)")
ONE_TREE = gettext_noop("a {branching}-ary tree of {levels} levels")
FOREST = gettext_noop("{trees} {branching}-ary trees of {levels} levels")
# ``trees`` is ONE_TREE's or FOREST's text.
TREE_BINS = gettext_noop(
    "{trees} over {bins} bins (padded with empty bins), noise on every node, made consistent "
    "by least squares (OpenDP)"
)
RANGE_ANSWER = gettext_noop(
    "a range's answer is the sum of its bins, clamped at 0, with an interval covering at least "
    "95% from the exact distribution of its error"
)


@dataclass(frozen=True)
class RangeHistogram:
    """``bins`` equal-width bins of a numeric column from its lower to its upper bound."""

    column: str
    bins: int
    weight: float = 1.0
    kind: str = field(default="range_histogram", init=False)


def bin_edges(column: NumericColumn, bins: int) -> tuple[float, ...]:
    span = column.upper - column.lower
    return tuple(
        column.upper if i == bins else column.lower + span * i / bins for i in range(bins + 1)
    )


def _noise(context: PlanContext) -> str:
    return "gaussian" if isinstance(context.definition, ApproxDP) else "geometric"


def _shape(query: RangeHistogram, context: PlanContext) -> ranges.TreeShape:
    return ranges.tree_shape(query.bins, context.norm)


@functools.lru_cache(maxsize=1024)
def _bin_accuracy(
    shape: ranges.TreeShape, noise: str, scale: float, estimate: bool = False
) -> tuple[float, float]:
    """(root mean square error, 95% half-width) of one bin's published value. Memoized (pure):
    the statistics of a preview share few scales. The accuracy chart (``estimate``) reads only
    the RMS error, so it takes Chernoff's cheaper (wider) half-width over the exact one."""
    weights = ranges.range_weights(shape, 0, 0)
    rms = ranges.error_rms(weights, noise, scale)
    if estimate:
        distinct, repeats = np.unique(np.abs(weights[weights != 0]), return_counts=True)
        return rms, ranges.chernoff_halfwidth(distinct, repeats, noise, scale, 0.95)
    return rms, ranges.error_halfwidth(weights, noise, scale)


class RangeHistogramKind(QueryKind):
    name = "range_histogram"
    query_type = RangeHistogram

    def parse(self, spec: Mapping[str, Any], weight: float) -> RangeHistogram:
        column = column_named(spec)
        bins = spec.get("bins")
        if isinstance(bins, bool) or not isinstance(bins, int) or not MIN_BINS <= bins <= MAX_BINS:
            raise EngineValidationError.single(
                "bins", EQUAL_WIDTH_BINS, minimum=MIN_BINS, maximum=f"{MAX_BINS:,}"
            )
        return RangeHistogram(column=column, bins=bins, weight=weight)

    def validate(self, query: RangeHistogram, schema: Schema) -> None:
        column = numeric_column(query, schema)
        if not MIN_BINS <= query.bins <= MAX_BINS:
            raise EngineValidationError.single(
                "bins", BINS_FROM_TO, minimum=MIN_BINS, maximum=f"{MAX_BINS:,}"
            )
        if column.upper <= column.lower:
            raise EngineValidationError.single("column", BOUNDS_APART)
        edges = bin_edges(column, query.bins)
        if (
            any(b <= a for a, b in itertools.pairwise(edges))
            or len(set(bin_labels(edges))) != len(edges) - 1
        ):
            raise EngineValidationError.single("bins", EDGES_COINCIDE)

    def to_dict(self, query: RangeHistogram) -> dict[str, Any]:
        return {"column": query.column, "bins": query.bins}

    def columns(self, query: RangeHistogram) -> tuple[str, ...]:
        return (query.column,)

    def sensitivity(self, query: RangeHistogram, context: PlanContext) -> float:
        histogram = context.rows_per_person * histogram_sensitivity(context.definition)
        shape = _shape(query, context)
        if context.norm == "l1":
            return ranges.tree_l1_map(shape, histogram)
        # √(c²·L) rounded up, never down: the noise is calibrated to at least the true value.
        return sqrt_up(Fraction(histogram * histogram * shape.noisy_levels))

    def noise_draws(self, query: RangeHistogram, schema: Schema) -> int:
        # The most of either norm's shape (the Gaussian's is often a deeper, binary tree).
        return max(ranges.tree_shape(query.bins, norm).nodes for norm in ("l1", "l2"))

    def published_cells(self, query: RangeHistogram, schema: Schema) -> int:
        # The page shows one chart and a range tool, not a row per bin (the files have them).
        return 1

    def simulated(
        self, query: RangeHistogram, schema: Schema, n: int
    ) -> tuple[dict[str, int], list[int]] | None:
        """n records spread evenly over the bins; none past SIMULATED_BINS (a chart of more
        bars says nothing)."""
        if query.bins > SIMULATED_BINS:
            return None
        column = schema.column(query.column)
        assert isinstance(column, NumericColumn)
        counts = even(n, query.bins)
        return dict(zip(bin_labels(bin_edges(column, query.bins)), counts, strict=True)), counts

    def plan(
        self, query: RangeHistogram, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        shape = _shape(query, context)
        sensitivity = self.sensitivity(query, context)
        mechanism = integer_mechanism(sensitivity, epsilon, delta, context)
        rms, halfwidth = _bin_accuracy(shape, _noise(context), mechanism.scale, context.estimate)
        return PlannedStatistic(
            query=query,
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism.name,
            sensitivity=sensitivity,
            noise_scale=mechanism.scale,
            expected_abs_error=rms,
            ci95_halfwidth=halfwidth,
            mechanisms=(mechanism,),
        )

    def aggregates(self, query: RangeHistogram, schema: Schema) -> list[Aggregate]:
        column = schema.column(query.column)
        assert isinstance(column, NumericColumn)
        return [
            BinCounts(**cleaned_numbers(query.column, schema), edges=bin_edges(column, query.bins))
        ]

    def release(
        self, planned: PlannedStatistic, exact: list[int], schema: Schema, common: dict[str, Any]
    ) -> StatisticResult:
        query = planned.query
        column = schema.column(query.column)
        assert isinstance(column, NumericColumn)
        (mechanism,) = planned.mechanisms
        norm = "l2" if mechanism.name == "gaussian" else "l1"
        shape = ranges.tree_shape(query.bins, norm)
        noisy_nodes = mechanism.release(ranges.tree_nodes(exact, shape))
        leaves = ranges.consistent_leaves(noisy_nodes, shape)
        labels = bin_labels(bin_edges(column, query.bins))
        halfwidth = planned.ci95_halfwidth
        assert halfwidth is not None
        if shape.branching is None:
            structure = phrase(FLAT_BINS)
        else:
            trees = (
                phrase(ONE_TREE, branching=shape.branching, levels=shape.levels)
                if shape.rooted
                else phrase(
                    FOREST, trees=shape.trees, branching=shape.branching, levels=shape.levels - 1
                )
            )
            structure = phrase(TREE_BINS, trees=trees, bins=f"{shape.leaves:,}")
        rule = CLAUSE_SEPARATOR.join([column.rule(), structure, phrase(RANGE_ANSWER)])
        return StatisticResult(
            value=dict(zip(labels, leaves, strict=True)),
            ci95={
                label: _interval(value, halfwidth)
                for label, value in zip(labels, leaves, strict=True)
            },
            rule=rule,
            tree={
                **shape.to_dict(),
                "bins": query.bins,
                "lower": column.lower,
                "upper": column.upper,
                "noise": mechanism.name,
            },
            **common,
        )


def _interval(value: float, halfwidth: float) -> list[float]:
    return [max(0.0, value - halfwidth), max(0.0, value + halfwidth)]


@dataclass(frozen=True)
class PublishedRanges:
    """What answering ranges of a published range histogram needs, compact: its tree and noise
    (public), and its bins' published values as one float array (0.5 MB for 65,536 bins, where
    the decoded JSON takes about 26 MB), so a web process can keep several at hand."""

    lower: float
    upper: float
    shape: ranges.TreeShape
    noise: str
    noise_scale: float
    values: np.ndarray = field(repr=False)

    @classmethod
    def from_statistic(cls, statistic: Mapping[str, Any]) -> PublishedRanges:
        """From a published range histogram's JSON, as :meth:`StatisticResult.to_dict` writes
        it."""
        tree = statistic["tree"]
        cells: Sequence[str] = statistic.get("cells") or list(statistic["value"])
        values = np.fromiter((float(statistic["value"][cell]) for cell in cells), np.float64)
        return cls(
            lower=float(tree["lower"]),
            upper=float(tree["upper"]),
            shape=ranges.TreeShape(
                bins=int(tree["bins"]),
                branching=tree["branching"],
                levels=int(tree["levels"]),
                rooted=bool(tree.get("rooted", True)),
            ),
            noise=str(tree["noise"]),
            noise_scale=float(statistic["noise_scale"]),
            values=values,
        )

    def answer(self, low: float, high: float) -> dict[str, Any]:
        """The records with values from ``low`` to ``high``, widened to whole bins: the bins
        from the one holding ``low`` to the one holding values just below ``high``. Returns the
        range answered (``from``, ``to``: bin edges), the sum of its published bins clamped at 0
        and its 95% interval. Reads only what is published (post-processing); ``low`` and
        ``high`` are public choices."""
        lower, upper, bins = self.lower, self.upper, self.shape.bins
        if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
            raise EngineValidationError.single("to", ABOVE_FROM)
        if high <= lower or low >= upper:
            raise EngineValidationError.single(
                "from", RANGE_OVERLAP, lower=format_number(lower), upper=format_number(upper)
            )
        edges = bin_edges(NumericColumn(lower=lower, upper=upper), bins)
        first = min(bins - 1, max(0, bisect.bisect_right(edges, low) - 1))
        last = min(bins - 1, max(first, bisect.bisect_left(edges, high) - 1))
        total = range_sum(self.values[first : last + 1])
        halfwidth = ranges.error_halfwidth(
            ranges.range_weights(self.shape, first, last), self.noise, self.noise_scale
        )
        return {
            "from": edges[first],
            "to": edges[last + 1],
            "bins": last - first + 1,
            "value": max(0.0, total),
            "ci95": _interval(total, halfwidth),
        }


def range_sum(values: Sequence[float] | np.ndarray) -> float:
    """The sum of consecutive published bins, before clamping at 0: correctly rounded, so that
    a range's answer and a chart's bar over the same bins agree to the last digit."""
    return math.fsum(values)


def range_answer(statistic: Mapping[str, Any], low: float, high: float) -> dict[str, Any]:
    """:meth:`PublishedRanges.answer` of a published range histogram's JSON."""
    return PublishedRanges.from_statistic(statistic).answer(low, high)


KIND = register(RangeHistogramKind())
