"""Who may call which endpoint of API v1: anonymous 401, wrong role 403, another owner's object 404,
the catalog public; plus the token endpoint and the shape of error bodies."""

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import Group
from django.urls import resolve
from knox.crypto import hash_token
from knox.models import AuthToken
from rest_framework.test import APIClient

from audit.models import AuditEvent
from releases.models import BudgetIncrease, Dataset, LedgerEntry, Release
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create, release_submit
from releases.services.runs import release_run
from tests.conftest import CLINIC_SCHEMA, client_for, csv_upload, make_user

QUERIES = [{"kind": "count"}, {"kind": "histogram", "column": "sex"}]


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass(frozen=True)
class World:
    dataset: Dataset
    draft: Release
    published: Release


@pytest.fixture
def world(curator, dataset) -> World:
    """curator1 owns `dataset` with one draft, and a second dataset with a published release."""
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Draft statistics",
        definition={"kind": "pure_dp", "epsilon": 0.2},
        queries=QUERIES,
    )
    other = dataset_create(
        owner=curator,
        name="Clinic copy",
        upload=csv_upload(),
        budget_epsilon="1.0",
        confirm_new_budget=True,
    )
    other = dataset_schema_update(dataset=other, user=curator, schema=CLINIC_SCHEMA)
    published = release_draft_create(
        user=curator,
        dataset=other,
        title="Published statistics",
        definition={"kind": "pure_dp", "epsilon": 0.2},
        queries=[*QUERIES, {"kind": "range_histogram", "column": "age", "bins": 10}],
    )
    release_submit(release=published, user=curator)
    release_run(release_id=published.pk, worker="test:0")
    published.refresh_from_db()
    assert published.status == "published"
    return World(dataset=dataset, draft=draft, published=published)


@pytest.fixture
def clients(anonymous_client, curator_client, other_curator_client, compliance_client):
    return {
        "anonymous": anonymous_client,
        "curator": curator_client,
        "other_curator": other_curator_client,
        "compliance": compliance_client,
    }


def _catalog_base(w: World) -> str:
    return f"/api/v1/catalog/{w.published.series.slug}/versions/{w.published.version}/"


