"""The same table twice: bytes identical (SHA-256) to a stored dataset are refused with a 409
unless the curator confirms a new collection; then the pair is created, audited and flagged to
compliance. Every upload's SHA-256 is stored and shown to its curator and to compliance."""

import hashlib
import json
import textwrap
from pathlib import Path

import pytest

from audit.models import AuditEvent
from releases.models import Dataset
from releases.services.datasets import DuplicateUpload, dataset_create
from tests.conftest import CLINIC_CSV, csv_upload

URL = "/api/v1/datasets/"
CLINIC_SHA256 = hashlib.sha256(CLINIC_CSV).hexdigest()
BUDGET_SENTENCE = "The privacy budget belongs to the data, not to an upload"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def upload(client, content: bytes = CLINIC_CSV, **fields):
    data = {"name": "Clinic again", "budget_epsilon": "1", "file": csv_upload(content), **fields}
    return client.post(URL, data, format="multipart")


def stored_files(settings) -> list[Path]:
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.fixture
def first(curator):
    return dataset_create(
        owner=curator, name="Clinic 2024", upload=csv_upload(), budget_epsilon="1"
    )


def test_identical_bytes_of_my_own_dataset_are_refused_naming_it(curator_client, first, settings):
    # given
    events_before = AuditEvent.objects.count()
    files_before = stored_files(settings)

    # when
    response = upload(curator_client)

    # then
    assert response.status_code == 409
    detail = response.json()["detail"]
    assert detail.startswith(
        f"This file is identical (same SHA-256) to your dataset #{first.pk} “Clinic 2024”. "
        f"{BUDGET_SENTENCE}"
    )
    assert "confirm_new_budget=true" in detail
    assert list(Dataset.objects.values_list("pk", flat=True)) == [first.pk]
    assert AuditEvent.objects.count() == events_before
    assert stored_files(settings) == files_before


def test_identical_bytes_of_another_curators_dataset_are_refused_without_naming_it(
    other_curator_client, first
):
    # when
    response = upload(other_curator_client)

    # then
    assert response.status_code == 409
    detail = response.json()["detail"]
    assert detail.startswith(
        "This file is identical (same SHA-256) to a dataset another curator holds. "
        f"{BUDGET_SENTENCE}"
    )
    assert "Clinic 2024" not in detail
    assert f"#{first.pk}" not in detail
    assert "curator1" not in detail
    assert Dataset.objects.count() == 1


def test_a_table_differing_in_one_byte_is_not_a_duplicate(curator_client, first):
    # when
    response = upload(curator_client, CLINIC_CSV.replace(b"Ann,34", b"Ann,35"))

    # then
    assert response.status_code == 201
    assert response.json()["duplicate_of"] is None
    assert Dataset.objects.count() == 2


def test_confirmed_new_collection_is_created_flagged_and_audited_with_both_ids(
    curator_client, first
):
    # when
    response = upload(curator_client, confirm_new_budget="true")

    # then
    assert response.status_code == 201, response.json()
    body = response.json()
    second = Dataset.objects.get(pk=body["id"])
    assert (second.duplicate_of_id, second.sha256) == (first.pk, CLINIC_SHA256)
    assert (body["duplicate_of"], body["sha256"]) == (first.pk, CLINIC_SHA256)
    assert body["budget"]["total"] == "1"
    [event] = AuditEvent.objects.filter(action="dataset.duplicate_upload_confirmed")
    assert (event.actor, event.object_type, event.object_id, event.dataset_id) == (
        "curator1",
        "dataset",
        str(second.pk),
        second.pk,
    )
    assert event.details == {
        "dataset": second.pk,
        "duplicate_of": first.pk,
        "same_owner": True,
        "sha256": CLINIC_SHA256,
    }


def test_confirming_without_an_earlier_copy_creates_a_plain_dataset(curator_client):
    # when
    response = upload(curator_client, confirm_new_budget="true")

    # then
    assert response.status_code == 201
    assert response.json()["duplicate_of"] is None
    assert not AuditEvent.objects.filter(action="dataset.duplicate_upload_confirmed").exists()


def test_confirmed_copy_of_another_curators_data_is_flagged_to_compliance_only(
    other_curator_client, compliance_client, first
):
    # when
    response = upload(other_curator_client, confirm_new_budget="on")

    # then
    assert response.status_code == 201
    mine = response.json()
    assert mine["duplicate_of"] is None  # never names another curator's dataset
    assert mine["sha256"] == CLINIC_SHA256
    seen = compliance_client.get(f"{URL}{mine['id']}/").json()
    assert (seen["duplicate_of"], seen["sha256"]) == (first.pk, CLINIC_SHA256)
    original = compliance_client.get(f"{URL}{first.pk}/").json()
    assert (original["duplicate_of"], original["sha256"]) == (None, CLINIC_SHA256)
    event = AuditEvent.objects.get(action="dataset.duplicate_upload_confirmed")
    assert (event.details["duplicate_of"], event.details["same_owner"]) == (first.pk, False)


def test_sha256_is_computed_over_every_chunk_of_a_large_upload(curator_client):
    # given a file spanning several upload chunks (64 KiB each)
    content = b"name,age\n" + b"".join(f"P{i:06d},{i % 90}\n".encode() for i in range(30_000))
    assert len(content) > 4 * 64 * 1024

    # when
    response = upload(curator_client, content)

    # then
    assert response.status_code == 201
    assert response.json()["sha256"] == hashlib.sha256(content).hexdigest()
    assert Dataset.objects.get().sha256 == hashlib.sha256(content).hexdigest()


