"""k-means' automatic iterations (issue 10, point 6): a query without ``iterations`` runs as many
as Su et al.'s rule gives from its ε share, k, the number of columns and the *declared* size (2
to 7, diffprivlib's ``KMeans._calc_iters``), never from the table's true number of rows; the plan
resolves the count once and the release, its rule and parts and the simulated preview all use
it; given iterations stay as given."""

import math
import warnings
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from test_kmeans import Recording

from privacy_engine import plan_release, run_queries, schema_from_dict
from privacy_engine.aggregates import finish, partial
from privacy_engine.columnar import typed_from_frame
from privacy_engine.guidance import simulated_preview
from privacy_engine.kinds import kmeans as km
from privacy_engine.kinds.kmeans import KIND, KMeans
from privacy_engine.release import accuracy_curve, release_statistic

RGB = {c: {"kind": "numeric", "lower": 0, "upper": 255} for c in ("r", "g", "b")}
XY = {c: {"kind": "numeric", "lower": 0, "upper": 100} for c in ("x", "y")}
AUTOMATIC = {"kind": "kmeans", "columns": ["r", "g", "b"], "k": 4}
PURE = {"kind": "pure_dp", "epsilon": 1.0}
TRUE_CENTRES = [(20.0, 20.0), (80.0, 30.0), (50.0, 80.0)]


def calc_iters(epsilon: float, k: int, d: int, n: int) -> int:
    """diffprivlib's own choice (diffprivlib/models/k_means.py, ``KMeans._calc_iters``)."""
    from diffprivlib.models import KMeans as DiffprivlibKMeans

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DiffprivlibKMeans(n_clusters=k, epsilon=epsilon)._calc_iters(d, n)


def blobs(per_blob: int, seed: int) -> np.ndarray:
    generator = np.random.default_rng(seed)  # test data, not noise
    return np.concatenate([generator.normal(c, 5, (per_blob, 2)) for c in TRUE_CENTRES])


def frame_of(points: np.ndarray, names=("x", "y")) -> pd.DataFrame:
    return pd.DataFrame(
        {name: [repr(float(v)) for v in points[:, i]] for i, name in enumerate(names)}
    )


class Spy:
    """An ``ask`` that records the later rounds' requests and answers them on a table."""

    def __init__(self, table):
        self.table, self.requests = table, []

    def __call__(self, requests):
        self.requests.extend(requests)
        return [finish(r, partial(r, self.table)) for r in requests]


# --- the rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "k", "d", "n", "iterations"),
    [
        # ε_m = √(500·k³/n²·(d + ∛(4·d·0.225²))³), T = ⌊max(min(ε/ε_m, 7), 2)⌋
        (1.0, 4, 3, 2_500, 2),  # ε_m ≈ 0.54: Figure 2's table, at every ε up to 1
        (0.5, 4, 3, 10_000, 3),  # ε_m ≈ 0.135
        (1.0, 3, 2, 3_000, 5),  # ε_m ≈ 0.176
        (1.0, 3, 2, 300, 2),
        (1.0, 4, 3, 10**6, 7),
        (15.0, 3, 3, 360, 6),  # ε_m ≈ 2.43
    ],
)
def test_the_rule_pinned_by_hand(epsilon, k, d, n, iterations):
    assert km.automatic_iterations(epsilon, k, d, n) == iterations
    assert calc_iters(epsilon, k, d, n) == iterations


def test_the_rule_is_diffprivlibs_calc_iters_everywhere():
    # given a grid of ε, k, columns and sizes, and the ε at which the rule steps (exactly j·ε_m,
    # where a different rounding would choose a different count)
    cases = [
        (epsilon, k, d, n)
        for epsilon in (0.01, 0.1, 0.3, 0.5, 0.9, 1.0, 2.0, 5.0, 10.0, 1000.0)
        for k in (2, 4, 7, 20)
        for d in (1, 2, 3, 10)
        for n in (1, 10, 360, 2_500, 10_000, 123_457, 10**6, 10**10)
    ]
    for k, d, n in ((4, 3, 2_500), (3, 2, 3_000), (20, 10, 10**6), (2, 1, 777)):
        epsilon_m = math.sqrt(500 * k**3 / n**2 * (d + math.cbrt(4 * d * 0.225**2)) ** 3)
        cases += [(j * epsilon_m, k, d, n) for j in range(1, 9)]

    # when / then
    mismatches = [case for case in cases if km.automatic_iterations(*case) != calc_iters(*case)]
    assert mismatches == []
    assert {km.automatic_iterations(*case) for case in cases} == set(range(2, 8))


