"""A real worker process killed with SIGKILL in the middle of a release, then a new worker: the
release ends published, its noise drawn and its budget charged once.

On a SQLite file with kombu's SQLAlchemy broker the killed delivery is never restored; on
PostgreSQL with Redis it comes back after the visibility timeout (aged here by hand, as an hour
would), as a duplicate that must do nothing. Either way the new worker's reaper finds the stale
heartbeat and sends the release again, and the redelivery resumes from what was stored.

The kill point is made deterministic by holding a lock the worker needs, never by a hook in the
application: the release's row (on SQLite, the whole database) so that the worker has claimed the
release but cannot store its answers; or the series row (PostgreSQL) so that it has stored them
and waits to publish. Small heartbeat settings in the workers' environment keep each test short.
"""

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest
import requests

from tests.processes import (
    REDIS_URL,
    Stack,
    api_token,
    kill,
    postgres_redis_env,
    sqlite_env,
    start_stack,
)

pytestmark = [pytest.mark.worker]

# Large enough that reading and computing take about a second, the time the test has to take its
# lock between the worker's claim and its store.
ROWS = 200_000
TABLE = (
    "patient,age,sex\n"
    + "".join(f"P{i:06d},{(i * 37) % 90 + 5},{'F' if i % 3 else 'M'}\n" for i in range(ROWS))
).encode()
QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "sum", "column": "age"},
    {"kind": "mean", "column": "age"},
]
FAST_HEARTBEAT = {"RELEASE_HEARTBEAT_SECONDS": "0.5", "RELEASE_STALE_SECONDS": "3"}


class AppDatabase:
    """The application's database, read (and locked) directly by the test."""

    def __init__(self, env: dict[str, str]) -> None:
        self.url = env["DATABASE_URL"]
        self.is_sqlite = self.url.startswith("sqlite:///")
        self.reader = self._connect()

    def _connect(self) -> Any:
        if self.is_sqlite:
            return sqlite3.connect(
                self.url.removeprefix("sqlite:///"), isolation_level=None, timeout=30
            )
        import psycopg

        return psycopg.connect(self.url.replace("postgres://", "postgresql://"), autocommit=True)

    def rows(self, sql: str, *params: Any) -> list[tuple]:
        if self.is_sqlite:
            sql = sql.replace("%s", "?")
        return list(self.reader.execute(sql, params).fetchall())

    def value(self, sql: str, *params: Any) -> Any:
        return self.rows(sql, *params)[0][0]

    @contextmanager
    def locked(self, sql: str, *params: Any) -> Iterator[None]:
        """Hold ``sql``'s row locks (on SQLite: the database's write lock) until the block ends."""
        connection = self._connect()
        try:
            if self.is_sqlite:
                connection.execute("BEGIN IMMEDIATE")
            else:
                connection.autocommit = False
                connection.execute(sql, params)
            yield
        finally:
            connection.rollback()
            connection.close()

    def answers(self, release_id: int) -> list[tuple[int, dict]]:
        return [
            (position, json.loads(s) if isinstance(s, str) else s)
            for position, s in self.rows(
                "SELECT position, statistic FROM releases_noisyanswer "
                "WHERE release_id = %s ORDER BY position",
                release_id,
            )
        ]

    def audit_count(self, action: str, object_type: str, object_id: Any) -> int:
        return self.value(
            "SELECT COUNT(*) FROM releases_auditevent "
            "WHERE action = %s AND object_type = %s AND object_id = %s",
            action,
            object_type,
            str(object_id),
        )

    def close(self) -> None:
        self.reader.close()


