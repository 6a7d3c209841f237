"""Statistical audit of what a range histogram publishes (issue 9, point 5): its privacy, on the
published bins through the engine's own path, and the coverage of its range answers' intervals.

test_range_tree_privacy.py audits the tree's noisy nodes (the mechanism's own output); this file
audits the consistent bins that are published, which post-processing may only make harder to
tell apart, with events chosen so that a correct mechanism still comes close to e^ε.

The path is the engine's: ``plan_release`` plans the statistic (the kind's shape, sensitivity and
mechanism), ``run_queries`` on a raw frame computes the exact tree (the mechanism's input, kept by
a noise source that adds none), the planned mechanism draws the noise and OpenDP's
``make_consistent_b_ary_tree`` (ranges.consistent_leaves, the kind's step) makes the bins.

For 45 bins under ε-DP the kind picks a forest of seven 7-ary trees, each a parent over seven
bins (two noisy levels: sensitivity 2, discrete Laplace of scale s = 2/ε; 56 nodes, four of them
padding). In one tree with noisy parent ũ and noisy bins ṽⱼ the consistent bins are
x̂ⱼ = ṽⱼ + (ũ − Σṽ)/8, so a bin plus its tree's published total is zⱼ = x̂ⱼ + Σₖ x̂ₖ = ṽⱼ + ũ:
the published bins lose only how the tree's noise splits between the parent and its bins. The
likelihood of a tree's published bins under a table D is then Σᵤ f(u − U_D)·Πⱼ f(zⱼ − u − V_Dⱼ)
(f the noise's distribution, U_D and V_D the exact nodes), and the events {ln LR ≥ c} and
{ln LR ≤ −c} on the likelihood ratio of two neighbours are the most revealing of the published
bins (Neyman–Pearson). Neighbours:

- ε-DP (add/remove): D1 = D2 plus a record in bin 0, which moves z₀ by 2 and the tree's other zⱼ
  by 1; ln LR reaches ε when both the parent's and bin 0's noises are high. The ratio measured
  on {ln LR ≥ 0.9ε} is 2.6 to 2.7 (e^ε = 2.72), against 7 to 8 for the control.
- Blowfish (replace one record, n public): a record moves from bin 2 (first tree) to bin 44 (last
  tree): four nodes change, the kind's sensitivity is 2 per level (4, scale 4/ε), and ln LR is
  the sum of the two trees', at most ε (ratios of 2.2 to 2.7 measured, 5 to 9 for the control).

A Clopper–Pearson lower bound on every event's ratio, both ways, must not exceed e^ε; the
negative controls (noise from the kind's own ``integer_mechanism`` with one level's sensitivity,
half the tree's) must be caught. Only the trees an event reads are drawn: every node's noise is
independent and the consistency works tree by tree, so the other trees change neither the
events nor these bins; many draws are made consistent at once by ranges.consistent_estimate,
checked equal to OpenDP's on the first draws. One audit runs every draw through the kind's own
release (``release_statistic``), unchanged but for the exact tree of the table's counts, built
once by the same function (it depends on no noise).

Coverage: on a fixed table, over independent releases, each range's true answer must lie inside
the interval ``range_answer`` publishes at least 95% of the time (per range, a Clopper–Pearson
upper bound on its coverage must reach 0.95; exactly, these ranges' intervals cover 95.1% to
95.4%), and intervals shrunk to 0.4 of their width (about 60% coverage) must be caught.
"""

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pytest
from binomial_bounds import (
    batched_draws,
    clopper_pearson_upper,
    memoized_halfwidth,
    worst_ratio_lower_bound,
)

from privacy_engine import plan_release, range_answer, ranges, run_queries
from privacy_engine.definitions import definition_from_dict
from privacy_engine.kinds import PlanContext
from privacy_engine.kinds.base import PlannedStatistic, integer_mechanism
from privacy_engine.release import release_statistic
from privacy_engine.schema import schema_from_dict

pytestmark = pytest.mark.statistical

