"""The budget journal (issue 11, point 1): every reservation, spend, refund and top-up is a row
written with the change it records, carrying how the release's statistics composed; the ledger
API and page show them with running figures that end at the dataset's own; curators ask for more
budget and compliance (never the requester) decides, once."""

import importlib
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction

from audit.models import AuditEvent
from privacy_engine.composition import composition_rules
from releases import ledger_selectors
from releases.models import BudgetIncrease, BudgetMovement, Dataset, LedgerEntry
from releases.selectors import dataset_budget
from releases.services import runs
from releases.services.ledger import budget_increase_approve, budget_increase_request
from tests.conftest import client_for, draft_body, make_user, publish_through_api
from tests.languages import compiled_catalogues  # noqa: F401 (a fixture)

backfill = importlib.import_module("releases.migrations.0009_publication_records")
opening_backfill = importlib.import_module("releases.migrations.0011_ledger_opening")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def draft(client, dataset: Dataset, epsilon: float, **extra) -> int:
    response = client.post(
        "/api/v1/releases/", draft_body(dataset.pk, epsilon=epsilon, **extra), format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()["id"]


@pytest.fixture
def history(curator_client, dataset, django_capture_on_commit_callbacks):
    """On a budget of ε 1: a published release of ε 0.3, a queued one of ε 0.2 (reserved) and
    one of ε 0.1 that failed before drawing (refunded)."""
    published = publish_through_api(
        curator_client, django_capture_on_commit_callbacks, draft_body(dataset.pk, epsilon=0.3)
    )
    queued = draft(curator_client, dataset, 0.2)
    assert curator_client.post(f"/api/v1/releases/{queued}/submit/").status_code == 202
    failed = draft(curator_client, dataset, 0.1)
    Path(dataset.table.path).unlink()
    with django_capture_on_commit_callbacks(execute=True):
        assert curator_client.post(f"/api/v1/releases/{failed}/submit/").status_code == 202
    return {"published": published.pk, "queued": queued, "failed": failed}


def ledger_of(client, dataset: Dataset, **params) -> dict:
    response = client.get(f"/api/v1/datasets/{dataset.pk}/ledger/", params)
    assert response.status_code == 200, response.json()
    return response.json()


# --- the journal ------------------------------------------------------------------------------


def test_every_movement_is_a_row_with_its_actor(curator, dataset, history):
    # when
    rows = list(BudgetMovement.objects.order_by("id"))

    # then
    assert [(r.kind, r.release_id, r.actor, r.epsilon) for r in rows] == [
        ("opening", None, curator.username, Decimal("1")),
        ("reservation", history["published"], curator.username, Decimal("0.3")),
        ("spend", history["published"], "system", Decimal("0.3")),
        ("reservation", history["queued"], curator.username, Decimal("0.2")),
        ("reservation", history["failed"], curator.username, Decimal("0.1")),
        ("refund", history["failed"], "system", Decimal("0.1")),
    ]
    assert all(row.dataset_id == dataset.pk for row in rows)
    assert rows[0].at == dataset.created_at
    entries = {e.release_id: e for e in LedgerEntry.objects.all()}
    for row in rows[1:]:
        entry = entries[row.release_id]
        assert row.at == (entry.created_at if row.kind == "reservation" else entry.updated_at)


def test_the_rows_reproduce_the_ledger_entries_exactly(dataset, history):
    # given
    movements = BudgetMovement.objects.all()

    def total(kind: str) -> Decimal:
        return sum((m.epsilon for m in movements if m.kind == kind), Decimal(0))

    def entries(*states: str) -> Decimal:
        return sum((e.epsilon for e in LedgerEntry.objects.filter(state__in=states)), Decimal(0))

    # then
    epsilon, _ = dataset_budget(dataset)
    assert total("reservation") == entries("reserved", "spent", "returned") == Decimal("0.6")
    assert total("spend") == entries("spent") == epsilon.spent == Decimal("0.3")
    assert total("refund") == entries("returned") == Decimal("0.1")
    assert total("reservation") - total("spend") - total("refund") == epsilon.reserved


def test_the_running_figures_end_at_the_datasets_own(curator_client, dataset, history):
    # when
    ledger = ledger_of(curator_client, dataset)

    # then
    running = [
        (row["kind"], row["running"]["committed"], row["running"]["spent"])
        for row in ledger["results"]
    ]
    assert running == [
        ("opening", "0", "0"),
        ("reservation", "0.3", "0"),
        ("spend", "0.3", "0.3"),
        ("reservation", "0.5", "0.3"),
        ("reservation", "0.6", "0.3"),
        ("refund", "0.5", "0.3"),
    ]
    assert [row["running"]["remaining"] for row in ledger["results"]] == [
        "1",
        "0.7",
        "0.7",
        "0.5",
        "0.4",
        "0.5",
    ]
    assert {row["running"]["total"] for row in ledger["results"]} == {"1"}
    last = ledger["results"][-1]["running"]
    assert ledger["summary"] == {
        "total": "1",
        "spent": "0.3",
        "reserved": "0.2",
        "remaining": "0.5",
        "delta": {"total": "0", "spent": "0", "reserved": "0", "remaining": "0"},
    }
    assert {k: last[k] for k in ("total", "spent", "reserved", "remaining")} == {
        k: ledger["summary"][k] for k in ("total", "spent", "reserved", "remaining")
    }
    detail = curator_client.get(f"/api/v1/datasets/{dataset.pk}/").json()
    assert detail["budget"] == {k: ledger["summary"][k] for k in detail["budget"]}


def test_a_row_names_its_release_and_published_version(curator_client, dataset, history):
    # when
    rows = ledger_of(curator_client, dataset)["results"]

    # then
    assert (rows[0]["kind"], rows[0]["release"]) == ("opening", None)
    published = rows[2]["release"]
    assert published["id"] == history["published"]
    assert published["title"] == "Clinic statistics"
    assert published["version"] == 1
    assert published["slug"].startswith("clinic-statistics-")
    assert rows[3]["release"] == {
        "id": history["queued"],
        "title": "Clinic statistics",
        "slug": None,
        "version": None,
    }
    assert rows[1]["actor"] == "curator1"
    assert rows[1]["at"] < rows[3]["at"]


def test_composition_is_sequential_across_statistics_and_parallel_in_a_histogram(
    curator_client, dataset
):
    # given: count, histogram of sex, sum and mean (weight 2) of age at ε 0.5
    release = draft(curator_client, dataset, 0.5)

    # when
    assert curator_client.post(f"/api/v1/releases/{release}/submit/").status_code == 202

    # then
    composition = BudgetMovement.objects.get(release_id=release).composition
    assert composition["rule"] == "sequential"
    assert [
        (s["position"], s["kind"], Decimal(s["epsilon"]).quantize(Decimal("1e-12")), s["within"])
        for s in composition["statistics"]
    ] == [
        (0, "count", Decimal("0.1"), "one noisy answer"),
        (1, "histogram", Decimal("0.1"), "parallel over 2 disjoint cells"),
        (2, "sum", Decimal("0.1"), "one noisy answer"),
        (3, "mean", Decimal("0.2"), "sequential over its 2 noisy parts"),
    ]
    shares = sum(Decimal(s["epsilon"]) for s in composition["statistics"])
    entry = LedgerEntry.objects.get(release_id=release)
    assert entry.epsilon == Decimal(composition["charged"]["epsilon"]) == Decimal("0.5")
    assert shares <= entry.epsilon < shares + Decimal("1e-12")
    assert composition["ledger"] == "differential-privacy ledger: charged as composed"


def test_a_pure_dp_release_on_a_blowfish_ledger_is_journalled_at_twice_its_epsilon(
    curator_client, dataset
):
    # given: the ledger fixed as Blowfish by a first release
    blowfish = {"kind": "blowfish", "epsilon": 0.2, "policy": {"graph": "full_domain"}}
    first = curator_client.post(
        "/api/v1/releases/",
        {**draft_body(dataset.pk), "definition": blowfish},
        format="json",
    ).json()["id"]
    assert curator_client.post(f"/api/v1/releases/{first}/submit/").status_code == 202
    release = draft(curator_client, dataset, 0.1, queries=[{"kind": "histogram", "column": "sex"}])

    # when
    assert curator_client.post(f"/api/v1/releases/{release}/submit/").status_code == 202

    # then
    row = BudgetMovement.objects.get(release_id=release)
    assert row.epsilon == Decimal("0.2")
    assert row.composition["epsilon"] == "0.1"
    assert row.composition["charged"]["epsilon"] == "0.2"
    assert row.composition["ledger"] == "ε-DP on a Blowfish ledger: charged 2ε"


def test_the_ledger_is_paginated_oldest_first(curator_client, dataset, history):
    # when
    first = ledger_of(curator_client, dataset, page_size=2)
    last = ledger_of(curator_client, dataset, page_size=2, page=3)

    # then
    assert first["count"] == 6
    assert [row["kind"] for row in first["results"]] == ["opening", "reservation"]
    assert first["next"].endswith("page=2&page_size=2")
    assert [row["kind"] for row in last["results"]] == ["reservation", "refund"]
    assert last["summary"] == first["summary"]


@pytest.mark.parametrize(
    ("who", "expected"),
    [("anonymous", 401), ("other_curator", 404), ("compliance", 200), ("no_role", 403)],
)
def test_who_may_read_a_ledger(who, expected, dataset, other_curator, compliance_user):
    # given
    users = {
        "anonymous": None,
        "other_curator": other_curator,
        "compliance": compliance_user,
        "no_role": make_user("nobody", None),
    }

    # when
    response = client_for(users[who]).get(f"/api/v1/datasets/{dataset.pk}/ledger/")

    # then
    assert response.status_code == expected
    if expected == 404:
        assert (
            response.json() == client_for(users[who]).get(f"/api/v1/datasets/{dataset.pk}/").json()
        )


# --- top-ups ----------------------------------------------------------------------------------


def request_increase(client, dataset: Dataset, **body):
    return client.post(
        f"/api/v1/datasets/{dataset.pk}/budget-increases/",
        {"epsilon": "0.5", "reason": "A second survey wave.", **body},
        format="json",
    )


def test_an_approved_top_up_raises_the_total_and_the_remaining(
    curator_client, compliance_client, compliance_user, dataset, history
):
    # given
    requested = request_increase(curator_client, dataset, epsilon="0.75")
    assert requested.status_code == 201, requested.json()
    increase = requested.json()
    pending = compliance_client.get("/api/v1/budget-increases/", {"status": "pending"}).json()
    assert [i["id"] for i in pending["results"]] == [increase["id"]]

    # when
    response = compliance_client.post(
        f"/api/v1/budget-increases/{increase['id']}/approve/",
        {"comment": "Approved by the board."},
        format="json",
    )

    # then
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "approved"
    assert response.json()["decided_by"] == compliance_user.username
    dataset.refresh_from_db()
    assert dataset.budget_epsilon == Decimal("1.75")
    epsilon, _ = dataset_budget(dataset)
    assert epsilon.remaining == Decimal("1.25")
    ledger = ledger_of(curator_client, dataset)
    top_up = ledger["results"][-1]
    assert (top_up["kind"], top_up["actor"], top_up["epsilon"], top_up["increase"]) == (
        "top_up",
        compliance_user.username,
        "0.75",
        increase["id"],
    )
    assert top_up["running"] == {
        "total": "1.75",
        "spent": "0.3",
        "reserved": "0.2",
        "committed": "0.5",
        "remaining": "1.25",
    }
    assert ledger["results"][0]["running"]["total"] == "1"  # the opening budget, before it
    assert ledger["summary"]["total"] == "1.75"
    assert ledger["summary"]["remaining"] == "1.25"
    actions = list(
        AuditEvent.objects.filter(object_type="budget_increase")
        .order_by("id")
        .values_list("action", "actor")
    )
    assert actions == [
        ("budget.increase_requested", "curator1"),
        ("budget.increase_approved", compliance_user.username),
    ]
    assert compliance_client.get("/api/v1/budget-increases/?status=pending").json()["count"] == 0


def test_a_top_up_lets_a_refused_release_go_ahead(curator_client, compliance_client, dataset):
    # given: a release of ε 1.5 on a budget of ε 1 is refused
    release = draft(curator_client, dataset, 1.5)
    assert curator_client.post(f"/api/v1/releases/{release}/submit/").status_code == 409
    increase = request_increase(curator_client, dataset, epsilon="0.5").json()
    compliance_client.post(f"/api/v1/budget-increases/{increase['id']}/approve/")

    # when
    response = curator_client.post(f"/api/v1/releases/{release}/submit/")

    # then
    assert response.status_code == 202
    assert ledger_of(curator_client, dataset)["summary"]["remaining"] == "0"


def test_a_rejection_is_audited_and_changes_no_budget(curator_client, compliance_client, dataset):
    # given
    increase = request_increase(curator_client, dataset).json()

    # when
    without_comment = compliance_client.post(
        f"/api/v1/budget-increases/{increase['id']}/reject/", {}, format="json"
    )
    response = compliance_client.post(
        f"/api/v1/budget-increases/{increase['id']}/reject/",
        {"comment": "Spend the current budget first."},
        format="json",
    )

    # then
    assert without_comment.status_code == 400
    assert set(without_comment.json()["errors"]) == {"comment"}
    assert response.status_code == 200
    assert response.json()["status"] == "rejected"
    assert response.json()["comment"] == "Spend the current budget first."
    dataset.refresh_from_db()
    assert dataset.budget_epsilon == Decimal(1)
    assert list(BudgetMovement.objects.values_list("kind", flat=True)) == ["opening"]
    assert AuditEvent.objects.filter(action="budget.increase_rejected").count() == 1


def test_nobody_decides_their_own_request(dataset, curator):
    # given: a curator who is also a compliance officer asks for more budget
    curator.groups.add(Group.objects.get(name="compliance"))
    client = client_for(curator)
    increase = request_increase(client, dataset).json()
    events = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()

    # when
    approve = client.post(f"/api/v1/budget-increases/{increase['id']}/approve/")
    reject = client.post(
        f"/api/v1/budget-increases/{increase['id']}/reject/", {"comment": "no"}, format="json"
    )

    # then
    assert approve.status_code == reject.status_code == 403
    assert "own" in approve.json()["detail"]
    assert BudgetIncrease.objects.get().status == "pending"
    dataset.refresh_from_db()
    assert dataset.budget_epsilon == Decimal(1)
    # the two refusals are recorded, nothing else is
    assert list(
        AuditEvent.objects.filter(pk__gt=events)
        .order_by("id")
        .values_list("actor", "action", "object_id")
    ) == [
        ("curator1", "user.access_denied", "api-budget-increase-approve"),
        ("curator1", "user.access_denied", "api-budget-increase-reject"),
    ]


def test_a_decided_request_cannot_be_decided_again(curator_client, compliance_client, dataset):
    # given
    increase = request_increase(curator_client, dataset).json()
    first = compliance_client.post(f"/api/v1/budget-increases/{increase['id']}/approve/")
    assert first.status_code == 200

    # when
    again = compliance_client.post(f"/api/v1/budget-increases/{increase['id']}/approve/")
    reject = compliance_client.post(
        f"/api/v1/budget-increases/{increase['id']}/reject/", {"comment": "no"}, format="json"
    )

    # then
    assert again.status_code == reject.status_code == 409
    assert "already approved" in again.json()["detail"]
    dataset.refresh_from_db()
    assert dataset.budget_epsilon == Decimal("1.5")
    assert BudgetMovement.objects.filter(kind="top_up").count() == 1


def test_a_curator_cannot_approve(curator_client, other_curator_client, dataset):
    # given
    increase = request_increase(curator_client, dataset).json()

    # when
    own = curator_client.post(f"/api/v1/budget-increases/{increase['id']}/approve/")
    other = other_curator_client.post(f"/api/v1/budget-increases/{increase['id']}/approve/")

    # then
    assert own.status_code == other.status_code == 403
    assert BudgetIncrease.objects.get().status == "pending"


def test_another_curator_cannot_ask_for_a_datasets_budget(other_curator_client, dataset):
    # when
    response = request_increase(other_curator_client, dataset)

    # then
    assert response.status_code == 404
    assert not BudgetIncrease.objects.exists()


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"epsilon": "0"}, "epsilon", "must be a number greater than 0"),
        ({"epsilon": "-1"}, "epsilon", "must be a number greater than 0"),
        ({"epsilon": "100.5"}, "epsilon", "must be at most 100 per request"),
        ({"epsilon": "abc"}, "epsilon", "must be a number"),
        ({"epsilon": "NaN"}, "epsilon", "must be a number greater than 0"),
        ({"epsilon": "1e12"}, "epsilon", "must be at most 100 per request"),
        ({"delta": "1e12"}, "delta", "is too large"),
        ({"epsilon": None}, "epsilon", "must be a number"),
        ({"epsilon": "0.0000000000001"}, "epsilon", "use at most 12 decimal places"),
        ({"delta": "1"}, "delta", "the total δ must stay below 1"),
        ({"delta": "x"}, "delta", "must be a number"),
        ({"reason": "  "}, "reason", "Say why the budget should be raised."),
        ({"reason": "x" * 2001}, "reason", "Use at most 2000 characters."),
    ],
)
def test_invalid_requests_name_the_field_and_change_nothing(
    curator_client, dataset, body, field, message
):
    # when
    response = request_increase(curator_client, dataset, **body)

    # then
    assert response.status_code == 400
    assert response.json()["errors"] == {field: [message]}
    assert not BudgetIncrease.objects.exists()
    assert not AuditEvent.objects.filter(object_type="budget_increase").exists()


