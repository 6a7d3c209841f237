"""Organisations (issue 12, point 5): a curator or compliance officer of one organisation never
sees or changes another's datasets, drafts, releases awaiting approval, ledgers, budget requests
or events, on any route. The matrix is generated over every URL pattern (each id parameter tried
with every object of the other organisation), so a new route without an object-level check fails
here the day it is added. The public catalog stays public."""

import pytest
from django.test import Client

from audit.models import AuditEvent
from organisations.services import organisation_of
from releases import selectors
from releases.models import BudgetIncrease, Dataset, LedgerEntry, Release, ReleaseApproval
from releases.services.approvals import dataset_approval_requirement_set, release_reject
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.ledger import budget_increase_request
from releases.services.releases import release_draft_create, release_submit
from tests.conftest import CLINIC_SCHEMA, csv_upload
from tests.url_patterns import CONVERTER_EXAMPLES, every_route

# What only alpha may see: its dataset's name, its private titles, its people, its reasons and
# comments, and its budget (a figure nothing else has).
MARKERS = (
    "Alphasecretdataset",
    "Alphasecretdraft",
    "Alphasecretwaiting",
    "Alphasecretreason",
    "Alphasecretcomment",
    "3.14159",
)
PEOPLE = ("alphacurator", "alphaofficer")
# Every method on the API (its views answer PUT, PATCH and DELETE where they take them); a
# page takes GET and POST.
API_METHODS = ("get", "post", "put", "patch", "delete")
PAGE_METHODS = ("get", "post")
QUERIES = [{"kind": "count"}, {"kind": "histogram", "column": "sex"}]


def member(username: str, role: str, organisation: str):
    from accounts.roles import Role
    from accounts.services import user_create_or_reset

    user, _ = user_create_or_reset(
        username=username, role=Role(role), password="pw-test-12345", organisation=organisation
    )
    return user


@pytest.fixture
def alpha(db, django_capture_on_commit_callbacks):
    """Everything alpha has: a dataset, a draft, a release awaiting approval, a published one,
    a budget request, and the events of all of it."""
    curator = member("alphacurator", "curator", "alpha")
    officer = member("alphaofficer", "compliance", "alpha")
    dataset = dataset_create(
        owner=curator, name="Alphasecretdataset", upload=csv_upload(), budget_epsilon="3.14159"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    definition = {"kind": "pure_dp", "epsilon": 0.2}
    with django_capture_on_commit_callbacks(execute=True):
        published = release_draft_create(
            user=curator,
            dataset=dataset,
            title="Public alpha statistics",
            definition=definition,
            queries=QUERIES,
        )
        release_submit(release=published, user=curator)
    dataset_approval_requirement_set(dataset=dataset, user=officer, required=True)
    waiting = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Alphasecretwaiting",
        definition=definition,
        queries=QUERIES,
    )
    release_submit(release=waiting, user=curator)
    rejected = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Alphasecretrejected",
        definition=definition,
        queries=QUERIES,
    )
    release_submit(release=rejected, user=curator)
    release_reject(
        release=rejected,
        user=member("alphaofficer2", "compliance", "alpha"),
        comment="Alphasecretcomment",
    )
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Alphasecretdraft",
        definition=definition,
        queries=QUERIES,
    )
    increase = budget_increase_request(
        dataset=dataset, user=curator, epsilon="0.5", delta=None, reason="Alphasecretreason"
    )
    published.refresh_from_db()
    assert published.status == Release.Status.PUBLISHED
    return {
        "dataset": dataset,
        "draft": draft,
        "waiting": Release.objects.get(pk=waiting.pk),
        "rejected": Release.objects.get(pk=rejected.pk),
        "published": published,
        "increase": increase,
    }


@pytest.fixture
def beta(db):
    """Beta's curator, officer, someone with both roles, and someone with none."""
    both = member("betaboth", "curator", "beta")
    both.groups.add(member("betaofficer", "compliance", "beta").groups.get())
    nobody = member("betanobody", "curator", "beta")
    nobody.groups.clear()
    return [
        member("betacurator", "curator", "beta"),
        member("betaofficer", "compliance", "beta"),
        both,
        nobody,
    ]


def state(alpha) -> dict:
    dataset = Dataset.objects.get(pk=alpha["dataset"].pk)
    return {
        "dataset": (
            dataset.name,
            dataset.schema,
            dataset.requires_approval,
            dataset.raw_deleted_at,
            str(dataset.budget_epsilon),
        ),
        "releases": sorted(
            Release.objects.filter(dataset=dataset).values_list(
                "pk", "status", "title", "definition", "queries"
            )
        ),
        "ledger": sorted(LedgerEntry.objects.values_list("pk", "state")),
        "increases": sorted(BudgetIncrease.objects.values_list("pk", "status")),
        "approvals": ReleaseApproval.objects.count(),
        "alpha_events": AuditEvent.objects.filter(organisation="alpha").count(),
    }


