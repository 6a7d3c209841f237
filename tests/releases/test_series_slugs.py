"""Series slugs (issue 7, point 10): a new series' slug is its title plus a random part, so it
never depends on which titles other curators' drafts already took."""

import re
import secrets

import pytest

from audit.models import AuditEvent
from releases.models import Release, ReleaseSeries
from releases.services.datasets import dataset_create, dataset_schema_update
from tests.conftest import csv_upload, draft_body


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def theirs(other_curator):
    created = dataset_create(
        owner=other_curator,
        name="Theirs",
        upload=csv_upload(b"a,b\n1,2\n3,4\n", "theirs.csv"),
        budget_epsilon="1.0",
    )
    return dataset_schema_update(
        dataset=created,
        user=other_curator,
        schema={"columns": {"a": {"kind": "numeric", "lower": 0, "upper": 10}}},
    )


def random_parts(monkeypatch, *parts: str) -> list[str]:
    """Make ``secrets.token_hex`` return ``parts`` in turn; returns what is left of them."""
    remaining = list(parts)

    def token_hex(nbytes: int | None = None) -> str:
        assert nbytes == 4
        return remaining.pop(0)

    monkeypatch.setattr(secrets, "token_hex", token_hex)
    return remaining


def secret_draft(client, dataset_id: int):
    return client.post(
        "/api/v1/releases/",
        {**draft_body(dataset_id), "title": "Secret draft title", "queries": [{"kind": "count"}]},
        format="json",
    )


def test_slug_of_a_title_is_the_same_whether_or_not_another_curator_used_that_title(
    monkeypatch, curator_client, other_curator_client, dataset, theirs
):
    # given the same random part for this curator's series in two worlds
    random_parts(monkeypatch, "0f1e2d3c")
    alone = secret_draft(curator_client, dataset.pk).json()["series"]
    Release.objects.all().delete()
    ReleaseSeries.objects.all().delete()
    random_parts(monkeypatch, "a1b2c3d4", "0f1e2d3c")
    assert secret_draft(other_curator_client, theirs.pk).status_code == 201

    # when this curator uses the title another curator's draft already holds
    after_theirs = secret_draft(curator_client, dataset.pk).json()["series"]

    # then the slug is the same as without that draft: it says nothing about it
    assert alone == after_theirs == "secret-draft-title-0f1e2d3c"


def test_a_colliding_random_part_is_drawn_again(monkeypatch, curator_client, dataset):
    # given a series whose random part the next draw repeats
    left = random_parts(monkeypatch, "c0ffee00", "c0ffee00", "c0ffee01")
    first = secret_draft(curator_client, dataset.pk)

    # when
    second = secret_draft(curator_client, dataset.pk)

    # then the second series has the next random part, and nothing else was stored
    assert (first.status_code, second.status_code) == (201, 201)
    assert first.json()["series"] == "secret-draft-title-c0ffee00"
    assert second.json()["series"] == "secret-draft-title-c0ffee01"
    assert left == []
    assert ReleaseSeries.objects.count() == 2
    assert AuditEvent.objects.filter(action="release.drafted").count() == 2


def test_when_every_random_part_collides_the_draft_is_a_409_and_nothing_is_stored(
    monkeypatch, curator_client, dataset
):
    # given a series holding the only random part ever drawn
    random_parts(monkeypatch, *["deadbeef"] * 6)
    assert secret_draft(curator_client, dataset.pk).status_code == 201
    before = (Release.objects.count(), ReleaseSeries.objects.count(), AuditEvent.objects.count())

    # when
    response = secret_draft(curator_client, dataset.pk)

    # then
    assert response.status_code == 409
    assert response.json() == {"detail": "Could not name the release series; try again."}
    after = (Release.objects.count(), ReleaseSeries.objects.count(), AuditEvent.objects.count())
    assert after == before


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("统计", r"release-[0-9a-f]{8}"),
        ("x" * 200, r"x{100}-[0-9a-f]{8}"),
        ("Clinic statistics, 2024!", r"clinic-statistics-2024-[0-9a-f]{8}"),
        # cut at 100 characters right after a hyphen: no double hyphen before the random part
        ("x" * 99 + " y", r"x{99}-[0-9a-f]{8}"),
    ],
)
def test_slug_is_a_bounded_slug_of_the_title_plus_a_random_part(
    curator_client, dataset, title, expected
):
    # when
    response = curator_client.post(
        "/api/v1/releases/", {**draft_body(dataset.pk), "title": title}, format="json"
    )

    # then
    assert response.status_code == 201
    slug = response.json()["series"]
    assert re.fullmatch(expected, slug)
    assert len(slug) <= ReleaseSeries._meta.get_field("slug").max_length
