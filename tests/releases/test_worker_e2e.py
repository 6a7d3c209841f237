"""End to end on real parts: a web server process, a separate Celery worker process, and a real
broker and database (a SQLite file with kombu's SQLAlchemy transport; PostgreSQL with Redis).

The test talks HTTP only. It asserts the release was computed in the worker's process, which
fails if tasks ever run eagerly inside the web server.
"""

import csv
import hashlib
import io
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.conftest import skip_or_fail
from tests.processes import ROOT, start_celery_worker, stop

pytestmark = [pytest.mark.worker]

POSTGRES_ADMIN_URL = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/9")

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


@dataclass
class Stack:
    base_url: str
    web: subprocess.Popen
    worker: subprocess.Popen
    env: dict[str, str]
    log_dir: Path

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-4000:]}" for p in sorted(self.log_dir.glob("*.log"))
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _start(env: dict[str, str], tmp_path: Path) -> Iterator[Stack]:
    _manage(env, "migrate", "--noinput")
    _manage(env, "create_user", "e2e-curator", "--role", "curator", "--password", "e2e-pass-123")
    _manage(env, "create_user", "e2e-auditor", "--role", "compliance", "--password", "e2e-pass-123")
    port = _free_port()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    worker_log = (log_dir / "worker.log").open("w")
    web_log = (log_dir / "web.log").open("w")
    worker = start_celery_worker(env, worker_log)
    web = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=web_log,
        stderr=subprocess.STDOUT,
    )
    stack = Stack(f"http://127.0.0.1:{port}", web, worker, env, log_dir)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{stack.base_url}/api/v1/catalog/", timeout=2)
                break
            except requests.ConnectionError:
                if time.monotonic() > deadline or web.poll() is not None:
                    pytest.fail(f"web server did not start\n{stack.logs()}")
                time.sleep(0.3)
        yield stack
    finally:
        for process in (web, worker):
            stop(process)
        worker_log.close()
        web_log.close()


def _base_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "VAR_DIR": str(tmp_path / "var"),
            "DEBUG": "1",
            "SECRET_KEY": secrets.token_urlsafe(32),
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@pytest.fixture
def sqlite_stack(tmp_path) -> Iterator[Stack]:
    env = _base_env(tmp_path)
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'app.sqlite3'}"
    env["CELERY_BROKER_URL"] = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    yield from _start(env, tmp_path)


@pytest.fixture
def postgres_redis_stack(tmp_path) -> Iterator[Stack]:
    try:
        import psycopg
        import redis

        admin = psycopg.connect(
            POSTGRES_ADMIN_URL.replace("postgres://", "postgresql://"),
            autocommit=True,
            connect_timeout=3,
        )
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except Exception as error:
        skip_or_fail(f"PostgreSQL or Redis is not reachable ({type(error).__name__}: {error})")
    name = f"gdr_e2e_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    redis.Redis.from_url(REDIS_URL).flushdb()
    env = _base_env(tmp_path)
    env["DATABASE_URL"] = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    env["CELERY_BROKER_URL"] = REDIS_URL
    try:
        yield from _start(env, tmp_path)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
        redis.Redis.from_url(REDIS_URL).flushdb()


def _token(stack: Stack, username: str) -> dict[str, str]:
    response = requests.post(
        f"{stack.base_url}/api/v1/auth/token/",
        data={"username": username, "password": "e2e-pass-123"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return {"Authorization": f"Token {response.json()['token']}"}


def _walk_release_lifecycle(stack: Stack) -> None:
    curator = _token(stack, "e2e-curator")
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
    auditor = _token(stack, "e2e-auditor")
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
