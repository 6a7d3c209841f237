"""Real processes the worker and browser tests start: a Celery worker, stopped politely."""

import signal
import subprocess
import sys
from pathlib import Path

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
