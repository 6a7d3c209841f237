"""One release plan, three engines (issue 8, point 3): in-process, out-of-core (DuckDB, streamed in
batches) and distributed (a local Dask cluster of two worker processes) compute identical exact
aggregates before noise, and the release built on each is the same."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

from privacy_engine import engines
from privacy_engine.columnar import ColumnarWriter
from privacy_engine.engines import (
    Bound,
    DistributedEngine,
    EngineChoice,
    InProcessEngine,
    OutOfCoreEngine,
)
from privacy_engine.release import (
    _bound,
    _plan_requests,
    plan_release,
    release_stored_table,
    run_queries,
)


class NoNoise:
    def sample(self, measurement, value):
        return value


ROWS = 3000
# Values of very different magnitudes: a float sum taken in another order would differ.
AMOUNTS = ["999999.5", "1e-9", "-0.1", "", "abc", "3.3333333", "-999999", "1e400", " 7 "]


def rows(count: int) -> dict[str, list[str]]:
    return {
        "person": [f"p{(i * 7) % 1100}" if i % 23 else "" for i in range(count)],
        "amount": [AMOUNTS[(i * 5) % len(AMOUNTS)] for i in range(count)],
        "age": [str((i * 37) % 95) for i in range(count)],
        "region": [["north", "south", " east", "", "west", "x"][i % 6] for i in range(count)],
        "band": [["a", "b", "", "c"][(i * 3) % 4 if i % 7 else 1] for i in range(count)],
    }


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> str:
    """A stored table written in six batches: six row groups, so engines see several parts."""
    path = tmp_path_factory.mktemp("engines") / "table.parquet"
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
        "amount": {"kind": "numeric", "lower": -1e6, "upper": 1e6},
        "age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 50},
        "region": {
            "kind": "categorical",
            "categories": ["north", "south", "east"],
            "other": "other",
            "fill": "north",
        },
        "band": {"kind": "categorical", "categories": ["a", "b"], "other": "other"},
    },
    "declared_size": ROWS,
}
QUERIES = [
    {"kind": "count"},
    {"kind": "sum", "column": "amount"},
    {"kind": "sum", "columns": ["amount", "age"]},
    {"kind": "mean", "column": "amount"},
    {"kind": "histogram", "column": "region"},
    {"kind": "histogram", "column": "age", "bins": [0, 10, 50, 99.5, 100]},
    {"kind": "quantile", "column": "amount", "quantiles": [0.25, 0.5]},
    {"kind": "marginal", "columns": ["region", "band"]},
    {"kind": "range_histogram", "column": "age", "bins": 300},
    {"kind": "marginal", "columns": ["age", "band"], "bins": {"age": [0, 10, 50, 99.5, 100]}},
]
DEFINITION = {"kind": "pure_dp", "epsilon": 1.0}


def with_key(c: int) -> dict:
    return {**SCHEMA, "person_key": "person", "max_rows_per_person": c}


def exact_aggregates(schema: dict, path: str, engine) -> list:
    plan = plan_release(schema=schema, definition=DEFINITION, queries=QUERIES)
    flat = [request for wanted in _plan_requests(plan) for request in wanted]
    return engine.aggregate(path, flat, _bound(plan.schema)).answers


@pytest.mark.parametrize("schema", [SCHEMA, with_key(1), with_key(2)], ids=["rows", "c1", "c2"])
def test_three_engines_give_identical_exact_aggregates(stored, cluster_client, schema):
    # given the three engines; the out-of-core one in batches of 700 rows under a small limit
    in_process = InProcessEngine()
    out_of_core = OutOfCoreEngine(memory_limit_bytes=64 << 20, threads=2, batch_rows=700)
    distributed = DistributedEngine(client=cluster_client)
    assert len(cluster_client.scheduler_info()["workers"]) == 2

    # when
    answers = {
        engine.name: exact_aggregates(schema, stored, engine)
        for engine in (in_process, out_of_core, distributed)
    }

    # then
    assert answers["out_of_core"] == answers["in_process"]
    assert answers["distributed"] == answers["in_process"]


def test_the_exact_aggregates_are_those_of_the_string_engine(stored):
    # given the same table as raw strings in memory
    frame = pd.DataFrame(rows(ROWS), dtype=str)

    # when
    from_frame = run_queries(
        frame, schema=with_key(2), definition=DEFINITION, queries=QUERIES, noise=NoNoise()
    )
    from_store = release_stored_table(
        stored,
        schema=with_key(2),
        definition=DEFINITION,
        queries=QUERIES,
        noise=NoNoise(),
        engine=OutOfCoreEngine(batch_rows=700),
    )

    # then
    assert [s.to_dict() for s in from_store.statistics] == [
        s.to_dict() for s in from_frame.statistics
    ]


def test_a_distributed_engine_that_loses_a_partition_is_caught(stored, cluster_client, monkeypatch):
    # given an engine whose merge keeps only the first partition (a deliberately broken one)
    real_merge_all = engines.merge_all

    def first_only(requests, states):
        return real_merge_all(requests, list(states)[:1])

    monkeypatch.setattr(engines, "merge_all", first_only)

    # when
    broken = exact_aggregates(SCHEMA, stored, DistributedEngine(client=cluster_client))
    monkeypatch.undo()
    right = exact_aggregates(SCHEMA, stored, InProcessEngine())

    # then the comparison of the test above would fail
    assert broken != right


def test_an_out_of_core_engine_without_the_person_bound_is_caught(stored, monkeypatch):
    # given an out-of-core engine whose running rank keeps every row (a broken bound)
    monkeypatch.setattr(
        engines._RunningRank, "keep", lambda self, keys: np.ones(len(keys), dtype=bool)
    )

    # when / then
    assert exact_aggregates(with_key(1), stored, OutOfCoreEngine()) != exact_aggregates(
        with_key(1), stored, InProcessEngine()
    )


def test_auto_choice_streams_a_table_whose_columns_exceed_the_memory_budget(stored):
    plan = plan_release(schema=SCHEMA, definition=DEFINITION, queries=QUERIES)
    flat = [request for wanted in _plan_requests(plan) for request in wanted]

    assert EngineChoice().engine_for(stored, flat, Bound()).name == "in_process"
    small = EngineChoice(memory_budget_bytes=1000).engine_for(stored, flat, Bound())
    assert small.name == "out_of_core"
    with pytest.raises(ValueError, match="unknown engine"):
        EngineChoice(kind="spark")


def test_auto_choice_sorts_person_keys_out_of_core_beyond_a_row_count(stored, monkeypatch):
    # given a plan bounded by a person key, on a table of ROWS rows
    plan = plan_release(schema=SCHEMA, definition=DEFINITION, queries=QUERIES)
    flat = [request for wanted in _plan_requests(plan) for request in wanted]
    keyed = Bound(person_key="person", per_person=1)

    # when the limit is at the table's size, then one row below it
    at_limit = EngineChoice().engine_for(stored, flat, keyed).name
    monkeypatch.setattr(engines, "PERSON_KEY_IN_PROCESS_MAX_ROWS", ROWS - 1)
    above = EngineChoice().engine_for(stored, flat, keyed).name

    # then: in process up to the limit, out of core above it; rows alone stay in process
    assert (at_limit, above) == ("in_process", "out_of_core")
    assert EngineChoice().engine_for(stored, flat, Bound()).name == "in_process"


def test_a_release_says_which_engine_computed_it(stored):
    result = release_stored_table(
        stored,
        schema=SCHEMA,
        definition=DEFINITION,
        queries=QUERIES,
        engine=EngineChoice(memory_budget_bytes=1000),
    )

    assert result.engine == "out_of_core"
    assert set(result.timings) == {"read_s", "compute_s", "noise_s"}


def test_out_of_core_bounding_under_a_small_memory_limit_spills_rather_than_fails(tmp_path):
    # given 600,000 rows of 50,000 persons, and a limit far below what holding them takes
    rows = 600_000
    path = tmp_path / "big.parquet"
    with ColumnarWriter(path, ["person", "amount"]) as writer:
        for start in range(0, rows, 100_000):
            numbers = range(start, start + 100_000)
            writer.write(
                [[f"person-{n % 50_000:06d}" for n in numbers], [str(n % 97) for n in numbers]]
            )
    plan = plan_release(
        schema={
            "columns": {"amount": {"kind": "numeric", "lower": 0, "upper": 100}},
            "person_key": "person",
            "max_rows_per_person": 7,
        },
        definition=DEFINITION,
        queries=[{"kind": "count"}, {"kind": "sum", "column": "amount"}],
    )
    flat = [request for wanted in _plan_requests(plan) for request in wanted]

    # when
    streamed = OutOfCoreEngine(memory_limit_bytes=64 << 20, threads=4).aggregate(
        path, flat, _bound(plan.schema)
    )

    # then
    assert streamed.answers == InProcessEngine().aggregate(path, flat, _bound(plan.schema)).answers
    assert streamed.answers[0] == 50_000 * 7


# Every kind restricted to groups of region: the buckets after its rules ("" → north, " east"
# stripped to east, "west" and "x" → other).
GROUPS = ["north", "other"]
RESTRICTED = [
    {**query, "where": {"column": "region", "in": GROUPS}}
    for query in QUERIES
    if query["kind"] != "count"
] + [{"kind": "count", "where": {"column": "region", "in": ["south"]}}]


def restricted_aggregates(schema: dict, path: str, engine) -> list:
    plan = plan_release(schema=schema, definition=DEFINITION, queries=RESTRICTED)
    flat = [request for wanted in _plan_requests(plan) for request in wanted]
    return engine.aggregate(path, flat, _bound(plan.schema)).answers


@pytest.mark.parametrize("schema", [SCHEMA, with_key(2)], ids=["rows", "c2"])
def test_three_engines_give_identical_restricted_aggregates(stored, cluster_client, schema):
    # given the three engines
    engines_used = (
        InProcessEngine(),
        OutOfCoreEngine(memory_limit_bytes=64 << 20, threads=2, batch_rows=700),
        DistributedEngine(client=cluster_client),
    )

    # when every kind is restricted to two groups of region
    answers = {e.name: restricted_aggregates(schema, stored, e) for e in engines_used}

    # then
    assert answers["out_of_core"] == answers["in_process"]
    assert answers["distributed"] == answers["in_process"]


def region_bucket(value: str) -> str:
    """The region column's rules, written out independently of the engine."""
    value = value.strip()
    if value == "":
        return "north"
    return value if value in ("north", "south", "east") else "other"


