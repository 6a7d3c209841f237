"""k-means on every engine (issue 10, point 1): the in-process, out-of-core (DuckDB, in batches)
and distributed (a local Dask cluster of two worker processes) engines compute identical
ClusterSums answers, and a k-means release asked round by round through each is the same,
and the same as from the table in memory.

The table is built to trip an engine that differs: values of very different magnitudes (a float
sum in another order would differ), missing and non-numeric values (left out, or filled),
values beyond the bounds, records equidistant from two centroids (ties), six row groups, and a
person key that bounds contributions."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

from privacy_engine.columnar import ColumnarWriter
from privacy_engine.engines import Bound, DistributedEngine, InProcessEngine, OutOfCoreEngine
from privacy_engine.kinds import kmeans as km
from privacy_engine.release import _bound, plan_release, release_stored_table, run_queries
from privacy_engine.schema import schema_from_dict


class NoNoise:
    def sample(self, measurement, value):
        return value


ROWS = 3000
AMOUNTS = ["999999.5", "1e-9", "-0.1", "", "abc", "3.3333333", "-999999", "1e400", " 7 ", "0"]


def rows(count: int) -> dict[str, list[str]]:
    return {
        "person": [f"p{(i * 7) % 1100}" if i % 23 else "" for i in range(count)],
        "amount": [AMOUNTS[(i * 5) % len(AMOUNTS)] for i in range(count)],
        # 0, 25, 50, …: many records exactly between two centroids below
        "age": [str((i * 37) % 95) if i % 11 else "" for i in range(count)],
        "score": [repr(((i * 7919) % 1000) / 7.0) for i in range(count)],
    }


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> str:
    """A stored table written in six batches: six row groups, so engines see several parts."""
    path = tmp_path_factory.mktemp("kmeans-engines") / "table.parquet"
    table = rows(ROWS)
    with ColumnarWriter(path, list(table)) as writer:
        for start in range(0, ROWS, 500):
            writer.write([values[start : start + 500] for values in table.values()])
    return str(path)


@pytest.fixture(scope="module")
def cluster_client() -> Iterator[object]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


SCHEMA = {
    "columns": {
        "amount": {"kind": "numeric", "lower": -1e3, "upper": 1e3},
        "age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 50},
        "score": {"kind": "numeric", "lower": 0, "upper": 120},
        "person": {"kind": "identifier"},
    },
    "declared_size": ROWS,
}
CENTROID_SETS = [
    ((0.0, 25.0, 10.0), (0.0, 75.0, 100.0)),  # age 50 is a tie
    ((-500.0, 10.0, 60.0), (500.0, 90.0, 60.0), (0.0, 50.0, 0.0), (1.0, 50.0, 120.0)),
]
QUERY = {"kind": "kmeans", "columns": ["amount", "age", "score"], "k": 3, "iterations": 4}


def with_key(c: int) -> dict:
    return {**SCHEMA, "person_key": "person", "max_rows_per_person": c}


def requests(schema: dict) -> list:
    typed = schema_from_dict(schema)
    return [
        km.cluster_sums(("amount", "age", "score"), typed, centroids) for centroids in CENTROID_SETS
    ]


@pytest.mark.parametrize("schema", [SCHEMA, with_key(1), with_key(2)], ids=["rows", "c1", "c2"])
def test_three_engines_give_identical_cluster_sums(stored, cluster_client, schema):
    # given the three engines; the out-of-core one in batches of 700 rows under a small limit
    engines = (
        InProcessEngine(),
        OutOfCoreEngine(memory_limit_bytes=64 << 20, threads=2, batch_rows=700),
        DistributedEngine(client=cluster_client),
    )
    assert len(cluster_client.scheduler_info()["workers"]) == 2
    wanted = requests(schema)
    bound = _bound(schema_from_dict(schema))

    # when
    answers = {engine.name: engine.aggregate(stored, wanted, bound).answers for engine in engines}

    # then
    assert answers["out_of_core"] == answers["in_process"]
    assert answers["distributed"] == answers["in_process"]
    counts, _ = answers["in_process"][0]
    assert sum(counts) > 0
    assert len(set(counts)) > 1


def test_the_answers_do_not_depend_on_how_the_table_is_cut(stored):
    wanted = requests(SCHEMA)
    whole = InProcessEngine().aggregate(stored, wanted, Bound()).answers
    for batch_rows in (1, 333, 5000):
        cut = OutOfCoreEngine(batch_rows=batch_rows).aggregate(stored, wanted, Bound()).answers
        assert cut == whole


# A large ε: at ε = 1 the noise would keep every cluster below τ, at its start.
@pytest.mark.parametrize("definition", [{"kind": "pure_dp", "epsilon": 20.0}])
def test_a_release_asked_round_by_round_is_the_same_on_every_engine(
    stored, cluster_client, definition
):
    schema = with_key(2)
    engines = (
        InProcessEngine(),
        OutOfCoreEngine(batch_rows=700),
        DistributedEngine(client=cluster_client),
    )

    results = [
        release_stored_table(
            stored,
            schema=schema,
            definition=definition,
            queries=[QUERY, {"kind": "count"}],
            noise=NoNoise(),
            engine=engine,
        )
        for engine in engines
    ]
    in_memory = run_queries(
        pd.DataFrame(rows(ROWS), dtype=str),
        schema=schema,
        definition=definition,
        queries=[QUERY, {"kind": "count"}],
        noise=NoNoise(),
    )

    published = [[s.to_dict() for s in result.statistics] for result in results]
    assert published[1] == published[0]
    assert published[2] == published[0]
    assert [s.to_dict() for s in in_memory.statistics] == published[0]
    assert [r.engine for r in results] == ["in_process", "out_of_core", "distributed"]
    # the rounds moved the centroids away from the start
    start = km.initial_centroids(
        [schema_from_dict(schema).column(c) for c in QUERY["columns"]], QUERY["k"]
    )
    centres = [tuple(row[c] for c in QUERY["columns"]) for row in published[0][0]["value"]]
    assert centres != list(start)
    assert set(results[0].timings) == {"read_s", "compute_s", "noise_s"}


def test_a_plan_with_kmeans_asks_each_engine_for_the_first_round_only(stored):
    plan = plan_release(
        schema=SCHEMA, definition={"kind": "pure_dp", "epsilon": 1.0}, queries=[QUERY]
    )
    (statistic,) = plan.statistics
    (first,) = km.KIND.aggregates(statistic.query, plan.schema)

    assert first.centroids == km.initial_centroids(
        [plan.schema.column(c) for c in QUERY["columns"]], QUERY["k"]
    )
