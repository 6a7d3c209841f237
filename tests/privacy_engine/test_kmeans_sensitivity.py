"""Brute force over small grids: every neighbouring pair of tables, under each definition, moves
one k-means iteration's exact answers (the engine's own ClusterSums: counts per cluster and
shifted sums per cluster) by no more than the sensitivities the kind calibrates its noise to.

Neighbours are enumerated, not argued: add/remove one record for ε-DP and (ε, δ)-DP (L1 and L2),
and for Blowfish every replacement x → y along an edge of the policy's graph (full domain,
attribute c = 1, distance threshold θ over the columns, ranges of one column), including records
whose missing value leaves them out, values outside the bounds, and pairs that straddle a
cluster boundary near a corner of the box, where the cross-cluster change is largest. The
public centroids are varied too (each iteration's are an earlier noisy output: arbitrary).

The worst observed changes are also checked against what a θ-only analysis (the article's
S(q_sum, G^{L1,θ}) = θ, or max range under G^{attr,1}) would allow: they exceed it, so such a
sensitivity would be wrong, and they come within one grid step of the kind's bound, so it is not
loose.
"""

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pytest

from privacy_engine import schema_from_dict, sensitivity
from privacy_engine.aggregates import finish, partial
from privacy_engine.columnar import TypedTable
from privacy_engine.definitions import definition_from_dict
from privacy_engine.kinds import kmeans as km

MISSING = None


@dataclass(frozen=True, eq=False)
class Domain:
    name: str
    spacing: float  # the values' grid: how close a pair can come to a bound
    schema: dict
    names: tuple[str, ...]
    values: tuple[tuple, ...]  # every record value, a tuple with None for a missing value
    centroid_sets: tuple[tuple[tuple[float, ...], ...], ...]
    theta: float  # a small θ: edges join grid neighbours only
    width: float  # a range partition of the first column


GRID = Domain(
    name="grid",
    spacing=1.0,
    schema={
        "columns": {
            "a": {"kind": "numeric", "lower": 0, "upper": 4},
            "b": {"kind": "numeric", "lower": 0, "upper": 4, "fill": 2},
        }
    },
    names=("a", "b"),
    values=tuple(itertools.product((MISSING, 0, 1, 2, 3, 4, 6), (0, 1, 2, 3, 4, MISSING))),
    centroid_sets=(
        ((0.0, 0.0), (0.9, 0.9)),  # a boundary through a corner of the box
        ((0.0, 4.0), (4.0, 0.0)),  # the diagonal
        ((2.0, 2.0), (2.5, 2.0), (0.0, 4.0)),
        ((2.0, 1.3333333333333333), (1.0, 2.6666666666666665)),  # the Halton start, k = 2
    ),
    theta=1.5,
    width=2.0,
)
# Bounds off zero and not whole: the midpoint is 0.375, the half-range 1.875.
LINE = Domain(
    name="line",
    spacing=0.375,
    schema={"columns": {"v": {"kind": "numeric", "lower": -1.5, "upper": 2.25}}},
    names=("v",),
    values=tuple((v,) for v in (*np.arange(-1.5, 2.26, 0.375).tolist(), -3.0, 5.0, MISSING)),
    centroid_sets=(((-1.5,), (-1.0,)), ((2.25,), (1.5,)), ((0.0,), (0.4,), (2.0,))),
    theta=0.5,
    width=1.0,
)
# Values that are not binary fractions: sums are rounded onto their grid.
TENTHS = Domain(
    name="tenths",
    spacing=0.1 + 1e-9,
    schema={"columns": {"t": {"kind": "numeric", "lower": 0.1, "upper": 0.7}}},
    names=("t",),
    values=tuple((v,) for v in (0.1, 0.2, 0.1 + 0.2, 0.4, 0.5, 0.6, 0.7, 0.0, 1.0)),
    centroid_sets=(((0.1,), (0.15,)), ((0.35,), (0.45,))),
    theta=0.15,
    width=0.3,
)
BASES = ((), ((1, 3),), ((0, 4), (4, 0), (2, 2)))  # the other records (first columns used)


def other_records(domain: Domain) -> list[list[tuple]]:
    return [[record[: len(domain.names)] for record in base] for base in BASES]


def answer(domain: Domain, request, records: list[tuple]):
    table = TypedTable(
        row_count=len(records),
        numbers={
            name: np.array(
                [np.nan if r[j] is MISSING else float(r[j]) for r in records], dtype=float
            )
            for j, name in enumerate(domain.names)
        },
        labels={},
    )
    counts, sums = finish(request, partial(request, table))
    return np.array(counts, dtype=float), np.array([s for row in sums for s in row])


def present(value: tuple) -> bool:
    return all(v is not MISSING for v in value)


def l1(x: tuple, y: tuple) -> float:
    return sum(abs(a - b) for a, b in zip(x, y, strict=True))


def is_edge(x: tuple, y: tuple, policy: dict, lower: float) -> bool:
    """Whether the policy's graph joins the record values x ≠ y."""
    graph = policy["graph"]
    if graph == "full_domain":
        return True
    if graph == "attribute":
        return sum(a != b for a, b in zip(x, y, strict=True)) <= policy["c"]
    if graph == "distance_threshold":
        # Missing values have no distance: no edge to or from them.
        return present(x) and present(y) and l1(x, y) < policy["theta"]
    assert graph == "partition"
    if x[0] is MISSING or y[0] is MISSING:
        return False
    width = policy["width"]
    return math.floor((x[0] - lower) / width) == math.floor((y[0] - lower) / width)