def test_delta_can_be_raised_on_a_blowfish_ledger_which_charges_delta(
    client, curator, curator_client, compliance_client, dataset
):
    # given: a Blowfish ledger, on which an (ε, δ)-DP release is charged (1 + e^ε)·δ
    Dataset.objects.filter(pk=dataset.pk).update(
        ledger_kind="blowfish", ledger_policy={"graph": "full_domain"}
    )
    client.force_login(curator)
    assert 'name="delta"' in client.get(f"/datasets/{dataset.pk}/ledger/").content.decode()

    # when
    response = request_increase(curator_client, dataset, delta="0.00001")
    approved = compliance_client.post(f"/api/v1/budget-increases/{response.json()['id']}/approve/")

    # then
    assert response.status_code == 201, response.json()
    assert approved.status_code == 200, approved.json()
    dataset.refresh_from_db()
    assert dataset.budget_delta == Decimal("0.00001")


def test_an_approved_delta_raises_the_delta_budget(curator_client, compliance_client, dataset):
    # given
    increase = request_increase(curator_client, dataset, delta="0.00001").json()

    # when
    compliance_client.post(f"/api/v1/budget-increases/{increase['id']}/approve/")

    # then
    dataset.refresh_from_db()
    assert dataset.budget_delta == Decimal("0.00001")
    summary = ledger_of(curator_client, dataset)["summary"]
    assert summary["delta"]["total"] == "0.00001"


