"""(ε, δ)-DP and Blowfish releases through the HTTP API (DESIGN.md, "HTTP API contract":
definition kinds, and "Composition"): drafts with previews, 400s naming the bad field, releases
published end to end in-process, and the ledger's rules for mixing definitions on one dataset."""

import math
from decimal import Decimal, localcontext

import pytest

from audit.models import AuditEvent
from privacy_engine import GaussianMechanism
from releases.models import Dataset, LedgerEntry, Release
from tests.conftest import CLINIC_SCHEMA, csv_upload

QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "sum", "column": "age"},
    {"kind": "mean", "column": "age", "weight": 2},
]
AGE_THETA_5 = {"graph": "distance_threshold", "column": "age", "theta": 5}
AGE_DECADES = {"graph": "partition", "column": "age", "width": 10}


def blowfish(epsilon: float = 0.5, policy: dict = AGE_THETA_5) -> dict:
    return {"kind": "blowfish", "epsilon": epsilon, "policy": policy}


def approx_dp(epsilon: float = 0.5, **delta) -> dict:
    return {"kind": "approx_dp", "epsilon": epsilon, **delta}


def pure_dp(epsilon: float = 0.5) -> dict:
    return {"kind": "pure_dp", "epsilon": epsilon}


# Blowfish policies constrain the values they name; a missing value is not one of them, so the
# policy's smaller sensitivities apply where missing values are filled with a public constant.
COMPLETE_SCHEMA = {
    **CLINIC_SCHEMA,
    "columns": {
        name: {**spec, "fill": spec["lower"]} if spec["kind"] == "numeric" else spec
        for name, spec in CLINIC_SCHEMA["columns"].items()
    },
}


@pytest.fixture
def dataset(dataset, curator):
    """The conftest's clinic dataset, with missing numbers filled by the lower bound."""
    from releases.services.datasets import dataset_schema_update

    return dataset_schema_update(dataset=dataset, user=curator, schema=COMPLETE_SCHEMA)


@pytest.fixture
def delta_dataset(curator):
    """A second clinic dataset whose budget includes δ = 0.001."""
    from releases.services.datasets import dataset_create, dataset_schema_update

    created = dataset_create(
        owner=curator,
        name="Clinic with delta",
        upload=csv_upload(),
        budget_epsilon="1.0",
        budget_delta="0.001",
    )
    return dataset_schema_update(dataset=created, user=curator, schema=CLINIC_SCHEMA)


def post_draft(
    client,
    dataset: Dataset,
    definition: dict,
    title: str = "Clinic statistics",
    queries: list[dict] = QUERIES,
):
    return client.post(
        "/api/v1/releases/",
        {"dataset": dataset.pk, "title": title, "definition": definition, "queries": queries},
        format="json",
    )


def create_draft(client, dataset: Dataset, definition: dict, title: str = "Clinic") -> int:
    response = post_draft(client, dataset, definition, title)
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def submit(client, release_id: int):
    return client.post(f"/api/v1/releases/{release_id}/submit/")


def submitted(client, dataset: Dataset, definition: dict, title: str = "First") -> int:
    """A draft submitted (its task not run): the dataset's ledger is now fixed."""
    release_id = create_draft(client, dataset, definition, title)
    assert submit(client, release_id).status_code == 202
    return release_id


def ledger_state(dataset: Dataset) -> tuple:
    dataset.refresh_from_db()
    return (
        dataset.ledger_kind,
        dataset.ledger_policy,
        list(LedgerEntry.objects.order_by("id").values_list("release_id", "epsilon", "delta")),
        # A refusal adds its own event (tests/releases/test_submission_refusals.py); nothing else.
        AuditEvent.objects.exclude(action="release.submission_refused").count(),
    )


# --- drafts -------------------------------------------------------------------------------------


