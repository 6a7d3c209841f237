"""Statistical privacy audit of the range histogram's tree mechanism (issue 9, point 5).

The shapes are the kind's own: 16 bins under a complete 4-ary tree of 3 levels (21 nodes), and
the same without its root (a forest of four 4-ary trees of 2 levels, 20 nodes), the nodes built
by OpenDP's ``make_b_ary_tree`` (ranges.tree_nodes) and noised by the mechanism the kind plans,
with the sensitivity the kind computes (L noisy levels). Neighbouring tables differ in one record:

- ε-DP (add/remove): D1 = D2 plus a record in bin 0, which adds 1 to one node per noisy level.
  The event "each of those noisy nodes exceeds its value on D2" has probability ratio exactly
  e^{L/b} = e^ε for discrete Laplace noise of scale b = L/ε: the worst case, so the audit is
  sharp.
- Blowfish (replace one record, n public): the record moves from bin 0 to bin 15; four nodes
  change (two up, two down), a root not. The event "the two nodes that gain exceed, and the
  two that lose fall below, their values on D2" has ratio e^{4/b} with b = 2L/ε: e^{2ε/3} for
  the tree (the kind counts its root too), e^ε for the forest (sharp).

A Clopper–Pearson lower bound on the ratio, both ways, must not exceed e^ε; the negative controls
(noise calibrated to one level's sensitivity instead of the tree's) must be caught. Under
(ε, δ)-DP the discrete Gaussian on a forest of four noisy levels (L2 sensitivity √4 = 2) is
audited on the sum of the changed nodes, (P(E | one) − δ)/P(E | other) ≤ e^ε, its control
calibrated to one level. A last audit reads only what is published (the consistent bins,
through the kind's own release).
"""

import math

import numpy as np
import pytest
from binomial_bounds import (
    batched_draws,
    clopper_pearson_lower,
    clopper_pearson_upper,
    worst_ratio_lower_bound,
)

from privacy_engine import ranges
from privacy_engine.definitions import definition_from_dict
from privacy_engine.kinds import PlanContext
from privacy_engine.kinds.base import integer_mechanism
from privacy_engine.kinds.range_histogram import RangeHistogram, RangeHistogramKind
from privacy_engine.schema import schema_from_dict

pytestmark = pytest.mark.statistical

EPSILON = 1.0
DRAWS = 24_000
CONTROL_DRAWS = 10_000
FALSE_ALARM = 1e-6
TREE = ranges.complete_tree(16, 4)
FOREST = ranges.TreeShape(bins=16, branching=4, levels=3, rooted=False)
SCHEMA = schema_from_dict({"columns": {"x": {"kind": "numeric", "lower": 0, "upper": 16}}})
D2 = [3, 1, 0, 2, 5, 0, 0, 1, 4, 2, 0, 0, 1, 1, 3, 2]


def with_record(counts: list[int], bin_index: int, change: int = 1) -> list[int]:
    out = list(counts)
    out[bin_index] += change
    return out


def context(definition: dict) -> PlanContext:
    return PlanContext(schema=SCHEMA, definition=definition_from_dict(definition), noise=None)


def noisy_nodes(
    mechanism, shape, counts: list[int], positions: list[int], draws: int
) -> np.ndarray:
    """``draws`` noisy copies of the nodes at ``positions`` of the bins' tree, one per row. Only
    the nodes an event reads are drawn: the mechanism noises every node independently, so the
    tree's other nodes change neither these nodes' outputs nor the event (and drawing 2 to 4
    nodes instead of 20 or 21 is 5 to 10 times faster)."""
    nodes = ranges.tree_nodes(counts, shape)
    return batched_draws(mechanism.release, [nodes[p] for p in positions], draws)


