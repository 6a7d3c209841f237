"""The k-means preview's simulated objective ratio (issue 10): on a public table of the declared
shape, the private centroids' k-means objective over that of Lloyd's algorithm without noise from
the same start. It is at least 1 on such data, nearer 1 at a larger ε and farther at a larger k,
weighs the noise against the declared n (not the points it simulates), runs the release's own
steps with the plan's mechanisms, never reads a table, and stays quick at 10⁶ records."""

import time

import numpy as np
import pytest

from privacy_engine import plan_release
from privacy_engine.guidance import simulated_preview
from privacy_engine.kinds import kmeans as km
from privacy_engine.kinds.kmeans import KIND

RGB = {c: {"kind": "numeric", "lower": 0, "upper": 255} for c in ("r", "g", "b")}
PURE = {"kind": "pure_dp", "epsilon": 1.0}


def kmeans(k: int = 4, iterations: int = 10) -> dict:
    return {"kind": "kmeans", "columns": ["r", "g", "b"], "k": k, "iterations": iterations}


def planned(n: int, *, epsilon: float = 1.0, k: int = 4, definition=None, noise=None):
    plan = plan_release(
        schema={"columns": RGB, "declared_size": n},
        definition=definition or {"kind": "pure_dp", "epsilon": epsilon},
        queries=[kmeans(k)],
        noise=noise,
    )
    (statistic,) = plan.statistics
    return statistic, plan.schema


def ratio(n: int, **arguments) -> dict:
    statistic, schema = planned(n, **arguments)
    return km.simulated_objective_ratio(statistic, schema, n)


class ZeroNoise:
    """The deliberately broken simulation: every noise scale 0."""

    def sample(self, measurement, value):
        return value


class SeededNoise:
    """Laplace noise at each measurement's own scale (b = 1/ε at distance 1), from a seeded
    generator: the same draws for the same seed (test noise, never the engine's)."""

    def __init__(self, seed: int):
        self.generator = np.random.default_rng(seed)

    def sample(self, measurement, value):
        whole = isinstance(value[0], int)
        scale = 1.0 / float(measurement.map(1 if whole else 1.0))
        noise = self.generator.laplace(0.0, scale, len(value))
        if whole:
            return [int(v) + round(float(e)) for v, e in zip(value, noise, strict=True)]
        return [float(v) + float(e) for v, e in zip(value, noise, strict=True)]


# --- what the ratio says ----------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
def test_the_private_objective_is_at_least_lloyds_on_separated_clusters(epsilon):
    # when
    facts = ratio(10_000, epsilon=epsilon)

    # then noise costs objective: the 10th percentile is already at or above 1
    assert facts["lloyd_to_best"] == pytest.approx(1.0, abs=1e-6)
    assert facts["p10"] >= 0.999
    assert facts["p10"] <= facts["median"] <= facts["p90"]


@pytest.mark.statistical
def test_the_ratio_shrinks_towards_1_as_epsilon_grows():
    # when
    small, large = ratio(10_000, epsilon=0.1), ratio(10_000, epsilon=10.0)

    # then
    assert small["median"] > 2.0
    assert large["median"] < 1.01
    assert small["p10"] > large["p90"]


def test_without_noise_the_ratio_is_1_so_the_epsilon_contrast_is_the_noise():
    # when the simulation is broken on purpose: every noise scale 0
    statistic, schema = planned(10_000, epsilon=0.1, noise=ZeroNoise())
    facts = km.simulated_objective_ratio(statistic, schema, 10_000)

    # then the private releases are Lloyd's exactly: the ε = 0.1 test above measures noise
    assert facts["median"] == pytest.approx(1.0, abs=1e-12)
    assert facts["p10"] == pytest.approx(1.0, abs=1e-12)
    assert facts["p90"] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.statistical
def test_the_ratio_grows_with_k_at_a_fixed_epsilon():
    # when
    medians = [ratio(10_000, epsilon=0.3, k=k)["median"] for k in (2, 4, 8)]

    # then smaller clusters carry the same noise: their centroids move further
    assert medians == sorted(medians)
    assert medians[2] > 1.5 * medians[0]