def test_the_request_list_rejects_an_unknown_status(compliance_client, db):
    # when
    response = compliance_client.get("/api/v1/budget-increases/", {"status": "maybe"})

    # then
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"status"}


# --- the backfill -----------------------------------------------------------------------------


def test_the_backfill_journals_entries_written_before_the_journal(curator, dataset, history):
    # given: the entries as migration 0009 finds them, with no journal
    Dataset.objects.filter(pk=dataset.pk).update(
        ledger_kind="blowfish", ledger_policy={"graph": "full_domain"}
    )
    written = [
        (m.kind, m.release_id, m.actor, m.epsilon, m.delta, m.at)
        for m in BudgetMovement.objects.exclude(kind="opening").order_by("id")
    ]
    BudgetMovement.objects.exclude(kind="opening").delete()

    # when
    backfill.budget_movements_backfill(apps, None)
    backfill.budget_movements_backfill(apps, None)  # a second run adds nothing

    # then
    rows = list(BudgetMovement.objects.exclude(kind="opening").order_by("id"))
    assert sorted(
        (r.kind, r.release_id, r.actor, r.epsilon, r.delta, r.at) for r in rows
    ) == sorted(written)
    assert [r.at for r in rows] == sorted(r.at for r in rows)
    reservation = next(r for r in rows if r.release_id == history["published"])
    assert reservation.composition["rule"] == "sequential"
    assert [s["kind"] for s in reservation.composition["statistics"]] == [
        "count",
        "histogram",
        "sum",
        "mean",
    ]
    assert "journalled" in reservation.composition["note"]
    # the ledger's conversion, from the entry's charged amounts and the dataset's ledger kind
    assert reservation.composition["charged"] == {"epsilon": "0.3", "delta": "0"}
    assert reservation.composition["ledger"] == "ε-DP on a Blowfish ledger: charged 2ε"