def test_approx_dp_draft_is_201_with_gaussian_preview_and_delta_per_statistic(
    curator_client, dataset
):
    # when: no δ given, so δ = min(10⁻⁶, 1/5²) = 10⁻⁶ on the declared size 5
    response = post_draft(curator_client, dataset, approx_dp())

    # then
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "draft"
    assert body["definition"] == {"kind": "approx_dp", "epsilon": 0.5, "delta": 1e-6}
    preview = body["preview"]
    assert [p["mechanism"] for p in preview] == [
        "gaussian",
        "gaussian",
        "gaussian",
        "gaussian+gaussian",
    ]
    assert [p["epsilon"] for p in preview] == pytest.approx([0.1, 0.1, 0.1, 0.2], rel=1e-12)
    assert [p["delta"] for p in preview] == pytest.approx([2e-7, 2e-7, 2e-7, 4e-7], rel=1e-12)
    assert math.fsum(p["delta"] for p in preview) <= 1e-6
    assert [p["sensitivity"] for p in preview] == [1, 1, 100, 100]
    assert ["pure_dp" in p for p in preview] == [False] * 4
    assert LedgerEntry.objects.count() == 0


def test_approx_dp_draft_keeps_an_explicit_delta(curator_client, dataset):
    # when
    response = post_draft(curator_client, dataset, approx_dp(delta=1e-7))

    # then
    assert response.status_code == 201
    assert response.json()["definition"] == {"kind": "approx_dp", "epsilon": 0.5, "delta": 1e-7}


def test_blowfish_draft_is_201_with_preview_and_the_pure_dp_comparison(curator_client, dataset):
    # when
    response = post_draft(curator_client, dataset, blowfish())

    # then
    assert response.status_code == 201
    body = response.json()
    assert body["definition"] == {
        "kind": "blowfish",
        "epsilon": 0.5,
        "policy": {"graph": "distance_threshold", "column": "age", "theta": 5.0},
    }
    preview = body["preview"]
    assert [p["mechanism"] for p in preview] == [
        "none (public under the definition)",
        "geometric",
        "laplace",
        # with missing ages filled, the mean's denominator is n, public under Blowfish
        "laplace",
    ]
    assert [p["epsilon"] for p in preview] == pytest.approx([0, 0.125, 0.125, 0.25], rel=1e-12)
    assert [p["sensitivity"] for p in preview] == [0, 2, 5, 5]
    assert [p["pure_dp"]["sensitivity"] for p in preview] == [1, 1, 100, 100]
    total = preview[2]
    assert total["expected_abs_error"] == pytest.approx(40.0, rel=1e-12)
    assert total["pure_dp"]["expected_abs_error"] == pytest.approx(1000.0, rel=1e-12)
    assert LedgerEntry.objects.count() == 0


MALFORMED = [
    pytest.param(
        blowfish(policy={"graph": "distance_threshold", "column": "age", "theta": 0}),
        "definition.policy.theta",
        id="theta-zero",
    ),
    pytest.param(
        blowfish(policy={"graph": "distance_threshold", "column": "agee", "theta": 5}),
        "definition.policy.column",
        id="unknown-column",
    ),
    pytest.param(
        blowfish(policy={"graph": "partition", "column": "sex", "groups": [["F"]]}),
        "definition.policy.groups",
        id="groups-missing-a-category",
    ),
    pytest.param(
        blowfish(policy={"graph": "partition", "column": "sex", "groups": [["F", "M"], ["M"]]}),
        "definition.policy.groups",
        id="groups-repeating-a-category",
    ),
    pytest.param(
        blowfish(policy={"graph": "attribute", "c": 0}), "definition.policy.c", id="c-zero"
    ),
    pytest.param(
        blowfish(policy={"graph": "complete"}), "definition.policy.graph", id="unknown-graph"
    ),
    pytest.param(approx_dp(delta=1), "definition.delta", id="delta-one"),
    pytest.param(approx_dp(delta=0.05), "definition.delta", id="delta-above-1-over-10n"),
]


