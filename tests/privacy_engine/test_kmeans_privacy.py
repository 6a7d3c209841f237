"""Statistical privacy audit of k-means (issue 10, point 5).

One iteration is audited: its exact answers come from the engine's own ClusterSums aggregate on
neighbouring tables, its noise from the two mechanisms the kind plans (counts, then the vector of
shifted sums). One iteration suffices: the release's iterations are separate mechanisms composed
sequentially, each iteration's requests built only from public facts and earlier noisy output,
and post-processing (the centroid update, clamping, publishing) is free. So if every iteration,
for every value of its public centroids, keeps its share ε_t, the release keeps Σ ε_t = ε; an
iteration with arbitrary public centroids is what a later iteration is, conditioned on the
earlier output. With one iteration the shares are ε/2 for the counts and ε/2 for the sums.

The pair straddles a cluster boundary: one column v in [0, 100] (middle m = 50), public
centroids 0 and 2, so the boundary is at 1, near the lower bound.

- ε-DP (add/remove): D1 = D2 plus the record 0.5, in the first cluster. Its count rises by 1 and
  its shifted sum falls by 49.5. Event: count_A ≥ its D1 value and sum_A ≤ its D1 value; its
  ratio is e^{ε/2}·e^{(ε/2)·49.5/50}, just under e^ε.
- Blowfish G^{L1,θ} with θ = 4: the record 0.5 (cluster A) is replaced by 1.5 (cluster B), an
  edge (|0.5 − 1.5| < θ). From D2 to D1 the counts move by +1 and −1, the sums by −49.5 (A)
  and +48.5 (B): the cross-cluster change 98, against the kind's bound 2·50 = 100. Event: both
  counts and both sums in their D1-side tails; its ratio is e^{ε/2}·e^{(ε/2)·98/100}, just
  under e^ε.

Clopper–Pearson lower bounds on the ratios, both ways, must not exceed e^ε. Negative controls
that must be caught: (a) the noise halved (mechanisms calibrated to half the sensitivities), and
(b) under Blowfish, the sum calibrated to θ (the article's S(q_sum, G^{L1,θ}) = θ), ignoring that
a record can change cluster.
"""

import math

import numpy as np
import pytest
from binomial_bounds import batched_draws, worst_ratio_lower_bound

from privacy_engine.aggregates import finish, partial
from privacy_engine.columnar import TypedTable
from privacy_engine.definitions import definition_from_dict
from privacy_engine.kinds import PlanContext
from privacy_engine.kinds import kmeans as km
from privacy_engine.kinds.base import integer_mechanism, real_mechanism
from privacy_engine.schema import schema_from_dict

pytestmark = pytest.mark.statistical

EPSILON = 1.0
THETA = 4.0
DRAWS = 100_000
CONTROL_DRAWS = 20_000
FALSE_ALARM = 1e-6
SCHEMA = schema_from_dict({"columns": {"v": {"kind": "numeric", "lower": 0, "upper": 100}}})
QUERY = km.KMeans(columns=("v",), k=2, iterations=1)
CENTROIDS = ((0.0,), (2.0,))
PURE = {"kind": "pure_dp", "epsilon": EPSILON}
DISTANCE = {
    "kind": "blowfish",
    "epsilon": EPSILON,
    "policy": {"graph": "distance_threshold", "column": "v", "theta": THETA},
}
OTHERS = [0.2, 1.7, 30.0, 64.0, 99.0]  # records on both sides of the boundary and far from it
D2_PURE = OTHERS
D1_PURE = [*OTHERS, 0.5]
D1_BLOWFISH = [*OTHERS, 0.5]
D2_BLOWFISH = [*OTHERS, 1.5]
REQUEST = km.cluster_sums(("v",), SCHEMA, CENTROIDS)


def answer(values: list[float]) -> tuple[list[int], list[float]]:
    """Counts and the cluster-major vector of shifted sums, by the engine's own aggregate."""
    table = TypedTable(
        row_count=len(values), numbers={"v": np.array(values, dtype=float)}, labels={}
    )
    counts, sums = finish(REQUEST, partial(REQUEST, table))
    return counts, [s for row in sums for s in row]


def context(definition: dict) -> PlanContext:
    return PlanContext(schema=SCHEMA, definition=definition_from_dict(definition), noise=None)


def planned_parts(definition: dict):
    """The two mechanisms the kind plans for its one iteration."""
    planned = km.KIND.plan(QUERY, EPSILON, 0.0, context(definition))
    count_part, sum_part = planned.mechanisms
    return count_part, sum_part