# name: (method, path, body, format)
ENDPOINTS = {
    "datasets-list": ("get", lambda w: "/api/v1/datasets/", None, None),
    "datasets-create": (
        "post",
        lambda w: "/api/v1/datasets/",
        lambda w: {
            "name": "Uploaded",
            "file": csv_upload(),
            "budget_epsilon": "1.0",
            "confirm_new_budget": "true",
        },
        "multipart",
    ),
    "dataset-detail": ("get", lambda w: f"/api/v1/datasets/{w.dataset.pk}/", None, None),
    "dataset-schema": (
        "put",
        lambda w: f"/api/v1/datasets/{w.dataset.pk}/schema/",
        lambda w: {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 90}}},
        "json",
    ),
    "releases-list": ("get", lambda w: "/api/v1/releases/", None, None),
    "releases-create": (
        "post",
        lambda w: "/api/v1/releases/",
        lambda w: {
            "dataset": w.dataset.pk,
            "title": "New",
            "definition": {"kind": "pure_dp", "epsilon": 0.1},
            "queries": QUERIES,
        },
        "json",
    ),
    "release-detail": ("get", lambda w: f"/api/v1/releases/{w.draft.pk}/", None, None),
    "release-submit": ("post", lambda w: f"/api/v1/releases/{w.draft.pk}/submit/", None, None),
    "release-publish-again": (
        "post",
        lambda w: f"/api/v1/releases/{w.draft.pk}/publish-again/",
        None,
        None,
    ),
    "api-logout": ("post", lambda w: "/api/v1/auth/logout/", None, None),
    "approvals": ("get", lambda w: "/api/v1/approvals/", None, None),
    "release-approve": (
        "post",
        lambda w: f"/api/v1/releases/{w.published.pk}/approve/",
        lambda w: {"comment": "Checked."},
        "json",
    ),
    "release-reject": (
        "post",
        lambda w: f"/api/v1/releases/{w.published.pk}/reject/",
        lambda w: {"comment": "Not this one."},
        "json",
    ),
    "dataset-approval": (
        "put",
        lambda w: f"/api/v1/datasets/{w.dataset.pk}/approval/",
        lambda w: {"required": True},
        "json",
    ),
    "catalog-list": ("get", lambda w: "/api/v1/catalog/", None, None),
    "catalog-version": ("get", _catalog_base, None, None),
    "catalog-file": ("get", lambda w: _catalog_base(w) + "files/json/", None, None),
    "catalog-range": (
        "get",
        lambda w: _catalog_base(w) + "statistics/2/range/?from=0&to=50",
        None,
        None,
    ),
    "catalog-withdraw": (
        "post",
        lambda w: _catalog_base(w) + "withdraw/",
        lambda w: {"reason": "The bounds were wrong."},
        "json",
    ),
    "catalog-diff": (
        "get",
        lambda w: f"/api/v1/catalog/{w.published.series.slug}/diff/?from=1&to=1",
        None,
        None,
    ),
    "signing-key": ("get", lambda w: "/api/v1/signing-key/", None, None),
    "audit-events": ("get", lambda w: "/api/v1/audit/events/", None, None),
    "audit-verify": ("get", lambda w: "/api/v1/audit/verify/", None, None),
    "audit-anchor": ("get", lambda w: "/api/v1/audit/anchor/", None, None),
    "translate": ("get", lambda w: "/api/v1/translate/?epsilon=0.1", None, None),
    "starting-point": (
        "get",
        lambda w: "/api/v1/guidance/starting-point/?harm=severe&releases=few",
        None,
        None,
    ),
    "simulated-preview": (
        "get",
        lambda w: f"/api/v1/releases/{w.draft.pk}/simulated-preview/",
        None,
        None,
    ),
    "dataset-accuracy": (
        "post",
        lambda w: f"/api/v1/datasets/{w.dataset.pk}/accuracy/",
        lambda w: {"query": {"kind": "count"}, "ci95_halfwidth": 10},
        "json",
    ),
    "dataset-raw-delete": (
        "post",
        lambda w: f"/api/v1/datasets/{w.dataset.pk}/delete-raw-data/",
        lambda w: {"reason": "The agreement ended.", "confirm": True},
        "json",
    ),
    "dataset-ledger": ("get", lambda w: f"/api/v1/datasets/{w.dataset.pk}/ledger/", None, None),
    "dataset-budget-increases": (
        "get",
        lambda w: f"/api/v1/datasets/{w.dataset.pk}/budget-increases/",
        None,
        None,
    ),
    "dataset-budget-increase-request": (
        "post",
        lambda w: f"/api/v1/datasets/{w.dataset.pk}/budget-increases/",
        lambda w: {"epsilon": "0.5", "reason": "A second survey wave."},
        "json",
    ),
    "budget-increases": ("get", lambda w: "/api/v1/budget-increases/", None, None),
    "budget-increase-approve": (
        "post",
        lambda w: f"/api/v1/budget-increases/{_pending_increase(w).pk}/approve/",
        None,
        None,
    ),
    "budget-increase-reject": (
        "post",
        lambda w: f"/api/v1/budget-increases/{_pending_increase(w).pk}/reject/",
        lambda w: {"comment": "Not justified."},
        "json",
    ),
}


def _pending_increase(w: World) -> BudgetIncrease:
    """A pending request of curator1's on its dataset (a row only: the matrix compares audit
    counts, so it is not made through the audited service)."""
    increase, _ = BudgetIncrease.objects.get_or_create(
        dataset=w.dataset,
        requested_by=w.dataset.owner,
        defaults={"epsilon": "0.5", "reason": "A second survey wave."},
    )
    return increase