# --- the page ---------------------------------------------------------------------------------


def test_the_page_shows_the_rows_and_the_chart_data(client, curator, dataset, history):
    # given
    client.force_login(curator)

    # when
    response = client.get(f"/datasets/{dataset.pk}/ledger/")

    # then
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('class="movement-') == 6
    assert composition_rules() in html.replace("&#x27;", "'")
    assert "disjoint cells of one histogram, table or clustering cost" not in html
    chart = json.loads(
        re.search(
            r'<script id="ledger-chart-data" type="application/json">(.*?)</script>', html
        ).group(1)
    )
    assert chart["total"] == [1.0] * 7
    assert chart["committed"] == [0.0, 0.3, 0.3, 0.5, 0.6, 0.5, 0.5]
    assert chart["spent"] == [0.0, 0.0, 0.3, 0.3, 0.3, 0.3, 0.3]
    assert len(chart["at"]) == len(chart["labels"]) == 7
    assert not re.search(r"<script(?![^>]*\b(src|type=\"application/json\"))[^>]*>\s*\S", html)
    assert "/static/js/ledger-chart.js" in html
    assert 'id="budget-increase-form"' in html
    assert (
        f'href="/datasets/{dataset.pk}/ledger/"'
        in client.get(f"/datasets/{dataset.pk}/").content.decode()
    )


