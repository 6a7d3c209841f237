"""The ``kmeans`` kind (issue 10, point 1): specs checked field by field, a start independent of
the data, the sensitivities of every definition, a release asked round by round through the
engine, empty clusters and clamping, and convergence near the true centroids at a large ε."""

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from privacy_engine import (
    EngineValidationError,
    plan_release,
    preview,
    run_queries,
    schema_from_dict,
    sensitivity,
)
from privacy_engine.aggregates import ClusterSums, finish, partial
from privacy_engine.columnar import typed_from_frame
from privacy_engine.definitions import definition_from_dict
from privacy_engine.kinds import PlanContext
from privacy_engine.kinds import kmeans as km
from privacy_engine.kinds.kmeans import KIND, KMeans
from privacy_engine.release import release_statistic

RGB = {
    "columns": {c: {"kind": "numeric", "lower": 0, "upper": 255} for c in ("r", "g", "b")},
    "declared_size": 2500,
}
QUERY = {"kind": "kmeans", "columns": ["r", "g", "b"], "k": 4, "iterations": 10}
PURE = {"kind": "pure_dp", "epsilon": 1.0}
APPROX = {"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-8}
ATTRIBUTE = {"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "attribute", "c": 1}}


def distance(theta: float) -> dict:
    return {
        "kind": "blowfish",
        "epsilon": 1.0,
        "policy": {"graph": "distance_threshold", "columns": ["r", "g", "b"], "theta": theta},
    }


class NoNoise:
    def sample(self, measurement, value):
        return value


class Recording:
    """No noise, and every measurement a release draws from, in order."""

    def __init__(self):
        self.measurements = []

    def sample(self, measurement, value):
        self.measurements.append(measurement)
        return value


def blobs(centres, per_blob: int, spread: float, seed: int) -> np.ndarray:
    generator = np.random.default_rng(seed)  # test data, not noise
    return np.concatenate([generator.normal(c, spread, (per_blob, len(c))) for c in centres])


def frame_of(points: np.ndarray, names=("x", "y")) -> pd.DataFrame:
    return pd.DataFrame(
        {name: [repr(float(v)) for v in points[:, i]] for i, name in enumerate(names)}
    )


XY = {
    "columns": {
        "x": {"kind": "numeric", "lower": 0, "upper": 100},
        "y": {"kind": "numeric", "lower": 0, "upper": 100},
    },
    "declared_size": 3000,
}


def errors_of(query: dict, schema=RGB) -> dict:
    with pytest.raises(EngineValidationError) as error:
        plan_release(schema=schema, definition=PURE, queries=[query])
    return error.value.errors


# --- the spec ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"columns": None}, "columns"),
        ({"columns": "r"}, "columns"),
        ({"columns": []}, "columns"),
        ({"columns": ["r", "r"]}, "columns"),
        ({"columns": [f"c{i}" for i in range(11)]}, "columns"),
        ({"k": None}, "k"),
        ({"k": 1}, "k"),
        ({"k": 21}, "k"),
        ({"k": True}, "k"),
        ({"k": 2.5}, "k"),
        ({"k": 10**9}, "k"),
        ({"iterations": 0}, "iterations"),
        ({"iterations": 21}, "iterations"),
        ({"iterations": 10**9}, "iterations"),
        ({"iterations": "10"}, "iterations"),
    ],
)
def test_a_bad_spec_is_refused_naming_its_field(change, field):
    spec = {key: value for key, value in {**QUERY, **change}.items() if value is not None}

    errors = errors_of(spec)

    assert list(errors) == [f"queries.0.{field}"]


def test_columns_must_be_declared_numeric_and_are_named():
    schema = {
        "columns": {
            **RGB["columns"],
            "sex": {"kind": "categorical", "categories": ["F", "M"]},
        }
    }

    errors = errors_of({**QUERY, "columns": ["r", "sex"]}, schema)

    assert list(errors) == ["queries.0.columns"]
    assert "'sex' is not a numeric column" in errors["queries.0.columns"][0]
    assert "queries.0.columns" in errors_of({**QUERY, "columns": ["r", "nope"]})