EXPECTED = {
    #                  anonymous, curator, other_curator, compliance
    "datasets-list": (401, 200, 200, 200),
    "datasets-create": (401, 201, 201, 403),
    "dataset-detail": (401, 200, 404, 200),
    "dataset-schema": (401, 200, 404, 403),
    "releases-list": (401, 200, 200, 403),
    "releases-create": (401, 201, 404, 403),
    "release-detail": (401, 200, 404, 403),
    "release-submit": (401, 202, 404, 403),
    # a draft has nothing to publish again: its owner gets the conflict, others nothing
    "release-publish-again": (401, 409, 404, 403),
    "approvals": (401, 403, 403, 200),
    # a published release awaits no decision: compliance gets the conflict, others nothing
    "release-approve": (401, 403, 403, 409),
    "release-reject": (401, 403, 403, 409),
    "dataset-approval": (401, 403, 403, 200),
    # any logged-in user may revoke their own tokens
    "api-logout": (401, 204, 204, 204),
    "catalog-list": (200, 200, 200, 200),
    "catalog-version": (200, 200, 200, 200),
    "catalog-file": (200, 200, 200, 200),
    "catalog-range": (200, 200, 200, 200),
    "catalog-withdraw": (401, 201, 404, 403),
    "catalog-diff": (200, 200, 200, 200),
    "signing-key": (200, 200, 200, 200),
    "audit-events": (401, 403, 403, 200),
    "audit-verify": (401, 403, 403, 200),
    "audit-anchor": (401, 403, 403, 200),
    "translate": (200, 200, 200, 200),
    "dataset-accuracy": (401, 200, 404, 403),
    "dataset-raw-delete": (401, 200, 404, 403),
    "starting-point": (200, 200, 200, 200),
    "simulated-preview": (401, 200, 404, 403),
    "dataset-ledger": (401, 200, 404, 200),
    "dataset-budget-increases": (401, 200, 404, 200),
    "dataset-budget-increase-request": (401, 201, 404, 403),
    "budget-increases": (401, 200, 200, 200),
    "budget-increase-approve": (401, 403, 403, 200),
    "budget-increase-reject": (401, 403, 403, 200),
}
ROLES = ("anonymous", "curator", "other_curator", "compliance")
MATRIX = [
    pytest.param(endpoint, role, statuses[i], id=f"{endpoint}-{role}-{statuses[i]}")
    for endpoint, statuses in EXPECTED.items()
    for i, role in enumerate(ROLES)
]
# Any logged-in account may revoke its own tokens, whatever its role (or none).
SELF_SERVICE = {"api-logout"}
NON_PUBLIC = [
    name for name, statuses in EXPECTED.items() if statuses[0] == 401 and name not in SELF_SERVICE
]


def call(client: APIClient, endpoint: str, w: World):
    method, path, body, fmt = ENDPOINTS[endpoint]
    kwargs = {} if body is None else {"data": body(w), "format": fmt}
    return getattr(client, method)(path(w), **kwargs)


def denials() -> list[tuple[str, int, str]]:
    """(actor, status, method) of every access_denied event, oldest first."""
    return [
        (e.actor, e.details["status"], e.details["method"])
        for e in AuditEvent.objects.filter(action="user.access_denied").order_by("id")
    ]


def snapshot(w: World) -> dict:
    w.dataset.refresh_from_db()
    w.draft.refresh_from_db()
    return {
        "datasets": Dataset.objects.count(),
        "releases": Release.objects.count(),
        "ledger": LedgerEntry.objects.count(),
        # Refusals are events of their own (checked by denial_recorded); nothing else is.
        "audit": AuditEvent.objects.exclude(action="user.access_denied").count(),
        "schema": w.dataset.schema,
        "draft_status": w.draft.status,
    }


def test_matrix_covers_every_api_route(world):
    # given
    from releases.urls_api import urlpatterns

    # when
    covered = {resolve(path(world).split("?")[0]).url_name for _, path, _, _ in ENDPOINTS.values()}

    # then every route but the token one (tested below) is in the matrix
    assert covered == {p.name for p in urlpatterns} - {"api-token"}
    assert set(EXPECTED) == set(ENDPOINTS)