@pytest.mark.usefixtures("compiled_catalogues")
def test_a_chinese_reader_reads_the_rules_the_rows_and_the_chart_in_chinese(
    client, curator, dataset, history
):
    # given the ledger of a dataset with released, queued and refunded releases
    client.force_login(curator)

    # when a Chinese reader opens its page
    html = client.get(f"/datasets/{dataset.pk}/ledger/", HTTP_ACCEPT_LANGUAGE="zh-Hans")
    html = html.content.decode().replace("&#x27;", "'")

    # then the engine's rules and each row's words are in Chinese, and the chart's names too
    assert composition_rules() not in html
    assert "一次发布中的各统计量相加（顺序组合：ε = Σ εᵢ：" in html
    assert "差分隐私台账：按组合结果计入" in html
    assert "differential-privacy ledger: charged as composed" not in html
    chart = json.loads(
        re.search(
            r'<script id="ledger-chart-data" type="application/json">(.*?)</script>', html
        ).group(1)
    )
    assert chart["names"] == {"total": "总额", "committed": "已占用", "spent": "已花费"}
    assert chart["labels"][0].startswith("初始预算 ε 1 · 数据集已创建")
    assert chart["labels"][-1] == "现在"
    # and the rows stored keep the engine's English
    stored = BudgetMovement.objects.get(release_id=history["published"], kind="reservation")
    assert stored.composition["ledger"] == "differential-privacy ledger: charged as composed"