def test_without_a_declared_size_the_iterations_are_the_default():
    assert km.UNDECLARED_ITERATIONS == 5
    assert km.automatic_iterations(1.0, 4, 3, None) == 5
    assert km.automatic_iterations(100.0, 4, 3, None) == 5

    plan = plan_release(schema={"columns": RGB}, definition=PURE, queries=[AUTOMATIC])
    (statistic,) = plan.statistics
    assert len(statistic.mechanisms) == 10
    assert km.planned_iterations(statistic) == 5


# --- the declared size, never the rows --------------------------------------------------------


def test_the_automatic_count_uses_the_declared_size_not_the_tables_rows():
    # given a table of 300 records declared as about 3,000, and the same table declared as 300
    frame = frame_of(blobs(100, seed=8))
    query = {"kind": "kmeans", "columns": ["x", "y"], "k": 3}
    assert len(frame) == 300
    assert km.automatic_iterations(1.0, 3, 2, 3_000) == 5
    assert km.automatic_iterations(1.0, 3, 2, 300) == 2

    for declared, iterations in ((3_000, 5), (300, 2)):
        schema = {"columns": XY, "declared_size": declared}
        noise = Recording()

        # when it is released, its rounds asked of the table one by one
        (statistic,) = plan_release(
            schema=schema, definition=PURE, queries=[query], noise=noise
        ).statistics
        typed = schema_from_dict(schema)
        table = typed_from_frame(frame, numbers={"x", "y"})
        (request,) = KIND.aggregates(statistic.query, typed)
        spy = Spy(table)
        result = release_statistic(statistic, finish(request, partial(request, table)), typed, spy)

        # then the declared size chose the count, whatever the table holds
        assert km.planned_iterations(statistic) == iterations
        assert len(spy.requests) == iterations - 1
        assert len(noise.measurements) == 2 * iterations
        assert len(result.parts) == 2 * iterations
        assert result.parts[-1]["iteration"] == iterations
        assert (
            f"{iterations} iterations (chosen automatically by Su et al.'s rule, as diffprivlib "
            f"does, from ε, k, the 2 columns and the declared size of about {declared:,} records: "
            "from 2 to 7), each with "
            f"ε/{2 * iterations} for the counts per cluster and ε/{2 * iterations} for the sums"
        ) in result.rule


def test_the_count_follows_the_statistics_own_share_of_epsilon():
    # given the release's ε = 1 shared by a count and the clusters: the clusters' share is 0.5
    schema = {"columns": RGB, "declared_size": 10_000}
    assert km.automatic_iterations(1.0, 4, 3, 10_000) == 7
    assert km.automatic_iterations(0.5, 4, 3, 10_000) == 3

    # when
    alone = plan_release(schema=schema, definition=PURE, queries=[AUTOMATIC]).statistics[0]
    shared = plan_release(
        schema=schema, definition=PURE, queries=[{"kind": "count"}, AUTOMATIC]
    ).statistics[1]

    # then
    assert shared.epsilon == pytest.approx(0.5)
    assert (km.planned_iterations(alone), km.planned_iterations(shared)) == (7, 3)


# --- one count everywhere ---------------------------------------------------------------------