def edges(domain: Domain, policy: dict):
    """Every ordered pair (x, y), x ≠ y, joined by an edge of the policy's graph."""
    lower = domain.schema["columns"][domain.names[0]]["lower"]
    for x, y in itertools.permutations(domain.values, 2):
        if is_edge(x, y, policy, lower):
            yield x, y


def definitions(domain: Domain) -> list[dict]:
    blowfish = [
        {"graph": "full_domain"},
        {"graph": "attribute", "c": 1},
        {"graph": "distance_threshold", "columns": list(domain.names), "theta": domain.theta},
        {"graph": "distance_threshold", "columns": list(domain.names), "theta": 100.0},
        {"graph": "partition", "column": domain.names[0], "width": domain.width},
    ]
    return [
        {"kind": "pure_dp", "epsilon": 1.0},
        {"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-9},
        *({"kind": "blowfish", "epsilon": 1.0, "policy": p} for p in blowfish),
    ]


def worst_changes(domain: Domain, definition: dict) -> dict[str, float]:
    """The largest change of the counts (L1, L2) and of the sums (L1, L2) over every
    neighbouring pair, every base table and every set of public centroids."""
    schema = schema_from_dict(domain.schema)
    worst = dict.fromkeys(("counts_l1", "counts_l2", "sums_l1", "sums_l2", "cross_l1"), 0.0)
    for centroids in domain.centroid_sets:
        request = km.cluster_sums(domain.names, schema, centroids)
        for base in other_records(domain):
            with_value = {x: answer(domain, request, [*base, x]) for x in domain.values}
            if definition["kind"] == "blowfish":
                pairs = [
                    (with_value[x], with_value[y]) for x, y in edges(domain, definition["policy"])
                ]
            else:
                without = answer(domain, request, base)
                pairs = [(with_value[x], without) for x in domain.values]
            for (counts_1, sums_1), (counts_2, sums_2) in pairs:
                dc, ds = counts_1 - counts_2, sums_1 - sums_2
                worst["counts_l1"] = max(worst["counts_l1"], float(np.abs(dc).sum()))
                worst["counts_l2"] = max(worst["counts_l2"], float(np.sqrt((dc * dc).sum())))
                worst["sums_l1"] = max(worst["sums_l1"], float(np.abs(ds).sum()))
                worst["sums_l2"] = max(worst["sums_l2"], float(np.sqrt((ds * ds).sum())))
                if np.count_nonzero(dc) == 2:  # a record that changed cluster
                    worst["cross_l1"] = max(worst["cross_l1"], float(np.abs(ds).sum()))
    return worst


CASES = [(domain, d) for domain in (GRID, LINE, TENTHS) for d in definitions(domain)]


def case_id(case) -> str:
    domain, definition = case
    name = domain.name
    policy = definition.get("policy", {})
    detail = "-".join(str(v) for k, v in policy.items() if k not in ("columns", "column"))
    return "-".join(filter(None, [name, definition["kind"], detail]))


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_every_neighbouring_pair_is_covered_by_the_kinds_sensitivity(case):
    domain, definition = case
    schema = schema_from_dict(domain.schema)
    typed = definition_from_dict(definition)
    request = km.cluster_sums(domain.names, schema, domain.centroid_sets[0])
    norm = "l2" if definition["kind"] == "approx_dp" else "l1"
    counts_bound = km.count_part_sensitivity(typed)
    sums_bound = km.sum_part_sensitivity(request, typed, norm=norm)
    query = {"kind": "kmeans", "columns": list(domain.names), "k": 2, "iterations": 1}
    assert sensitivity(query=query, schema=schema, definition=definition) == sums_bound

    worst = worst_changes(domain, definition)

    assert worst[f"counts_{norm}"] <= counts_bound
    assert worst[f"sums_{norm}"] <= sums_bound
    # Not loose: some pair comes within one grid value of the bound (the grids' spacing).
    assert worst[f"sums_{norm}"] >= sums_bound - 2 * domain.spacing
    assert worst[f"counts_{norm}"] == counts_bound


@pytest.mark.parametrize(
    ("policy", "article", "reached"),
    [
        # (4, 0) → (4, 4) changes one attribute and crosses the diagonal's boundary: both
        # records are corners, 4 + 4 = 8, the kind's bound 2·(2 + 2) itself.
        ({"graph": "attribute", "c": 1}, 4.0, 8.0),
        # (0, 0) → (1, 0) crosses the boundary through the corner (0, 0): 4 + 3 = 7.
        ({"graph": "distance_threshold", "columns": ["a", "b"], "theta": 1.5}, 1.5, 7.0),
    ],
    ids=["attribute", "distance"],
)
def test_a_record_changing_cluster_moves_the_sums_far_beyond_the_articles_value(
    policy, article, reached
):
    worst = worst_changes(GRID, {"kind": "blowfish", "epsilon": 1.0, "policy": policy})

    # The article's analysis calibrates q_sum to θ (distance) or the largest range (attribute);
    # a record crossing a cluster boundary moves two clusters' sums by ‖x − m‖₁ + ‖y − m‖₁.
    assert worst["cross_l1"] == worst["sums_l1"] == reached > article
    assert worst["counts_l1"] == 2.0


def test_add_remove_is_covered_by_half_the_blowfish_bound_and_reaches_it():
    worst = worst_changes(GRID, {"kind": "pure_dp", "epsilon": 1.0})

    # A record at a corner adds (±2, ±2) to one cluster: L1 4, L2 √8, one count.
    assert worst["sums_l1"] == 4.0
    assert worst["sums_l2"] == pytest.approx(math.sqrt(8))
    assert worst["counts_l1"] == 1.0
    assert worst["cross_l1"] == 0.0