EPSILON = 1.0
BINS = 45
SCHEMA_SPEC = {"columns": {"x": {"kind": "numeric", "lower": 0, "upper": BINS}}}
SCHEMA = schema_from_dict(SCHEMA_SPEC)
QUERY = {"kind": "range_histogram", "column": "x", "bins": BINS}
PURE = {"kind": "pure_dp", "epsilon": EPSILON}
BLOWFISH = {"kind": "blowfish", "epsilon": EPSILON, "policy": {"graph": "full_domain"}}
APPROX = {"kind": "approx_dp", "epsilon": EPSILON, "delta": 1e-6}

FOREST = ranges.TreeShape(bins=BINS, branching=7, levels=3, rooted=False)
TREE = FOREST.subtree  # one tree of the forest: a parent over seven bins, 8 nodes
LAST_TREE = FOREST.trees - 1

DRAWS = 20_000
CONTROL_DRAWS = 8_000
# Blowfish's control is caught less easily (its ln LR adds two trees' noise at 4/ε).
BLOWFISH_CONTROL_DRAWS = 12_000
KIND_DRAWS = 1_000
# The control needs more: its events' probabilities under D2 are small (~0.08).
KIND_CONTROL_DRAWS = 2_000
FALSE_ALARM = 1e-6
# Events {ln LR ≥ c·ε} and {ln LR ≤ −c·ε}: ln LR is at most ε for a correct mechanism.
CUTS = (0.6, 0.9)

# A record per value, at bin midpoints (bin i is [i, i + 1)).
D2 = [0.5, 1.5, 1.5, 2.5, 3.5, 5.5, 10.5, 20.5, 30.5, 43.5, 44.5]
D1_ADDED = [*D2, 0.5]
D1_MOVED = [44.5 if v == 2.5 else v for v in D2]


class Recorder:
    """A noise source that adds no noise and keeps what the mechanism was given: the exact
    tree's nodes."""

    def __init__(self) -> None:
        self.inputs: list[list[int]] = []

    def sample(self, measurement, value):
        self.inputs.append([int(v) for v in value])
        return value


def frame(values: Sequence[float]) -> pd.DataFrame:
    return pd.DataFrame({"x": [str(v) for v in values]})


def planned(definition: dict) -> PlannedStatistic:
    (statistic,) = plan_release(
        schema=SCHEMA_SPEC, definition=definition, queries=[QUERY]
    ).statistics
    return statistic


def exact(values: Sequence[float], definition: dict) -> tuple[list[int], list[int]]:
    """(bin counts, tree nodes) of a table as the engine computes them: ``run_queries`` on the raw
    frame, the mechanism's input recorded."""
    recorder = Recorder()
    result = run_queries(
        frame(values), schema=SCHEMA_SPEC, definition=definition, queries=[QUERY], noise=recorder
    )
    (nodes,) = recorder.inputs
    counts = [round(v) for v in result.statistics[0].value.values()]
    return counts, nodes


def one_tree(nodes: Sequence[int], tree: int) -> list[int]:
    """The nodes of one tree of the forest (its parent, then its bins)."""
    return list(nodes[tree * TREE.nodes : (tree + 1) * TREE.nodes])


def z_values(bins: np.ndarray) -> np.ndarray:
    """Each published bin of a tree plus the tree's published total (draws × 7): its noisy
    parent plus its noisy bin, a whole number."""
    z = bins + bins.sum(axis=1, keepdims=True)
    assert np.abs(z - np.rint(z)).max() < 1e-6
    return np.rint(z)


def log_likelihood(z: np.ndarray, nodes: Sequence[int], scale: float) -> np.ndarray:
    """ln Σᵤ f(u − parent)·Πⱼ f(zⱼ − u − binⱼ) per draw, up to a constant of the noise's
    distribution f ∝ e^{−|k|/scale}, for a tree's exact ``nodes`` (parent, then bins). The noisy
    parent u is summed over parent ± 20·scale: any function of the published bins is an event,
    so this truncation can only make the audit less sharp, never wrong."""
    parent, bins = nodes[0], np.asarray(nodes[1:])
    reach = int(20 * scale)
    total = np.full(len(z), -np.inf)
    for u in range(parent - reach, parent + reach + 1):
        total = np.logaddexp(total, -(abs(u - parent) + np.abs(z - u - bins).sum(axis=1)) / scale)
    return total