@pytest.mark.parametrize(("endpoint", "role", "expected"), MATRIX)
def test_permission_matrix(world, clients, endpoint, role, expected):
    # given
    before = snapshot(world)

    # when
    response = call(clients[role], endpoint, world)
    if response.streaming:
        b"".join(response.streaming_content)  # consuming it closes the file

    # then
    assert response.status_code == expected
    if expected >= 400:
        assert set(response.json()) == {"detail"}
        assert isinstance(response.json()["detail"], str)
        assert snapshot(world) == before
    # a logged-in user's refusal is recorded, once, with who and how; nothing else is
    method = ENDPOINTS[endpoint][0].upper()
    user = {"curator": "curator1", "other_curator": "curator2", "compliance": "auditor"}
    refused = expected in (403, 404) and role != "anonymous"
    assert denials() == ([(user[role], expected, method)] if refused else [])


@pytest.mark.parametrize("endpoint", NON_PUBLIC)
def test_anonymous_gets_401_with_token_challenge(world, anonymous_client, endpoint):
    # when
    response = call(anonymous_client, endpoint, world)

    # then
    assert response.status_code == 401
    assert response.json() == {"detail": "Authentication credentials were not provided."}
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("endpoint", sorted(SELF_SERVICE))
def test_user_without_role_may_use_self_service_endpoints(world, endpoint):
    client = client_for(make_user("nobody", None))

    # when
    response = call(client, endpoint, world)

    # then
    assert response.status_code == 204
    assert denials() == []


@pytest.mark.parametrize("endpoint", NON_PUBLIC)
def test_user_without_role_gets_403_on_every_non_public_endpoint(world, endpoint):
    # given
    client = client_for(make_user("nobody", None))
    before = snapshot(world)

    # when
    response = call(client, endpoint, world)

    # then
    assert response.status_code == 403
    assert set(response.json()) == {"detail"}
    assert snapshot(world) == before
    assert denials() == [("nobody", 403, ENDPOINTS[endpoint][0].upper())]


def test_compliance_dataset_list_and_detail_omit_row_count(world, compliance_client):
    # when
    listing = compliance_client.get("/api/v1/datasets/").json()
    detail = compliance_client.get(f"/api/v1/datasets/{world.dataset.pk}/").json()

    # then
    assert listing["count"] == 2
    assert all("row_count" not in entry for entry in listing["results"])
    assert "row_count" not in detail
    assert detail["id"] == world.dataset.pk
    assert detail["owner"] == "curator1"
    assert detail["budget"] == {
        "total": "1",
        "spent": "0",
        "reserved": "0",
        "remaining": "1",
    }


def test_curator_dataset_detail_includes_row_count_and_budget(world, curator_client):
    # when
    detail = curator_client.get(f"/api/v1/datasets/{world.dataset.pk}/").json()

    # then
    assert detail["row_count"] == 5
    assert detail["budget"]["remaining"] == "1"


def test_other_curator_lists_see_none_of_curator1s_objects(world, other_curator_client):
    # when
    datasets = other_curator_client.get("/api/v1/datasets/").json()
    releases = other_curator_client.get("/api/v1/releases/").json()

    # then
    assert datasets == {"count": 0, "next": None, "previous": None, "results": []}
    assert releases == {"count": 0, "next": None, "previous": None, "results": []}


def test_unknown_catalog_version_is_404_with_detail(world, anonymous_client):
    # when
    response = anonymous_client.get(f"/api/v1/catalog/{world.published.series.slug}/versions/99/")

    # then
    assert response.status_code == 404
    assert set(response.json()) == {"detail"}


def test_catalog_does_not_serve_a_draft_series(world, anonymous_client):
    # when
    response = anonymous_client.get(f"/api/v1/catalog/{world.draft.series.slug}/versions/1/")

    # then
    assert response.status_code == 404