def paths_for(alpha) -> list[tuple[str, str]]:
    """Every route, each integer parameter filled with each of alpha's objects' ids, and the
    published release's slug and version where a route takes them."""
    ids = sorted(
        {
            alpha[name].pk
            for name in ("dataset", "draft", "waiting", "rejected", "published", "increase")
        }
    )
    published = alpha["published"]
    paths = []
    for example, name in every_route():
        candidates = [example]
        if f"/{CONVERTER_EXAMPLES['int']}/" in example or example.endswith(
            f"/{CONVERTER_EXAMPLES['int']}"
        ):
            candidates = [
                example.replace(f"/{CONVERTER_EXAMPLES['int']}/", f"/{pk}/") for pk in ids
            ]
        for path in candidates:
            path = path.replace("/x/v1/", f"/{published.series.slug}/v{published.version}/")
            path = path.replace("/catalog/x/", f"/catalog/{published.series.slug}/")
            paths.append((path, name))
            # Filters by another organisation's ids, where a list takes them.
            if "audit" in path or "budget-increases" in path:
                paths += [(f"{path}?dataset={pk}", name) for pk in ids]
    return paths


def leaks(alpha, users, *, only_get: bool = False) -> list[str]:
    """Every response to one of ``users`` that shows something only alpha may see."""
    found = []
    for user in users:
        client = Client()
        client.force_login(user)
        for path, name in paths_for(alpha):
            methods = API_METHODS if path.startswith("/api/") else PAGE_METHODS
            for method in ("get",) if only_get else methods:
                if "_auth_user_id" not in client.session:  # a logout route ended the session
                    client.force_login(user)
                body_kwargs = (
                    {} if method == "get" else {"data": "{}", "content_type": "application/json"}
                )
                response = getattr(client, method)(path, **body_kwargs)
                body = (
                    b"".join(response.streaming_content) if response.streaming else response.content
                )
                text = body.decode(errors="replace")
                shown = [marker for marker in (*MARKERS, *PEOPLE) if marker in text]
                if shown:
                    found.append(f"{user} {method.upper()} {path} ({name}): {shown}")
    return found


def test_no_route_shows_or_changes_another_organisation_s_data(alpha, beta):
    before = state(alpha)

    assert leaks(alpha, beta) == []
    assert state(alpha) == before


def test_the_matrix_catches_a_missing_check(alpha, beta, monkeypatch):
    # given the check as it was before organisations: compliance saw every dataset
    def every_dataset(*, user):
        return Dataset.objects.all() if "officer" in user.username else Dataset.objects.none()

    monkeypatch.setattr(selectors, "dataset_list_visible", every_dataset)

    # then beta's officer sees alpha's dataset somewhere
    assert any("Alphasecretdataset" in leak for leak in leaks(alpha, beta[1:2], only_get=True))


def test_each_organisation_sees_its_own(alpha, beta):
    alpha_officer = Client()
    alpha_officer.force_login(
        organisation_of(alpha["dataset"].owner).memberships.get(user__username="alphaofficer").user
    )

    page = alpha_officer.get("/audit/").content.decode()
    events = alpha_officer.get("/api/v1/audit/events/?page_size=200").json()

    assert "Alphasecretdataset" in page
    assert {event["actor"] for event in events["results"]} >= {"alphacurator", "alphaofficer"}
    assert not {"betacurator", "betaofficer"} & {e["actor"] for e in events["results"]}


def test_the_public_catalog_stays_public(alpha, beta, client):
    published = alpha["published"]

    listing = client.get("/api/v1/catalog/").json()
    page = client.get(f"/catalog/{published.series.slug}/v{published.version}/")

    assert [entry["title"] for entry in listing["results"]] == ["Public alpha statistics"]
    assert page.status_code == 200


def test_every_dataset_and_event_belongs_to_an_organisation(alpha, beta):
    assert not Dataset.objects.filter(organisation__isnull=True).exists()
    assert set(
        AuditEvent.objects.filter(dataset_id=alpha["dataset"].pk).values_list(
            "organisation", flat=True
        )
    ) == {"alpha"}
    # beta's own events: its accounts made, nothing of alpha's
    beta_events = AuditEvent.objects.filter(organisation="beta")
    assert set(beta_events.values_list("action", flat=True)) == {"user.created"}
    assert not beta_events.filter(dataset_id=alpha["dataset"].pk).exists()
