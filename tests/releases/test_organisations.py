"""Organisations' edges (issue 12, point 5): what one organisation could learn of or do to
another's through duplicate detection, create_user, the admin, verification's cap and an account
moved between organisations."""

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from organisations.models import Membership, Organisation
from organisations.services import organisation_of
from releases.models import Dataset
from releases.services import budget_audit
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create
from tests.conftest import CLINIC_CSV, CLINIC_SCHEMA, csv_upload
from tests.releases.test_organisation_isolation import member


def test_the_same_bytes_in_another_organisation_are_not_a_duplicate(db):
    alpha = member("alphacurator", "curator", "alpha")
    beta = member("betacurator", "curator", "beta")
    dataset_create(owner=alpha, name="A", upload=csv_upload(), budget_epsilon="1")
    api = APIClient()
    api.force_authenticate(beta)

    # when beta uploads the same bytes
    response = api.post(
        "/api/v1/datasets/",
        {"name": "B", "file": csv_upload(), "budget_epsilon": "1"},
        format="multipart",
    )

    # then nothing tells beta that alpha has them
    assert response.status_code == 201, response.content
    assert Dataset.objects.get(pk=response.json()["id"]).duplicate_of is None


def test_create_user_without_an_organisation_leaves_a_user_where_they_are(db):
    member("officer", "compliance", "alpha")

    call_command("create_user", "officer", "--role", "compliance", "--password", "a-new-pw-2468")

    assert Membership.objects.get(user__username="officer").organisation.slug == "alpha"


@pytest.mark.parametrize("slug", ["Alpha", "al pha", "", "a" * 61, "ålpha"])
def test_create_user_refuses_a_slug_that_is_not_lower_case(db, slug):
    with pytest.raises(CommandError, match="--organisation"):
        call_command("create_user", "x", "--role", "curator", "--organisation", slug)
    assert not Organisation.objects.filter(slug=slug).exists()


def test_the_admin_neither_renames_an_organisation_nor_moves_an_owner(db):
    owner = member("alphacurator", "curator", "alpha")
    dataset_create(owner=owner, name="A", upload=csv_upload(), budget_epsilon="1")
    beta = member("betacurator", "curator", "beta")
    admin = member("root", "compliance", "alpha")
    admin.is_staff = admin.is_superuser = True
    admin.save()
    client = Client()
    client.force_login(admin)
    alpha = organisation_of(owner)

    # the slug is not a field of the change form
    page = client.get(f"/admin/organisations/organisation/{alpha.pk}/change/").content.decode()
    assert 'name="slug"' not in page

    # and moving a curator who owns datasets is refused
    membership = Membership.objects.get(user=owner)
    client.post(
        f"/admin/organisations/membership/{membership.pk}/change/",
        {"organisation": organisation_of(beta).pk},
    )
    assert organisation_of(owner).slug == "alpha"


def test_another_organisation_s_mismatches_do_not_crowd_out_one_s_own(db, monkeypatch):
    alpha = member("alphacurator", "curator", "alpha")
    beta = member("betacurator", "curator", "beta")
    for index in range(3):
        dataset_create(
            owner=alpha,
            name=f"A{index}",
            upload=csv_upload(CLINIC_CSV + f"Zed,{index},F,1\n".encode()),
            budget_epsilon="1",
        )
    own = dataset_create(owner=beta, name="B", upload=csv_upload(), budget_epsilon="1")
    # every total edited behind the trail, with room to name only two mismatches
    Dataset.objects.update(budget_epsilon="9")
    monkeypatch.setattr(budget_audit, "MAX_MISMATCHES", 2)

    found = budget_audit.trail_verification(datasets=[own.pk])["budget_mismatches"]

    assert [(m["dataset"], m["what"]) for m in found] == [(own.pk, "total ε")]


def test_an_account_moved_away_leaves_its_releases_behind(db):
    curator = member("alphacurator", "curator", "alpha")
    dataset = dataset_create(owner=curator, name="A", upload=csv_upload(), budget_epsilon="1")
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Left behind",
        definition={"kind": "pure_dp", "epsilon": 0.2},
        queries=[{"kind": "count"}],
    )
    # moved behind the services' back (a database edit)
    Membership.objects.filter(user=curator).update(
        organisation=Organisation.objects.create(slug="beta", name="beta")
    )
    api = APIClient()
    api.force_authenticate(curator)

    assert api.get("/api/v1/releases/").json()["results"] == []
    assert api.post(f"/api/v1/releases/{draft.pk}/submit/").status_code == 404


def test_an_account_without_an_organisation_is_told_so_on_the_upload_page(db):
    curator = member("loner", "curator", "alpha")
    Membership.objects.filter(user=curator).delete()
    client = Client()
    client.force_login(curator)

    response = client.post(
        "/datasets/new/", {"name": "A", "file": csv_upload(), "budget_epsilon": "1"}
    )

    assert response.status_code == 200
    assert "belongs to no organisation" in response.content.decode()
    assert not Dataset.objects.exists()