@pytest.mark.parametrize(("definition", "field"), MALFORMED)
def test_malformed_definition_is_400_naming_the_field_and_creates_nothing(
    curator_client, dataset, definition, field
):
    # when
    response = post_draft(curator_client, dataset, definition)

    # then
    assert response.status_code == 400
    body = response.json()
    assert body["detail"] == "Invalid input."
    assert list(body["errors"]) == [field]
    assert Release.objects.count() == 0


def test_well_formed_partition_policies_are_accepted(curator_client, dataset):
    # when
    responses = [
        post_draft(curator_client, dataset, blowfish(policy=AGE_DECADES), "Decades"),
        post_draft(
            curator_client,
            dataset,
            blowfish(policy={"graph": "partition", "column": "sex", "groups": [["F"], ["M"]]}),
            "By sex",
        ),
    ]

    # then
    assert [r.status_code for r in responses] == [201, 201]
    assert [r.json()["preview"][2]["sensitivity"] for r in responses] == [10, 100]


def test_approx_dp_draft_with_the_largest_allowed_delta_and_a_tiny_epsilon_is_201(
    curator_client, dataset
):
    # when: one count gets the whole ε = 0.0003 and δ = 0.02 = 1/(10n) for n = 5
    response = post_draft(
        curator_client, dataset, approx_dp(0.0003, delta=0.02), queries=[{"kind": "count"}]
    )

    # then
    assert response.status_code == 201


# --- published end to end -----------------------------------------------------------------------


def test_blowfish_release_is_published_with_an_exact_count_and_policy_sensitivities(
    curator_client, anonymous_client, dataset, django_capture_on_commit_callbacks
):
    # given
    release_id = create_draft(curator_client, dataset, blowfish(), "Blowfish clinic")

    # when
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(curator_client, release_id)

    # then
    assert response.status_code == 202
    assert Release.objects.get(pk=release_id).status == "published"
    slug = Release.objects.get(pk=release_id).series.slug
    version = anonymous_client.get(f"/api/v1/catalog/{slug}/versions/1/").json()
    assert version["definition"] == blowfish(
        policy={"graph": "distance_threshold", "column": "age", "theta": 5.0}
    )
    count, histogram, total, mean = version["statistics"]
    assert (count["value"], count["ci95"], count["mechanism"]) == (
        5,
        [5, 5],
        "none (public under the definition)",
    )
    assert (count["epsilon"], count["delta"], count["sensitivity"]) == (0, 0, 0)
    assert (histogram["mechanism"], histogram["sensitivity"]) == ("geometric", 2)
    assert (total["mechanism"], total["sensitivity"]) == ("laplace", 5)
    assert (mean["mechanism"], mean["sensitivity"]) == ("laplace", 5)
    entry = LedgerEntry.objects.get(release_id=release_id)
    assert (entry.definition_kind, entry.state, entry.epsilon, entry.delta) == (
        "blowfish",
        "spent",
        Decimal("0.5"),
        Decimal(0),
    )
    detail = curator_client.get(f"/api/v1/datasets/{dataset.pk}/").json()
    assert detail["ledger"] == "blowfish"
    assert Decimal(detail["budget"]["remaining"]) == Decimal("0.5")


