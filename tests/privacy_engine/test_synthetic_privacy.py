"""Statistical privacy audit of the synthetic table's noisy answers (issue 10, point 3).

The table is post-processing of three noisy steps (privacy_engine/synthetic.py): the 1-way
vector, the spanning tree's choices, the chosen pairs' vector. Each is audited with the planned
mechanisms of the kind, on exact answers the engine's own aggregates compute from neighbouring
tables of a few records (columns x, y, z of categories 0 and 1, with an other bucket):

- 1-way vector, ε-DP (add/remove): D1 = D2 plus the record (0, 0, 0). The event "each of the three
  noisy cells of that record exceeds its count on D2" has ratio e^{3/b} = e^{ε₁} for the geometric
  noise of scale 3/ε₁: sharp. Under Blowfish the record (0, 0, 0) is replaced by (1, 1, 1): "the
  three old cells fall and the three new ones rise", ratio e^{6/b} = e^{ε₁} at scale 6/ε₁.
- The tree's first choice, with the noisy 1-way answers held fixed (adaptive composition): on D2
  the scores of (x, y), (x, z), (y, z) are (4, 8, 0), on D1 (5, 7, 1): adding one record moves
  the two leading scores apart by 2 = 2Δ, so "(x, y) is chosen", rare on D2, has ratio close to
  e^{2Δ/s} = e^{ε_step} for OpenDP's report-noisy-max of scale s = 2Δ/ε_step: near sharp.
- Chosen pairs' vector: the tree is fixed; "both noisy cells of the added record exceed" has
  ratio e^{2/b} = e^{ε₃}: sharp.
- The whole of ``measure`` (what a release draws, in order) on D1 and D2, read only through its
  published outputs.

Clopper–Pearson lower bounds on the ratios, both ways, must not exceed e^ε; negative controls
(noise of half the scale) must be caught. (ε, δ)-DP's Gaussian vector is checked against
e^ε·P + δ.
"""

import math
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from binomial_bounds import (
    batched_draws,
    clopper_pearson_lower,
    clopper_pearson_upper,
    worst_ratio_lower_bound,
)

import privacy_engine.synthetic as synthetic
from privacy_engine.aggregates import finish, partial
from privacy_engine.columnar import typed_from_frame
from privacy_engine.definitions import definition_from_dict
from privacy_engine.kinds import PlanContext
from privacy_engine.kinds.base import integer_mechanism
from privacy_engine.kinds.synthetic import KIND
from privacy_engine.schema import schema_from_dict

pytestmark = pytest.mark.statistical

DRAWS = 40_000
CONTROL_DRAWS = 10_000
FALSE_ALARM = 1e-6
COLUMN = {"kind": "categorical", "categories": ["0", "1"], "other": "o", "fill": "0"}
SCHEMA = schema_from_dict({"columns": {"x": COLUMN, "y": COLUMN, "z": COLUMN}})
QUERY = synthetic.Synthetic(columns=("x", "y", "z"))
D2 = [
    "000", "001", "001", "001", "010", "011", "011", "011", "100", "100", "110", "110",
]  # fmt: skip
ADDED = [*D2, "000"]
MOVED = ["111", *D2[1:]]  # the record 000 replaced by 111
PURE = {"kind": "pure_dp", "epsilon": 2.0}
# ε₁ = 1.5 under Blowfish: its event needs six cells at once, rarer at a small ε.
BLOWFISH = {"kind": "blowfish", "epsilon": 5.0, "policy": {"graph": "full_domain"}}
# A total ε whose selection steps have ε = 1 each (two steps of 0.1 × 20 / 2).
SELECTION = {"kind": "pure_dp", "epsilon": 20.0}
# The added record's cell in each 1-way histogram (3 buckets each) and in pairs (x, y), (x, z).
ONEWAY_CELLS = [0, 3, 6]
MOVED_CELLS = [1, 4, 7]
PAIR_CELLS = [0, 9]
# The 1-way answers the selection is audited at: 6 records per category, none other.
FIXED_ONEWAY = [np.asarray([6, 6, 0])] * 3


def exact(records: list[str]) -> tuple[list[list[int]], list[list[int]]]:
    """The kind's exact answers, by the engine's own aggregates."""
    frame = pd.DataFrame([list(r) for r in records], columns=["x", "y", "z"])
    table = typed_from_frame(frame, numbers=set(), labels={"x", "y", "z"})
    answers = [finish(r, partial(r, table)) for r in KIND.aggregates(QUERY, SCHEMA)]
    return KIND.exact_answer(QUERY, answers)


