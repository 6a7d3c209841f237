"""Public pages under concurrent clients, through the production server (gunicorn).

Sets up a fresh database (SQLite by default, or ``--database-url``) with the demo table and a few
published releases, starts gunicorn on loopback, then runs ``--clients`` concurrent clients (50),
each fetching the public pages in turn until ``--requests`` requests in all (bounded in count and
in time by ``--seconds``). Prints p50, p95 and max latency per page, and the same pages fetched by
one client alone in the same run as the baseline (the ratio says what concurrency costs).

    .venv/bin/python bench/serve.py [--clients 50] [--requests 3000] [--workers 4]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def setup(env: dict[str, str], releases: int) -> None:
    """Demo table, schema and ``releases`` published releases, computed in this process's
    child (tasks run eagerly there: the benchmark measures serving, not computing)."""
    script = f"""
import django
django.setup()
from django.core.management import call_command
from releases.models import Dataset
from releases.services.releases import release_draft_create, release_submit
from releases.services.runs import release_run
call_command("migrate", "--noinput", verbosity=0)
call_command("demo_setup", verbosity=0)
dataset = Dataset.objects.get()
for number in range({releases}):
    draft = release_draft_create(
        user=dataset.owner, dataset=dataset, title=f"Clinic statistics {{number}}",
        definition={{"kind": "pure_dp", "epsilon": 0.1}},
        queries=[{{"kind": "count"}}, {{"kind": "histogram", "column": "diagnosis"}},
                 {{"kind": "mean", "column": "age"}}],
    )
    release_submit(release=draft, user=dataset.owner)
    release_run(release_id=draft.pk, worker="bench")
"""
    subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**env, "CELERY_TASK_ALWAYS_EAGER": "0"},
        check=True,
        stdout=subprocess.DEVNULL,
    )


def pages(base: str) -> dict[str, str]:
    catalog = requests.get(f"{base}/api/v1/catalog/", timeout=30).json()["results"]
    version = requests.get(catalog[0]["url"], timeout=30).json()
    html_version = f"{base}/catalog/{catalog[0]['slug']}/v{catalog[0]['version']}/"
    return {
        "catalog page": f"{base}/catalog/",
        "release page": html_version,
        "catalog API": f"{base}/api/v1/catalog/",
        "version API": catalog[0]["url"],
        "CSV download": next(f["url"] for f in version["files"] if f["format"] == "csv"),
    }


def load(urls: dict[str, str], *, clients: int, total: int, seconds: float) -> dict[str, list]:
    """``clients`` threads fetch the pages round robin until ``total`` requests or ``seconds``."""
    latencies: dict[str, list[float]] = defaultdict(list)
    lock = threading.Lock()
    counter = iter(range(total))
    deadline = time.monotonic() + seconds
    names = list(urls)
    errors: list[str] = []

    def client() -> None:
        session = requests.Session()
        for number in counter:
            if time.monotonic() > deadline:
                return
            name = names[number % len(names)]
            started = time.perf_counter()
            response = session.get(urls[name], timeout=30)
            elapsed = time.perf_counter() - started
            with lock:
                if response.status_code != 200:
                    errors.append(f"{name}: {response.status_code}")
                latencies[name].append(elapsed)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise SystemExit(f"{len(errors)} failed requests, e.g. {errors[:3]}")
    return latencies


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--releases", type=int, default=5)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    if not 1 <= args.clients <= 200 or not 1 <= args.requests <= 100_000:
        raise SystemExit("--clients 1..200 and --requests 1..100000")

    with tempfile.TemporaryDirectory() as var:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "VAR_DIR": var,
            "DEBUG": "0",
            "SECRET_KEY": "bench-only-" + "x" * 40,
            "AUDIT_HMAC_KEY": "bench-only-audit-key",
            # Plain HTTP to gunicorn on this machine; production has a TLS proxy in front.
            "SECURE_SSL_REDIRECT": "0",
            "DATABASE_URL": args.database_url or f"sqlite:///{var}/db.sqlite3",
            "CELERY_BROKER_URL": f"sqla+sqlite:///{var}/broker.sqlite3",
        }
        setup(env, args.releases)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind",
             f"127.0.0.1:{port}", "--workers", str(args.workers), "--log-level", "warning"],
            cwd=ROOT, env=env,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(200):
                try:
                    requests.get(f"{base}/api/v1/catalog/", timeout=2)
                    break
                except requests.RequestException:
                    time.sleep(0.2)
            urls = pages(base)
            alone = load(urls, clients=1, total=20 * len(urls), seconds=args.seconds)
            busy = load(urls, clients=args.clients, total=args.requests, seconds=args.seconds)
        finally:
            server.terminate()
            server.wait(timeout=30)

    count = sum(len(v) for v in busy.values())
    print(
        f"\n### Public pages: {args.clients} concurrent clients, {count} requests, gunicorn "
        f"with {args.workers} workers, DEBUG=0, {os.cpu_count()} cores\n"
    )
    print("| page | p50 alone (ms) | p50 (ms) | p95 (ms) | max (ms) | p95 / p50 alone |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in urls:
        single = statistics.median(alone[name])
        p95 = percentile(busy[name], 0.95)
        print(
            f"| {name} | {single * 1000:.1f} | {percentile(busy[name], 0.5) * 1000:.1f} | "
            f"{p95 * 1000:.1f} | {max(busy[name]) * 1000:.1f} | {p95 / single:.1f}× |"
        )


if __name__ == "__main__":
    main()
