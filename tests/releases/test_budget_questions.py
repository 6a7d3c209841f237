"""Upload sets the table's budget from the two starting-point questions, with a raw ε field
behind "set it yourself"; a new release then starts from its share of the budget."""

from decimal import Decimal

import pytest

from releases.models import Dataset
from tests.conftest import csv_upload


def upload(client, **fields):
    return client.post(
        "/datasets/new/", {"name": "Clinic", "file": csv_upload(), "declared_size": "100", **fields}
    )


def test_the_answers_set_the_total_budget_and_delta(client, curator):
    client.force_login(curator)

    response = upload(client, harm="severe", planned_releases="regularly")

    assert response.status_code == 302
    dataset = Dataset.objects.get(name="Clinic")
    assert dataset.budget_epsilon == Decimal("0.25")
    assert dataset.budget_delta == Decimal("0.000004")  # 4 releases × min(10⁻⁶, 1/100²)
    assert (dataset.harm, dataset.planned_releases) == ("severe", "regularly")


def test_a_budget_set_by_hand_wins_over_the_answers(client, curator):
    client.force_login(curator)

    upload(client, harm="severe", planned_releases="once", budget_epsilon="3", budget_delta="0")

    dataset = Dataset.objects.get(name="Clinic")
    assert (dataset.budget_epsilon, dataset.budget_delta) == (Decimal(3), Decimal(0))


def test_the_upload_page_asks_the_questions_and_hides_the_raw_fields(client, curator):
    client.force_login(curator)

    page = client.get("/datasets/new/").content.decode()

    questions = page[page.index('id="budget-questions"') :]
    assert 'name="harm" value="moderate"' in questions
    assert "checked" in questions[questions.index('value="moderate"') - 80 :][:200]
    custom = page[page.index('<details id="budget-custom">') :]
    custom = custom[: custom.index("</details>")]
    assert 'name="budget_epsilon"' in custom
    assert 'name="budget_delta"' in custom
    assert 'name="budget_epsilon"' not in page.replace(custom, "")


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"harm": "apocalyptic", "planned_releases": "once"}, "harm", "must be one of"),
        ({"harm": "low"}, "planned_releases", "answer both starting-point questions"),
        ({"planned_releases": "few"}, "harm", "answer both starting-point questions"),
    ],
)
def test_a_bad_answer_is_a_400_naming_the_field(curator_client, fields, field, message):
    response = curator_client.post(
        "/api/v1/datasets/",
        {"name": "Clinic", "file": csv_upload(), **fields},
        format="multipart",
    )

    assert response.status_code == 400
    assert message in " ".join(response.json()["errors"][field])
    assert not Dataset.objects.exists()


def test_the_api_takes_the_answers(curator_client):
    response = curator_client.post(
        "/api/v1/datasets/",
        {"name": "Clinic", "file": csv_upload(), "harm": "low", "planned_releases": "once"},
        format="multipart",
    )

    assert response.status_code == 201
    assert Dataset.objects.get().budget_epsilon == Decimal(2)


def test_the_dataset_page_says_why_and_a_new_release_starts_from_its_share(client, curator):
    client.force_login(curator)
    upload(client, harm="moderate", planned_releases="few")
    dataset = Dataset.objects.get(name="Clinic")
    dataset.schema = {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 100}}}
    dataset.save()

    page = client.get(f"/datasets/{dataset.pk}/").content.decode()
    privacy = client.get(f"/datasets/{dataset.pk}/releases/new/").content.decode()

    assert "Moderate harm: a total of ε = 1 for all releases" in page
    assert 'name="epsilon" value="0.5"' in privacy


def test_the_home_page_offers_a_curator_one_obvious_start(client, curator, compliance_user):
    anonymous = client.get("/").content.decode()
    client.force_login(curator)
    signed_in = client.get("/").content.decode()
    client.force_login(compliance_user)
    compliance = client.get("/").content.decode()

    assert 'id="publish-statistics" href="/datasets/new/">Publish statistics</a>' in signed_in
    assert "publish-statistics" not in anonymous
    assert "publish-statistics" not in compliance
    assert 'href="/audit/">Review the audit trail and budgets</a>' in compliance


def test_a_budget_set_by_hand_keeps_no_answers_and_no_reasons(client, curator):
    client.force_login(curator)
    upload(client, harm="moderate", planned_releases="few", budget_epsilon="5")
    dataset = Dataset.objects.get(name="Clinic")

    page = client.get(f"/datasets/{dataset.pk}/").content.decode()

    assert (dataset.harm, dataset.planned_releases, dataset.budget_reasons) == ("", "", [])
    assert 'id="budget-reasons"' not in page.split("<main", 1)[1].split("budget-custom")[0]
    assert "Why this budget" not in page


def test_the_reasons_stay_as_said_at_upload_when_the_declared_size_changes(client, curator):
    client.force_login(curator)
    upload(client, harm="moderate", planned_releases="regularly")
    dataset = Dataset.objects.get(name="Clinic")
    said = list(dataset.budget_reasons)
    dataset.declared_size = 7
    dataset.save()

    page = client.get(f"/datasets/{dataset.pk}/").content.decode()

    assert said[2] in page  # "… for each of 4 releases on the declared size" at 100 records
    assert "0.000004 in total" in said[2]


def test_on_a_blowfish_ledger_the_default_epsilon_dp_release_fits_its_double_charge(curator):
    from releases.selectors import dataset_release_epsilon_default
    from releases.services.datasets import dataset_create

    dataset = dataset_create(
        owner=curator,
        name="Clinic",
        upload=csv_upload(),
        harm="low",
        planned_releases="once",
    )
    assert dataset_release_epsilon_default(dataset=dataset) == Decimal(2)
    dataset.ledger_kind = "blowfish"

    assert dataset_release_epsilon_default(dataset=dataset) == Decimal(1)
