"""Statistical privacy audit of the range histogram's tree mechanism (issue 9, point 5).

The tree is the kind's own: 16 bins under a complete 4-ary tree of 3 levels (21 nodes), the
nodes built by OpenDP's ``make_b_ary_tree`` (ranges.tree_nodes) and noised by the mechanism the
kind plans, with the sensitivity the kind computes. Neighbouring tables differ in one record:

- ε-DP (add/remove): D1 = D2 plus a record in bin 0, which adds 1 to the root, to bin 0's level-1
  node and to bin 0. The event "each of those three noisy nodes exceeds its value on D2" has
  probability ratio exactly e^{3/b} = e^ε for discrete Laplace noise of scale b = 3/ε: the worst
  case, so the audit is sharp.
- Blowfish (replace one record, n public): the record moves from bin 0 to bin 15; four nodes
  change (two up, two down), the root not. The event "the two nodes that gain exceed, and the
  two that lose fall below, their values on D2" has ratio e^{4/b} with b = 6/ε (the kind counts
  the root too), so e^{2ε/3}.

A Clopper–Pearson lower bound on the ratio, both ways, must not exceed e^ε; the negative controls
(noise calibrated to one level's sensitivity instead of the tree's) must be caught. A last audit
reads only what is published (the consistent bins, through the kind's own release).
"""

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from binomial_bounds import clopper_pearson_lower, clopper_pearson_upper

from privacy_engine import ranges
from privacy_engine.definitions import definition_from_dict
from privacy_engine.kinds import PlanContext
from privacy_engine.kinds.base import integer_mechanism
from privacy_engine.kinds.range_histogram import RangeHistogram, RangeHistogramKind
from privacy_engine.release import release_statistic
from privacy_engine.schema import schema_from_dict

pytestmark = pytest.mark.statistical

EPSILON = 1.0
DRAWS = 24_000
CONTROL_DRAWS = 10_000
BATCH = 2_000
WORKERS = min(4, os.cpu_count() or 1)
FALSE_ALARM = 1e-6
SHAPE = ranges.complete_tree(16, 4)
SCHEMA = schema_from_dict({"columns": {"x": {"kind": "numeric", "lower": 0, "upper": 16}}})
D2 = [3, 1, 0, 2, 5, 0, 0, 1, 4, 2, 0, 0, 1, 1, 3, 2]


def with_record(counts: list[int], bin_index: int, change: int = 1) -> list[int]:
    out = list(counts)
    out[bin_index] += change
    return out


def context(definition: dict) -> PlanContext:
    return PlanContext(schema=SCHEMA, definition=definition_from_dict(definition), noise=None)


def noisy_trees(mechanism, counts: list[int], draws: int) -> np.ndarray:
    """``draws`` noisy trees of the bins' counts, one per row (many trees per OpenDP call: its
    noise is independent per element)."""
    nodes = ranges.tree_nodes(counts, SHAPE)
    sizes = [min(BATCH, draws - start) for start in range(0, draws, BATCH)]
    with ThreadPoolExecutor(WORKERS) as pool:
        rows = pool.map(
            lambda k: np.asarray(mechanism.release(nodes * k)).reshape(k, len(nodes)), sizes
        )
        return np.concatenate(list(rows))


def node(level: int, index: int) -> int:
    """Breadth-first position of the node ``index`` of level ``level``."""
    return sum(4**k for k in range(level)) + index


def event_rate(trees: np.ndarray, above: dict[int, int], below: dict[int, int]) -> int:
    hit = np.ones(len(trees), dtype=bool)
    for position, threshold in above.items():
        hit &= trees[:, position] >= threshold
    for position, threshold in below.items():
        hit &= trees[:, position] <= threshold
    return int(hit.sum())