def wait_until(condition: Callable[[], Any], what: str, stack: Stack, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while not (result := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{stack.logs()}"
        time.sleep(0.02)
    return result


def fast(env: dict[str, str]) -> dict[str, str]:
    return {**env, **FAST_HEARTBEAT}


@pytest.fixture
def sqlite_stack(tmp_path, stacks) -> Iterator[Stack]:
    yield from start_stack(fast(sqlite_env(tmp_path)), tmp_path, stacks)


@pytest.fixture
def postgres_redis_stack(tmp_path, stacks) -> Iterator[Stack]:
    with postgres_redis_env(tmp_path) as env:
        yield from start_stack(fast(env), tmp_path, stacks)


def submit_release(stack: Stack, curator: dict[str, str]) -> tuple[int, int]:
    url = stack.base_url + "/api/v1"
    upload = requests.post(
        f"{url}/datasets/",
        headers=curator,
        data={"name": "Large table", "budget_epsilon": "10", "declared_size": str(ROWS)},
        files={"file": ("large.csv", TABLE, "text/csv")},
        timeout=120,
    )
    assert upload.status_code == 201, upload.text
    dataset_id = upload.json()["id"]
    schema = requests.put(
        f"{url}/datasets/{dataset_id}/schema/",
        headers=curator,
        timeout=10,
        json={
            "columns": {
                "age": {"kind": "numeric", "lower": 0, "upper": 100},
                "sex": {"kind": "categorical", "categories": ["F", "M"]},
            }
        },
    )
    assert schema.status_code == 200, schema.text
    draft = requests.post(
        f"{url}/releases/",
        headers=curator,
        timeout=30,
        json={
            "dataset": dataset_id,
            "title": "Killed mid-release",
            "definition": {"kind": "pure_dp", "epsilon": 4},
            "queries": QUERIES,
        },
    )
    assert draft.status_code == 201, draft.text
    release_id = draft.json()["id"]
    submit = requests.post(f"{url}/releases/{release_id}/submit/", headers=curator, timeout=30)
    assert submit.status_code == 202, submit.text
    return dataset_id, release_id


def kill_worker_mid_release(stack: Stack, kill_point: str) -> None:
    """Submit, let the first worker claim the release, SIGKILL it at ``kill_point`` and start a
    second worker; check that the release ends published, drawn and charged once."""
    db = AppDatabase(stack.env)
    try:
        _kill_and_recover(stack, db, kill_point)
    finally:
        db.close()


def _kill_and_recover(stack: Stack, db: AppDatabase, kill_point: str) -> None:
    curator = api_token(stack, "e2e-curator")
    url = stack.base_url + "/api/v1"
    first_worker = stack.worker

    # given a release claimed by the first worker, which is computing it
    dataset_id, release_id = submit_release(stack, curator)
    status = "SELECT status FROM releases_release WHERE id = %s"
    wait_until(lambda: db.rows(status, release_id)[0][0] == "running", "the first claim", stack)

    # when the first worker is killed with SIGKILL at the kill point
    lock: AbstractContextManager[None]
    if kill_point == "before_store":
        lock = db.locked("SELECT id FROM releases_release WHERE id = %s FOR UPDATE", release_id)
    else:
        lock = db.locked(
            "SELECT s.id FROM releases_releaseseries s JOIN releases_release r "
            "ON r.series_id = s.id WHERE r.id = %s FOR UPDATE OF s",
            release_id,
        )
    with lock:
        if kill_point == "before_store":
            assert db.answers(release_id) == [], "the table is too small to stop before the store"
        else:
            wait_until(lambda: len(db.answers(release_id)) == len(QUERIES), "the store", stack)
            wait_until(
                lambda: db.value(
                    "SELECT COUNT(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND wait_event_type = 'Lock'"
                ),
                "the worker to wait for the series row in its publication",
                stack,
            )
        stored = db.answers(release_id)
        kill(first_worker)
    assert first_worker.returncode == -9
    assert db.rows(status, release_id)[0][0] == "running"

    if "redis" in stack.env["CELERY_BROKER_URL"]:
        import redis

        # The killed delivery was never acknowledged; Redis gives it back once the visibility
        # timeout (an hour by default) has passed since delivery. Age it by that hour.
        broker = redis.Redis.from_url(REDIS_URL)
        unacked = broker.zrange("unacked_index", 0, -1)
        assert len(unacked) == 1
        broker.zadd("unacked_index", {unacked[0]: 0})

    # and a new worker starts
    second_worker = stack.start_worker("second-worker")

    # then its reaper sends the release again and the new delivery publishes it
    def finished() -> dict | None:
        release = requests.get(f"{url}/releases/{release_id}/", headers=curator, timeout=10)
        body = release.json()
        return body if body["status"] in ("published", "failed") else None

    release = wait_until(finished, "the release to finish", stack)
    assert release["status"] == "published", release["failure_reason"]
    assert release["version"] == 1
    assert int(release["worker"].rsplit(":", 1)[1]) == second_worker.pid
    assert db.value("SELECT deliveries FROM releases_release WHERE id = %s", release_id) == 1

    if "redis" in stack.env["CELERY_BROKER_URL"]:
        # and the restored duplicate delivery ran too, and did nothing
        wait_until(
            lambda: (stack.log_dir / "second-worker.log").read_text().count("succeeded in") >= 2,
            "the restored delivery",
            stack,
        )

    # and the answers were drawn once: the ones stored before the kill, if any, are published
    answers = db.answers(release_id)
    assert len(answers) == len(QUERIES)
    if kill_point == "after_store":
        assert answers == stored
    (entry,) = requests.get(f"{url}/catalog/", timeout=10).json()["results"]
    version = requests.get(entry["url"], timeout=10).json()
    assert [s["value"] for s in version["statistics"]] == [s["value"] for _, s in answers]
    assert db.audit_count("task.noise_drawn", "release", release_id) == 1
    assert db.audit_count("task.started", "release", release_id) == 2
    assert db.audit_count("task.redelivered", "release", release_id) == 1
    assert db.audit_count("release.published", "release", release_id) == 1

    # and the budget was charged once
    entry_id, state = db.rows(
        "SELECT id, state FROM releases_ledgerentry WHERE release_id = %s", release_id
    )[0]
    assert state == "spent"
    assert db.audit_count("budget.spent", "ledger_entry", entry_id) == 1
    assert db.audit_count("budget.returned", "ledger_entry", entry_id) == 0
    budget = requests.get(f"{url}/datasets/{dataset_id}/", headers=curator, timeout=10).json()
    assert budget["budget"] == {"total": "10", "spent": "4", "reserved": "0", "remaining": "6"}


def test_worker_killed_before_storing_is_replaced_on_sqlite_and_sqlalchemy_broker(sqlite_stack):
    kill_worker_mid_release(sqlite_stack, "before_store")


@pytest.mark.services
@pytest.mark.parametrize("kill_point", ["before_store", "after_store"])
def test_worker_killed_mid_release_is_replaced_on_postgresql_and_redis(
    postgres_redis_stack, kill_point
):
    kill_worker_mid_release(postgres_redis_stack, kill_point)
