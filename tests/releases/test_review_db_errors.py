"""Database errors in a worker and in its daemon threads (found by review): a repeatable error
fails the release instead of looping with its budget reserved, and a daemon thread reconnects
after its connection drops."""

import pytest
from django.db import DataError, OperationalError, connection

from releases.models import LedgerEntry, NoisyAnswer, Release
from releases.services.heartbeat import Ticker
from releases.services.releases import release_draft_create, release_submit
from releases.services.runs import release_run
from tests.conftest import draft_body


@pytest.fixture(autouse=True)
def _no_heartbeat_during_in_process_runs(settings):
    settings.RELEASE_HEARTBEAT_SECONDS = 3600


def submitted(curator, dataset) -> Release:
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic statistics",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=draft_body(dataset.pk)["queries"],
    )
    return release_submit(release=draft, user=curator)


def test_a_repeatable_database_error_fails_the_release_and_returns_the_budget(
    curator, dataset, monkeypatch
):
    # given storing the answers raises a DataError every time
    release = submitted(curator, dataset)

    def broken(*args, **kwargs):
        raise DataError("value too long for type character varying(40) 'Ann'")

    monkeypatch.setattr(NoisyAnswer.objects, "bulk_create", broken)

    # when
    release_run(release_id=release.pk, worker="test")

    # then it failed, saying only the error's type, and the reservation came back
    release.refresh_from_db()
    assert release.status == "failed"
    assert release.failure_reason == "Internal error while storing the release (DataError)."
    assert LedgerEntry.objects.get(release=release).state == "returned"


def test_a_transient_database_error_gives_the_release_back_for_a_retry(
    curator, dataset, monkeypatch
):
    # given storing the answers loses the connection
    release = submitted(curator, dataset)

    def lost(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(NoisyAnswer.objects, "bulk_create", lost)

    # when / then the task's retry sees it queued again
    with pytest.raises(OperationalError):
        release_run(release_id=release.pk, worker="test")
    release.refresh_from_db()
    assert release.status == "queued"
    assert LedgerEntry.objects.get(release=release).state == "reserved"


# The thread needs its own connection to the test database (so a committed one, not the test's
# transaction); serialized_rollback like the repository's other transactional tests, so the
# ones after it find the database as they expect.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_daemon_thread_reconnects_after_a_database_error():
    # given an action that fails once with a dropped connection, then works
    outcomes: list[str] = []

    def action():
        if not outcomes:
            outcomes.append("dropped")
            connection.ensure_connection()
            raise OperationalError("terminating connection due to administrator command")
        outcomes.append(f"connected again: {connection.connection is not None}")
        return False

    ticker = Ticker(name="test", interval=0.01, action=action, run_first=True)

    # when
    ticker.start()
    ticker.join(5)

    # then the failed tick closed the thread's connection, and the next one opened a new one
    assert outcomes == ["dropped", "connected again: False"]