def plan(definition: dict):
    context = PlanContext(SCHEMA, definition_from_dict(definition), None)
    spec = definition_from_dict(definition)
    return KIND.plan(QUERY, spec.epsilon, getattr(spec, "delta", 0.0), context)


def flat(oneway: list[list[int]]) -> list[int]:
    return [v for cells in oneway for v in cells]


def vector_hits(mechanism, values, base, above, below, draws) -> int:
    """Hits of "every ``above`` cell exceeds, every ``below`` cell falls below, its count on D2".
    Only those cells are drawn: the noise is independent per cell, so their joint law is the
    same as within the whole vector (and the audit is faster)."""
    cells = [*above, *below]
    noisy = batched_draws(mechanism.release, [values[c] for c in cells], draws)
    hit = np.ones(draws, dtype=bool)
    for k, position in enumerate(cells):
        if position in above:
            hit &= noisy[:, k] >= base[position] + 1
        else:
            hit &= noisy[:, k] <= base[position] - 1
    return int(hit.sum())


def vector_audit(mechanism, neighbour, above, below, draws, part=0) -> float:
    answer = (lambda records: flat(exact(records)[0])) if part == 0 else chosen_cells
    base = answer(D2)
    hits = tuple(
        vector_hits(mechanism, answer(records), base, above, below, draws)
        for records in (neighbour, D2)
    )
    return worst_ratio_lower_bound(hits, draws, FALSE_ALARM)


def chosen_cells(records) -> list[int]:
    """The cells of the tree (x, y), (x, z): pairs 0 and 1 in combinations order."""
    pairs = exact(records)[1]
    return [*pairs[0], *pairs[1]]


def test_the_neighbours_differ_as_the_audit_says():
    base = flat(exact(D2)[0])
    added = [a - b for a, b in zip(flat(exact(ADDED)[0]), base, strict=True)]
    moved = [a - b for a, b in zip(flat(exact(MOVED)[0]), base, strict=True)]
    assert [i for i, v in enumerate(added) if v] == ONEWAY_CELLS
    assert set(added) == {0, 1}
    assert [i for i, v in enumerate(moved) if v > 0] == MOVED_CELLS
    assert [i for i, v in enumerate(moved) if v < 0] == ONEWAY_CELLS
    assert synthetic.scores(FIXED_ONEWAY, exact(D2)[1], [0, 1, 2]) == [4, 8, 0]
    assert synthetic.scores(FIXED_ONEWAY, exact(ADDED)[1], [0, 1, 2]) == [5, 7, 1]
    assert [chosen_cells(ADDED)[c] - chosen_cells(D2)[c] for c in PAIR_CELLS] == [1, 1]


def test_the_one_way_vector_keeps_its_epsilon():
    oneway = plan(PURE).mechanisms[0]
    bound = vector_audit(oneway, ADDED, ONEWAY_CELLS, [], DRAWS)
    assert bound <= math.exp(oneway.epsilon_spent)
    assert bound > math.exp(0.6 * oneway.epsilon_spent)  # the event is sharp: not vacuous


def test_the_one_way_vector_keeps_its_epsilon_under_blowfish():
    oneway = plan(BLOWFISH).mechanisms[0]
    assert oneway.sensitivity == 6
    bound = vector_audit(oneway, MOVED, MOVED_CELLS, ONEWAY_CELLS, DRAWS)
    assert bound <= math.exp(oneway.epsilon_spent)


def test_the_audit_catches_a_one_way_vector_with_half_the_noise():
    honest = plan(PURE).mechanisms[0]
    halved = integer_mechanism(
        honest.sensitivity, 2 * honest.epsilon_spent, 0.0, PlanContext(SCHEMA, None, None)
    )
    assert math.isclose(halved.scale, honest.scale / 2)
    bound = vector_audit(halved, ADDED, ONEWAY_CELLS, [], CONTROL_DRAWS)
    assert bound > math.exp(honest.epsilon_spent)


def test_the_audit_catches_blowfish_calibrated_to_add_remove():
    honest = plan(BLOWFISH).mechanisms[0]
    add_remove = plan({**PURE, "epsilon": 5.0}).mechanisms[0]  # 3 where a replacement moves 6
    assert math.isclose(add_remove.scale, honest.scale / 2)
    bound = vector_audit(add_remove, MOVED, MOVED_CELLS, ONEWAY_CELLS, CONTROL_DRAWS)
    assert bound > math.exp(honest.epsilon_spent)


