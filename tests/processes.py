"""Real processes the worker and browser tests start: a web server, Celery workers (stopped
politely, or killed), on a SQLite file with kombu's SQLAlchemy broker or on PostgreSQL + Redis."""

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from tests.conftest import skip_or_fail

ROOT = Path(__file__).resolve().parents[1]
# --pool=solo runs each task in the worker's main process, so its PID is the one we started.
CELERY_WORKER_COMMAND = [
    sys.executable,
    "-m",
    "celery",
    "-A",
    "config",
    "worker",
    "--pool=solo",
    "--concurrency=1",
    "--loglevel=INFO",
    "--without-heartbeat",
    "--without-gossip",
    "--without-mingle",
]
POSTGRES_ADMIN_URL = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/9")


def start_celery_worker(env: dict[str, str], log) -> subprocess.Popen:
    return subprocess.Popen(
        CELERY_WORKER_COMMAND, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )


def stop(process: subprocess.Popen) -> None:
    """SIGTERM, then a kill if it has not exited within 20 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def kill(process: subprocess.Popen) -> None:
    """SIGKILL: the process gets no chance to acknowledge, restore or clean anything up."""
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=20)


@dataclass
class Stack:
    base_url: str
    web: subprocess.Popen
    worker: subprocess.Popen
    env: dict[str, str]
    log_dir: Path
    processes: list[subprocess.Popen] = field(default_factory=list)
    log_files: list = field(default_factory=list)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-4000:]}" for p in sorted(self.log_dir.glob("*.log"))
        )

    def start_worker(self, name: str) -> subprocess.Popen:
        """Another worker process on the same database and broker; it becomes ``worker``."""
        log = (self.log_dir / f"{name}.log").open("w")
        self.log_files.append(log)
        self.worker = start_celery_worker(self.env, log)
        self.processes.append(self.worker)
        return self.worker


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env: dict[str, str], *args: str) -> str:
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


def base_env(tmp_path: Path) -> dict[str, str]:
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


def sqlite_env(tmp_path: Path) -> dict[str, str]:
    env = base_env(tmp_path)
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'app.sqlite3'}"
    env["CELERY_BROKER_URL"] = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    return env


@contextmanager
def postgres_redis_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A fresh PostgreSQL database and an empty Redis database for one test, dropped after it;
    skips (or fails under REQUIRE_SERVICES=1) when the servers do not answer."""
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
    env = base_env(tmp_path)
    env["DATABASE_URL"] = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    env["CELERY_BROKER_URL"] = REDIS_URL
    try:
        yield env
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
        redis.Redis.from_url(REDIS_URL).flushdb()


def web_server_command(server: str, port: int) -> list[str]:
    """Django's development server, or the production WSGI server README documents."""
    if server == "gunicorn":
        return [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
        ]
    return [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]


def start_stack(
    env: dict[str, str], tmp_path: Path, *, web_server: str = "runserver"
) -> Iterator[Stack]:
    """Migrate, create an e2e curator and auditor, start a worker and a web server (Django's, or
    gunicorn); stop both (and any worker started later) afterwards."""
    manage(env, "migrate", "--noinput")
    manage(env, "create_user", "e2e-curator", "--role", "curator", "--password", "e2e-pass-123")
    manage(env, "create_user", "e2e-auditor", "--role", "compliance", "--password", "e2e-pass-123")
    port = free_port()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    worker_log = (log_dir / "worker.log").open("w")
    web_log = (log_dir / "web.log").open("w")
    worker = start_celery_worker(env, worker_log)
    web = subprocess.Popen(
        web_server_command(web_server, port),
        cwd=ROOT,
        env=env,
        stdout=web_log,
        stderr=subprocess.STDOUT,
    )
    stack = Stack(
        f"http://127.0.0.1:{port}", web, worker, env, log_dir, [web, worker], [worker_log, web_log]
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{stack.base_url}/api/v1/catalog/", timeout=5)
                break
            except (requests.ConnectionError, requests.Timeout):
                if time.monotonic() > deadline or web.poll() is not None:
                    pytest.fail(f"web server did not start\n{stack.logs()}")
                time.sleep(0.3)
        yield stack
    finally:
        for process in stack.processes:
            stop(process)
        for log in stack.log_files:
            log.close()


def api_token(stack: Stack, username: str, password: str = "e2e-pass-123") -> dict[str, str]:
    response = requests.post(
        f"{stack.base_url}/api/v1/auth/token/",
        data={"username": username, "password": password},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return {"Authorization": f"Token {response.json()['token']}"}
