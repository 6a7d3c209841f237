"""Large uploads convert in a real Celery worker process (issue 8, point 1): the web server answers
at once with "processing" and never converts; a worker makes the dataset ready, or failed with a
reason and no file left behind."""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.processes import Stack, api_token, kill, sqlite_env, start_stack, stop

pytestmark = [pytest.mark.worker]

ROWS = 2000
TABLE = "patient,age,sex\n" + "".join(
    f"P{i:05d},{(i * 37) % 90 + 5},{'F' if i % 3 else 'M'}\n" for i in range(ROWS)
)


@pytest.fixture
def stack(tmp_path, stacks) -> Iterator[Stack]:
    env = sqlite_env(tmp_path)
    # Every upload above 1 kB converts in the worker.
    env["DATASET_CONVERT_INLINE_BYTES"] = "1000"
    yield from start_stack(env, tmp_path, stacks)


def upload(stack: Stack, headers: dict, content: str, name: str) -> dict:
    response = requests.post(
        f"{stack.base_url}/api/v1/datasets/",
        headers=headers,
        data={"name": name, "budget_epsilon": "1"},
        files={"file": (f"{name}.csv", content.encode(), "text/csv")},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    return response.json()


def wait_for(stack: Stack, headers: dict, dataset_id: int) -> dict:
    deadline = time.monotonic() + 90
    while True:
        detail = requests.get(
            f"{stack.base_url}/api/v1/datasets/{dataset_id}/", headers=headers, timeout=10
        ).json()
        if detail["status"] != "processing":
            return detail
        assert time.monotonic() < deadline, f"conversion stuck\n{stack.logs()}"
        time.sleep(0.3)


def test_a_large_upload_converts_only_in_a_worker_process(stack):
    # given no worker running
    curator = api_token(stack, "e2e-curator")
    stop(stack.worker)

    # when a large table is uploaded
    created = upload(stack, curator, TABLE, "patients")

    # then the web server answered at once and, alone, never converts it
    assert (created["status"], created["progress"], created["row_count"]) == ("processing", 0, None)
    time.sleep(3)
    still = requests.get(
        f"{stack.base_url}/api/v1/datasets/{created['id']}/", headers=curator, timeout=10
    ).json()
    assert still["status"] == "processing"

    # when a worker starts, it converts the table
    stack.start_worker("worker-2")
    ready = wait_for(stack, curator, created["id"])

    # then
    assert ready["status"] == "ready", ready["failure_reason"]
    assert (ready["progress"], ready["row_count"]) == (1, ROWS)
    assert ready["columns"] == [
        {"name": "patient", "inferred_kind": "identifier"},
        {"name": "age", "inferred_kind": "numeric"},
        {"name": "sex", "inferred_kind": "categorical"},
    ]
    private = Path(stack.env["VAR_DIR"]) / "private"
    assert [p.suffix for p in private.rglob("*") if p.is_file()] == [".parquet"]


def test_a_bad_large_upload_fails_in_the_worker_and_leaves_no_file(stack):
    # given a table whose last row is ragged
    curator = api_token(stack, "e2e-curator")
    bad = TABLE + "P99999,40,F,extra\n"

    # when
    created = upload(stack, curator, bad, "broken")
    failed = wait_for(stack, curator, created["id"])

    # then
    assert failed["status"] == "failed"
    assert failed["failure_reason"] == f"Row {ROWS + 2} has 4 fields but the header has 3."
    private = Path(stack.env["VAR_DIR"]) / "private"
    assert [p for p in private.rglob("*") if p.is_file()] == []


BIG_ROWS = 1_000_000
BIG_TABLE = "patient,age,sex\n" + "".join(
    f"P{i:07d},{(i * 37) % 90 + 5},{'F' if i % 3 else 'M'}\n" for i in range(BIG_ROWS)
)


@pytest.fixture
def fast_heartbeat_stack(tmp_path, stacks) -> Iterator[Stack]:
    env = sqlite_env(tmp_path)
    env.update(
        {
            "DATASET_CONVERT_INLINE_BYTES": "1000",
            "RELEASE_HEARTBEAT_SECONDS": "0.5",
            "RELEASE_STALE_SECONDS": "3",
        }
    )
    yield from start_stack(env, tmp_path, stacks)


def test_a_worker_killed_mid_conversion_is_replaced_and_the_table_ends_ready(
    fast_heartbeat_stack,
):
    # given a large upload a worker has started converting
    stack = fast_heartbeat_stack
    curator = api_token(stack, "e2e-curator")
    created = upload(stack, curator, BIG_TABLE, "register")
    deadline = time.monotonic() + 60
    while True:
        detail = requests.get(
            f"{stack.base_url}/api/v1/datasets/{created['id']}/", headers=curator, timeout=10
        ).json()
        if detail["status"] == "processing" and detail["progress"] > 0:
            break
        assert detail["status"] == "processing", "converted before the kill: use a larger table"
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(0.05)

    # when that worker is killed, and another starts
    kill(stack.worker)
    stack.start_worker("worker-2")
    ready = wait_for(stack, curator, created["id"])

    # then the new worker's reaper sent it again and the table is whole; the killed attempt's
    # partial file is gone
    assert ready["status"] == "ready", ready["failure_reason"]
    assert ready["row_count"] == BIG_ROWS
    private = Path(stack.env["VAR_DIR"]) / "private"
    assert [p.suffix for p in private.rglob("*") if p.is_file()] == [".parquet"]