def test_the_limits_bound_the_work_a_client_can_ask_for():
    assert (km.MAX_K, km.MAX_ITERATIONS, km.MAX_COLUMNS) == (20, 20, 10)
    plan = plan_release(schema=RGB, definition=PURE, queries=[{**QUERY, "k": 20, "iterations": 20}])
    (statistic,) = plan.statistics
    assert len(statistic.mechanisms) == 40
    assert KIND.noise_draws(statistic.query, plan.schema) == 20 * 20 * 4
    assert KIND.published_cells(statistic.query, plan.schema) == 20 * 4


def test_omitted_iterations_are_automatic_and_the_spec_reads_back():
    schema = schema_from_dict(RGB)

    # omitted or null: automatic, and left out when written back
    for spec in (
        {"columns": ["r", "g"], "k": 3},
        {"columns": ["r", "g"], "k": 3, "iterations": None},
    ):
        query = KIND.parse(spec, 1.0)
        assert query == KMeans(columns=("r", "g"), k=3, iterations=None)
        assert KIND.to_dict(query) == {"columns": ["r", "g"], "k": 3}
        assert KIND.parse(KIND.to_dict(query), 1.0) == query
        KIND.validate(query, schema)
    assert KMeans(columns=("r",), k=3).iterations is None

    # given: kept as given, and written back
    query = KIND.parse({"columns": ["r", "g"], "k": 3, "iterations": 10}, 1.0)
    assert query == KMeans(columns=("r", "g"), k=3, iterations=10)
    assert KIND.to_dict(query) == {"columns": ["r", "g"], "k": 3, "iterations": 10}
    assert KIND.parse(KIND.to_dict(query), 1.0) == query
    with pytest.raises(EngineValidationError) as error:
        KIND.validate(KMeans(columns=("r",), k=3, iterations=0), schema)
    assert list(error.value.errors) == ["iterations"]


# --- the start --------------------------------------------------------------------------------


def test_initial_centroids_are_the_halton_points_in_the_bounds():
    schema = schema_from_dict(RGB)
    columns = [schema.column(c) for c in ("r", "g", "b")]

    start = km.initial_centroids(columns, 4)

    assert start == (
        (127.5, 85.0, 51.0),
        (63.75, 170.0, 102.0),
        (191.25, 255 / 9, 153.0),
        (31.875, 255 * 4 / 9, 204.0),
    )


class Spy:
    """An ``ask`` that records the requests and answers them on a table."""

    def __init__(self, table):
        self.table, self.requests = table, []

    def __call__(self, requests):
        self.requests.extend(requests)
        return [finish(r, partial(r, self.table)) for r in requests]


def test_the_first_round_depends_on_the_declared_shape_only():
    # given two very different tables of the same declared shape
    plan = plan_release(schema=XY, definition=PURE, queries=[{**QUERY, "columns": ["x", "y"]}])
    (statistic,) = plan.statistics
    first = [
        frame_of(blobs([(10, 10), (90, 90)], 200, 3, seed=1)),
        frame_of(blobs([(50, 20)], 50, 10, seed=2)),
    ]

    # when their releases ask for rounds
    asked = []
    for frame in first:
        table = typed_from_frame(frame, numbers={"x", "y"})
        (request,) = KIND.aggregates(statistic.query, plan.schema)
        spy = Spy(table)
        release_statistic(statistic, finish(request, partial(request, table)), plan.schema, ask=spy)
        asked.append([request, *spy.requests])

    # then both start from the same public centroids, and only later rounds differ
    assert asked[0][0] == asked[1][0]
    assert asked[0][0].centroids == km.initial_centroids(
        [plan.schema.column("x"), plan.schema.column("y")], 4
    )
    assert len(asked[0]) == len(asked[1]) == 10
    assert asked[0][1].centroids != asked[1][1].centroids


