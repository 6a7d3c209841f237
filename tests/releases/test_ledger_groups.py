"""Parallel composition across groups of a partition column on the ledger (issue 11, point 1):
releases restricted to disjoint groups of sex share the budget, within a release and across
releases; the ledger rows say which rule applied; the wizard offers the restriction."""

from decimal import Decimal

import pytest

from releases.ledger_selectors import dataset_ledger_rows
from releases.models import LedgerEntry, Release
from releases.selectors import dataset_budget
from tests.conftest import publish_through_api, statistics_formset


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def body(dataset_id: int, epsilon: float, *groups: str, title: str = "Ages") -> dict:
    where = {"where": {"column": "sex", "in": list(groups)}} if groups else {}
    return {
        "dataset": dataset_id,
        "title": title,
        "definition": {"kind": "pure_dp", "epsilon": epsilon},
        "queries": [{"kind": "mean", "column": "age", **where}],
    }


def submit(client, payload: dict):
    created = client.post("/api/v1/releases/", payload, format="json")
    assert created.status_code == 201, created.json()
    return client.post(f"/api/v1/releases/{created.json()['id']}/submit/")


def test_releases_on_disjoint_groups_share_the_budget(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    # given a budget of ε 1 and a published release of ε 0.6 on F only
    publish_through_api(
        curator_client, django_capture_on_commit_callbacks, body(dataset.pk, 0.6, "F")
    )

    # when a release of ε 0.6 on M only is submitted
    response = submit(curator_client, body(dataset.pk, 0.6, "M"))

    # then it fits: a person is in F or in M, so the worst person has lost ε 0.6
    assert response.status_code == 202, response.json()
    epsilon, _ = dataset_budget(dataset)
    assert (epsilon.spent, epsilon.reserved, epsilon.remaining) == (
        Decimal("0.6"),
        Decimal("0"),
        Decimal("0.4"),
    )
    # and a release on everyone pays for the worst group: ε 0.5 no longer fits
    refused = submit(curator_client, body(dataset.pk, 0.5))
    assert refused.status_code == 409
    assert "only ε = 0.4 remains" in refused.json()["detail"]


def test_without_groups_the_same_releases_add_up(curator_client, dataset):
    # the negative control: the same two releases on everyone
    assert submit(curator_client, body(dataset.pk, 0.6)).status_code == 202
    refused = submit(curator_client, body(dataset.pk, 0.6))
    assert refused.status_code == 409
    assert "requests ε = 0.6" in refused.json()["detail"]


def test_a_release_on_groups_already_used_adds_only_the_difference(curator_client, dataset):
    # given ε 0.6 reserved on F
    assert submit(curator_client, body(dataset.pk, 0.6, "F")).status_code == 202

    # when F and M both get ε 0.5 more: F would reach 1.1
    refused = submit(curator_client, body(dataset.pk, 0.5, "F", "M"))

    # then refused, and the message says the release adds ε 0.5 to what is in use
    assert refused.status_code == 409
    assert "requests ε = 0.5" in refused.json()["detail"]
    # while M alone at 0.9 fits (F keeps 0.6, M reaches 0.9)
    assert submit(curator_client, body(dataset.pk, 0.9, "M")).status_code == 202
    epsilon, _ = dataset_budget(dataset)
    assert (epsilon.reserved, epsilon.remaining) == (Decimal("0.9"), Decimal("0.1"))


def test_a_refund_gives_back_only_what_the_worst_group_loses(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    # given F at 0.6 reserved and M at 0.4 reserved
    first = submit(curator_client, body(dataset.pk, 0.6, "F"))
    assert first.status_code == 202
    assert submit(curator_client, body(dataset.pk, 0.4, "M")).status_code == 202
    assert dataset_budget(dataset)[0].reserved == Decimal("0.6")

    # when F's release is refunded
    release = Release.objects.get(title="Ages", ledger_entry__epsilon=Decimal("0.6"))
    from releases.services.runs import ledger_settle

    ledger_settle(release.ledger_entry, release=release, state=LedgerEntry.State.RETURNED)

    # then M's 0.4 is what remains in use
    assert dataset_budget(dataset)[0].reserved == Decimal("0.4")
    rows = dataset_ledger_rows(dataset=dataset)
    assert [(r.movement.kind, r.epsilon_committed) for r in rows] == [
        ("opening", Decimal(0)),
        ("reservation", Decimal("0.6")),
        ("reservation", Decimal("0.6")),
        ("refund", Decimal("0.4")),
    ]


def test_ledger_rows_say_how_groups_composed(curator_client, client, curator, dataset):
    # given one release with a statistic per group and one on everyone
    payload = body(dataset.pk, 0.8)
    payload["queries"] = [
        {"kind": "count", "where": {"column": "sex", "in": ["F"]}},
        {"kind": "count", "where": {"column": "sex", "in": ["M"]}},
        {"kind": "count"},
    ]
    assert submit(curator_client, payload).status_code == 202

    # when
    ledger = curator_client.get(f"/api/v1/datasets/{dataset.pk}/ledger/").json()
    client.force_login(curator)
    page = client.get(f"/datasets/{dataset.pk}/ledger/").content.decode()

    # then each group's count got ε 0.4, the count of everyone 0.4: charged 0.8
    reservation = ledger["results"][-1]
    composition = reservation["composition"]
    assert composition["rule"] == "sequential, parallel over groups"
    assert [float(s["epsilon"]) for s in composition["statistics"]] == pytest.approx([0.4] * 3)
    assert composition["charged"]["epsilon"] == "0.8"
    assert reservation["running"]["committed"] == "0.8"
    assert "sex: its groups&#x27; statistics compose in parallel" in page
    assert "Count where sex is F" in page


def test_groups_count_sequentially_with_several_rows_per_person(curator_client, dataset, curator):
    # given a person key with up to 2 rows a person: one person's rows can be F and M
    from releases.services.datasets import dataset_schema_update
    from tests.conftest import CLINIC_SCHEMA

    schema = {
        **CLINIC_SCHEMA,
        "columns": {**CLINIC_SCHEMA["columns"], "visits": {"kind": "identifier"}},
        "person_key": "visits",
        "max_rows_per_person": 2,
    }
    dataset_schema_update(dataset=dataset, user=curator, schema=schema)
    assert submit(curator_client, body(dataset.pk, 0.6, "F")).status_code == 202

    # then the second group's release is refused as if on everyone
    assert submit(curator_client, body(dataset.pk, 0.6, "M")).status_code == 409


def test_the_wizard_restricts_a_statistic_to_groups(curator_client, client, curator, dataset):
    # given a draft at the statistics step
    client.force_login(curator)
    created = curator_client.post("/api/v1/releases/", body(dataset.pk, 0.5), format="json").json()
    url = f"/releases/{created['id']}/statistics/"
    page = client.get(url).content.decode()
    assert "Only for these groups" in page
    assert '<optgroup label="sex">' in page

    # when a mean is restricted to F
    good = client.post(
        url,
        statistics_formset(
            {"kind": "mean", "column": "age", "groups": ['["sex", "F"]']},
        ),
    )

    # then the draft holds the restriction, and the page shows it again
    assert good.status_code == 302
    release = Release.objects.get(pk=created["id"])
    assert release.queries[0]["where"] == {"column": "sex", "in": ["F"]}
    assert 'value="[&quot;sex&quot;, &quot;F&quot;]" selected' in client.get(url).content.decode()
    unknown = client.post(url, statistics_formset({"kind": "count", "groups": ['["sex", "X"]']}))
    assert unknown.status_code == 200
    assert "Select a valid choice" in unknown.content.decode()


def test_a_partition_column_taken_from_the_data_needs_the_curators_consent(
    curator_client, dataset, curator
):
    # given sex's categories taken from the data, and a count restricted to F
    from releases.services.datasets import dataset_schema_update
    from releases.services.releases import release_columns_from_data
    from tests.conftest import CLINIC_SCHEMA

    sex = {**CLINIC_SCHEMA["columns"]["sex"], "from_data": True}
    schema = {**CLINIC_SCHEMA, "columns": {**CLINIC_SCHEMA["columns"], "sex": sex}}
    dataset_schema_update(dataset=dataset, user=curator, schema=schema)
    payload = body(dataset.pk, 0.5)
    payload["queries"] = [{"kind": "count", "where": {"column": "sex", "in": ["F"]}}]
    created = curator_client.post("/api/v1/releases/", payload, format="json").json()

    # then the release uses sex's data-taken categories: publishing them needs consent
    release = Release.objects.get(pk=created["id"])
    assert release_columns_from_data(release=release) == ["sex"]


def test_a_saved_group_the_schema_dropped_is_not_silently_lost(
    curator_client, client, curator, dataset
):
    # given a draft restricted to M, then M dropped from sex's categories
    from releases.services.datasets import dataset_schema_update
    from tests.conftest import CLINIC_SCHEMA

    created = curator_client.post(
        "/api/v1/releases/", body(dataset.pk, 0.5, "M"), format="json"
    ).json()
    sex = {"kind": "categorical", "categories": ["F"], "other": "other"}
    schema = {**CLINIC_SCHEMA, "columns": {**CLINIC_SCHEMA["columns"], "sex": sex}}
    dataset_schema_update(dataset=dataset, user=curator, schema=schema)
    client.force_login(curator)
    url = f"/releases/{created['id']}/statistics/"

    # when the statistics step is shown and saved as it is
    page = client.get(url).content.decode()
    assert '<optgroup label="no longer declared">' in page
    saved = client.post(
        url, statistics_formset({"kind": "mean", "column": "age", "groups": ['["sex", "M"]']})
    )

    # then the engine's refusal is shown at the groups, and the draft keeps M
    assert saved.status_code == 200
    assert "not a category of sex: M" in saved.content.decode()
    assert Release.objects.get(pk=created["id"]).queries[0]["where"]["in"] == ["M"]