@pytest.mark.parametrize("groups", [["north", "other"], ["south"], ["east", "south", "north"]])
def test_a_restricted_statistic_is_the_statistic_of_its_groups_records(groups):
    # given the table, and the rows of the groups picked out by hand
    frame = pd.DataFrame(rows(ROWS), dtype=str)
    picked = frame[frame["region"].map(region_bucket).isin(groups)].reset_index(drop=True)
    restricted = [{**q, "where": {"column": "region", "in": groups}} for q in QUERIES]

    # when
    on_groups = run_queries(
        frame, schema=SCHEMA, definition=DEFINITION, queries=restricted, noise=NoNoise()
    )
    on_picked = run_queries(
        picked, schema=SCHEMA, definition=DEFINITION, queries=QUERIES, noise=NoNoise()
    )

    # then the exact answers (no noise) are those of the picked rows; each says its groups
    for mine, theirs in zip(on_groups.statistics, on_picked.statistics, strict=True):
        assert mine.value == theirs.value
        assert mine.where == {"column": "region", "in": groups}
        quoted = [f"'{group}'" for group in groups]
        named = " or ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)
        assert mine.rule.startswith(
            f"only records whose region is {named}; region: values outside the declared "
            "categories counted as 'other'; region: missing values replaced by 'north'"
        )
        # and the statistic's own column's rules are led by its name, not read as region's
        column = mine.column
        if column and column != "region":
            after = mine.rule.split("region: missing values replaced by 'north'; ", 1)[1]
            assert after.startswith(f"{column}: ")