@pytest.mark.statistical
def test_the_noise_is_weighed_against_the_declared_size_not_the_points_simulated():
    # when a table of 10⁴ records and one of 10⁸ are both simulated with 10⁴ distinct points
    few, many = ratio(10_000, epsilon=0.1), ratio(10**8, epsilon=0.1)

    # then the larger table's clusters drown the same noise
    assert few["distinct_points"] == many["distinct_points"] == km.MAX_SIMULATED_POINTS
    assert many["records"] == 10**8
    assert few["median"] > 2.0
    assert many["median"] < 1.01


def test_the_simulated_table_has_exactly_the_declared_records():
    # when
    n = 10**6 + 7
    table = km.simulated_table(((0.0, 255.0),) * 3, 4, n)
    counts, sums = table.cluster_answer(table.blob_means())

    # then its points stand for ⌊n/p⌋ or ⌈n/p⌉ records each, in k equal blobs inside the bounds
    assert table.records == n
    assert len(table.weights) == km.MAX_SIMULATED_POINTS
    each = n // km.MAX_SIMULATED_POINTS
    assert set(table.weights.tolist()) == {each, each + 1}
    assert int(counts.sum()) == n
    assert max(counts) - min(counts) <= 2
    assert table.points.min() >= 0.0
    assert table.points.max() <= 255.0
    assert sums.shape == (4, 3)