# --- sensitivities ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("definition", "counts", "sums"),
    [
        (PURE, 1, 3 * 127.5),
        (APPROX, 1, math.sqrt(3) * 127.5),
        (ATTRIBUTE, 2, 2 * 3 * 127.5),
        (distance(32), 2, 765.0),
        (distance(128), 2, 765.0),
        (distance(256), 2, 765.0),
        ({"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "full_domain"}}, 2, 765.0),
        (
            {"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "attribute", "c": 3}},
            2,
            765.0,
        ),
        (
            {
                "kind": "blowfish",
                "epsilon": 1.0,
                "policy": {"graph": "partition", "column": "r", "width": 16},
            },
            2,
            765.0,
        ),
    ],
)
def test_sensitivities_per_definition(definition, counts, sums):
    schema = schema_from_dict(RGB)
    plan = plan_release(schema=RGB, definition=definition, queries=[QUERY])
    (statistic,) = plan.statistics
    count_part, sum_part = statistic.mechanisms[:2]

    assert count_part.sensitivity == counts
    assert sum_part.sensitivity == pytest.approx(sums, rel=1e-15)
    assert sum_part.sensitivity >= sums  # never rounded down
    assert statistic.sensitivity == sum_part.sensitivity
    assert sensitivity(query=QUERY, schema=schema, definition=definition) == sum_part.sensitivity


def test_the_blowfish_sum_sensitivity_is_not_the_articles_theta():
    # A record moving across a cluster boundary changes two clusters' sums: θ does not cover it.
    for theta in (32, 64, 128, 256):
        assert sensitivity(query=QUERY, schema=RGB, definition=distance(theta)) == 765.0 > theta
    assert sensitivity(query=QUERY, schema=RGB, definition=ATTRIBUTE) == 765.0 > 255


def test_a_person_of_several_rows_multiplies_both_parts():
    keyed = {**RGB, "columns": {**RGB["columns"], "id": {"kind": "identifier"}}}
    keyed |= {"person_key": "id", "max_rows_per_person": 3}
    for definition, sums in ((PURE, 3 * 382.5), (APPROX, 3 * math.sqrt(3) * 127.5)):
        (statistic,) = plan_release(schema=keyed, definition=definition, queries=[QUERY]).statistics
        assert statistic.mechanisms[0].sensitivity == 3
        assert statistic.mechanisms[1].sensitivity == pytest.approx(sums, rel=1e-15)


def test_the_midpoint_shift_halves_the_sum_sensitivity_of_off_centre_bounds():
    # bounds [1000, 1010]: without the shift a record moves a sum by 1010, with it by 5
    schema = {"columns": {"t": {"kind": "numeric", "lower": 1000, "upper": 1010}}}
    query = {"kind": "kmeans", "columns": ["t"], "k": 2, "iterations": 1}

    assert sensitivity(query=query, schema=schema, definition=PURE) == 5.0
    assert sensitivity(query=query, schema=schema, definition=ATTRIBUTE) == 10.0


# --- budget -----------------------------------------------------------------------------------


@pytest.mark.parametrize("iterations", [1, 3, 7, 10, 20])
@pytest.mark.parametrize("epsilon", [0.1, 0.3, 1.0, 2.9])
def test_the_budget_is_split_evenly_over_iterations_and_never_exceeded(iterations, epsilon):
    for definition in (
        {"kind": "pure_dp", "epsilon": epsilon},
        {"kind": "approx_dp", "epsilon": epsilon, "delta": 3e-9},
        {**ATTRIBUTE, "epsilon": epsilon},
    ):
        plan = plan_release(
            schema=RGB, definition=definition, queries=[{**QUERY, "iterations": iterations}]
        )
        (statistic,) = plan.statistics
        shares = {m.epsilon_spent for m in statistic.mechanisms}
        assert len(statistic.mechanisms) == 2 * iterations
        assert max(shares) <= epsilon / (2 * iterations) * (1 + 1e-12)
        assert plan.epsilon_spent <= Decimal(repr(epsilon))
        with localcontext() as exact:
            exact.prec = 400
            assert sum(Decimal(m.epsilon_spent) for m in statistic.mechanisms) <= Decimal(epsilon)
            assert sum(Decimal(m.delta_spent) for m in statistic.mechanisms) <= Decimal(
                definition.get("delta", 0.0)
            )


def test_counts_and_sums_each_get_half_of_every_iteration():
    (statistic,) = plan_release(schema=RGB, definition=PURE, queries=[QUERY]).statistics
    count_part, sum_part = statistic.mechanisms[:2]

    assert count_part.scale == pytest.approx(1 / 0.05)
    assert sum_part.scale == pytest.approx(382.5 / 0.05)
    assert statistic.mechanism == "laplace+geometric"


# --- preview ----------------------------------------------------------------------------------


def test_the_preview_needs_no_data_and_says_what_its_error_is():
    (entry,) = preview(schema=RGB, definition=PURE, queries=[QUERY])
    count_part_error = 2 * math.exp(-0.05) / (1 - math.exp(-0.1))  # geometric E|K| at b = 20

    assert entry["columns"] == ["r", "g", "b"]
    assert entry["expected_abs_error"] == pytest.approx(
        (7650 + 127.5 * count_part_error) / 625, rel=1e-9
    )
    assert "equal clusters" in entry["note"]
    assert entry["ci95_halfwidth"] > entry["expected_abs_error"]

    (blowfish,) = preview(schema=RGB, definition=distance(128), queries=[QUERY])
    assert blowfish["expected_abs_error"] > entry["expected_abs_error"]
    assert blowfish["pure_dp"]["sensitivity"] == 382.5

    undeclared = {"columns": RGB["columns"]}
    (entry,) = preview(schema=undeclared, definition=PURE, queries=[QUERY])
    assert entry["expected_abs_error"] is None
    assert "declare" in entry["note"]


# --- the release ------------------------------------------------------------------------------


TRUE_CENTRES = [(20.0, 20.0), (80.0, 30.0), (50.0, 80.0)]


def nearest_distances(published, centres) -> list[float]:
    points = [(row["x"], row["y"]) for row in published]
    return [min(math.dist(c, p) for p in points) for c in centres]


def test_at_a_large_epsilon_the_release_finds_the_true_centroids():
    frame = frame_of(blobs(TRUE_CENTRES, 1000, 5, seed=3))
    query = {"kind": "kmeans", "columns": ["x", "y"], "k": 3, "iterations": 10}

    for definition in (
        {"kind": "pure_dp", "epsilon": 20.0},
        {"kind": "approx_dp", "epsilon": 20.0, "delta": 1e-9},
        {**ATTRIBUTE, "epsilon": 20.0},
    ):
        result = run_queries(frame, schema=XY, definition=definition, queries=[query])
        (statistic,) = result.statistics

        assert max(nearest_distances(statistic.value, TRUE_CENTRES)) < 1.5
        assert sorted(row["size"] for row in statistic.value) == pytest.approx([1000] * 3, abs=40)
        assert result.epsilon_spent == Decimal("20")


def test_without_noise_it_is_lloyds_algorithm_from_the_public_start():
    points = blobs(TRUE_CENTRES, 300, 8, seed=4)
    query = {"kind": "kmeans", "columns": ["x", "y"], "k": 3, "iterations": 6}
    result = run_queries(
        frame_of(points), schema=XY, definition=PURE, queries=[query], noise=NoNoise()
    )

    # Lloyd's iterations in numpy from the same start
    centres = np.asarray(km.initial_centroids(list(schema_from_dict(XY).columns.values()), 3))
    for _ in range(6):
        labels = ((points[:, None, :] - centres[None]) ** 2).sum(axis=2).argmin(axis=1)
        clipped = np.clip(points, 0, 100)
        centres = np.array([clipped[labels == c].mean(axis=0) for c in range(3)])
    published = np.array([[row["x"], row["y"]] for row in result.statistics[0].value])

    assert published == pytest.approx(centres, abs=1e-3)
    assert [row["size"] for row in result.statistics[0].value] == [
        int((labels == c).sum()) for c in range(3)
    ]


def test_a_release_draws_from_exactly_its_planned_mechanisms_round_by_round():
    noise = Recording()
    frame = frame_of(blobs(TRUE_CENTRES, 50, 5, seed=5))
    query = {"kind": "kmeans", "columns": ["x", "y"], "k": 3, "iterations": 4}
    plan = plan_release(schema=XY, definition=PURE, queries=[query], noise=noise)

    result = run_queries(frame, schema=XY, definition=PURE, queries=[query], noise=noise)

    (statistic,) = plan.statistics
    assert len(noise.measurements) == 8
    expected = [m.scale for m in statistic.mechanisms]
    # Each draw's measurement has the planned scale, the count's then the sums', per iteration.
    drawn = [m.map(1) for m in noise.measurements]
    assert drawn == [m.measurement.map(1) for m in statistic.mechanisms]
    parts = result.statistics[0].parts
    assert [p["noise_scale"] for p in parts] == expected
    assert [(p["iteration"], p["role"]) for p in parts[:3]] == [
        (1, "count"),
        (1, "sum"),
        (2, "count"),
    ]


def test_the_published_value_has_one_row_per_centroid_and_honest_metadata():
    frame = frame_of(blobs(TRUE_CENTRES, 400, 5, seed=6))
    query = {"kind": "kmeans", "columns": ["x", "y"], "k": 3, "iterations": 5}

    result = run_queries(
        frame,
        schema=XY,
        definition={
            "kind": "blowfish",
            "epsilon": 1.0,
            "policy": {"graph": "distance_threshold", "columns": ["x", "y"], "theta": 4},
        },
        queries=[query],
    )

    (statistic,) = result.statistics
    published = statistic.to_dict()
    assert [list(row) for row in published["value"]] == [["cluster", "size", "x", "y"]] * 3
    assert [row["cluster"] for row in published["value"]] == [1, 2, 3]
    for row, interval in zip(published["value"], published["ci95"], strict=True):
        assert interval["size"][0] <= row["size"] <= interval["size"][1]
        for name in ("x", "y"):
            assert 0 <= interval[name][0] <= row[name] <= interval[name][1] <= 100
    assert published["columns"] == ["x", "y"]
    assert published["column"] is None
    assert published["sensitivity"] == 200.0  # 2 · (50 + 50): a record may change cluster
    assert len(published["parts"]) == 10
    assert "a record moving from one cluster to another" in published["rule"]
    assert "Halton" in published["rule"]
    assert math.isclose(published["epsilon"], 1.0)


def test_an_empty_cluster_keeps_its_centroid_and_coordinates_stay_in_the_bounds():
    request = km.cluster_sums(("x", "y"), schema_from_dict(XY), ((10, 10), (90, 90)))
    previous = request.centroids

    centroids, updated = km.updated_centroids(
        previous,
        noisy_counts=[0, 2],
        # cluster 0: no records; cluster 1: a sum that would put it far outside the bounds
        noisy_sums=[500.0, -500.0, 1000.0, -1000.0],
        request=request,
        threshold=1.0,
    )

    assert centroids == ((10, 10), (100, 0))
    assert updated == [False, True]


def test_a_cluster_below_the_threshold_is_published_with_the_whole_range():
    # all records at one point, nearest to the first start: the others get no record at all
    frame = frame_of(np.full((200, 2), 3.0))
    query = {"kind": "kmeans", "columns": ["x", "y"], "k": 3, "iterations": 3}

    result = run_queries(frame, schema=XY, definition=PURE, queries=[query], noise=NoNoise())

    rows, intervals = result.statistics[0].value, result.statistics[0].ci95
    start = km.initial_centroids(list(schema_from_dict(XY).columns.values()), 3)
    assert [row["size"] for row in rows] == [200, 0, 0]
    assert (rows[0]["x"], rows[0]["y"]) == (3.0, 3.0)
    assert [(row["x"], row["y"]) for row in rows[1:]] == list(start[1:])
    assert intervals[1]["x"] == intervals[2]["y"] == [0, 100]
    assert intervals[0]["x"][0] <= 3.0 <= intervals[0]["x"][1] < 100


def test_missing_values_are_filled_or_the_record_is_left_out():
    schema = {
        "columns": {
            "x": {"kind": "numeric", "lower": 0, "upper": 10},
            "y": {"kind": "numeric", "lower": 0, "upper": 10, "fill": 5},
        }
    }
    frame = pd.DataFrame({"x": ["1", "", "2", "abc", "40"], "y": ["1", "1", "", "1", "1"]})
    table = typed_from_frame(frame, numbers={"x", "y"})
    request = km.cluster_sums(("x", "y"), schema_from_dict(schema), ((0, 0), (10, 10)))

    counts, sums = finish(request, partial(request, table))

    # kept: (1, 1), (2, 5 filled), (10 clamped, 1); x missing twice: left out
    assert counts == [2, 1]
    assert sums == [[(1 - 5) + (2 - 5), (1 - 5) + (5 - 5)], [10 - 5, 1 - 5]]


def test_ties_go_to_the_lowest_index_and_shifted_sums_are_exact():
    request = ClusterSums(
        columns=(km.CleanedNumbers(column="v", lower=-1.5, upper=2.25, fill=None),),
        centroids=((0.0,), (1.0,)),
    )
    frame = pd.DataFrame({"v": ["0.5", "0.5", "2.25", "0.1", "-7"]})
    table = typed_from_frame(frame, numbers={"v"})

    counts, sums = finish(request, partial(request, table))

    # 0.5 is as near to 0 as to 1: the lowest index; -7 is clamped to -1.5
    assert counts == [4, 1]
    middle, grid = Fraction(3, 8), Fraction(request.grid(0))
    exact = 2 * Fraction(0.5) + Fraction(0.1) + Fraction(-1.5) - 4 * middle
    assert sums == [[float(math.floor(exact / grid + Fraction(1, 2)) * grid)], [2.25 - 0.375]]
    assert request.step_bound(0) == Fraction(15, 8)


def test_a_kmeans_statistic_cannot_be_released_without_its_table():
    plan = plan_release(schema=XY, definition=PURE, queries=[{**QUERY, "columns": ["x", "y"]}])
    (statistic,) = plan.statistics

    with pytest.raises(TypeError, match="answered in rounds"):
        release_statistic(statistic, ([0] * 4, [[0.0, 0.0]] * 4), plan.schema)


def test_kmeans_beside_other_statistics_in_one_release():
    frame = frame_of(blobs(TRUE_CENTRES, 100, 5, seed=7))
    queries = [
        {"kind": "count"},
        {"kind": "kmeans", "columns": ["x", "y"], "k": 3, "iterations": 2, "weight": 2},
        {"kind": "mean", "column": "x"},
    ]

    result = run_queries(frame, schema=XY, definition=PURE, queries=queries, noise=NoNoise())

    count, kmeans, mean = result.statistics
    assert count.value == 300
    assert kmeans.epsilon == pytest.approx(0.5)
    assert mean.value == pytest.approx(np.clip(blobs(TRUE_CENTRES, 100, 5, 7)[:, 0], 0, 100).mean())
    assert set(result.timings) == {"read_s", "compute_s", "noise_s"}


def test_the_kind_reads_its_sensitivity_from_the_plan_context():
    context = PlanContext(
        schema=schema_from_dict(RGB), definition=definition_from_dict(PURE), noise=None
    )
    query = KIND.parse(QUERY, 1.0)

    assert KIND.sensitivity(query, context) == 382.5
    assert KIND.iterative is True


@pytest.mark.parametrize("name", ["cluster", "size"])
def test_a_column_named_like_a_rows_own_key_is_refused(name):
    schema = {"columns": {name: {"kind": "numeric", "lower": 0, "upper": 1}}}
    query = {"kind": "kmeans", "columns": [name], "k": 2}

    with pytest.raises(EngineValidationError) as refused:
        plan_release(schema=schema, definition={"kind": "pure_dp", "epsilon": 1}, queries=[query])

    assert refused.value.errors == {
        "queries.0.columns": [
            f"'{name}' names each centroid's {name} in the published rows: rename that column "
            "to cluster it"
        ]
    }
