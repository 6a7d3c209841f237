"""A delivery stores answers and settles the ledger only while it holds its release; the reaper
works from the heartbeat, redelivers a release whose worker stopped and resumes it from the
stored answers, and fails it with a true reason after too many stops."""

import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db.models import Q
from django.utils import timezone

from audit.models import AuditEvent
from releases.models import LedgerEntry, NoisyAnswer, Release
from releases.selectors import dataset_budget
from releases.services import runs
from releases.services.releases import release_draft_create, release_submit
from releases.services.runs import release_fail, release_reap_stale, release_run
from tests.conftest import draft_body

LONG_AGO = timedelta(hours=2)


class WorkerKilled(BaseException):
    """Stands for SIGKILL: nothing in the run service catches it, nothing runs after it."""


@pytest.fixture(autouse=True)
def _no_heartbeat_during_in_process_runs(settings):
    # The test decides when a heartbeat is stale; a beat from the thread must not interfere.
    settings.RELEASE_HEARTBEAT_SECONDS = 3600
    settings.RELEASE_STALE_SECONDS = 60


def submitted(curator, dataset, epsilon: float, title: str = "Clinic statistics") -> Release:
    """A queued release with its reservation; no message is sent (on_commit does not run)."""
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title=title,
        definition={"kind": "pure_dp", "epsilon": epsilon},
        queries=draft_body(dataset.pk)["queries"],
    )
    return release_submit(release=draft, user=curator)


def interrupt_computation(monkeypatch, meanwhile) -> list[int]:
    """Run ``meanwhile`` while the first delivery computes (after its claim, before it stores),
    as a second process would; returns a list that counts the computations."""
    real = runs.release_stored_table
    computations: list[int] = []

    def computing(*args, **kwargs):
        computations.append(1)
        if len(computations) == 1:
            meanwhile()
        return real(*args, **kwargs)

    monkeypatch.setattr(runs, "release_stored_table", computing)
    return computations


def make_stale(release: Release) -> None:
    """The holder stopped beating long ago (and, for the old rule, was submitted long ago)."""
    Release.objects.filter(pk=release.pk).update(
        heartbeat_at=timezone.now() - LONG_AGO, submitted_at=timezone.now() - LONG_AGO
    )


def actions(release: Release, action: str) -> int:
    """How many audit events of ``action`` concern the release or its ledger entry."""
    entry_ids = [str(e.pk) for e in LedgerEntry.objects.filter(release=release)]
    return AuditEvent.objects.filter(
        Q(object_type="release", object_id=str(release.pk))
        | Q(object_type="ledger_entry", object_id__in=entry_ids),
        action=action,
    ).count()


def test_late_worker_cannot_store_or_spend_after_its_release_was_reaped_and_budget_reused(
    curator, dataset, settings, monkeypatch
):
    # given worker A computing a release of ε = 0.7 on a budget of 1, and meanwhile its heartbeat
    # goes stale, the reaper fails the release and returns its budget (first stop is the last),
    # and the curator reserves the whole budget again for another release
    settings.RELEASE_MAX_DELIVERIES = 1
    first = submitted(curator, dataset, epsilon=0.7)
    later: list[Release] = []

    def meanwhile():
        make_stale(first)
        release_reap_stale(older_than=timedelta(hours=1))
        later.append(submitted(curator, dataset, epsilon=1.0, title="Second"))

    interrupt_computation(monkeypatch, meanwhile)

    # when worker A finishes its computation and tries to store
    release_run(release_id=first.pk, worker="worker-a:1")

    # then A stored nothing and settled nothing: the ledger stays within the total
    epsilon, _ = dataset_budget(dataset)
    assert epsilon.spent + epsilon.reserved <= epsilon.total
    assert (epsilon.total, epsilon.spent, epsilon.reserved) == (Decimal(1), Decimal(0), Decimal(1))
    first.refresh_from_db()
    assert first.status == Release.Status.FAILED
    assert NoisyAnswer.objects.filter(release=first).count() == 0
    assert LedgerEntry.objects.get(release=first).state == LedgerEntry.State.RETURNED
    assert LedgerEntry.objects.get(release=later[0]).state == LedgerEntry.State.RESERVED
    assert actions(first, "budget.spent") == 0
    assert actions(first, "task.noise_drawn") == 0


