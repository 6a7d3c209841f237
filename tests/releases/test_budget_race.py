"""Twenty submissions race for the last part of a dataset's budget on PostgreSQL, from twenty
threads of one process and from twenty separate processes: the ε accepted never exceeds the
total, and every submission that fits is accepted.

The racers are real processes with their own database connections (not the test's), started
together: each signals that it is ready, then waits for one "go" file."""

import json
import subprocess
import sys
import time
from decimal import Decimal

import pytest

from tests.processes import ROOT, postgres_redis_env, stop_all

pytestmark = [pytest.mark.services]

RACERS = 20
BUDGET = Decimal("0.35")
EACH = Decimal("0.1")
# 0.35 holds three submissions of 0.1: the fourth would overspend.
ACCEPTABLE = 3

SETUP = """
import json, sys, django
django.setup()
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create
from tests.conftest import CLINIC_SCHEMA, csv_upload, draft_body, make_user
curator = make_user("racer", "curator")
dataset = dataset_create(
    owner=curator, name="Race", upload=csv_upload(), budget_epsilon=sys.argv[1]
)
dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
ids = [
    release_draft_create(
        user=curator, dataset=dataset, title=f"Race {i}",
        definition={"kind": "pure_dp", "epsilon": float(sys.argv[2])},
        queries=draft_body(dataset.pk)["queries"],
    ).pk
    for i in range(int(sys.argv[3]))
]
print(json.dumps({"dataset": dataset.pk, "releases": ids}))
"""

# Submits the releases given, one per thread, once the go file exists; prints each outcome.
RACER = """
import json, sys, threading, time, django
from pathlib import Path
django.setup()
from django.db import connection
from releases.models import Release
from releases.services.releases import release_submit
ids, ready, go = json.loads(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
if sys.argv[4:] == ["unlocked"]:
    # The negative control: no row locks, and time between reading the budget and reserving.
    from django.db.models.query import QuerySet
    import releases.services.releases as submission
    QuerySet.select_for_update = lambda self, *args, **kwargs: self
    check = submission._refusal
    def slow_check(*args, **kwargs):
        refusal = check(*args, **kwargs)
        time.sleep(0.3)
        return refusal
    submission._refusal = slow_check
releases = {pk: Release.objects.select_related("created_by").get(pk=pk) for pk in ids}
connection.close()
outcomes = {}

def submit(pk):
    release = releases[pk]
    try:
        release_submit(release=release, user=release.created_by)
        outcomes[pk] = "accepted"
    except Exception as error:
        outcomes[pk] = f"{type(error).__name__}: {error}"
    finally:
        connection.close()

threads = [threading.Thread(target=submit, args=(pk,)) for pk in ids]
ready.touch()
while not go.exists():
    time.sleep(0.005)
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(outcomes))
"""

TOTALS = """
import json, django
django.setup()
from django.db.models import Sum
from releases.models import BudgetMovement, LedgerEntry, Release
from releases.selectors import dataset_budget
from releases.models import Dataset
live = LedgerEntry.objects.exclude(state=LedgerEntry.State.RETURNED)
epsilon, _ = dataset_budget(Dataset.objects.get())
print(json.dumps({
    "entries": live.count(),
    "ledger_epsilon": str(live.aggregate(total=Sum("epsilon"))["total"]),
    "committed": str(epsilon.spent + epsilon.reserved),
    "total": str(epsilon.total),
    "queued": Release.objects.filter(status="queued").count(),
    "reservations": BudgetMovement.objects.filter(kind="reservation").count(),
    "journal_epsilon": str(
        BudgetMovement.objects.filter(kind="reservation").aggregate(total=Sum("epsilon"))["total"]
    ),
}))
"""


def python(env, script: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip().splitlines()[-1]


def race(env, tmp_path, groups: list[list[int]], *extra: str) -> dict[int, str]:
    """Start one racer process per group of release ids, release them at once, and collect
    every submission's outcome."""
    ready_dir, go = tmp_path / "ready", tmp_path / "go"
    ready_dir.mkdir()
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                RACER,
                json.dumps(group),
                str(ready_dir / str(i)),
                str(go),
                *extra,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, group in enumerate(groups)
    ]
    try:
        deadline = time.monotonic() + 240
        while len(list(ready_dir.iterdir())) < len(groups):
            failed = [p for p in processes if p.poll() not in (None, 0)]
            assert not failed, failed[0].stderr.read()
            assert time.monotonic() < deadline, "racers did not start"
            time.sleep(0.05)
        go.touch()
        outcomes: dict[int, str] = {}
        for process in processes:
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
            outcomes.update(
                {int(k): v for k, v in json.loads(out.strip().splitlines()[-1]).items()}
            )
        return outcomes
    finally:
        stop_all(processes)


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_twenty_racing_submissions_never_overspend_on_postgresql(tmp_path, stacks, mode):
    with postgres_redis_env(tmp_path) as env:
        stacks.prepare(env)  # migrated
        env["CELERY_TASK_ALWAYS_EAGER"] = "1"  # the upload's conversion, inline in the setup
        made = json.loads(python(env, SETUP, str(BUDGET), str(EACH), str(RACERS)))
        # Submissions only queue their release: no worker runs, nothing is spent yet.
        env["CELERY_TASK_ALWAYS_EAGER"] = "0"
        ids = made["releases"]
        groups = [ids] if mode == "threads" else [[pk] for pk in ids]

        outcomes = race(env, tmp_path, groups)
        totals = json.loads(python(env, TOTALS))

    accepted = [pk for pk, outcome in outcomes.items() if outcome == "accepted"]
    refused = [outcome for outcome in outcomes.values() if outcome != "accepted"]
    assert len(outcomes) == RACERS
    assert len(accepted) == ACCEPTABLE, outcomes
    assert all(
        outcome.startswith("SubmissionRefused: Not enough privacy budget") for outcome in refused
    ), refused
    assert Decimal(totals["ledger_epsilon"]) == EACH * ACCEPTABLE <= BUDGET
    assert Decimal(totals["committed"]) == EACH * ACCEPTABLE
    assert (totals["entries"], totals["queued"]) == (ACCEPTABLE, ACCEPTABLE)
    # and the ledger's journal has one reservation row per accepted submission, no more
    assert totals["reservations"] == ACCEPTABLE
    assert Decimal(totals["journal_epsilon"]) == EACH * ACCEPTABLE


def test_the_race_overspends_without_the_row_locks(tmp_path, stacks):
    """The negative control: the same race with the locks taken away (and a moment between
    reading the budget and reserving) accepts more than the budget holds, so the test above
    would catch a submission path that lost its lock."""
    with postgres_redis_env(tmp_path) as env:
        stacks.prepare(env)
        env["CELERY_TASK_ALWAYS_EAGER"] = "1"
        made = json.loads(python(env, SETUP, str(BUDGET), str(EACH), str(RACERS)))
        env["CELERY_TASK_ALWAYS_EAGER"] = "0"

        outcomes = race(env, tmp_path, [made["releases"]], "unlocked")
        totals = json.loads(python(env, TOTALS))

    accepted = [pk for pk, outcome in outcomes.items() if outcome == "accepted"]
    assert len(accepted) > ACCEPTABLE
    assert Decimal(totals["ledger_epsilon"]) > BUDGET