def node(shape, level: int, index: int) -> int:
    """Position of the node ``index`` of level ``level``: breadth first in a tree; in a forest
    (no level 0) tree after tree, each breadth first."""
    if shape.rooted:
        return sum(4**k for k in range(level)) + index
    tree = shape.subtree
    width = 4 ** (level - 1)  # nodes of this level in one tree
    return (index // width) * tree.nodes + sum(4**k for k in range(level - 1)) + index % width


def changed_up(shape) -> list[int]:
    """The noisy nodes a record in bin 0 adds 1 to: one per noisy level."""
    levels = range(3) if shape.rooted else range(1, 3)
    return [node(shape, level, 0) for level in levels]


def event_rate(
    nodes: np.ndarray, positions: list[int], above: dict[int, int], below: dict[int, int]
) -> int:
    """Rows of ``nodes`` (the tree's nodes at ``positions``, in that order) in the event."""
    column = {position: k for k, position in enumerate(positions)}
    hit = np.ones(len(nodes), dtype=bool)
    for position, threshold in above.items():
        hit &= nodes[:, column[position]] >= threshold
    for position, threshold in below.items():
        hit &= nodes[:, column[position]] <= threshold
    return int(hit.sum())


def ratio_lower_bound(mechanism, shape, first, second, above, below, draws) -> float:
    """The larger lower confidence bound of P(event | first)/P(event | second), both ways."""
    positions = sorted({*above, *below})
    hits = tuple(
        event_rate(noisy_nodes(mechanism, shape, counts, positions, draws), positions, above, below)
        for counts in (first, second)
    )
    return worst_ratio_lower_bound(hits, draws, FALSE_ALARM)


PURE = {"kind": "pure_dp", "epsilon": EPSILON}
BLOWFISH = {"kind": "blowfish", "epsilon": EPSILON, "policy": {"graph": "full_domain"}}


def pure_audit(shape, sensitivity: float, draws: int) -> float:
    mechanism = integer_mechanism(sensitivity, EPSILON, 0.0, context(PURE))
    nodes = ranges.tree_nodes(D2, shape)
    above = {position: nodes[position] + 1 for position in changed_up(shape)}
    return ratio_lower_bound(mechanism, shape, with_record(D2, 0), D2, above, {}, draws)


def blowfish_audit(shape, sensitivity: float, draws: int) -> float:
    mechanism = integer_mechanism(sensitivity, EPSILON, 0.0, context(BLOWFISH))
    moved = with_record(with_record(D2, 15, -1), 0, +1)
    nodes = ranges.tree_nodes(D2, shape)
    above = {p: nodes[p] + 1 for p in (node(shape, 1, 0), node(shape, 2, 0))}
    below = {p: nodes[p] - 1 for p in (node(shape, 1, 3), node(shape, 2, 15))}
    return ratio_lower_bound(mechanism, shape, moved, D2, above, below, draws)


def kind_sensitivity(shape, definition: dict) -> float:
    # The kind's per-level sensitivity applied to this shape's noisy levels (OpenDP's map).
    histogram = 1 if definition is PURE else 2
    return ranges.tree_l1_map(shape, histogram)


SHAPES = [pytest.param(TREE, id="tree"), pytest.param(FOREST, id="forest")]


def test_the_kinds_sensitivity_is_opendps_tree_map():
    query = RangeHistogram(column="x", bins=4096)
    levels = ranges.tree_shape(4096, "l1").noisy_levels
    assert RangeHistogramKind().sensitivity(query, context(PURE)) == levels
    assert RangeHistogramKind().sensitivity(query, context(BLOWFISH)) == 2 * levels
    assert (kind_sensitivity(TREE, PURE), kind_sensitivity(TREE, BLOWFISH)) == (3, 6)
    assert (kind_sensitivity(FOREST, PURE), kind_sensitivity(FOREST, BLOWFISH)) == (2, 4)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_tree_mechanism_keeps_its_epsilon(shape):
    assert pure_audit(shape, kind_sensitivity(shape, PURE), DRAWS) <= math.exp(EPSILON)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_audit_catches_noise_calibrated_to_one_level(shape):
    assert pure_audit(shape, 1, CONTROL_DRAWS) > math.exp(EPSILON)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_tree_mechanism_keeps_its_epsilon_under_blowfish(shape):
    sensitivity = kind_sensitivity(shape, BLOWFISH)
    assert blowfish_audit(shape, sensitivity, DRAWS) <= math.exp(EPSILON)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_blowfish_audit_catches_noise_calibrated_to_one_level(shape):
    assert blowfish_audit(shape, 2, CONTROL_DRAWS) > math.exp(EPSILON)


# What the kind publishes (its release, OpenDP's consistency, the published dict) is audited in
# test_range_histogram_privacy.py, with likelihood-ratio events and a control of its own.


# --- (ε, δ)-DP: the discrete Gaussian on the forest's nodes, L2 sensitivity √L ---------------

APPROX = {"kind": "approx_dp", "epsilon": EPSILON, "delta": 1e-3}
# Four noisy levels (a forest of 4-ary trees over 256 bins): one level's sensitivity is half the
# forest's in L2, so the control is twice too little noise.
DEEP_FOREST = ranges.TreeShape(bins=256, branching=4, levels=5, rooted=False)
DEEP_D2 = D2 * 16
GAUSSIAN_DRAWS = 100_000
# Fewer suffice for the control. Its noise (scale 2.90, four nodes summed) gives the event S ≥ 12
# the probabilities 0.0978 on D1 and 0.0236 on D2 (ratio 4.1 with δ taken off); computed exactly
# over the two binomials, the chance that this event alone fails to catch it is 1.6·10⁻¹¹ at
# 50,000 draws (1.2·10⁻³⁵ at 100,000), far below the audit's own FALSE_ALARM.
GAUSSIAN_CONTROL_DRAWS = 50_000
# S = the changed nodes' outputs minus their counts on D2 (the shift's own direction: the most
# revealing statistic), shifted by 4 on D1; events S ≥ t for D1 and S ≤ 4 − t for D2.
GAUSSIAN_THRESHOLDS = (12, 16)


def gaussian_audit(sensitivity: float, draws: int) -> float:
    """The largest lower bound of (P(E | favoured) − δ) / P(E | other) over the events. Only the
    nodes a record in bin 0 changes are drawn: every node's noise is independent, so the others
    do not change these events."""
    mechanism = integer_mechanism(sensitivity, EPSILON, 1e-3, context(APPROX))
    base = np.array(ranges.tree_nodes(DEEP_D2, DEEP_FOREST))
    shifted = np.array(ranges.tree_nodes(with_record(DEEP_D2, 0), DEEP_FOREST))
    changed = np.flatnonzero(shifted != base)
    assert len(changed) == DEEP_FOREST.noisy_levels == 4
    sums = [
        batched_draws(mechanism.release, [int(v) for v in counts[changed]], draws).sum(axis=1)
        - base[changed].sum()
        for counts in (shifted, base)
    ]
    miss = FALSE_ALARM / (4 * len(GAUSSIAN_THRESHOLDS))
    worst = 0.0
    for t in GAUSSIAN_THRESHOLDS:
        for favoured, other in (
            (sums[0] >= t, sums[1] >= t),
            (sums[1] <= 4 - t, sums[0] <= 4 - t),
        ):
            lower = clopper_pearson_lower(int(favoured.sum()), draws, miss)
            upper = clopper_pearson_upper(int(other.sum()), draws, miss)
            worst = max(worst, (lower - 1e-3) / upper)
    return worst


def test_the_forest_keeps_epsilon_and_delta_with_the_discrete_gaussian():
    assert ranges.level_factor(DEEP_FOREST.noisy_levels, "l2") == 2
    query = RangeHistogram(column="x", bins=4096)
    shape = ranges.tree_shape(4096, "l2")
    assert RangeHistogramKind().sensitivity(query, context(APPROX)) == pytest.approx(
        math.sqrt(shape.noisy_levels)
    )
    assert gaussian_audit(2.0, GAUSSIAN_DRAWS) <= math.exp(EPSILON)


def test_the_gaussian_audit_catches_noise_calibrated_to_one_level():
    assert gaussian_audit(1, GAUSSIAN_CONTROL_DRAWS) > math.exp(EPSILON)
