"""End to end on real parts: a web server process, a separate Celery worker process, and a real
broker and database (a SQLite file with kombu's SQLAlchemy transport; PostgreSQL with Redis).

The test talks HTTP only. It asserts the release was computed in the worker's process, which
fails if tasks ever run eagerly inside the web server.
"""

import csv
import hashlib
import io
import os
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from tests.processes import Stack, api_token, postgres_redis_env, sqlite_env, start_stack

pytestmark = [pytest.mark.worker]

ROWS = 400
TABLE = "patient,age,sex,income\n" + "".join(
    f"P{i:04d},{(i * 37) % 90 + 5},{'F' if i % 3 else 'M'},{(i * 7919) % 50000 + 1000}\n"
    for i in range(ROWS)
)
TRUE_COUNT = ROWS
TRUE_SEX = {
    "F": sum(1 for i in range(ROWS) if i % 3),
    "M": sum(1 for i in range(ROWS) if not i % 3),
}
TRUE_AGE_SUM = sum((i * 37) % 90 + 5 for i in range(ROWS))


@pytest.fixture
def sqlite_stack(tmp_path, stacks) -> Iterator[Stack]:
    yield from start_stack(sqlite_env(tmp_path), tmp_path, stacks)


@pytest.fixture
def postgres_redis_stack(tmp_path, stacks) -> Iterator[Stack]:
    with postgres_redis_env(tmp_path) as env:
        yield from start_stack(env, tmp_path, stacks)


def _walk_release_lifecycle(stack: Stack) -> None:
    curator = api_token(stack, "e2e-curator")
    url = stack.base_url + "/api/v1"

    # given an uploaded table with a declared schema
    upload = requests.post(
        f"{url}/datasets/",
        headers=curator,
        data={"name": "E2E patients", "budget_epsilon": "10", "declared_size": "400"},
        files={"file": ("patients.csv", TABLE.encode(), "text/csv")},
        timeout=30,
    )
    assert upload.status_code == 201, upload.text
    dataset = upload.json()
    assert dataset["row_count"] == ROWS
    schema = requests.put(
        f"{url}/datasets/{dataset['id']}/schema/",
        headers=curator,
        timeout=10,
        json={
            "columns": {
                "age": {"kind": "numeric", "lower": 0, "upper": 100},
                "sex": {"kind": "categorical", "categories": ["F", "M"]},
                "income": {"kind": "numeric", "lower": 0, "upper": 60000},
            },
        },
    )
    assert schema.status_code == 200, schema.text

    # when a draft is made and submitted
    draft = requests.post(
        f"{url}/releases/",
        headers=curator,
        timeout=30,
        json={
            "dataset": dataset["id"],
            "title": "E2E release",
            "definition": {"kind": "pure_dp", "epsilon": 4},
            "queries": [
                {"kind": "count"},
                {"kind": "histogram", "column": "sex"},
                {"kind": "sum", "column": "age"},
                {"kind": "mean", "column": "age"},
            ],
        },
    )
    assert draft.status_code == 201, draft.text
    release_id = draft.json()["id"]
    submit = requests.post(f"{url}/releases/{release_id}/submit/", headers=curator, timeout=30)
    assert submit.status_code == 202, submit.text
    assert submit.json()["status"] == "queued"

    # then the worker publishes it
    deadline = time.monotonic() + 120
    while True:
        release = requests.get(f"{url}/releases/{release_id}/", headers=curator, timeout=10).json()
        if release["status"] in ("published", "failed"):
            break
        assert time.monotonic() < deadline, f"release stuck in {release['status']}\n{stack.logs()}"
        time.sleep(0.5)
    assert release["status"] == "published", release["failure_reason"]
    assert release["version"] == 1
    worker_pid = int(release["worker"].rsplit(":", 1)[1])
    assert worker_pid == stack.worker.pid
    assert worker_pid not in (os.getpid(), stack.web.pid)

    # and anyone can find and download it, with the published SHA-256
    catalog = requests.get(f"{url}/catalog/", timeout=10).json()
    assert catalog["count"] == 1
    entry = catalog["results"][0]
    version = requests.get(entry["url"], timeout=10).json()
    stats = version["statistics"]
    count, histogram, age_sum, _ = stats
    assert abs(count["value"] - TRUE_COUNT) <= count["ci95"][1] - count["value"] + 50
    assert set(histogram["value"]) == {"F", "M"}
    assert abs(age_sum["value"] - TRUE_AGE_SUM) < 20 * age_sum["noise_scale"]
    assert age_sum["sensitivity"] == 100
    for file_entry in version["files"]:
        download = requests.get(file_entry["url"], timeout=10)
        assert download.status_code == 200
        assert hashlib.sha256(download.content).hexdigest() == file_entry["sha256"]
        if file_entry["format"] == "csv":
            rows = list(csv.DictReader(io.StringIO(download.text)))
            assert {r["category"] for r in rows if r["kind"] == "histogram"} == {"F", "M"}

    # and the budget is spent once; more than the rest is refused with 409
    budget = requests.get(f"{url}/datasets/{dataset['id']}/", headers=curator, timeout=10)
    assert budget.json()["budget"]["spent"].startswith("4")
    too_much = requests.post(
        f"{url}/releases/",
        headers=curator,
        timeout=30,
        json={
            "dataset": dataset["id"],
            "title": "Too much",
            "definition": {"kind": "pure_dp", "epsilon": 7},
            "queries": [{"kind": "count"}],
        },
    )
    refused = requests.post(
        f"{url}/releases/{too_much.json()['id']}/submit/", headers=curator, timeout=30
    )
    assert refused.status_code == 409
    assert "7" in refused.json()["detail"]
    assert "6" in refused.json()["detail"]

    # and two submissions racing for the last of the budget: exactly one wins
    racers = [
        requests.post(
            f"{url}/releases/",
            headers=curator,
            timeout=30,
            json={
                "dataset": dataset["id"],
                "title": f"Racer {n}",
                "definition": {"kind": "pure_dp", "epsilon": 4},
                "queries": [{"kind": "count"}],
            },
        ).json()["id"]
        for n in range(2)
    ]
    barrier = threading.Barrier(2)
    codes: list[int] = []

    def submit_racer(racer_id: int) -> None:
        barrier.wait()
        codes.append(
            requests.post(
                f"{url}/releases/{racer_id}/submit/", headers=curator, timeout=60
            ).status_code
        )

    threads = [threading.Thread(target=submit_racer, args=(r,)) for r in racers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [202, 409]

    # and compliance sees an intact hash chain
    auditor = api_token(stack, "e2e-auditor")
    verify = requests.get(f"{url}/audit/verify/", headers=auditor, timeout=10).json()
    assert verify["valid"] is True
    assert verify["first_broken_event"] is None
    actions = {
        e["action"]
        for e in requests.get(
            f"{url}/audit/events/?dataset={dataset['id']}&page_size=200",
            headers=auditor,
            timeout=10,
        ).json()["results"]
    }
    assert {"dataset.uploaded", "release.submitted", "task.started", "release.published"} <= actions


def test_release_lifecycle_on_sqlite_file_and_sqlalchemy_broker(sqlite_stack):
    _walk_release_lifecycle(sqlite_stack)


@pytest.mark.services
def test_release_lifecycle_on_postgresql_and_redis(postgres_redis_stack):
    _walk_release_lifecycle(postgres_redis_stack)