def test_approx_dp_release_is_published_with_gaussian_noise_and_its_accounting(
    curator_client, anonymous_client, delta_dataset, django_capture_on_commit_callbacks
):
    # given
    release_id = create_draft(curator_client, delta_dataset, approx_dp(), "Gaussian clinic")
    preview = curator_client.get(f"/api/v1/releases/{release_id}/").json()["preview"]

    # when
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(curator_client, release_id)

    # then
    assert response.status_code == 202
    assert Release.objects.get(pk=release_id).status == "published"
    slug = Release.objects.get(pk=release_id).series.slug
    version = anonymous_client.get(f"/api/v1/catalog/{slug}/versions/1/").json()
    assert version["definition"] == {"kind": "approx_dp", "epsilon": 0.5, "delta": 1e-6}
    statistics = version["statistics"]
    assert [s["mechanism"] for s in statistics] == [
        "gaussian",
        "gaussian",
        "gaussian",
        "gaussian+gaussian",
    ]
    assert [s["accounting"] for s in statistics] == [GaussianMechanism.accounting] * 4
    assert [s["delta"] for s in statistics] == pytest.approx(
        [p["delta"] for p in preview], rel=1e-12
    )
    assert [s["epsilon"] for s in statistics] == pytest.approx(
        [p["epsilon"] for p in preview], rel=1e-12
    )
    assert [s["noise_scale"] for s in statistics] == [p["noise_scale"] for p in preview]
    assert set(statistics[1]["value"]) == {"F", "M"}
    entry = LedgerEntry.objects.get(release_id=release_id)
    assert (entry.definition_kind, entry.state, entry.epsilon, entry.delta) == (
        "approx_dp",
        "spent",
        Decimal("0.5"),
        Decimal("0.000001"),
    )
    detail = curator_client.get(f"/api/v1/datasets/{delta_dataset.pk}/").json()
    assert detail["ledger"] == "differential_privacy"
    assert Decimal(detail["budget_delta"]["spent"]) == Decimal("0.000001")
    assert Decimal(detail["budget_delta"]["remaining"]) == Decimal("0.000999")


# --- mixing definitions on one dataset's ledger ---------------------------------------------


def test_blowfish_dataset_accepts_another_release_under_the_same_policy(curator_client, dataset):
    # given
    first = submitted(curator_client, dataset, blowfish(0.3))
    second = create_draft(curator_client, dataset, blowfish(0.2), "Second")

    # when
    response = submit(curator_client, second)

    # then
    assert response.status_code == 202
    assert list(
        LedgerEntry.objects.order_by("id").values_list("release_id", "definition_kind", "epsilon")
    ) == [(first, "blowfish", Decimal("0.3")), (second, "blowfish", Decimal("0.2"))]
    dataset.refresh_from_db()
    assert (dataset.ledger_kind, dataset.ledger_policy) == (
        "blowfish",
        {"graph": "distance_threshold", "column": "age", "theta": 5.0},
    )


def test_blowfish_dataset_refuses_another_policy_with_409_and_changes_nothing(
    curator_client, dataset
):
    # given
    submitted(curator_client, dataset, blowfish(0.3))
    other = create_draft(curator_client, dataset, blowfish(0.2, policy=AGE_DECADES), "Decades")
    before = ledger_state(dataset)

    # when
    response = submit(curator_client, other)

    # then
    assert response.status_code == 409
    assert response.json() == {
        "detail": "This dataset's budget is accounted under the Blowfish policy "
        '{"column": "age", "graph": "distance_threshold", "theta": 5.0}; a release under a '
        "different Blowfish policy cannot be added to it, because the two guarantees do not "
        "compose into one."
    }
    assert ledger_state(dataset) == before
    assert Release.objects.get(pk=other).status == "draft"


def test_pure_dp_release_on_a_blowfish_dataset_is_charged_twice_its_epsilon(
    curator_client, dataset
):
    # given
    submitted(curator_client, dataset, blowfish(0.3))
    release_id = create_draft(curator_client, dataset, pure_dp(0.2), "Pure")

    # when
    response = submit(curator_client, release_id)

    # then
    assert response.status_code == 202
    entry = LedgerEntry.objects.get(release_id=release_id)
    assert (entry.definition_kind, entry.epsilon, entry.delta) == (
        "pure_dp",
        Decimal("0.4"),
        Decimal(0),
    )
    assert Release.objects.get(pk=release_id).epsilon_charged == Decimal("0.4")
    budget = curator_client.get(f"/api/v1/datasets/{dataset.pk}/").json()["budget"]
    assert Decimal(budget["remaining"]) == Decimal("0.3")
    dataset.refresh_from_db()
    assert dataset.ledger_kind == "blowfish"


