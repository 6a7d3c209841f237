"""Range queries over a histogram: the hierarchical (b-ary tree) mechanism with constrained
inference (Hay, Rastogi, Miklau and Suciu 2010), and the exact accuracy of any range's answer.

The tree's leaves are the bins, padded with empty bins to a complete tree of b^(L−1) leaves (the
padding is public: no value lies beyond the column's upper bound); each inner node is the sum of
its b children (OpenDP's ``make_b_ary_tree``), every node gets the same integer noise, and OpenDP's
``make_consistent_b_ary_tree`` turns the noisy nodes into leaves whose sums agree with every node.
For a complete tree that is the least-squares estimate (checked against ``numpy.linalg.lstsq`` in
the tests), so it is linear in the noise: the error of a range's answer is Σ wᵢ·eᵢ over the nodes'
independent noises eᵢ, with weights w = H·(HᵀH)⁻¹·r for the tree's node-by-leaf incidence matrix H
and the range's indicator r. :func:`range_weights` computes w by running the same estimator on r
placed on the leaves (least squares maps that to (HᵀH)⁻¹·r), and :func:`error_halfwidth` bounds the
tail of Σ wᵢ·eᵢ exactly from the noise's moment generating function (a Chernoff bound), so every
published interval covers with probability at least its coverage.

A tree pays for its depth: a node's noise grows with the number of levels (L1 sensitivity L per
record, L2 √L), so one bin is less accurate than in a flat histogram while long ranges, summed
from a few nodes, are far more accurate. :func:`tree_shape` chooses the branching factor, or flat
bins when no tree helps (a few bins), that gives the least mean squared error over all ranges of
bins, computed exactly from the estimator's covariance (``mean_range_variance``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import opendp.prelude as dp
from opendp.core import function_eval

from privacy_engine import accuracy
from privacy_engine.optimize import golden_minimum

dp.enable_features("contrib")

# Branching factors tried; a tree whose padding would more than quadruple the bins is not.
BRANCHING_FACTORS = tuple(range(2, 17))
MAX_PADDING = 4
# Ranges the mean squared error is averaged over when choosing a shape: a low-discrepancy
# sequence of (first, last) pairs, so that no tree's node boundaries are favoured.
SHAPE_RANGES = 4096


@dataclass(frozen=True)
class TreeShape:
    """``bins`` leaves padded to ``leaves`` = b^(levels − 1); ``levels`` 1 is flat bins (no
    tree, ``branching`` None). A tree that is not ``rooted`` drops its root: it is a forest of
    b trees of levels − 1 levels (each of OpenDP's), whose nodes are laid out tree after tree.
    The root is the total number of records; without it every other node needs less noise
    (L − 1 levels instead of L), which pays more than the root's help to long ranges."""

    bins: int
    branching: int | None
    levels: int
    rooted: bool = True

    @property
    def leaves(self) -> int:
        return self.bins if self.branching is None else self.branching ** (self.levels - 1)

    @property
    def noisy_levels(self) -> int:
        """The levels that get noise: each is a histogram of the records."""
        return self.levels if self.rooted else self.levels - 1

    @property
    def trees(self) -> int:
        return 1 if self.rooted or self.branching is None else self.branching

    @property
    def subtree(self) -> TreeShape:
        """One tree of the forest (the shape itself when rooted)."""
        if self.rooted:
            return self
        assert self.branching is not None
        return TreeShape(
            bins=self.leaves // self.branching, branching=self.branching, levels=self.levels - 1
        )

    @property
    def nodes(self) -> int:
        if self.branching is None:
            return self.bins
        if not self.rooted:
            return self.trees * self.subtree.nodes
        return sum(self.branching**level for level in range(self.levels))

    def to_dict(self) -> dict[str, Any]:
        return {
            "branching": self.branching,
            "levels": self.levels,
            "rooted": self.rooted,
            "leaves": self.leaves,
        }


def complete_tree(bins: int, branching: int) -> TreeShape:
    """The least complete b-ary tree with at least ``bins`` leaves."""
    levels, leaves = 1, 1
    while leaves < bins:
        levels, leaves = levels + 1, leaves * branching
    return TreeShape(bins=bins, branching=branching, levels=levels)


def level_factor(levels: int, norm: str) -> float:
    """How much one record moves the whole tree relative to one histogram: each of the L levels
    is a histogram of the records, so L in L1 and √L in L2."""
    return float(levels) if norm == "l1" else math.sqrt(levels)


def _per_tree(function, values: np.ndarray, shape: TreeShape, chunk: int) -> np.ndarray:
    """``function(part, subtree)`` on each tree's ``chunk`` values of a forest, concatenated."""
    parts = values.reshape((shape.trees, chunk, *values.shape[1:]))
    return np.concatenate([function(part, shape.subtree) for part in parts])


def consistent_estimate(nodes: np.ndarray, shape: TreeShape) -> np.ndarray:
    """Hay et al.'s least-squares leaves from breadth-first node values (one tree per column of
    ``nodes``), in floating point. The same estimator as OpenDP's ``make_consistent_b_ary_tree``
    on a complete tree (tested equal); used for weights, where OpenDP's takes only integers. A
    forest's trees are estimated one by one (their noises are independent)."""
    if shape.branching is None:
        return nodes.astype(float)
    if not shape.rooted:
        return _per_tree(consistent_estimate, nodes, shape, shape.subtree.nodes)
    b, levels = shape.branching, shape.levels
    starts = np.cumsum([0] + [b**level for level in range(levels)])
    level_values = [nodes[starts[k] : starts[k + 1]].astype(float) for k in range(levels)]
    # Bottom-up: z blends a node's own value with its children's sum, by their variances.
    z = level_values[-1]
    upward = [z]
    for k in range(levels - 2, -1, -1):
        height = levels - k
        children = z.reshape((b**k, b, *z.shape[1:])).sum(axis=1)
        z = (
            (b**height - b ** (height - 1)) * level_values[k] + (b ** (height - 1) - 1) * children
        ) / (b**height - 1)
        upward.append(z)
    upward.reverse()
    # Top-down: each child takes an equal share of its parent's correction.
    estimate = upward[0]
    for k in range(1, levels):
        siblings = upward[k].reshape((b ** (k - 1), b, *upward[k].shape[1:])).sum(axis=1)
        estimate = upward[k] + np.repeat(estimate - siblings, b, axis=0) / b
    return estimate


def node_sums(leaf_values: np.ndarray, shape: TreeShape) -> np.ndarray:
    """Breadth-first node values of a tree whose leaves are ``leaf_values`` (padded with zeros):
    H·x for the incidence matrix H."""
    padded = np.zeros((shape.leaves, *leaf_values.shape[1:]))
    padded[: len(leaf_values)] = leaf_values
    if shape.branching is None:
        return padded
    if not shape.rooted:
        return _per_tree(node_sums, padded, shape, shape.subtree.leaves)
    levels = [padded]
    for _ in range(shape.levels - 1):
        levels.append(levels[-1].reshape((-1, shape.branching, *padded.shape[1:])).sum(axis=1))
    return np.concatenate(levels[::-1])


def range_weights(shape: TreeShape, first: int, last: int) -> np.ndarray:
    """w with (published answer of bins first..last) − (true answer) = Σ wᵢ·eᵢ over the nodes'
    noises eᵢ: w = H·(HᵀH)⁻¹·r, where (HᵀH)⁻¹·r is the estimator applied to r on the leaves."""
    indicator = np.zeros(shape.leaves)
    indicator[first : last + 1] = 1.0
    tree = shape.subtree
    # Each tree's leaves are the last of its nodes.
    on_leaves = np.zeros((shape.trees, tree.nodes))
    on_leaves[:, tree.nodes - tree.leaves :] = indicator.reshape(shape.trees, tree.leaves)
    return node_sums(consistent_estimate(on_leaves.reshape(-1), shape), shape)


def _plastic_ranges(bins: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` (first, last) pairs of bins spread evenly over all pairs (Roberts' R2 sequence,
    deterministic)."""
    g = 1.32471795724474602596
    k = np.arange(1, count + 1)
    a = np.floor(((0.5 + k / g) % 1.0) * bins).astype(np.int64)
    c = np.floor(((0.5 + k / (g * g)) % 1.0) * bins).astype(np.int64)
    return np.minimum(a, c), np.maximum(a, c)


def _range_pair_counts(shape: TreeShape, first: np.ndarray, last: np.ndarray) -> list[np.ndarray]:
    """For each level k, Σ over the level's nodes of |range ∩ node's leaves|², per range: the
    pairs of the range's bins that share their level-k ancestor."""
    assert shape.branching is not None
    counts = []
    for k in range(shape.levels):
        width = shape.branching ** (shape.levels - 1 - k)
        lo_node, hi_node = first // width, last // width
        same = lo_node == hi_node
        head = (lo_node + 1) * width - first
        tail = last - hi_node * width + 1
        inner = np.maximum(hi_node - lo_node - 1, 0)
        length = last - first + 1
        counts.append(np.where(same, length**2, head**2 + tail**2 + inner * width**2))
    return counts


@functools.lru_cache(maxsize=256)
def mean_range_variance(shape: TreeShape) -> float:
    """Mean over ranges of bins of the answer's error variance, per unit of node variance:
    rᵀ(HᵀH)⁻¹r, exactly. (HᵀH)⁻¹ has one value per level of two leaves' lowest common ancestor
    (the tree's symmetry), read off its first column; a range's pairs of bins are counted per
    ancestor level. Memoized (pure)."""
    first, last = _plastic_ranges(shape.bins, SHAPE_RANGES)
    if shape.branching is None:
        return float(np.mean(last - first + 1))
    b, levels = shape.branching, shape.levels
    tree = shape.subtree
    unit = np.zeros(tree.nodes)
    unit[tree.nodes - tree.leaves] = 1.0
    column = consistent_estimate(unit, tree)
    # m[k]: (HᵀH)⁻¹ between leaf 0 and a leaf whose common ancestor with it is at level k; 0
    # between leaves of two trees of a forest (independent estimates).
    m = [column[b ** (levels - 2 - k)] for k in range(levels - tree.levels, levels - 1)]
    m = [0.0] * (levels - tree.levels) + m + [column[0]]
    pairs = _range_pair_counts(shape, first, last)
    total = m[-1] * pairs[-1]
    for k in range(levels - 1):
        total = total + m[k] * (pairs[k] - pairs[k + 1])
    return float(np.mean(total))


@functools.lru_cache(maxsize=256)
def tree_shape(bins: int, norm: str) -> TreeShape:
    """The shape with the least mean squared error over ranges, for noise calibrated to each
    shape's sensitivity in ``norm`` ("l1" or "l2"): flat bins or a b-ary tree. Memoized (pure)."""
    shapes = [TreeShape(bins=bins, branching=None, levels=1)]
    for branching in BRANCHING_FACTORS:
        shape = complete_tree(bins, branching)
        if shape.levels >= 2 and shape.leaves <= MAX_PADDING * bins:
            shapes.append(shape)
        if shape.levels >= 3 and shape.leaves <= MAX_PADDING * bins:
            shapes.append(dataclasses.replace(shape, rooted=False))
    return min(
        shapes,
        key=lambda s: level_factor(s.noisy_levels, norm) ** 2 * mean_range_variance(s),
    )


def tree_nodes(counts: list[int], shape: TreeShape) -> list[int]:
    """The bins' counts as the tree's breadth-first nodes, by OpenDP's ``make_b_ary_tree``."""
    padded = list(counts) + [0] * (shape.leaves - len(counts))
    if shape.branching is None:
        return padded
    tree, size = shape.subtree, shape.subtree.leaves
    transformation = _tree_transformation(tree.leaves, shape.branching)
    return [
        node
        for start in range(0, shape.leaves, size)
        for node in transformation(padded[start : start + size])
    ]


@functools.cache
def _tree_transformation(leaves: int, branching: int) -> Any:
    return dp.t.make_b_ary_tree(
        dp.vector_domain(dp.atom_domain(T=dp.i64)),
        dp.l1_distance(T=dp.i64),
        leaf_count=leaves,
        branching_factor=branching,
    )


def tree_l1_map(shape: TreeShape, histogram_distance: int) -> int:
    """OpenDP's stability map of ``make_b_ary_tree``: the tree's L1 distance for a histogram's."""
    if shape.branching is None:
        return histogram_distance
    tree = shape.subtree  # a record is in one tree of a forest
    return int(_tree_transformation(tree.leaves, shape.branching).map(histogram_distance))


def consistent_leaves(noisy_nodes: list[int] | np.ndarray, shape: TreeShape) -> list[float]:
    """The bins' consistent estimates from the noisy nodes, by OpenDP's
    ``make_consistent_b_ary_tree`` (post-processing); the padding's estimates are dropped."""
    values = [int(v) for v in noisy_nodes]
    if shape.branching is None:
        return [float(v) for v in values]
    consistent = dp.t.make_consistent_b_ary_tree(shape.branching, TIA=dp.i64, TOA=float)
    size = shape.subtree.nodes
    leaves = [
        float(leaf)
        for start in range(0, len(values), size)
        # Vec<i64>: counts beyond 32 bits
        for leaf in function_eval(consistent, values[start : start + size], "Vec<i64>")
    ]
    return leaves[: shape.bins]


# --- the error of a weighted sum of the nodes' noises ------------------------------------------


def node_variance(noise: str, scale: float) -> float:
    """Variance of one node's noise: discrete Laplace 2α/(1 − α)² with α = e^{−1/b}; the discrete
    Gaussian's is at most σ² (Canonne, Kamath and Steinke 2020), which is used."""
    if noise == "geometric":
        alpha = math.exp(-1.0 / scale)
        return 2.0 * alpha / (1.0 - alpha) ** 2
    if noise == "gaussian":
        return scale * scale
    raise ValueError(f"unknown noise {noise!r}")


def error_rms(weights: np.ndarray, noise: str, scale: float) -> float:
    """Root mean square of Σ wᵢ·eᵢ (it bounds the expected absolute error from above)."""
    return math.sqrt(node_variance(noise, scale) * float(np.dot(weights, weights)))


def _geometric_log_mgf(s: np.ndarray, scale: float) -> np.ndarray:
    """ln E[e^{sK}] of the discrete Laplace: ln((1−α)² / ((1 − αe^s)(1 − αe^{−s}))), |s| < 1/b."""
    log_alpha = -1.0 / scale
    return (
        2.0 * np.log1p(-math.exp(log_alpha))
        - np.log1p(-np.exp(log_alpha + s))
        - np.log1p(-np.exp(log_alpha - s))
    )


def error_halfwidth(weights: np.ndarray, noise: str, scale: float, coverage: float = 0.95) -> float:
    """h with P(|Σ wᵢ·eᵢ| > h) ≤ 1 − coverage for independent node noises eᵢ.

    Nodes share few distinct weights (the tree's symmetry). The sum of the noises of each group
    is an integer whose distribution is computed exactly (a power of the noise's discrete Fourier
    transform); the groups' weighted sums are added on a grid of step Δ (each rounded to the
    grid, which moves the total by at most Δ/2 per group, added to h), and the mass the windows
    leave out (bounded by Chernoff) is taken from the 1 − coverage allowed. The result is a
    bound, tight to a few grid steps (measured: 95.2% coverage; the exact quantile of a sum of
    equal weights to 0.02). Chernoff's bound (:func:`chernoff_halfwidth`) is used where it is
    smaller, or where the grid's work would pass GRID_WORK (a wide noise, i.e. a small ε: the
    range API is public, so no request may cost more than about 0.1 s)."""
    weights = np.abs(np.asarray(weights, dtype=float))
    weights = weights[weights > 0.0]
    if len(weights) == 0:
        return 0.0
    if noise not in ("geometric", "gaussian"):
        raise ValueError(f"unknown noise {noise!r}")
    if len(weights) == 1:
        # One node's noise, scaled (a bin of flat bins): its exact quantile.
        exact = (
            accuracy.geometric_halfwidth(scale, coverage)
            if noise == "geometric"
            else accuracy.gaussian_halfwidth(scale, coverage, integer=True)
        )
        return float(weights[0]) * exact
    # Rounded up: a symmetric unimodal noise's |w·e| only grows with |w|, so the bound holds.
    distinct, repeats = np.unique(np.ceil(weights * 1e12) / 1e12, return_counts=True)
    chernoff = chernoff_halfwidth(distinct, repeats, noise, scale, coverage)
    grid = _grid_halfwidth(distinct, repeats, noise, scale, coverage)
    # Both are bounds; the grid's is tighter but for its slack of half a step per group.
    return chernoff if grid is None else min(grid, chernoff)


# The grid: this many steps per standard deviation of the sum, at most MAX_GRID points; each
# group's window leaves out at most WINDOW_TAIL of its mass.
GRID_STEPS_PER_SD = 256
MAX_GRID = 1 << 21
# Points transformed in all, beyond which Chernoff's bound is used (at most about 0.1 s).
GRID_WORK = 1 << 21
WINDOW_TAIL = 1e-10


def _node_pmf(noise: str, scale: float, bound: int) -> np.ndarray:
    """One node's noise distribution on −bound..bound (normalised over all integers)."""
    k = np.arange(-bound, bound + 1, dtype=float)
    if noise == "geometric":
        alpha = math.exp(-1.0 / scale)
        return (1.0 - alpha) / (1.0 + alpha) * np.exp(-np.abs(k) / scale)
    _, total = accuracy._discrete_gaussian_weights(scale)
    return np.exp(-(k * k) / (2.0 * scale * scale)) / total


def _grid_halfwidth(
    distinct: np.ndarray, repeats: np.ndarray, noise: str, scale: float, coverage: float
) -> float | None:
    variance = node_variance(noise, scale)
    sd = math.sqrt(variance * float(np.dot(repeats, distinct * distinct)))
    step = sd / GRID_STEPS_PER_SD
    # Each group's window: all but WINDOW_TAIL of its sum's mass (Chernoff on the group).
    bounds = [
        math.ceil(
            chernoff_halfwidth(np.ones(1), np.array([int(count)]), noise, scale, 1.0 - WINDOW_TAIL)
        )
        for count in repeats
    ]
    # The work ahead, bounded whatever a client asks (the range API is public): every group's
    # transform, then one transform of the whole grid per group.
    grid = sum(
        2.0 * weight * bound / step + 1.0 for weight, bound in zip(distinct, bounds, strict=True)
    )
    transforms = sum(1 << math.ceil(math.log2(2 * bound + 1)) for bound in bounds)
    if transforms + len(bounds) * (1 << math.ceil(math.log2(grid))) > GRID_WORK:
        return None
    lost = 0.0
    group_pmfs = []
    for weight, count, bound in zip(distinct, repeats, bounds, strict=True):
        count = int(count)
        lost += 2.0 * WINDOW_TAIL  # beyond the group's window, and one node's beyond it
        size = 1 << math.ceil(math.log2(2 * bound + 1))
        node = np.zeros(size)
        pmf = _node_pmf(noise, scale, bound)
        # Circular layout: index k mod size (the window holds the sum, so nothing wraps onto it
        # but mass beyond the window, counted in ``lost``).
        node[np.arange(-bound, bound + 1) % size] = pmf
        summed = np.fft.irfft(np.fft.rfft(node) ** count, n=size)
        values = np.arange(-bound, bound + 1)
        probabilities = np.clip(summed[values % size], 0.0, None)
        cells = np.rint(weight * values / step).astype(np.int64)
        offset = int(cells.min())
        group_pmfs.append((offset, np.bincount(cells - offset, weights=probabilities)))
    length = sum(len(p) for _, p in group_pmfs)
    if length > MAX_GRID:
        return None
    size = 1 << math.ceil(math.log2(length))
    spectrum = np.ones(size // 2 + 1, dtype=complex)
    for _, pmf in group_pmfs:
        spectrum *= np.fft.rfft(pmf, n=size)
    total = np.clip(np.fft.irfft(spectrum, n=size)[:length], 0.0, None)
    start = sum(offset for offset, _ in group_pmfs)
    magnitudes = np.abs(np.arange(start, start + length))
    # at_least[j] = P(|S'| ≥ j steps); the answer is the least m with P(|S'| > m) ≤ allowed.
    at_least = np.cumsum(np.bincount(magnitudes, weights=total)[::-1])[::-1]
    beyond = np.append(at_least[1:], 0.0)  # beyond[m] = P(|S'| > m)
    allowed = (1.0 - coverage) - 2.0 * lost
    m = int(np.argmax(beyond <= allowed))
    return (m + len(group_pmfs) / 2.0) * step


def chernoff_halfwidth(
    distinct: np.ndarray, repeats: np.ndarray, noise: str, scale: float, coverage: float
) -> float:
    """h with P(|Σ wᵢ·eᵢ| > h) ≤ 1 − coverage (each distinct weight ``repeats`` times), by
    Chernoff's bound P(S ≥ h) ≤ e^{−th}·Π E[e^{t·wᵢ·eᵢ}] on both sides, minimised over t.

    Sub-Gaussian noise (discrete Gaussian, E[e^{te}] ≤ e^{t²σ²/2}) gives h = σ‖w‖√(2 ln(2/(1 −
    coverage))). For discrete Laplace noise, h(t) = (Σ ln M(t·wᵢ) + ln(2/(1 − coverage)))/t is
    minimised over 0 < t < 1/(b·max|wᵢ|) by golden sections (h is unimodal in t)."""
    log_miss = math.log(2.0 / (1.0 - coverage))
    if noise == "gaussian":
        return scale * math.sqrt(float(np.dot(repeats, distinct * distinct)) * 2.0 * log_miss)
    t_max = 1.0 / (scale * float(distinct.max()))

    def bound(t: float) -> float:
        return (float(np.dot(repeats, _geometric_log_mgf(t * distinct, scale))) + log_miss) / t

    return golden_minimum(bound, t_max * 1e-9, t_max * (1.0 - 1e-12), rounds=80)