def test_compliance_sees_the_page_and_decides_from_it(
    client, curator_client, compliance_user, dataset
):
    # given
    increase = request_increase(curator_client, dataset).json()
    client.force_login(compliance_user)
    page = client.get(f"/datasets/{dataset.pk}/ledger/").content.decode()
    audit = client.get("/audit/").content.decode()
    assert f'action="/budget-increases/{increase["id"]}/approve/"' in page
    assert f'id="pending-increase-{increase["id"]}"' in audit
    assert f'href="/datasets/{dataset.pk}/ledger/"' in audit
    assert 'id="budget-increase-form"' not in page

    # when
    response = client.post(f"/budget-increases/{increase['id']}/approve/", {"comment": ""})

    # then
    assert response.status_code == 302
    assert response["Location"] == f"/datasets/{dataset.pk}/ledger/"
    assert BudgetIncrease.objects.get().status == "approved"


def test_the_page_form_names_a_bad_field(client, curator, dataset):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        f"/datasets/{dataset.pk}/ledger/request/", {"epsilon": "500", "reason": "more"}
    )

    # then
    assert response.status_code == 400
    assert "must be at most 100 per request" in response.content.decode()
    assert not BudgetIncrease.objects.exists()


def test_the_page_is_hidden_from_other_curators(client, other_curator, dataset):
    # given
    client.force_login(other_curator)

    # when / then
    assert client.get(f"/datasets/{dataset.pk}/ledger/").status_code == 404
    assert (
        client.post(
            f"/datasets/{dataset.pk}/ledger/request/", {"epsilon": "1", "reason": "x"}
        ).status_code
        == 404
    )


