"""Real processes the worker and browser tests start: a web server, Celery workers (stopped
politely, or killed), on a SQLite file with kombu's SQLAlchemy broker or on PostgreSQL + Redis."""

import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import requests

from tests.conftest import skip_or_fail

if TYPE_CHECKING:
    import psycopg

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
E2E_PASSWORD = "e2e-pass-123"
E2E_USERS = (("e2e-curator", "curator"), ("e2e-auditor", "compliance"))


def start_celery_worker(env: dict[str, str], log) -> subprocess.Popen:
    return subprocess.Popen(
        CELERY_WORKER_COMMAND, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )


def stop(process: subprocess.Popen) -> None:
    """SIGTERM, then a kill if it has not exited within 20 s."""
    stop_all([process])


def stop_all(processes: Iterable[subprocess.Popen]) -> None:
    """``stop`` for several processes at once: all are signalled before any is waited for, so
    their shutdowns overlap."""
    processes = list(processes)
    terminate(processes)
    wait_or_kill(processes)


def terminate(processes: Iterable[subprocess.Popen]) -> None:
    """SIGTERM to each process still running: Celery's warm shutdown, a web server's stop."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)


def wait_or_kill(processes: Iterable[subprocess.Popen], seconds: float = 20) -> None:
    """Wait for processes already signalled; kill those still running after ``seconds``."""
    deadline = time.monotonic() + seconds
    for process in processes:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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


def _python(env: dict[str, str], *args: str) -> str:
    """``python *args`` in the project's folder; its output, after asserting it succeeded."""
    result = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def manage(env: dict[str, str], *args: str) -> str:
    return _python(env, "manage.py", *args)


def manage_in_one_process(env: dict[str, str], *commands: tuple[str, ...]) -> None:
    """Management commands, in order, in one process: each new process spends about 2 s
    importing the app before it does anything."""
    script = (
        "import json, sys, django\n"
        "from django.core.management import call_command\n"
        "django.setup()\n"
        "for command in json.loads(sys.argv[1]):\n"
        "    call_command(*command)\n"
    )
    _python(env, "-c", script, json.dumps(commands))


def _session_audit_key() -> str:
    from django.conf import settings

    return settings.AUDIT_HMAC_KEY


def base_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "VAR_DIR": str(tmp_path / "var"),
            "DEBUG": "1",
            "SECRET_KEY": secrets.token_urlsafe(32),
            # One audit key for every process of the test session, this one included: a
            # worker's events and the tests' reads of the trail verify under the same key, and
            # database templates copied between stacks keep verifying.
            "AUDIT_HMAC_KEY": _session_audit_key(),
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


def postgres_admin() -> "psycopg.Connection":
    """An autocommit connection to PostgreSQL's maintenance database, to create and drop others."""
    import psycopg

    return psycopg.connect(
        POSTGRES_ADMIN_URL.replace("postgres://", "postgresql://"),
        autocommit=True,
        connect_timeout=3,
    )


@contextmanager
def postgres_redis_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A fresh PostgreSQL database and an empty Redis database for one test, dropped after it;
    skips (or fails under REQUIRE_SERVICES=1) when the servers do not answer."""
    try:
        import redis

        admin = postgres_admin()
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


def database_setup(env: dict[str, str]) -> None:
    """Migrate ``env``'s database and create the e2e curator and auditor, in one process."""
    manage_in_one_process(
        env,
        ("migrate", "--noinput"),
        *(
            ("create_user", username, "--role", role, "--password", E2E_PASSWORD)
            for username, role in E2E_USERS
        ),
    )


class Stacks:
    """What the session's stacks share.

    Database templates: a stack's database is made ready (migrated, with the e2e curator and
    auditor) as a copy of a template the session makes once per kind, by the same commands.
    Made for each stack it costs ~6 s of Django processes; copied, a fraction of a second.
    Nothing in it depends on the stack's other settings (password hashes use no secret, and
    every stack's audit trail is keyed with the session's one AUDIT_HMAC_KEY).

    Processes still shutting down: a stack whose broker and database are its own files lets its
    processes finish their warm shutdown (a worker on the SQLAlchemy broker ends its poll first,
    ~4 s) while the next tests run; they are waited for when the session ends."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sqlite_template: Path | None = None
        self.postgres_template: str | None = None
        self.stopping: list[subprocess.Popen] = []

    def stop_later(self, processes: Iterable[subprocess.Popen]) -> None:
        """Signal ``processes`` to stop now; wait for them at the end of the session."""
        processes = list(processes)
        terminate(processes)
        self.stopping = [p for p in self.stopping if p.poll() is None] + processes

    def prepare(self, env: dict[str, str]) -> None:
        """Fill ``env``'s database, new and empty, with a copy of the template."""
        url = env["DATABASE_URL"]
        if url.startswith("sqlite:///"):
            self._copy_sqlite(Path(url.removeprefix("sqlite:///")))
        else:
            self._copy_postgres(url.rsplit("/", 1)[1])

    def _copy_sqlite(self, target: Path) -> None:
        if self.sqlite_template is None:
            (self.root / "sqlite").mkdir()
            template_env = sqlite_env(self.root / "sqlite")
            database_setup(template_env)
            self.sqlite_template = Path(template_env["DATABASE_URL"].removeprefix("sqlite:///"))
        # SQLite's backup API copies a consistent database whatever its journal holds.
        source, copy = sqlite3.connect(self.sqlite_template), sqlite3.connect(target)
        try:
            source.backup(copy)
        finally:
            source.close()
            copy.close()

    def _copy_postgres(self, name: str) -> None:
        import psycopg

        with postgres_admin() as admin:
            if self.postgres_template is None:
                template = f"gdr_e2e_template_{secrets.token_hex(4)}"
                admin.execute(f'CREATE DATABASE "{template}"')
                template_env = base_env(self.root / "postgres")
                template_env["DATABASE_URL"] = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{template}"
                try:
                    database_setup(template_env)
                except BaseException:
                    admin.execute(f'DROP DATABASE "{template}" WITH (FORCE)')
                    raise
                self.postgres_template = template
            admin.execute(f'DROP DATABASE "{name}"')
            # A template must have no session: the setup process's may take a moment to end.
            deadline = time.monotonic() + 10
            while True:
                try:
                    admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.postgres_template}"')
                    return
                except psycopg.errors.ObjectInUse:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)

    def close(self) -> None:
        """Wait for the processes still stopping; drop the PostgreSQL template, if one was made
        (SQLite's goes with its directory)."""
        wait_or_kill(self.stopping)
        if self.postgres_template is not None:
            with postgres_admin() as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{self.postgres_template}" WITH (FORCE)')


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
    env: dict[str, str],
    tmp_path: Path,
    stacks: Stacks,
    *,
    web_server: str = "runserver",
) -> Iterator[Stack]:
    """Make the database ready (migrated, with an e2e curator and auditor: a copy of the
    session's template), start a worker and a web server (Django's, or gunicorn); stop both (and
    any worker started later) afterwards."""
    stacks.prepare(env)
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
        if env["CELERY_BROKER_URL"].startswith("sqla+sqlite:"):
            stacks.stop_later(stack.processes)
        else:
            # A shared broker (Redis): a worker still shutting down could take the next test's
            # task, so it must be gone first.
            stop_all(stack.processes)
        for log in stack.log_files:
            log.close()


def api_token(stack: Stack, username: str, password: str = E2E_PASSWORD) -> dict[str, str]:
    response = requests.post(
        f"{stack.base_url}/api/v1/auth/token/",
        data={"username": username, "password": password},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return {"Authorization": f"Token {response.json()['token']}"}