def ratio_lower_bound(mechanism, first, second, above, below, draws) -> float:
    """The larger lower confidence bound of P(event | first)/P(event | second), both ways."""
    hits = [
        event_rate(noisy_trees(mechanism, counts, draws), above, below)
        for counts in (first, second)
    ]
    miss = FALSE_ALARM / 4
    worst = 0.0
    for more, less in ((hits[0], hits[1]), (hits[1], hits[0])):
        upper = clopper_pearson_upper(less, draws, miss)
        worst = max(worst, clopper_pearson_lower(more, draws, miss) / upper)
    return worst


PURE = {"kind": "pure_dp", "epsilon": EPSILON}
BLOWFISH = {"kind": "blowfish", "epsilon": EPSILON, "policy": {"graph": "full_domain"}}


def pure_audit(sensitivity: float, draws: int) -> float:
    mechanism = integer_mechanism(sensitivity, EPSILON, 0.0, context(PURE))
    nodes = ranges.tree_nodes(D2, SHAPE)
    changed = [node(0, 0), node(1, 0), node(2, 0)]
    above = {position: nodes[position] + 1 for position in changed}
    return ratio_lower_bound(mechanism, with_record(D2, 0), D2, above, {}, draws)


def blowfish_audit(sensitivity: float, draws: int) -> float:
    mechanism = integer_mechanism(sensitivity, EPSILON, 0.0, context(BLOWFISH))
    moved = with_record(with_record(D2, 15, -1), 0, +1)
    nodes = ranges.tree_nodes(D2, SHAPE)
    above = {p: nodes[p] + 1 for p in (node(1, 0), node(2, 0))}
    below = {p: nodes[p] - 1 for p in (node(1, 3), node(2, 15))}
    return ratio_lower_bound(mechanism, moved, D2, above, below, draws)


def kind_sensitivity(definition: dict) -> float:
    # The kind's own sensitivity for this tree (its shape for 16 bins is not this one, so the
    # per-level sensitivity it uses is applied to this tree's levels through OpenDP's map).
    histogram = 1 if definition is PURE else 2
    return ranges.tree_l1_map(SHAPE, histogram)


def test_the_kinds_sensitivity_is_opendps_tree_map():
    query = RangeHistogram(column="x", bins=4096)
    levels = ranges.tree_shape(4096, "l1").levels
    assert RangeHistogramKind().sensitivity(query, context(PURE)) == levels
    assert RangeHistogramKind().sensitivity(query, context(BLOWFISH)) == 2 * levels
    assert kind_sensitivity(PURE) == 3
    assert kind_sensitivity(BLOWFISH) == 6


def test_the_tree_mechanism_keeps_its_epsilon():
    assert pure_audit(kind_sensitivity(PURE), DRAWS) <= math.exp(EPSILON)


def test_the_audit_catches_noise_calibrated_to_one_level():
    assert pure_audit(1, CONTROL_DRAWS) > math.exp(EPSILON)


def test_the_tree_mechanism_keeps_its_epsilon_under_blowfish():
    assert blowfish_audit(kind_sensitivity(BLOWFISH), DRAWS) <= math.exp(EPSILON)


def test_the_blowfish_audit_catches_noise_calibrated_to_one_level():
    assert blowfish_audit(2, CONTROL_DRAWS) > math.exp(EPSILON)


def test_the_published_bins_keep_epsilon_through_the_kinds_release():
    # given the kind's own plan and release on neighbouring bin counts (a 16-ary tree)
    kind = RangeHistogramKind()
    query = RangeHistogram(column="x", bins=256)
    planned = kind.plan(query, EPSILON, 0.0, context(PURE))
    base = [2] * 256
    draws = 1_500

    def first_bin_high(counts: list[int]) -> int:
        hits = 0
        for _ in range(draws):
            published = release_statistic(planned, counts, SCHEMA).to_dict()
            hits += published["value"][published["cells"][0]] >= 3.5
        return hits

    # when
    more, less = first_bin_high(with_record(base, 0)), first_bin_high(base)

    # then the event on what is published moves by at most e^ε
    miss = FALSE_ALARM / 2
    ratio = clopper_pearson_lower(more, draws, miss) / clopper_pearson_upper(less, draws, miss)
    assert ratio <= math.exp(EPSILON)
    assert more > less  # the event does see the record