def test_reaped_release_is_resumed_by_another_delivery_and_the_late_worker_stores_nothing(
    curator, dataset, monkeypatch, django_capture_on_commit_callbacks
):
    # given worker A computing, and meanwhile its heartbeat goes stale: the reaper queues the
    # release again and worker B (the new message, run here eagerly) publishes it
    release = submitted(curator, dataset, epsilon=0.5)

    def meanwhile():
        make_stale(release)
        with django_capture_on_commit_callbacks(execute=True):
            release_reap_stale(older_than=timedelta(hours=1))

    computations = interrupt_computation(monkeypatch, meanwhile)

    # when worker A finishes its computation
    release_run(release_id=release.pk, worker="worker-a:1")

    # then B's answers are the published ones, drawn and charged once
    release.refresh_from_db()
    assert len(computations) == 2
    assert release.status == Release.Status.PUBLISHED
    assert release.worker != "worker-a:1"
    assert release.deliveries == 1
    assert NoisyAnswer.objects.filter(release=release).count() == 4
    assert LedgerEntry.objects.get(release=release).state == LedgerEntry.State.SPENT
    epsilon, _ = dataset_budget(dataset)
    assert (epsilon.spent, epsilon.reserved) == (Decimal("0.5"), Decimal(0))
    assert actions(release, "task.noise_drawn") == 1
    assert actions(release, "budget.spent") == 1
    redelivered = AuditEvent.objects.get(action="task.redelivered", object_id=str(release.pk))
    assert redelivered.details == {"reason": "worker stopped", "worker": "worker-a:1", "stops": 1}


def test_release_whose_worker_died_after_storing_answers_resumes_without_drawing_again(
    curator, dataset, monkeypatch, django_capture_on_commit_callbacks
):
    # given a worker killed after it stored the answers and before it published
    release = submitted(curator, dataset, epsilon=0.5)

    def killed(*args, **kwargs):
        raise WorkerKilled

    monkeypatch.setattr(runs, "_publish", killed)
    with pytest.raises(WorkerKilled):
        release_run(release_id=release.pk, worker="worker-a:1")
    monkeypatch.undo()
    stored = list(
        NoisyAnswer.objects.filter(release=release)
        .order_by("position")
        .values_list("pk", "statistic")
    )
    assert len(stored) == 4
    assert LedgerEntry.objects.get(release=release).state == LedgerEntry.State.SPENT

    # when its heartbeat goes stale and the reaper runs
    make_stale(release)
    with django_capture_on_commit_callbacks(execute=True):
        reaped = release_reap_stale(older_than=timedelta(hours=1))

    # then the redelivery publishes exactly the stored answers, charged once
    release.refresh_from_db()
    assert [(r.release_id, r.outcome) for r in reaped] == [(release.pk, "redelivered")]
    assert release.status == Release.Status.PUBLISHED
    assert (
        list(
            NoisyAnswer.objects.filter(release=release)
            .order_by("position")
            .values_list("pk", "statistic")
        )
        == stored
    )
    document = runs.release_document(release, [s for _, s in stored])
    assert [s["value"] for s in document["statistics"]] == [s["value"] for _, s in stored]
    assert actions(release, "task.noise_drawn") == 1
    assert actions(release, "budget.spent") == 1
    assert actions(release, "budget.returned") == 0


def test_duplicate_delivery_while_another_holds_the_release_does_nothing(
    curator, dataset, monkeypatch
):
    # given worker A holding the release and computing
    release = submitted(curator, dataset, epsilon=0.5)
    seen: dict[str, object] = {}

    def meanwhile():
        # when a duplicate of the message is delivered to worker B
        release_run(release_id=release.pk, worker="worker-b:2")
        seen["answers"] = NoisyAnswer.objects.filter(release=release).count()
        seen["status"] = Release.objects.get(pk=release.pk).status
        seen["worker"] = Release.objects.get(pk=release.pk).worker

    computations = interrupt_computation(monkeypatch, meanwhile)
    release_run(release_id=release.pk, worker="worker-a:1")

    # then B computed and stored nothing; A published
    assert seen == {"answers": 0, "status": "running", "worker": "worker-a:1"}
    assert len(computations) == 1
    release.refresh_from_db()
    assert release.status == Release.Status.PUBLISHED
    assert release.worker == "worker-a:1"
    assert actions(release, "task.started") == 1