def test_under_every_definition_the_ratio_comes_with_a_sentence():
    # given
    definitions = [
        PURE,
        {"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-9},
        {"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "attribute"}},
        {
            "kind": "blowfish",
            "epsilon": 1.0,
            "policy": {"graph": "distance_threshold", "columns": ["r", "g", "b"], "theta": 128},
        },
    ]

    for definition in definitions:
        # when
        facts = ratio(5_000, definition=definition)

        # then
        assert facts["runs"] == km.SIMULATED_RUNS
        assert facts["records"] == facts["distinct_points"] == 5_000
        assert facts["median"] > 0.9
        assert "5,000 records in 4 well-separated clusters" in facts["sentence"]
        assert f"{facts['median']:.2f}×" in facts["sentence"]


# --- the same algorithm, no data, reproducible, bounded --------------------------------------


def test_the_simulated_release_takes_the_releases_own_steps():
    # given the same noise for both
    n = 3_000
    statistic, schema = planned(n, epsilon=0.5, noise=SeededNoise(11))
    table = km.simulated_table(((0.0, 255.0),) * 3, 4, n)
    request = KIND.first_request(statistic.query, schema)
    rounds = [statistic.mechanisms[i : i + 2] for i in range(0, len(statistic.mechanisms), 2)]
    threshold = km.small_cluster_threshold(statistic.mechanisms[1], request)

    # when the vectorised simulation runs, then the release itself with rounds asked of the table
    simulated = km.simulated_lloyd(table, request, 10, rounds, threshold)
    statistic, schema = planned(n, epsilon=0.5, noise=SeededNoise(11))
    released = KIND.release_rounds(
        statistic,
        table.answer(request),
        lambda requests: [table.answer(r) for r in requests],
        schema,
        {
            "kind": "kmeans",
            "column": None,
            "mechanism": statistic.mechanism,
            "epsilon": 0.5,
            "delta": 0.0,
            "sensitivity": statistic.sensitivity,
            "noise_scale": statistic.noise_scale,
        },
    )

    # then the centroids are the same numbers
    assert simulated.tolist() == [[row[c] for c in ("r", "g", "b")] for row in released.value]


def test_the_same_inputs_and_draws_give_the_same_preview():
    # given
    km.simulated_table.cache_clear()
    first_table = km.simulated_table(((0.0, 255.0),) * 3, 4, 10_000)
    km.simulated_table.cache_clear()
    second_table = km.simulated_table(((0.0, 255.0),) * 3, 4, 10_000)

    # when
    first = km.simulated_objective_ratio(*planned(10_000, noise=SeededNoise(3)), 10_000)
    second = km.simulated_objective_ratio(*planned(10_000, noise=SeededNoise(3)), 10_000)

    # then the public table is a fixed function of the shape, and nothing else is random
    assert np.array_equal(first_table.points, second_table.points)
    assert np.array_equal(first_table.weights, second_table.weights)
    assert first == second


def test_the_preview_reads_no_table(monkeypatch):
    # given every way to the data refused
    def refused(*arguments, **keywords):
        raise AssertionError("the simulated preview read a table")

    for module, name in [
        ("privacy_engine.aggregates", "partial"),
        ("privacy_engine.aggregates", "partials"),
        ("privacy_engine.engines", "partials"),
        ("privacy_engine.engines", "aggregate_table"),
        ("privacy_engine.release", "aggregate_table"),
    ]:
        monkeypatch.setattr(f"{module}.{name}", refused)

    # when the preview gets no table at all, only the schema, definition and queries
    entries = simulated_preview(
        schema={"columns": RGB, "declared_size": 20_000},
        definition=PURE,
        queries=[{"kind": "count"}, kmeans()],
    )

    # then the k-means entry carries the ratio, and no one-draw chart (the page skips it)
    count, clusters = entries
    assert "objective_ratio" not in count
    assert clusters["simulated"] is None
    assert clusters["noisy"] is None
    assert clusters["columns"] == ["r", "g", "b"]
    facts = clusters["objective_ratio"]
    assert sorted(facts) == [
        "clusters",
        "distinct_points",
        "iterations",
        "lloyd_to_best",
        "median",
        "p10",
        "p90",
        "records",
        "runs",
        "sentence",
    ]
    assert facts["records"] == 20_000
    assert facts["iterations"] == 10
    assert facts["distinct_points"] == km.MAX_SIMULATED_POINTS
    assert "each for about 2" in facts["sentence"]


def test_the_preview_of_a_million_records_is_quick():
    # when
    started = time.perf_counter()
    entries = simulated_preview(
        schema={"columns": RGB, "declared_size": 10**6}, definition=PURE, queries=[kmeans()]
    )
    elapsed = time.perf_counter() - started

    # then (about 0.3 s on one free core; generous here, the cores are shared)
    print(f"simulated k-means preview of 10⁶ records: {elapsed:.3f} s")
    assert entries[0]["objective_ratio"]["records"] == 10**6
    assert elapsed < 5.0


def test_a_release_that_draws_many_numbers_simulates_fewer_runs():
    # given the largest query: 20 iterations of 20 clusters in 10 columns
    columns = {f"c{i}": {"kind": "numeric", "lower": 0, "upper": 1} for i in range(10)}
    query = {"kind": "kmeans", "columns": list(columns), "k": 20, "iterations": 20}

    # when
    started = time.perf_counter()
    (entry,) = simulated_preview(
        schema={"columns": columns, "declared_size": 10**6}, definition=PURE, queries=[query]
    )
    elapsed = time.perf_counter() - started

    # then
    print(f"simulated preview of the largest k-means: {elapsed:.3f} s")
    assert entry["objective_ratio"]["runs"] == km.MIN_SIMULATED_RUNS
    assert elapsed < 10.0


def test_a_preview_simulates_at_most_three_different_kmeans_statistics(monkeypatch):
    from privacy_engine import guidance
    from privacy_engine.kinds import kmeans as km_kind

    calls = []
    real = km_kind.KMeansKind.simulated_facts

    def counted(self, planned, schema, n):
        calls.append(planned.query)
        return real(self, planned, schema, n)

    monkeypatch.setattr(km_kind.KMeansKind, "simulated_facts", counted)
    schema = {
        "columns": {c: {"kind": "numeric", "lower": 0, "upper": 255} for c in "rgb"},
        "declared_size": 10_000,
    }
    same = {"kind": "kmeans", "columns": ["r", "g"], "k": 3, "iterations": 2}
    queries = [same, same, *({**same, "k": k} for k in (4, 5, 6, 7))]

    entries = guidance.simulated_preview(
        schema=schema, definition={"kind": "pure_dp", "epsilon": 6}, queries=queries
    )

    assert len(calls) == 3
    assert [("objective_ratio" in e) for e in entries] == [True, True, True, True, False, False]
    assert entries[0]["objective_ratio"] == entries[1]["objective_ratio"]