# --- the opening row and one settlement per reservation ---------------------------------------


def test_a_dataset_opens_its_ledger_and_a_racing_approval_cannot_skew_it(
    curator, curator_client, compliance_user, dataset
):
    # given: a release reserving ε 0.8 of the opening ε 1, and the dataset as a page read it
    release = draft(curator_client, dataset, 0.8)
    assert curator_client.post(f"/api/v1/releases/{release}/submit/").status_code == 202
    seen = Dataset.objects.get(pk=dataset.pk)

    # when: an approval commits before the page sums the rows
    increase = budget_increase_request(dataset=dataset, user=curator, epsilon="0.5", reason="r")
    budget_increase_approve(increase=increase, user=compliance_user)
    rows = ledger_selectors.dataset_ledger_rows(dataset=seen)

    # then: every figure comes from the rows, so the first is the opening ε 1, never negative
    assert [(r.movement.kind, r.epsilon.total, r.epsilon.remaining) for r in rows] == [
        ("opening", Decimal("1"), Decimal("1")),
        ("reservation", Decimal("1"), Decimal("0.2")),
        ("top_up", Decimal("1.5"), Decimal("0.7")),
    ]
    opening = rows[0].movement
    assert (opening.actor, opening.at) == (curator.username, dataset.created_at)


def test_the_opening_backfill_writes_the_total_less_its_top_ups_once(
    curator_client, compliance_client, curator, dataset
):
    # given: a dataset raised by ε 0.5, journalled before opening rows existed
    increase = request_increase(curator_client, dataset, epsilon="0.5", delta="0.0001").json()
    compliance_client.post(f"/api/v1/budget-increases/{increase['id']}/approve/")
    BudgetMovement.objects.filter(kind="opening").delete()

    # when
    opening_backfill.opening_movements_backfill(apps, None)
    opening_backfill.opening_movements_backfill(apps, None)  # a second run adds nothing

    # then: listed first, although written last
    opening = BudgetMovement.objects.get(kind="opening")
    assert (opening.dataset_id, opening.actor, opening.at) == (
        dataset.pk,
        curator.username,
        dataset.created_at,
    )
    assert (opening.epsilon, opening.delta) == (Decimal("1"), Decimal("0"))
    rows = ledger_selectors.dataset_ledger_rows(dataset=dataset)
    assert [r.movement.kind for r in rows] == ["opening", "top_up"]
    assert (rows[-1].epsilon.total, rows[-1].delta.total) == (Decimal("1.5"), Decimal("0.0001"))