def test_reaper_leaves_a_running_release_with_a_fresh_heartbeat_alone_however_old_it_is(
    curator, dataset
):
    # given a release submitted long ago whose worker is alive (heartbeat just now)
    release = submitted(curator, dataset, epsilon=0.5)
    Release.objects.filter(pk=release.pk).update(
        status=Release.Status.RUNNING,
        claim_token="alive",
        claimed_at=timezone.now() - LONG_AGO,
        heartbeat_at=timezone.now(),
        submitted_at=timezone.now() - LONG_AGO,
    )

    # when
    reaped = release_reap_stale(older_than=timedelta(hours=1))

    # then nothing changed
    release.refresh_from_db()
    assert reaped == []
    assert (release.status, release.claim_token, release.deliveries) == ("running", "alive", 0)
    assert LedgerEntry.objects.get(release=release).state == LedgerEntry.State.RESERVED
    assert actions(release, "task.redelivered") == 0


def test_queued_release_never_claimed_gets_a_new_message_and_is_published(
    curator, dataset, django_capture_on_commit_callbacks
):
    # given a release whose message was lost: queued, never claimed, submitted long ago
    release = submitted(curator, dataset, epsilon=0.5)
    Release.objects.filter(pk=release.pk).update(submitted_at=timezone.now() - LONG_AGO)

    # when
    with django_capture_on_commit_callbacks(execute=True):
        reaped = release_reap_stale(older_than=timedelta(hours=1))

    # then a new message ran it
    release.refresh_from_db()
    assert [(r.release_id, r.outcome) for r in reaped] == [(release.pk, "redelivered")]
    assert release.status == Release.Status.PUBLISHED
    assert release.deliveries == 0
    assert LedgerEntry.objects.get(release=release).state == LedgerEntry.State.SPENT
    redelivered = AuditEvent.objects.get(action="task.redelivered", object_id=str(release.pk))
    assert redelivered.details == {"reason": "message lost"}


def test_queued_release_sent_again_is_not_sent_a_third_time_before_the_age_passes_again(
    curator, dataset
):
    # given a release whose lost message was just sent again (the new one is on its way)
    release = submitted(curator, dataset, epsilon=0.5)
    Release.objects.filter(pk=release.pk).update(submitted_at=timezone.now() - LONG_AGO)
    first = release_reap_stale(older_than=timedelta(hours=1))

    # when the reaper runs again
    second = release_reap_stale(older_than=timedelta(hours=1))

    # then
    assert [r.outcome for r in first] == ["redelivered"]
    assert second == []
    assert actions(release, "task.redelivered") == 1


@pytest.mark.parametrize(
    ("answers_stored", "ledger_state"),
    [(False, LedgerEntry.State.RETURNED), (True, LedgerEntry.State.SPENT)],
)
def test_release_whose_worker_stopped_too_often_fails_with_that_reason(
    curator, dataset, settings, monkeypatch, answers_stored, ledger_state
):
    # given a release redelivered twice already, whose third worker stopped too
    settings.RELEASE_MAX_DELIVERIES = 3
    release = submitted(curator, dataset, epsilon=0.5)
    if answers_stored:

        def killed(*args, **kwargs):
            raise WorkerKilled

        monkeypatch.setattr(runs, "_publish", killed)
        with pytest.raises(WorkerKilled):
            release_run(release_id=release.pk, worker="worker-c:3")
    else:
        Release.objects.filter(pk=release.pk).update(
            status=Release.Status.RUNNING, claim_token="c", worker="worker-c:3"
        )
    Release.objects.filter(pk=release.pk).update(deliveries=2)
    make_stale(release)

    # when
    reaped = release_reap_stale(older_than=timedelta(hours=1))

    # then it failed, and the budget came back only if no answer was stored
    release.refresh_from_db()
    assert [(r.release_id, r.outcome) for r in reaped] == [(release.pk, "failed")]
    assert release.status == Release.Status.FAILED
    assert release.failure_reason == (
        "The worker computing this release stopped before finishing, 3 times (killed, out of "
        "memory or past its time limit); it is not tried again."
    )
    assert LedgerEntry.objects.get(release=release).state == ledger_state
    assert NoisyAnswer.objects.filter(release=release).count() == (4 if answers_stored else 0)