def test_the_plan_release_rule_parts_and_preview_agree_on_the_count():
    # given RGB clusters of a table declared as 10,000 records, at ε = 0.5: 3 iterations
    schema = {"columns": RGB, "declared_size": 10_000}
    definition = {"kind": "pure_dp", "epsilon": 0.5}
    points = np.clip(np.random.default_rng(9).normal(128, 40, (500, 3)), 0, 255)  # test data

    # when it is planned, released and previewed
    (statistic,) = plan_release(
        schema=schema, definition=definition, queries=[AUTOMATIC]
    ).statistics
    result = run_queries(
        frame_of(points, names=("r", "g", "b")),
        schema=schema,
        definition=definition,
        queries=[AUTOMATIC],
    )
    (entry,) = simulated_preview(schema=schema, definition=definition, queries=[AUTOMATIC])

    # then all say 3
    (released,) = result.statistics
    assert len(statistic.mechanisms) == 6
    assert [(p["iteration"], p["role"]) for p in released.parts] == [
        (i, role) for i in (1, 2, 3) for role in ("count", "sum")
    ]
    assert all(math.isclose(p["epsilon"], 0.5 / 6, rel_tol=1e-12) for p in released.parts)
    assert "; 3 iterations (chosen automatically" in released.rule
    assert "each with ε/6 for the counts" in released.rule
    assert entry["objective_ratio"]["iterations"] == 3
    assert " after 3 iterations was typically " in entry["objective_ratio"]["sentence"]
    assert result.epsilon_spent <= Decimal("0.5")


def test_given_iterations_are_kept_where_the_rule_would_choose_fewer():
    # given Figure 2's shape, where the rule gives 2, and the bench's explicit 10
    schema = {"columns": RGB, "declared_size": 2_500}
    query = {**AUTOMATIC, "iterations": 10}

    # when
    (statistic,) = plan_release(schema=schema, definition=PURE, queries=[query]).statistics
    (entry,) = simulated_preview(schema=schema, definition=PURE, queries=[query])

    # then
    assert km.automatic_iterations(1.0, 4, 3, 2_500) == 2
    assert km.planned_iterations(statistic) == 10
    assert entry["objective_ratio"]["iterations"] == 10


def test_the_bounds_counted_before_planning_take_the_most_automatic_iterations():
    schema = schema_from_dict({"columns": RGB, "declared_size": 2_500})
    automatic = KMeans(columns=("r", "g", "b"), k=4)

    assert km.MAX_AUTOMATIC_ITERATIONS == 7
    assert KIND.noise_draws(automatic, schema) == 7 * 4 * 4
    assert KIND.published_cells(automatic, schema) == 4 * 4
    given = KMeans(columns=("r", "g", "b"), k=4, iterations=12)
    assert KIND.noise_draws(given, schema) == 12 * 4 * 4


@pytest.mark.parametrize("epsilon", [0.05, 0.3, 1.0, 4.0])
def test_the_budget_of_automatic_iterations_is_split_evenly_and_never_exceeded(epsilon):
    schema = {"columns": RGB, "declared_size": 50_000}
    for definition in (
        {"kind": "pure_dp", "epsilon": epsilon},
        {"kind": "approx_dp", "epsilon": epsilon, "delta": 1e-10},
        {"kind": "blowfish", "epsilon": epsilon, "policy": {"graph": "attribute"}},
    ):
        plan = plan_release(schema=schema, definition=definition, queries=[AUTOMATIC])
        (statistic,) = plan.statistics
        iterations = km.automatic_iterations(epsilon, 4, 3, 50_000)
        assert km.planned_iterations(statistic) == iterations
        shares = [m.epsilon_spent for m in statistic.mechanisms]
        assert len(shares) == 2 * iterations
        assert max(shares) <= epsilon / (2 * iterations) * (1 + 1e-12)
        assert min(shares) >= epsilon / (2 * iterations) * (1 - 1e-9)
        assert plan.epsilon_spent <= Decimal(repr(epsilon))


def test_the_accuracy_chart_plans_each_epsilon_with_its_own_count():
    # the chart's points are plans at other ε: each resolves its own iterations
    curve = accuracy_curve(
        schema={"columns": RGB, "declared_size": 10_000},
        definition=PURE,
        queries=[AUTOMATIC],
        epsilons=[0.2, 0.5, 1.0],
    )

    assert [point["epsilon"] for point in curve] == [0.2, 0.5, 1.0]
    assert all(point["errors"][0] > 0 for point in curve)