def log_likelihood_ratio(
    z_by_tree: dict[int, np.ndarray], first: Sequence[int], second: Sequence[int], scale: float
) -> np.ndarray:
    """ln P(published bins | first)/P(published bins | second) per draw, summed over the trees
    read (their noises are independent), for the tables' exact nodes ``first`` and ``second``."""
    return sum(
        log_likelihood(z, one_tree(first, tree), scale)
        - log_likelihood(z, one_tree(second, tree), scale)
        for tree, z in z_by_tree.items()
    )


def published_tree(mechanism, nodes: Sequence[int], tree: int, draws: int) -> np.ndarray:
    """``draws`` published bins of one tree (draws × 7): its exact nodes noised by
    ``mechanism``, then made consistent."""
    noisy = batched_draws(mechanism.release, one_tree(nodes, tree), draws)
    bins = ranges.consistent_estimate(noisy.T, TREE).T
    # The same estimate as OpenDP's, which the kind's release calls.
    for row, estimate in zip(noisy[:50], bins[:50], strict=True):
        np.testing.assert_allclose(ranges.consistent_leaves(row, TREE), estimate, atol=1e-9)
    return bins


def event_hits(log_lrs: tuple[np.ndarray, np.ndarray]) -> list[tuple[int, int]]:
    """Each event's hits under the two tables: {ln LR ≥ c·ε}, which favours the first, and
    {ln LR ≤ −c·ε}, which favours the second, for every cut c."""
    hits = []
    for cut in CUTS:
        hits.append(tuple(int((r >= cut * EPSILON).sum()) for r in log_lrs))
        hits.append(tuple(int((r <= -cut * EPSILON).sum()) for r in log_lrs))
    return hits


def worst_bound(hits: list[tuple[int, int]], draws: int) -> float:
    """The largest lower confidence bound of an event's ratio, both ways, over the events; all
    wrong with probability at most FALSE_ALARM."""
    return max(worst_ratio_lower_bound(h, draws, FALSE_ALARM / len(hits)) for h in hits)


def audit_hits(
    mechanism,
    scale: float,
    first: Sequence[float],
    second: Sequence[float],
    definition: dict,
    trees: Sequence[int],
    draws: int,
) -> list[tuple[int, int]]:
    """Each event's hits over ``draws`` releases of the trees ``trees`` of each table."""
    nodes = [exact(values, definition)[1] for values in (first, second)]
    log_lrs = tuple(
        log_likelihood_ratio(
            {tree: z_values(published_tree(mechanism, n, tree, draws)) for tree in trees},
            *nodes,
            scale,
        )
        for n in nodes
    )
    return event_hits(log_lrs)


def context(definition: dict) -> PlanContext:
    return PlanContext(schema=SCHEMA, definition=definition_from_dict(definition), noise=None)


def one_level(definition: dict):
    """The broken mechanism: the kind's own integer noise calibrated to one level of the tree
    (half its sensitivity)."""
    statistic = planned(definition)
    sensitivity = statistic.sensitivity / FOREST.noisy_levels
    return integer_mechanism(sensitivity, EPSILON, 0.0, context(definition))


def pure_audit(mechanism, draws: int) -> list[tuple[int, int]]:
    scale = planned(PURE).noise_scale
    return audit_hits(mechanism, scale, D1_ADDED, D2, PURE, [0], draws)


def blowfish_audit(mechanism, draws: int) -> list[tuple[int, int]]:
    scale = planned(BLOWFISH).noise_scale
    return audit_hits(mechanism, scale, D1_MOVED, D2, BLOWFISH, [0, LAST_TREE], draws)


