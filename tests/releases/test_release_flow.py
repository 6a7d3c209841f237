"""The spine in-process: draft → submit → (eager) task → catalog → download, with the ledger."""

import hashlib
from decimal import Decimal

import pytest

from releases.models import LedgerEntry, NoisyAnswer, Release
from tests.conftest import RELEASE_FILE_FORMATS, draft_body


@pytest.fixture
def published(curator_client, dataset, django_capture_on_commit_callbacks):
    draft = curator_client.post("/api/v1/releases/", draft_body(dataset.pk), format="json")
    assert draft.status_code == 201, draft.json()
    with django_capture_on_commit_callbacks(execute=True):
        submitted = curator_client.post(f"/api/v1/releases/{draft.json()['id']}/submit/")
    assert submitted.status_code == 202
    return Release.objects.get(pk=draft.json()["id"])


def test_draft_returns_preview_in_query_order_and_spends_nothing(curator_client, dataset):
    # when
    response = curator_client.post("/api/v1/releases/", draft_body(dataset.pk), format="json")

    # then
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "draft"
    assert [p["kind"] for p in body["preview"]] == ["count", "histogram", "sum", "mean"]
    assert [p["epsilon"] for p in body["preview"]] == pytest.approx([0.1, 0.1, 0.1, 0.2])
    assert body["preview"][2]["sensitivity"] == 100
    assert body["preview"][2]["noise_scale"] == pytest.approx(1000)
    assert LedgerEntry.objects.count() == 0
    budget = curator_client.get(f"/api/v1/datasets/{dataset.pk}/").json()["budget"]
    assert Decimal(budget["remaining"]) == Decimal("1")


def test_submitted_release_is_published_with_files_and_spent_budget(
    published, curator_client, anonymous_client, dataset
):
    # given a release run by the (eager) task
    published.refresh_from_db()

    # then
    assert published.status == "published"
    assert published.version == 1
    assert published.progress == 1.0
    entry = LedgerEntry.objects.get(release=published)
    assert entry.state == "spent"
    assert entry.epsilon == Decimal("0.5")
    budget = curator_client.get(f"/api/v1/datasets/{dataset.pk}/").json()["budget"]
    assert Decimal(budget["spent"]) == Decimal("0.5")
    assert Decimal(budget["remaining"]) == Decimal("0.5")

    catalog = anonymous_client.get("/api/v1/catalog/").json()
    assert catalog["count"] == 1
    entry = catalog["results"][0]
    assert entry["slug"] == published.series.slug
    assert {f["format"] for f in entry["files"]} == RELEASE_FILE_FORMATS

    version = anonymous_client.get(f"/api/v1/catalog/{entry['slug']}/versions/1/").json()
    stats = version["statistics"]
    assert [s["kind"] for s in stats] == ["count", "histogram", "sum", "mean"]
    assert set(stats[1]["value"]) == {"F", "M"}
    assert stats[0]["mechanism"] == "geometric"
    assert stats[2]["mechanism"] == "laplace"
    assert stats[2]["sensitivity"] == 100

    for file_entry in entry["files"]:
        download = anonymous_client.get(file_entry["url"])
        assert download.status_code == 200
        content = b"".join(download.streaming_content)
        assert hashlib.sha256(content).hexdigest() == file_entry["sha256"]


def test_retried_task_never_draws_again(published):
    # given a published release
    from releases.services.runs import release_run

    answers_before = list(NoisyAnswer.objects.filter(release=published).values_list("statistic"))

    # when the task is delivered again
    release_run(release_id=published.pk, worker="test:0")

    # then nothing changed
    assert list(NoisyAnswer.objects.filter(release=published).values_list("statistic")) == (
        answers_before
    )
    assert LedgerEntry.objects.filter(release=published).count() == 1