def parts_with(definition: dict, count_sensitivity: float, sum_sensitivity: float):
    """Mechanisms built like the kind's, at other sensitivities (the negative controls)."""
    share = EPSILON / 2
    return (
        integer_mechanism(count_sensitivity, share, 0.0, context(definition)),
        real_mechanism(sum_sensitivity, share, 0.0, context(definition), vector=True),
    )


def audit(parts, d1: list[float], d2: list[float], draws: int) -> float:
    """The worst lower confidence bound on P(E | D1)/P(E | D2), both ways, for the event that
    every count and sum that differs lies on D1's side of its D1 value."""
    count_part, sum_part = parts
    counts_1, sums_1 = answer(d1)
    counts_2, sums_2 = answer(d2)
    hits = []
    for counts, sums in ((counts_1, sums_1), (counts_2, sums_2)):
        noisy_counts = batched_draws(count_part.release, counts, draws)
        noisy_sums = batched_draws(sum_part.release, sums, draws)
        hit = np.ones(draws, dtype=bool)
        for i, (a, b) in enumerate(zip(counts_1, counts_2, strict=True)):
            if a > b:
                hit &= noisy_counts[:, i] >= a
            elif a < b:
                hit &= noisy_counts[:, i] <= a
        for i, (a, b) in enumerate(zip(sums_1, sums_2, strict=True)):
            if a > b:
                hit &= noisy_sums[:, i] >= a
            elif a < b:
                hit &= noisy_sums[:, i] <= a
        hits.append(int(hit.sum()))
    return worst_ratio_lower_bound(tuple(hits), draws, FALSE_ALARM)


def test_the_pairs_straddle_the_boundary_as_the_audit_says():
    counts, sums = answer(D2_PURE)
    assert counts == [1, 4]  # 0.2 is nearest to 0; 1.7, 30, 64 and 99 to 2
    # rounded onto the grid of the half-range, 2⁻¹⁴ (exact_sums.py)
    expected = [0.2 - 50, (1.7 - 50) + (30 - 50) + (64 - 50) + (99 - 50)]
    assert sums == pytest.approx(expected, abs=2.0**-15)
    assert answer(D1_PURE)[0] == [2, 4]
    counts_1, sums_1 = answer(D1_BLOWFISH)
    counts_2, sums_2 = answer(D2_BLOWFISH)
    assert [a - b for a, b in zip(counts_1, counts_2, strict=True)] == [1, -1]
    assert [a - b for a, b in zip(sums_1, sums_2, strict=True)] == [-49.5, 48.5]
    assert km.KIND.sensitivity(QUERY, context(PURE)) == 50.0
    assert km.KIND.sensitivity(QUERY, context(DISTANCE)) == 100.0
    assert [m.sensitivity for m in planned_parts(DISTANCE)] == [2, 100.0]
    assert [m.epsilon_spent for m in planned_parts(DISTANCE)] == [EPSILON / 2] * 2


def test_one_iteration_keeps_its_epsilon_under_epsilon_dp():
    assert audit(planned_parts(PURE), D1_PURE, D2_PURE, DRAWS) <= math.exp(EPSILON)


def test_one_iteration_keeps_its_epsilon_under_the_distance_threshold_policy():
    assert audit(planned_parts(DISTANCE), D1_BLOWFISH, D2_BLOWFISH, DRAWS) <= math.exp(EPSILON)


def test_the_audit_catches_half_the_noise_under_epsilon_dp():
    halved = parts_with(PURE, 1, 50.0 / 2)
    # the counts' sensitivity is whole: half its noise is the geometric at twice the ε
    halved = (integer_mechanism(1, EPSILON, 0.0, context(PURE)), halved[1])
    assert audit(halved, D1_PURE, D2_PURE, CONTROL_DRAWS) > math.exp(EPSILON)


def test_the_audit_catches_half_the_noise_under_the_distance_threshold_policy():
    halved = parts_with(DISTANCE, 1, 50.0)
    assert audit(halved, D1_BLOWFISH, D2_BLOWFISH, CONTROL_DRAWS) > math.exp(EPSILON)


def test_the_audit_catches_a_sum_calibrated_to_theta_alone():
    # the article's analysis: q_hist 2, q_sum θ, as if no record ever changed cluster
    theta_only = parts_with(DISTANCE, 2, THETA)
    assert audit(theta_only, D1_BLOWFISH, D2_BLOWFISH, CONTROL_DRAWS) > math.exp(EPSILON)