def test_the_engine_plans_a_forest_and_the_neighbours_differ_as_the_audit_assumes():
    # the kind's shape and sensitivity for 45 bins: two noisy levels
    assert ranges.tree_shape(BINS, "l1") == FOREST
    pure, blowfish = planned(PURE), planned(BLOWFISH)
    assert (pure.mechanism, pure.sensitivity, pure.noise_scale) == ("geometric", 2, 2.0)
    assert (blowfish.mechanism, blowfish.sensitivity, blowfish.noise_scale) == ("geometric", 4, 4.0)
    assert one_level(PURE).scale == 1.0
    assert one_level(BLOWFISH).scale == 2.0

    # the engine's exact tree is OpenDP's tree of the bin counts
    counts, nodes = exact(D2, PURE)
    assert sum(counts) == len(D2)
    assert nodes == ranges.tree_nodes(counts, FOREST)

    # a record added to bin 0 moves its tree's parent and bin 0; a record moved from bin 2 to
    # bin 44 moves both trees' parents and the two bins
    added = np.subtract(exact(D1_ADDED, PURE)[1], nodes)
    assert np.flatnonzero(added).tolist() == [0, 1]
    assert added[[0, 1]].tolist() == [1, 1]
    moved = np.subtract(exact(D1_MOVED, BLOWFISH)[1], exact(D2, BLOWFISH)[1])
    last = LAST_TREE * TREE.nodes
    assert np.flatnonzero(moved).tolist() == [0, 3, last, last + 1 + 44 - LAST_TREE * 7]
    assert moved[np.flatnonzero(moved)].tolist() == [-1, -1, 1, 1]


def test_a_bin_plus_its_trees_total_is_its_noisy_bin_plus_its_noisy_parent():
    # given noisy nodes of one tree
    noisy = np.array([[40, 3, -2, 7, 0, 1, 5, -4], [-3, 0, 0, 9, 2, -1, 1, 6]])

    # when made consistent by OpenDP
    bins = np.array([ranges.consistent_leaves(row, TREE) for row in noisy])

    # then
    np.testing.assert_array_equal(z_values(bins), noisy[:, 1:] + noisy[:, [0]])


def test_the_published_bins_keep_epsilon():
    assert worst_bound(pure_audit(planned(PURE).mechanisms[0], DRAWS), DRAWS) <= math.exp(EPSILON)


def test_the_audit_catches_noise_calibrated_to_one_level():
    bound = worst_bound(pure_audit(one_level(PURE), CONTROL_DRAWS), CONTROL_DRAWS)
    assert bound > math.exp(EPSILON)


def test_the_published_bins_keep_epsilon_under_blowfish():
    hits = blowfish_audit(planned(BLOWFISH).mechanisms[0], DRAWS)
    assert worst_bound(hits, DRAWS) <= math.exp(EPSILON)


def test_the_blowfish_audit_catches_noise_calibrated_to_one_level():
    hits = blowfish_audit(one_level(BLOWFISH), BLOWFISH_CONTROL_DRAWS)
    bound = worst_bound(hits, BLOWFISH_CONTROL_DRAWS)
    assert bound > math.exp(EPSILON)


TreeNodes = Callable[[list[int], ranges.TreeShape], list[int]]


def memoized_tree_nodes(function: TreeNodes) -> TreeNodes:
    """``function`` of (counts, shape), as ``ranges.tree_nodes``, each exact tree computed once
    (a fresh copy handed out each time): the exact tree of fixed counts is the same in every
    release, yet building it with OpenDP takes a third of a release's time."""
    cache: dict[tuple, list[int]] = {}

    def tree_nodes(counts: list[int], shape: ranges.TreeShape) -> list[int]:
        key = (tuple(counts), shape)
        if key not in cache:
            cache[key] = function(counts, shape)
        return list(cache[key])

    return tree_nodes


def kind_release_hits(statistic: PlannedStatistic, draws: int) -> list[tuple[int, int]]:
    """The events' hits when every draw is a whole release by the kind (``release_statistic``:
    noise on all 56 nodes, OpenDP's consistency, the published dict)."""
    (counts_one, nodes_one), (counts_two, nodes_two) = exact(D1_ADDED, PURE), exact(D2, PURE)
    log_lrs = []
    for counts in (counts_one, counts_two):
        bins = []
        with pytest.MonkeyPatch.context() as patch:
            # The exact tree is computed once per table, by the same function; the noise,
            # OpenDP's consistency and the publication run in every release.
            patch.setattr(ranges, "tree_nodes", memoized_tree_nodes(ranges.tree_nodes))
            for _ in range(draws):
                published = release_statistic(statistic, counts, SCHEMA).to_dict()
                bins.append([published["value"][cell] for cell in published["cells"][:7]])
        z = z_values(np.array(bins))
        log_lrs.append(
            log_likelihood_ratio({0: z}, nodes_one, nodes_two, planned(PURE).noise_scale)
        )
    return event_hits(tuple(log_lrs))