def test_dual_role_user_never_sees_row_count_of_other_curators_datasets(world):
    # given a user holding both roles
    user = make_user("both", "curator")
    user.groups.add(Group.objects.get(name="compliance"))
    client = client_for(user)

    # when
    listing = client.get("/api/v1/datasets/").json()
    detail = client.get(f"/api/v1/datasets/{world.dataset.pk}/").json()

    # then detail and list agree: curator1's dataset is shown without its true size
    assert "row_count" not in detail
    entry = next(e for e in listing["results"] if e["id"] == world.dataset.pk)
    assert "row_count" not in entry


def test_token_endpoint_returns_a_token_that_authenticates(curator):
    # given
    client = APIClient()

    # when
    response = client.post(
        "/api/v1/auth/token/", {"username": "curator1", "password": "pw-test-12345"}, format="json"
    )

    # then
    assert response.status_code == 200
    key = response.json()["token"]
    assert set(response.json()) == {"token", "expiry"}
    stored = AuthToken.objects.get(user=curator)
    assert stored.digest == hash_token(key) != key  # only the digest is stored
    authed = APIClient()
    authed.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert authed.get("/api/v1/datasets/").status_code == 200
    assert authed.get("/api/v1/audit/events/").status_code == 403
    login = AuditEvent.objects.get(action="user.login")
    assert (login.actor, login.object_id) == ("curator1", str(curator.pk))


def test_token_endpoint_issues_a_new_token_per_login(curator):
    # given
    client = APIClient()
    body = {"username": "curator1", "password": "pw-test-12345"}

    # when
    first = client.post("/api/v1/auth/token/", body, format="json").json()["token"]
    second = client.post("/api/v1/auth/token/", body, format="json").json()["token"]

    # then both work: a token is shown once, so a second client gets its own
    assert first != second
    assert AuthToken.objects.count() == 2
    for key in (first, second):
        authed = APIClient()
        authed.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        assert authed.get("/api/v1/datasets/").status_code == 200


def test_token_endpoint_bad_password_is_400_and_audited(curator):
    # given
    client = APIClient()

    # when
    response = client.post(
        "/api/v1/auth/token/",
        {"username": "curator1", "password": "wrong-password-1"},
        format="json",
    )

    # then
    assert response.status_code == 400
    assert response.json() == {"detail": "Unable to log in with these credentials."}
    assert AuthToken.objects.count() == 0
    failed = AuditEvent.objects.get(action="user.login_failed")
    assert failed.actor == "system"
    assert failed.details == {"username": "curator1", "via": "api", "repeats_counted_for_s": 600}
    assert not AuditEvent.objects.filter(action="user.login").exists()


def test_token_endpoint_unknown_user_is_400_and_audited(db):
    # when
    response = APIClient().post(
        "/api/v1/auth/token/", {"username": "ghost", "password": "whatever-123"}, format="json"
    )

    # then
    assert response.status_code == 400
    assert response.json() == {"detail": "Unable to log in with these credentials."}
    assert AuditEvent.objects.get(action="user.login_failed").details == {
        "username": "(unknown account)",
        "via": "api",
        "repeats_counted_for_s": 600,
    }


def test_token_endpoint_missing_fields_name_them(db):
    # when
    response = APIClient().post("/api/v1/auth/token/", {}, format="json")

    # then
    assert response.status_code == 400
    assert response.json() == {
        "detail": "Invalid input.",
        "errors": {
            "username": ["This field is required."],
            "password": ["This field is required."],
        },
    }
    assert AuditEvent.objects.count() == 0


def test_invalid_token_is_401(curator):
    # given
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")

    # when
    response = client.get("/api/v1/datasets/")

    # then
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid token."}


def test_compliance_token_is_refused_on_curator_only_endpoint(compliance_user):
    # given
    key = (
        APIClient()
        .post(
            "/api/v1/auth/token/",
            {"username": "auditor", "password": "pw-test-12345"},
            format="json",
        )
        .json()["token"]
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")

    # when
    response = client.get("/api/v1/releases/")

    # then
    assert response.status_code == 403
    assert response.json() == {"detail": "This needs the curator role."}
