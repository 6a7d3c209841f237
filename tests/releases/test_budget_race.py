"""Twenty submissions race for the last part of a dataset's budget on PostgreSQL, from twenty
threads of one process and from twenty separate processes: the ε accepted never exceeds the
total, and every submission that fits is accepted.

The racers are real processes with their own database connections (not the test's), started
together: each signals that it is ready, then waits for one "go". They are forked from one
process that has set Django up, made the dataset and its drafts and closed its connections, so
twenty racers cost one Python start-up, not twenty; each racer (and each of its threads) opens
a database connection of its own, which the test checks by their server process ids."""

import json
import subprocess
import sys
from decimal import Decimal

import pytest

from tests.processes import ROOT, postgres_redis_env

pytestmark = [pytest.mark.services]

RACERS = 20
BUDGET = Decimal("0.35")
EACH = Decimal("0.1")
# 0.35 holds three submissions of 0.1: the fourth would overspend.
ACCEPTABLE = 3

# One process: makes the dataset and RACERS drafts (the upload's conversion inline), forks one
# racer process per group of drafts, releases them at once, collects every submission's outcome
# and reads the totals back. Prints all of it as JSON.
RACE = """
import json, os, select, sys, threading, time, traceback
import django
django.setup()
from django.db import connection, connections
from django.db.models import Sum
from config.celery import app
from releases.models import BudgetMovement, Dataset, LedgerEntry, Release
from releases.selectors import dataset_budget
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create, release_submit
from tests.conftest import CLINIC_SCHEMA, csv_upload, draft_body, make_user

budget, each, count, mode = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

# Setup: the upload's conversion runs inline. Submissions only queue their release: no worker
# runs, nothing is spent yet.
app.conf.task_always_eager = True
curator = make_user("racer", "curator")
dataset = dataset_create(owner=curator, name="Race", upload=csv_upload(), budget_epsilon=budget)
dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
ids = [
    release_draft_create(
        user=curator, dataset=dataset, title=f"Race {i}",
        definition={"kind": "pure_dp", "epsilon": each},
        queries=draft_body(dataset.pk)["queries"],
    ).pk
    for i in range(count)
]
app.conf.task_always_eager = False

if sys.argv[5:] == ["unlocked"]:
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
groups = [ids] if mode == "threads" else [[pk] for pk in ids]
# No racer inherits an open connection: each opens its own.
connections.close_all()


def racer(group, ready, go):
    outcomes, backends = {}, {}

    def submit(pk):
        release = releases[pk]
        try:
            release_submit(release=release, user=release.created_by)
            outcomes[pk] = "accepted"
        except Exception as error:
            outcomes[pk] = f"{type(error).__name__}: {error}"
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                backends[pk] = cursor.fetchone()[0]
            connection.close()

    threads = [threading.Thread(target=submit, args=(pk,)) for pk in group]
    os.write(ready, b"r")
    os.read(go, 1)  # end of file once the parent closes its end: every racer at once
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"pid": os.getpid(), "outcomes": outcomes, "backends": backends}


ready_r, ready_w = os.pipe()
go_r, go_w = os.pipe()
children = []
for group in groups:
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            connections.close_all()
            for fd in (ready_r, go_w, out_r):
                os.close(fd)
            result = json.dumps(racer(group, ready_w, go_r)).encode()
            with os.fdopen(out_w, "wb") as out:
                out.write(result)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(out_w)
    children.append((pid, out_r))
os.close(ready_w)
os.close(go_r)

deadline = time.monotonic() + 120
ready = 0
while ready < len(groups):
    waiting = deadline - time.monotonic()
    assert waiting > 0 and select.select([ready_r], [], [], waiting)[0], "racers did not start"
    signals = os.read(ready_r, len(groups))
    assert signals, "a racer ended before it was ready"
    ready += len(signals)
os.close(go_w)  # go

racers = []
for pid, out_r in children:
    with os.fdopen(out_r, "rb") as out:
        result = out.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, f"racer {pid} failed"
    racers.append(json.loads(result))

live = LedgerEntry.objects.exclude(state=LedgerEntry.State.RETURNED)
epsilon, _ = dataset_budget(Dataset.objects.get())
reservations = BudgetMovement.objects.filter(kind="reservation")
print(json.dumps({
    "parent": os.getpid(),
    "racers": racers,
    "entries": live.count(),
    "ledger_epsilon": str(live.aggregate(total=Sum("epsilon"))["total"]),
    "committed": str(epsilon.spent + epsilon.reserved),
    "total": str(epsilon.total),
    "queued": Release.objects.filter(status="queued").count(),
    "reservations": reservations.count(),
    "journal_epsilon": str(reservations.aggregate(total=Sum("epsilon"))["total"]),
}))
"""


def race(env, mode: str, *extra: str) -> dict:
    """The race in one process tree (see RACE); its outcomes and totals."""
    result = subprocess.run(
        [sys.executable, "-c", RACE, str(BUDGET), str(EACH), str(RACERS), mode, *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def outcomes_of(result: dict, groups: int) -> dict[int, str]:
    """Every submission's outcome, after checking that the racers were ``groups`` processes,
    none of them the parent, and that every submission had a database session of its own."""
    racers = result["racers"]
    assert len(racers) == groups
    assert len({r["pid"] for r in racers} | {result["parent"]}) == groups + 1
    backends = [b for r in racers for b in r["backends"].values()]
    assert len(set(backends)) == len(backends) == RACERS
    return {int(k): v for r in racers for k, v in r["outcomes"].items()}


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_twenty_racing_submissions_never_overspend_on_postgresql(tmp_path, stacks, mode):
    with postgres_redis_env(tmp_path) as env:
        stacks.prepare(env)  # migrated
        totals = race(env, mode)

    outcomes = outcomes_of(totals, 1 if mode == "threads" else RACERS)
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
        totals = race(env, "threads", "unlocked")

    outcomes = outcomes_of(totals, 1)
    accepted = [pk for pk, outcome in outcomes.items() if outcome == "accepted"]
    assert len(accepted) > ACCEPTABLE
    assert Decimal(totals["ledger_epsilon"]) > BUDGET