def test_the_published_bins_keep_epsilon_through_the_kinds_release():
    hits = kind_release_hits(planned(PURE), KIND_DRAWS)
    assert worst_bound(hits, KIND_DRAWS) <= math.exp(EPSILON)
    assert hits[0][0] > hits[0][1]  # the event does see the record


def test_the_kinds_release_with_one_levels_noise_is_caught():
    statistic = planned(PURE)
    broken = dataclasses.replace(statistic, mechanisms=(one_level(PURE),), noise_scale=1.0)
    bound = worst_bound(kind_release_hits(broken, KIND_CONTROL_DRAWS), KIND_CONTROL_DRAWS)
    assert bound > math.exp(EPSILON)


# --- coverage of the published intervals ------------------------------------------------------

COVERAGE_RELEASES = 1_000
# 60 to 82 records per bin (no interval is clamped at 0).
COVERAGE_VALUES = [i + 0.5 for i in range(BINS) for _ in range(60 + 7 * i % 23)]
# (first, last) bins: one bin, a whole tree, across trees, long, all, into the padded tree.
RANGES = [(0, 0), (0, 6), (3, 10), (20, 27), (5, 40), (0, 44), (42, 44), (44, 44)]
SHRINK = 0.4


@functools.cache
def coverage_hits(definition_name: str) -> tuple[list[int], list[int]]:
    """Per range, in how many of COVERAGE_RELEASES releases of the fixed table its true answer
    lies in the published interval, and in that interval shrunk to SHRINK of its width."""
    definition = {"pure": PURE, "approx": APPROX}[definition_name]
    statistic = planned(definition)
    counts, _ = exact(COVERAGE_VALUES, definition)
    values = np.array(COVERAGE_VALUES)
    truth = [int(((values >= first) & (values < last + 1)).sum()) for first, last in RANGES]
    covered, shrunk = [0] * len(RANGES), [0] * len(RANGES)
    with pytest.MonkeyPatch.context() as patch:
        # A range's weights and half-width depend only on the tree, the range and the noise
        # scale, and the exact tree only on the table, the same in every release here: each is
        # computed once, by the same functions (0.4 ms, 2–6 ms and 1 ms a call otherwise); the
        # rest of the release and of range_answer runs every time.
        patch.setattr(ranges, "range_weights", functools.cache(ranges.range_weights))
        patch.setattr(ranges, "error_halfwidth", memoized_halfwidth(ranges.error_halfwidth))
        patch.setattr(ranges, "tree_nodes", memoized_tree_nodes(ranges.tree_nodes))
        for _ in range(COVERAGE_RELEASES):
            published = release_statistic(statistic, counts, SCHEMA).to_dict()
            for k, ((first, last), true) in enumerate(zip(RANGES, truth, strict=True)):
                answer = range_answer(published, first, last + 1)
                assert (answer["from"], answer["to"]) == (first, last + 1)
                low, high = answer["ci95"]
                assert low > 0  # not clamped: shrinking about the middle is fair
                covered[k] += low <= true <= high
                middle, half = (low + high) / 2, SHRINK * (high - low) / 2
                shrunk[k] += middle - half <= true <= middle + half
    return covered, shrunk


DEFINITIONS = ["pure", "approx"]


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_every_ranges_interval_covers_its_true_answer_95_percent_of_the_time(definition):
    covered, _ = coverage_hits(definition)
    miss = FALSE_ALARM / len(RANGES)
    for hits in covered:
        assert clopper_pearson_upper(hits, COVERAGE_RELEASES, miss) >= 0.95


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_intervals_shrunk_to_0_4_of_their_width_are_caught(definition):
    _, shrunk = coverage_hits(definition)
    miss = FALSE_ALARM / len(RANGES)
    for hits in shrunk:
        assert clopper_pearson_upper(hits, COVERAGE_RELEASES, miss) < 0.95