def memoized_scores(function):
    """``synthetic.scores``, each answer computed once: the scores are a function of the fixed
    noisy 1-way answers and the exact pairs only, never of the selection's noise, yet cost more
    than the draw itself, so the selection audits, which repeat one choice, patch it in."""
    cache: dict[tuple, list[int]] = {}

    def scores(oneway, exact_pairs, candidates) -> list[int]:
        key = (
            tuple((a.dtype.str, a.tobytes()) for a in map(np.asarray, oneway)),
            tuple(tuple(int(v) for v in cells) for cells in exact_pairs),
            tuple(candidates),
        )
        if key not in cache:
            cache[key] = function(oneway, exact_pairs, candidates)
        return list(cache[key])

    return scores


def selection_hits(selectors, records, draws) -> int:
    pairs = exact(records)[1]
    first = (0, 1)  # the pair (x, y)
    # The first choice only (the second step is drawn by its own mechanism after it): every
    # draw is the tree's selection as a release makes it, by its own exponential mechanism.
    with mock.patch.object(synthetic, "scores", memoized_scores(synthetic.scores)):
        return sum(
            synthetic.select_tree(selectors[:1], FIXED_ONEWAY, pairs)[0] == first
            for _ in range(draws)
        )


def selection_audit(selectors, draws) -> float:
    hits = (selection_hits(selectors, ADDED, draws), selection_hits(selectors, D2, draws))
    return worst_ratio_lower_bound(hits, draws, FALSE_ALARM)


def test_the_tree_choice_keeps_its_epsilon():
    selectors = plan(SELECTION).mechanisms[1:-1]
    assert len(selectors) == 2
    assert math.isclose(selectors[0].epsilon_spent, 1.0, rel_tol=1e-9)
    bound = selection_audit(selectors, 20_000)
    assert bound <= math.exp(selectors[0].epsilon_spent)
    assert bound > math.exp(0.6)  # near sharp: not vacuous


def test_the_audit_catches_a_tree_choice_with_half_the_noise():
    honest = plan(SELECTION).mechanisms[1:-1]
    halved = [
        synthetic.MaxScoreMechanism(sensitivity=1, epsilon=2 * s.epsilon_spent, candidates=3)
        for s in honest
    ]
    assert math.isclose(halved[0].scale, honest[0].scale / 2)
    assert selection_audit(halved, CONTROL_DRAWS) > math.exp(honest[0].epsilon_spent)


def test_the_chosen_pairs_keep_their_epsilon():
    pairs = plan(PURE).mechanisms[-1]
    assert pairs.sensitivity == 2
    bound = vector_audit(pairs, ADDED, PAIR_CELLS, [], DRAWS, part=1)
    assert bound <= math.exp(pairs.epsilon_spent)
    assert bound > math.exp(0.6 * pairs.epsilon_spent)


def test_the_audit_catches_chosen_pairs_with_half_the_noise():
    honest = plan(PURE).mechanisms[-1]
    halved = integer_mechanism(2, 2 * honest.epsilon_spent, 0.0, PlanContext(SCHEMA, None, None))
    bound = vector_audit(halved, ADDED, PAIR_CELLS, [], CONTROL_DRAWS, part=1)
    assert bound > math.exp(honest.epsilon_spent)


def test_the_gaussian_one_way_vector_keeps_epsilon_and_delta():
    approx = plan({"kind": "approx_dp", "epsilon": 2.0, "delta": 1e-6})
    oneway = approx.mechanisms[0]
    assert oneway.name == "gaussian"
    assert math.isclose(oneway.sensitivity, math.sqrt(3))
    base = flat(exact(D2)[0])
    more = vector_hits(oneway, flat(exact(ADDED)[0]), base, ONEWAY_CELLS, [], DRAWS)
    less = vector_hits(oneway, flat(exact(D2)[0]), base, ONEWAY_CELLS, [], DRAWS)
    miss = FALSE_ALARM / 4
    for a, b in ((more, less), (less, more)):
        low = clopper_pearson_lower(a, DRAWS, miss)
        high = clopper_pearson_upper(b, DRAWS, miss)
        assert low <= math.exp(oneway.epsilon_spent) * high + oneway.delta_spent


def test_everything_a_release_draws_keeps_the_total_epsilon():
    """``measure`` as a release calls it, read only through its outputs: the added record's
    1-way cell of x rises, (x, y) is chosen first, and its noisy cell rises."""
    planned = plan({"kind": "pure_dp", "epsilon": 1.0})
    draws = 3_000

    def hits(records) -> int:
        answers = exact(records)
        count = 0
        for _ in range(draws):
            out = synthetic.measure(planned, answers)
            count += bool(
                out.oneway[0][0] >= 7 and out.pairs[0] == (0, 1) and out.pair_cells[0][0] >= 5
            )
        return count

    more, less = hits(ADDED), hits(D2)
    assert worst_ratio_lower_bound((more, less), draws, FALSE_ALARM) <= math.exp(1.0)
    assert more > less  # the event does see the record