def test_pure_dp_release_on_a_blowfish_dataset_that_fits_only_once_is_409(curator_client, dataset):
    # given 0.7 left; ε = 0.4 would be charged 0.8
    submitted(curator_client, dataset, blowfish(0.3))
    release_id = create_draft(curator_client, dataset, pure_dp(0.4), "Pure")
    before = ledger_state(dataset)

    # when
    response = submit(curator_client, release_id)

    # then
    assert response.status_code == 409
    assert response.json() == {
        "detail": "Not enough privacy budget: this release requests ε = 0.8 "
        "but only ε = 0.7 remains."
    }
    assert ledger_state(dataset) == before
    assert Release.objects.get(pk=release_id).status == "draft"


def test_approx_dp_release_on_a_blowfish_dataset_is_charged_2_epsilon_and_1_plus_e_eps_delta(
    curator_client, delta_dataset
):
    # given
    submitted(curator_client, delta_dataset, blowfish(0.3))
    release_id = create_draft(curator_client, delta_dataset, approx_dp(0.3), "Gaussian")
    with localcontext() as context:
        context.prec = 60
        exact_delta = (1 + Decimal("0.3").exp()) * Decimal("0.000001")

    # when
    response = submit(curator_client, release_id)

    # then δ is charged to 15 significant digits, rounded up
    assert response.status_code == 202
    entry = LedgerEntry.objects.get(release_id=release_id)
    assert (entry.epsilon, entry.delta) == (Decimal("0.6"), Decimal("0.00000234985880757601"))
    assert Decimal(0) < entry.delta - exact_delta < Decimal("1e-20")


def test_blowfish_release_on_a_dp_dataset_is_409_and_changes_nothing(curator_client, dataset):
    # given
    submitted(curator_client, dataset, pure_dp(0.3))
    release_id = create_draft(curator_client, dataset, blowfish(0.2), "Blowfish")
    before = ledger_state(dataset)

    # when
    response = submit(curator_client, release_id)

    # then
    assert response.status_code == 409
    assert response.json() == {
        "detail": "This dataset's budget is accounted under differential privacy; a Blowfish "
        "release protects less (only neighbours along its policy's graph) and cannot be "
        "charged to it."
    }
    assert ledger_state(dataset) == before
    assert before[0] == "differential_privacy"
    assert Release.objects.get(pk=release_id).status == "draft"


def test_approx_dp_release_on_a_dp_dataset_adds_up_with_pure_dp(curator_client, delta_dataset):
    # given
    submitted(curator_client, delta_dataset, pure_dp(0.3))
    release_id = create_draft(curator_client, delta_dataset, approx_dp(0.2), "Gaussian")

    # when
    response = submit(curator_client, release_id)

    # then
    assert response.status_code == 202
    detail = curator_client.get(f"/api/v1/datasets/{delta_dataset.pk}/").json()
    assert Decimal(detail["budget"]["reserved"]) == Decimal("0.5")
    assert Decimal(detail["budget_delta"]["reserved"]) == Decimal("0.000001")


def test_approx_dp_release_without_a_delta_budget_is_409_mentioning_delta(curator_client, dataset):
    # given a dataset whose δ budget is 0 (the default)
    release_id = create_draft(curator_client, dataset, approx_dp(0.2), "Gaussian")
    before = ledger_state(dataset)

    # when
    response = submit(curator_client, release_id)

    # then
    assert response.status_code == 409
    assert response.json() == {
        "detail": "Not enough privacy budget: this release requests δ = 0.000001 "
        "but only δ = 0 remains."
    }
    assert ledger_state(dataset) == before
    assert before[:3] == ("", None, [])
    assert Release.objects.get(pk=release_id).status == "draft"


def test_refused_first_release_leaves_the_ledger_open_for_another_definition(
    curator_client, dataset
):
    # given an (ε, δ) release refused for lack of δ budget
    refused = create_draft(curator_client, dataset, approx_dp(0.2), "Gaussian")
    assert submit(curator_client, refused).status_code == 409
    release_id = create_draft(curator_client, dataset, blowfish(0.2), "Blowfish")

    # when
    response = submit(curator_client, release_id)

    # then
    assert response.status_code == 202
    dataset.refresh_from_db()
    assert dataset.ledger_kind == "blowfish"