def test_settling_is_final_a_spent_reservation_is_never_returned(curator, dataset, monkeypatch):
    # given answers stored (the budget spent) by a worker that then died
    release = submitted(curator, dataset, epsilon=0.5)

    def killed(*args, **kwargs):
        raise WorkerKilled

    monkeypatch.setattr(runs, "_publish", killed)
    with pytest.raises(WorkerKilled):
        release_run(release_id=release.pk, worker="worker-a:1")

    # when the release is failed, twice
    assert release_fail(release_id=release.pk, reason="stopped") is True
    assert release_fail(release_id=release.pk, reason="stopped again") is False

    # then the budget stays spent, recorded once
    assert LedgerEntry.objects.get(release=release).state == LedgerEntry.State.SPENT
    assert actions(release, "budget.spent") == 1
    assert actions(release, "budget.returned") == 0
    assert Release.objects.get(pk=release.pk).failure_reason == "stopped"


def test_worker_failure_is_not_recorded_by_a_delivery_that_no_longer_holds_the_release(
    curator, dataset
):
    # given a release held by delivery "b"
    release = submitted(curator, dataset, epsilon=0.5)
    Release.objects.filter(pk=release.pk).update(status=Release.Status.RUNNING, claim_token="b")

    # when delivery "a" (reaped earlier) reports a failure
    failed = release_fail(release_id=release.pk, reason="late error", claim_token="a")

    # then nothing changed
    release.refresh_from_db()
    assert failed is False
    assert (release.status, release.failure_reason) == ("running", "")
    assert LedgerEntry.objects.get(release=release).state == LedgerEntry.State.RESERVED


def test_reap_command_redelivers_a_release_whose_heartbeat_is_stale(curator, dataset, capsys):
    # given a running release whose worker stopped beating
    release = submitted(curator, dataset, epsilon=0.5)
    Release.objects.filter(pk=release.pk).update(status=Release.Status.RUNNING, claim_token="x")
    make_stale(release)

    # when cron runs the command
    call_command("reap_stale_releases")

    # then
    release.refresh_from_db()
    out = capsys.readouterr().out
    assert out == (
        f"redelivered 1 stale release(s): [{release.pk}]\nfailed 0 stale release(s): []\n"
    )
    assert (release.status, release.claim_token, release.deliveries) == ("queued", "", 1)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_heartbeat_beats_only_while_the_delivery_holds_the_release(
    curator, dataset, settings, monkeypatch
):
    # given a release held by delivery "a", with an old heartbeat, and a fast heartbeat
    from releases.services.heartbeat import release_heartbeat
    from releases.tasks import release_run_task

    settings.RELEASE_HEARTBEAT_SECONDS = 0.05
    # Committed for real here (transaction=True): the eager task would run, and publish, on
    # commit; no message is sent, so the release stays queued (a published one never changes).
    monkeypatch.setattr(release_run_task, "delay_on_commit", lambda *args, **kwargs: None)
    release = submitted(curator, dataset, epsilon=0.5)
    old = timezone.now() - LONG_AGO
    Release.objects.filter(pk=release.pk).update(
        status=Release.Status.RUNNING, claim_token="a", heartbeat_at=old
    )

    with release_heartbeat(release_id=release.pk, claim_token="a"):
        # when the delivery computes, the heartbeat is refreshed
        deadline = time.monotonic() + 10
        while Release.objects.get(pk=release.pk).heartbeat_at == old:
            assert time.monotonic() < deadline, "the heartbeat never beat"
            time.sleep(0.02)
        # and when another delivery takes the release, this one stops beating
        Release.objects.filter(pk=release.pk).update(claim_token="b", heartbeat_at=old)
        time.sleep(0.3)
        assert Release.objects.get(pk=release.pk).heartbeat_at == old