def test_service_raises_a_conflict_carrying_the_earlier_dataset(curator, first):
    # when
    with pytest.raises(DuplicateUpload) as refused:
        dataset_create(owner=curator, name="Again", upload=csv_upload(), budget_epsilon="1")

    # then
    assert refused.value.earlier == first
    assert Dataset.objects.count() == 1


# --- pages -----------------------------------------------------------------------------------


def test_upload_page_shows_the_409_as_an_error_with_a_confirm_box_and_keeps_the_fields(
    client, curator, first
):
    # given
    client.force_login(curator)
    typed = {"name": "Clinic 2025", "budget_epsilon": "2.5", "declared_size": "7"}

    # when
    response = client.post("/datasets/new/", {**typed, "file": csv_upload()})

    # then
    assert response.status_code == 200
    page = response.content.decode()
    assert '<div role="alert" id="duplicate-upload"><ul class="errorlist">' in page
    assert f"your dataset #{first.pk} “Clinic 2024”" in page
    assert 'type="checkbox" name="confirm_new_budget"' in page
    assert 'name="name" value="Clinic 2025"' in page
    assert 'name="budget_epsilon" value="2.5"' in page
    assert 'name="declared_size" value="7"' in page
    assert Dataset.objects.count() == 1


def test_upload_page_with_the_box_ticked_creates_the_flagged_pair(client, curator, first):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        "/datasets/new/",
        {
            "name": "Clinic 2025",
            "budget_epsilon": "1",
            "file": csv_upload(),
            "confirm_new_budget": "on",
        },
    )

    # then
    second = Dataset.objects.get(name="Clinic 2025")
    assert response.status_code == 302
    assert response["Location"] == f"/datasets/{second.pk}/"
    assert second.duplicate_of == first
    page = client.get(response["Location"]).content.decode()
    assert f'<code class="hash" id="dataset-sha256">{CLINIC_SHA256}</code>' in page
    assert f'your dataset <a href="/datasets/{first.pk}/">#{first.pk} Clinic 2024</a>' in page


def test_audit_page_flags_the_pair_and_shows_each_sha256(
    client, compliance_user, other_curator, first
):
    # given a confirmed copy by another curator
    second = dataset_create(
        owner=other_curator,
        name="Copy",
        upload=csv_upload(),
        budget_epsilon="1",
        confirm_new_budget=True,
    )
    client.force_login(compliance_user)

    # when
    page = client.get("/audit/").content.decode()

    # then
    assert (
        f"Same bytes as #{first.pk} (curator1): confirmed as a new collection with its own budget."
        in page
    )
    assert (
        f"Same bytes uploaded again as #{second.pk}, confirmed as a new collection with its own "
        "budget." in page
    )
    assert page.count(f'<code class="hash">{CLINIC_SHA256}</code>') == 2


# --- PostgreSQL ------------------------------------------------------------------------------

PG_SCRIPT = textwrap.dedent(
    """
    import json, threading
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.db import connection
    from accounts.roles import Role
    from accounts.services import user_create_or_reset
    from releases.models import Dataset
    from releases.services.datasets import DuplicateUpload, dataset_create
    from releases.services.errors import ValidationFailed

    curator, _ = user_create_or_reset(username="pg-curator", role=Role.CURATOR)
    out = {}

    def create(name, content, **extra):
        upload = SimpleUploadedFile("t.csv", content, "text/csv")
        return dataset_create(owner=curator, name=name, upload=upload, budget_epsilon="1", **extra)

    try:
        create("Clinic\\x00", b"a,b\\n1,2\\n")
    except ValidationFailed as error:
        out["nul_name"] = error.errors
    out["cap"] = create("Big", b"a,b\\n1,3\\n", declared_size="10000000000").declared_size

    rounds = []
    for round_number in range(8):
        content = f"a,b\\n{round_number},race\\n".encode()
        barrier = threading.Barrier(2)
        outcomes = []

        def attempt(name):
            barrier.wait()
            try:
                create(name, content)
                outcomes.append("created")
            except DuplicateUpload:
                outcomes.append("refused")
            finally:
                connection.close()

        threads = [threading.Thread(target=attempt, args=(f"r{round_number}-{i}",)) for i in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        rounds.append(sorted(outcomes))
    out["race"] = rounds
    print("RESULT" + json.dumps(out))
    """
)


@pytest.mark.services
def test_on_postgresql_nul_names_are_refused_and_simultaneous_duplicates_serialise(
    tmp_path, stacks
):
    # given a fresh PostgreSQL database, migrated (a copy of the session's migrated template)
    from tests.processes import manage, postgres_redis_env

    with postgres_redis_env(tmp_path) as env:
        stacks.prepare(env)

        # when a NUL name, the largest declared size and 8 rounds of two simultaneous uploads
        # of the same bytes run against it
        output = manage(env, "shell", "-c", PG_SCRIPT)

    # then
    result = json.loads(output.split("RESULT", 1)[1])
    assert result["nul_name"] == {
        "name": ["Do not use control characters (such as NUL, tabs or line breaks)."]
    }
    assert result["cap"] == 10**10
    assert result["race"] == [["created", "refused"]] * 8