def test_a_release_has_one_reservation_and_one_settlement_and_a_dataset_one_opening(
    dataset, history
):
    # given
    queued = BudgetMovement.objects.get(release_id=history["queued"])
    published = BudgetMovement.objects.get(release_id=history["published"], kind="spend")
    opening = BudgetMovement.objects.get(kind="opening")

    # when / then
    for row, kind in ((queued, "reservation"), (published, "refund"), (opening, "opening")):
        with pytest.raises(IntegrityError), transaction.atomic():
            BudgetMovement.objects.create(
                dataset=dataset,
                release=row.release,
                kind=kind,
                actor="x",
                at=row.at,
                epsilon=row.epsilon,
            )


def test_a_release_reserved_before_the_journal_settles_all_the_same(dataset, history):
    # given: the queued release's reservation predates the journal (no row), on a Blowfish
    # ledger
    BudgetMovement.objects.filter(release_id=history["queued"]).delete()
    Dataset.objects.filter(pk=dataset.pk).update(
        ledger_kind="blowfish", ledger_policy={"graph": "full_domain"}
    )
    entry = LedgerEntry.objects.get(release_id=history["queued"])
    release = entry.release

    # when
    runs.ledger_settle(entry, release=release, state=LedgerEntry.State.RETURNED)

    # then: the refund is journalled with the entry's amounts and the ledger's conversion
    refund = BudgetMovement.objects.get(release_id=history["queued"])
    assert (refund.kind, refund.actor, refund.epsilon, refund.delta) == (
        "refund",
        "system",
        entry.epsilon,
        entry.delta,
    )
    assert refund.composition["charged"] == {"epsilon": "0.2", "delta": "0"}
    assert refund.composition["ledger"] == "ε-DP on a Blowfish ledger: charged 2ε"


@pytest.mark.parametrize("comment", [12345, ["ok"], {"text": "ok"}, True])
def test_an_approval_comment_that_is_not_text_is_refused_naming_it(
    curator_client, compliance_client, dataset, comment
):
    # given
    increase = request_increase(curator_client, dataset).json()

    # when
    response = compliance_client.post(
        f"/api/v1/budget-increases/{increase['id']}/approve/", {"comment": comment}, format="json"
    )

    # then
    assert response.status_code == 400
    assert response.json()["errors"] == {"comment": ["must be text"]}
    assert BudgetIncrease.objects.get().status == "pending"


def test_the_api_refuses_a_request_in_english_whatever_the_client_s_language(
    curator_client, dataset
):
    # when a client that prefers Chinese sends a budget request without a number or a reason
    response = curator_client.post(
        f"/api/v1/datasets/{dataset.pk}/budget-increases/",
        {"epsilon": "many", "reason": ""},
        format="json",
        HTTP_ACCEPT_LANGUAGE="zh-Hans",
    )

    # then the API answers in English, as it does every client (the page would say it in Chinese)
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "epsilon": ["must be a number"],
        "reason": ["Say why the budget should be raised."],
    }
    assert response["Content-Language"] == "en"


def test_the_api_answers_in_english_under_a_deployment_prefix_too(curator_client, dataset):
    # when a client that prefers Chinese calls the API of an app deployed under /data
    response = curator_client.post(
        f"/api/v1/datasets/{dataset.pk}/budget-increases/",
        {"epsilon": "many", "reason": ""},
        format="json",
        HTTP_ACCEPT_LANGUAGE="zh-Hans",
        SCRIPT_NAME="/data",
    )

    # then it answers in English
    assert response.json()["errors"]["epsilon"] == ["must be a number"]
    assert response["Content-Language"] == "en"
