"""A daemon thread recovers after PostgreSQL drops its connection (found by review: after a
restart or a terminated backend every tick failed forever, so the reaper and heartbeats stopped)."""

import json

import pytest

TICKER_SCRIPT = """
import json, os, time
import psycopg
from django.db import connection
from releases.services.heartbeat import Ticker

admin = psycopg.connect(os.environ["DATABASE_URL"].replace("postgres://", "postgresql://"),
                        autocommit=True)
outcomes = []

def action():
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
    except Exception as error:
        outcomes.append(type(error).__name__)
        raise
    outcomes.append(pid)
    if len(outcomes) == 1:
        # the server drops this thread's connection between two ticks
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        while admin.execute(
            "SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]
        ).fetchone():
            time.sleep(0.05)
    return len(outcomes) < 3

ticker = Ticker(name="test", interval=0.2, action=action, run_first=True)
ticker.start()
ticker.join(10)
print("RESULT" + json.dumps(outcomes))
"""


@pytest.mark.services
def test_on_postgresql_a_daemon_thread_reconnects_after_its_backend_is_terminated(tmp_path):
    # given a fresh PostgreSQL database
    from tests.processes import manage, postgres_redis_env

    with postgres_redis_env(tmp_path) as env:
        # when a ticker's connection is terminated by the server after its first tick
        output = manage(env, "shell", "-c", TICKER_SCRIPT)

    # then the next two ticks run on a new connection instead of failing (each outcome is a
    # backend pid, or the name of the error the tick raised)
    outcomes = json.loads(output.split("RESULT", 1)[1])
    assert [type(outcome).__name__ for outcome in outcomes] == ["int", "int", "int"], outcomes
    assert outcomes[1] != outcomes[0]
