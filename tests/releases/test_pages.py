"""The server-rendered pages: access rules, the upload and schema forms, the release wizard, the
public catalog and the compliance audit page."""

import json
import math
import re
from decimal import Decimal

import pytest
from django.urls import reverse

from audit.models import AuditEvent
from releases.models import Dataset, LedgerEntry, Release
from releases.services.datasets import dataset_create
from releases.services.releases import release_draft_create, release_submit
from tests.conftest import (
    CLINIC_CSV,
    CLINIC_CSV_CRLF,
    CLINIC_SCHEMA,
    csv_cells,
    csv_upload,
    draft_body,
    stored_cells,
)

NAMES = ("Ann", "Bob", "Cid", "Dee", "Eve")
NUMBERS = ("34", "51", "29", "120")
PURE_DP = {"kind": "pure_dp", "epsilon": 0.5}
# CLINIC_SCHEMA as stored: the undeclared "name" column becomes an identifier.
STORED_CLINIC_SCHEMA = {
    "columns": {"name": {"kind": "identifier"}, **CLINIC_SCHEMA["columns"]},
    "declared_size": 5,
}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# --- helpers ---------------------------------------------------------------------------------


def page_of(response) -> str:
    return response.content.decode()


def make_draft(user, dataset, *, title="Clinic statistics", epsilon=0.5, queries=None) -> Release:
    return release_draft_create(
        user=user,
        dataset=dataset,
        title=title,
        definition={"kind": "pure_dp", "epsilon": epsilon},
        queries=draft_body(dataset.pk)["queries"] if queries is None else queries,
    )


def publish(capture, user, dataset, **draft_kwargs) -> Release:
    """Draft and submit through the services; the eager task publishes on commit."""
    draft = make_draft(user, dataset, **draft_kwargs)
    with capture(execute=True):
        release_submit(release=draft, user=user)
    draft.refresh_from_db()
    assert draft.status == Release.Status.PUBLISHED
    return draft


def field_blocks(page: str) -> dict[str, tuple[str, str]]:
    """The ``partials/field.html`` blocks by input name: (class attribute, inner HTML). The
    partial's closing tag starts its line (its errors are in a div of their own)."""
    blocks = {}
    for classes, inner in re.findall(r'<div class="(field[^"]*)">(.*?)\n</div>', page, re.DOTALL):
        name = re.search(r'name="([^"]+)"', inner)
        if name:
            blocks[name.group(1)] = (classes, inner)
    return blocks


def schema_row(page: str, column: str) -> str:
    match = re.search(rf'<th scope="row">{column}</th>(.*?)</tr>', page, re.DOTALL)
    assert match is not None, f"no schema row for {column}"
    return match.group(1)


def statistic_rows(page: str) -> list[str]:
    """The statistic rows of the formset table (the hidden template row excluded)."""
    table = page.split('<table id="statistics">', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<tr class="statistic-row">(.*?)</tr>', table, re.DOTALL)


def audit_rows(page: str) -> list[tuple[int, str, str]]:
    """(event id, actor, action) of each row of the events table, in page order."""
    table = page.split('<table id="events">', 1)[1].split("</table>", 1)[0]
    return [
        (int(pk), actor, action)
        for pk, actor, action in re.findall(
            r"<tr><td>(\d+)</td><td>[^<]*</td><td>([^<]*)</td><td>[^<]*</td><td>([^<]*)</td>",
            table,
        )
    ]


def catalog_titles(page: str) -> list[str]:
    table = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.findall(r'<td><a href="/catalog/[^"]+">([^<]*)</a></td>', table)


def json_script(page: str, element_id: str):
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', page, re.DOTALL
    )
    assert match is not None, f"no json_script {element_id}"
    return json.loads(match.group(1))


def stat_post(*rows: dict, initial: int = 1) -> dict:
    data = {
        "stat-TOTAL_FORMS": str(len(rows)),
        "stat-INITIAL_FORMS": str(initial),
        "stat-MIN_NUM_FORMS": "1",
        "stat-MAX_NUM_FORMS": "1000",
    }
    for index, row in enumerate(rows):
        data.update({f"stat-{index}-{key}": value for key, value in row.items()})
    return data


def events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


def private_files(settings) -> list:
    root = settings.PRIVATE_STORAGE_ROOT
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def draft(curator, dataset) -> Release:
    return make_draft(curator, dataset)


@pytest.fixture
def published(curator, dataset, django_capture_on_commit_callbacks) -> Release:
    return publish(django_capture_on_commit_callbacks, curator, dataset)


@pytest.fixture
def bare_dataset(curator) -> Dataset:
    """Curator1's dataset with no schema declared yet."""
    return dataset_create(owner=curator, name="Bare", upload=csv_upload(), budget_epsilon="1.0")


# --- 2. access -------------------------------------------------------------------------------

CURATOR_PAGES = [
    "/datasets/",
    "/datasets/new/",
    "/datasets/{dataset}/",
    "/datasets/{dataset}/releases/new/",
    "/releases/{release}/privacy/",
    "/releases/{release}/statistics/",
    "/releases/{release}/preview/",
    "/releases/{release}/confirm/",
    "/releases/{release}/",
]
OWNED_PAGES = [url for url in CURATOR_PAGES if "{" in url]


@pytest.mark.parametrize("template", CURATOR_PAGES)
def test_curator_pages_redirect_anonymous_visitors_to_login(client, draft, template):
    # given
    url = template.format(dataset=draft.dataset_id, release=draft.pk)

    # when
    response = client.get(url)

    # then
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={url}"


@pytest.mark.parametrize("template", CURATOR_PAGES)
def test_curator_pages_are_forbidden_to_compliance_users(client, draft, compliance_user, template):
    # given
    client.force_login(compliance_user)

    # when
    response = client.get(template.format(dataset=draft.dataset_id, release=draft.pk))

    # then
    assert response.status_code == 403


@pytest.mark.parametrize("template", CURATOR_PAGES)
def test_curator_pages_render_for_the_owner(client, draft, curator, template):
    # given
    client.force_login(curator)

    # when
    response = client.get(template.format(dataset=draft.dataset_id, release=draft.pk))

    # then
    assert response.status_code == 200


@pytest.mark.parametrize("template", OWNED_PAGES)
def test_another_curators_dataset_and_release_pages_are_not_found(
    client, draft, other_curator, template
):
    # given
    client.force_login(other_curator)

    # when
    response = client.get(template.format(dataset=draft.dataset_id, release=draft.pk))

    # then
    assert response.status_code == 404


def test_another_curators_dataset_is_not_listed(client, dataset, other_curator):
    # given
    client.force_login(other_curator)

    # when
    page = page_of(client.get("/datasets/"))

    # then
    assert "Clinic" not in page
    assert "No datasets yet. Upload a CSV table to start." in page


def test_another_curator_cannot_submit_a_release_or_change_a_schema(
    client, draft, other_curator, django_capture_on_commit_callbacks
):
    # given
    client.force_login(other_curator)
    events_before = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()

    # when
    with django_capture_on_commit_callbacks(execute=True):
        confirm = client.post(f"/releases/{draft.pk}/confirm/")
    schema = client.post(
        f"/datasets/{draft.dataset_id}/",
        {"action": "save", "col1-kind": "numeric", "col1-lower": "0", "col1-upper": "1"},
    )
    suggest = client.post(f"/datasets/{draft.dataset_id}/", {"action": "suggest"})

    # then
    assert (confirm.status_code, schema.status_code, suggest.status_code) == (404, 404, 404)
    draft.refresh_from_db()
    assert draft.status == Release.Status.DRAFT
    assert LedgerEntry.objects.count() == 0
    assert Dataset.objects.get(pk=draft.dataset_id).schema == STORED_CLINIC_SCHEMA
    # the only events are the three refusals, each with who tried what
    new = AuditEvent.objects.filter(pk__gt=events_before).order_by("id")
    assert [(e.actor, e.action, e.details["path"], e.details["status"]) for e in new] == [
        ("curator2", "user.access_denied", f"/releases/{draft.pk}/confirm/", 404),
        ("curator2", "user.access_denied", f"/datasets/{draft.dataset_id}/", 404),
        ("curator2", "user.access_denied", f"/datasets/{draft.dataset_id}/", 404),
    ]


def test_compliance_user_cannot_upload_a_dataset(client, compliance_user, settings):
    # when
    client.force_login(compliance_user)
    response = client.post(
        "/datasets/new/", {"name": "Sneaky", "file": csv_upload(), "budget_epsilon": "1"}
    )

    # then
    assert response.status_code == 403
    assert Dataset.objects.count() == 0
    assert private_files(settings) == []


def test_audit_page_redirects_anonymous_visitors_to_login(client, db):
    # when
    response = client.get("/audit/")

    # then
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/audit/"


def test_audit_page_is_forbidden_to_curators(client, curator):
    # given
    client.force_login(curator)

    # when
    response = client.get("/audit/")

    # then
    assert response.status_code == 403


def test_audit_page_renders_for_compliance(client, compliance_user):
    # given
    client.force_login(compliance_user)

    # when
    response = client.get("/audit/")

    # then
    assert response.status_code == 200
    assert "<h1>Audit trail</h1>" in page_of(response)


def test_catalog_and_published_version_are_public(client, published):
    # when
    catalog = client.get("/catalog/")
    version = client.get(f"/catalog/{published.series.slug}/v1/")

    # then
    assert catalog.status_code == 200
    assert catalog_titles(page_of(catalog)) == ["Clinic statistics"]
    assert version.status_code == 200


def test_draft_release_has_no_public_page(client, draft):
    # when
    response = client.get(f"/catalog/{draft.series.slug}/v1/")

    # then
    assert re.fullmatch(r"clinic-statistics-[0-9a-f]{8}", draft.series.slug)
    assert response.status_code == 404
    assert catalog_titles(page_of(client.get("/catalog/"))) == []


def test_unknown_version_of_a_published_release_is_not_found(client, published):
    # when
    response = client.get(f"/catalog/{published.series.slug}/v2/")

    # then
    assert response.status_code == 404


# --- 3. upload form --------------------------------------------------------------------------


def test_upload_creates_the_dataset_and_redirects_to_it(client, curator, settings):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        "/datasets/new/",
        {"name": "Clinic", "file": csv_upload(), "budget_epsilon": "2.5", "declared_size": "5"},
    )

    # then
    dataset = Dataset.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/datasets/{dataset.pk}/"
    assert (dataset.owner, dataset.name, dataset.row_count) == (curator, "Clinic", 5)
    assert (dataset.budget_epsilon, dataset.declared_size, dataset.schema) == (
        Decimal("2.5"),
        5,
        {},
    )
    assert dataset.columns == [
        {"name": "name", "inferred_kind": "identifier"},
        {"name": "age", "inferred_kind": "numeric"},
        {"name": "sex", "inferred_kind": "categorical"},
        {"name": "visits", "inferred_kind": "numeric"},
    ]
    assert stored_cells(dataset.table.path) == csv_cells(CLINIC_CSV)
    assert not dataset.file
    assert [e.dataset_id for e in events("dataset.uploaded")] == [dataset.pk]
    follow = page_of(client.get(response["Location"]))
    assert "Uploaded. Now declare what is public about each column." in follow


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"file": b""}, "file", "The file is empty."),
        (
            {"file": b"a,b,c\n1,2,3\n4,5\n"},
            "file",
            "Row 3 has 2 fields but the header has 3.",
        ),
        # (a name left empty is taken from the file: tests/releases/test_guided_path_pages.py)
        ({"name": "n" * 201}, "name", "Use at most 200 characters."),
        (
            {"name": "a\tb"},
            "name",
            "Do not use control characters (such as NUL, tabs or line breaks).",
        ),
        ({"budget_epsilon": "-1"}, "budget_epsilon", "must be a number greater than 0"),
        ({"declared_size": "0"}, "declared_size", "must be a positive whole number"),
    ],
    ids=["empty-file", "ragged-rows", "long-name", "control-name", "negative-budget", "size-0"],
)
def test_bad_upload_re_renders_with_the_error_at_its_field_and_creates_nothing(
    client, curator, settings, overrides, field, message
):
    # given
    client.force_login(curator)
    data = {"name": "Clinic", "file": CLINIC_CSV, "budget_epsilon": "1", "declared_size": ""}
    data.update(overrides)
    data["file"] = csv_upload(data["file"])
    events_before = AuditEvent.objects.count()

    # when
    response = client.post("/datasets/new/", data)

    # then
    assert response.status_code == 200
    blocks = field_blocks(page_of(response))
    classes, inner = blocks[field]
    assert classes == "field has-error"
    assert f'<div role="alert"><ul class="errorlist"><li>{message}</li></ul></div>' in inner
    assert [name for name, (cls, _) in blocks.items() if cls != "field"] == [field]
    assert Dataset.objects.count() == 0
    assert AuditEvent.objects.count() == events_before
    assert private_files(settings) == []


def test_upload_without_a_file_asks_for_one(client, curator, settings):
    # given
    client.force_login(curator)

    # when
    response = client.post("/datasets/new/", {"name": "Clinic", "budget_epsilon": "1"})

    # then
    assert response.status_code == 200
    classes, inner = field_blocks(page_of(response))["file"]
    assert classes == "field has-error"
    assert "<li>Choose a CSV file to upload.</li>" in inner
    assert Dataset.objects.count() == 0


def test_bad_upload_keeps_the_typed_name(client, curator):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        "/datasets/new/", {"name": "My clinic", "file": csv_upload(b""), "budget_epsilon": "1"}
    )

    # then
    _, inner = field_blocks(page_of(response))["name"]
    assert 'value="My clinic"' in inner


# --- 4. schema form --------------------------------------------------------------------------

SCHEMA_POST = {
    "action": "save",
    "col0-kind": "identifier",
    "col1-kind": "numeric",
    "col1-lower": "18",
    "col1-upper": "90",
    "col2-kind": "categorical",
    "col2-categories": " F, M ,",
    "col2-other": "other",
    "col3-kind": "numeric",
    "col3-lower": "0",
    "col3-upper": "20",
}


def test_schema_form_saves_kinds_bounds_and_categories(client, curator, bare_dataset):
    # given
    client.force_login(curator)

    # when
    response = client.post(f"/datasets/{bare_dataset.pk}/", SCHEMA_POST)

    # then
    assert response.status_code == 302
    assert response["Location"] == f"/datasets/{bare_dataset.pk}/"
    bare_dataset.refresh_from_db()
    assert bare_dataset.schema == {
        "columns": {
            "name": {"kind": "identifier"},
            "age": {"kind": "numeric", "lower": 18.0, "upper": 90.0},
            "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other"},
            "visits": {"kind": "numeric", "lower": 0.0, "upper": 20.0},
        }
    }
    assert [e.details for e in events("dataset.schema_changed")] == [
        {
            "columns": {
                "name": {"kind": "identifier", "from_data": False},
                "age": {"kind": "numeric", "from_data": False},
                "sex": {"kind": "categorical", "from_data": False},
                "visits": {"kind": "numeric", "from_data": False},
            },
            "declared_size": None,
        }
    ]
    follow = page_of(client.get(response["Location"]))
    assert "Schema saved." in follow
    assert f'<a class="button" href="/datasets/{bare_dataset.pk}/releases/new/">' in follow


def test_schema_form_shows_the_saved_declaration(client, curator, dataset):
    # given
    client.force_login(curator)

    # when
    page = page_of(client.get(f"/datasets/{dataset.pk}/"))

    # then
    age = schema_row(page, "age")
    assert 'name="col1-lower" value="0.0"' in age
    assert 'name="col1-upper" value="100.0"' in age
    assert 'name="col2-categories" value="F, M"' in schema_row(page, "sex")
    assert '<option value="identifier" selected>' in schema_row(page, "name")
    assert "These suggestions were read from the data" not in page


@pytest.mark.parametrize("upper", ["90", "18"], ids=["equal", "below"])
def test_schema_with_upper_not_above_lower_shows_the_error_on_that_column_and_saves_nothing(
    client, curator, dataset, upper
):
    # given
    client.force_login(curator)
    changes_before = len(events("dataset.schema_changed"))

    # when
    response = client.post(
        f"/datasets/{dataset.pk}/", {**SCHEMA_POST, "col1-lower": "90", "col1-upper": upper}
    )

    # then
    assert response.status_code == 200
    page = page_of(response)
    message = "<li>upper bound must be greater than lower</li>"
    assert message in schema_row(page, "age")
    assert page.count(message) == 1
    assert 'name="col1-lower" value="90"' in schema_row(page, "age")
    dataset.refresh_from_db()
    assert dataset.schema == STORED_CLINIC_SCHEMA
    assert len(events("dataset.schema_changed")) == changes_before


def test_schema_with_a_non_number_bound_shows_the_error_and_saves_nothing(client, curator, dataset):
    # given
    client.force_login(curator)

    # when
    response = client.post(f"/datasets/{dataset.pk}/", {**SCHEMA_POST, "col3-upper": "ten"})

    # then
    assert response.status_code == 200
    assert "<li>Enter a number.</li>" in schema_row(page_of(response), "visits")
    dataset.refresh_from_db()
    assert dataset.schema == STORED_CLINIC_SCHEMA


def test_suggest_warns_prefills_from_data_audits_once_and_saves_nothing(
    client, curator, bare_dataset
):
    # given
    client.force_login(curator)

    # when
    response = client.post(f"/datasets/{bare_dataset.pk}/", {"action": "suggest"})

    # then
    assert response.status_code == 200
    page = page_of(response)
    assert "<strong>These suggestions were read from the data.</strong>" in page
    age = schema_row(page, "age")
    assert '<option value="numeric" selected>' in age
    assert 'name="col1-lower" value="29.0"' in age
    assert 'name="col1-upper" value="120.0"' in age
    assert 'name="col3-lower" value="0.0"' in schema_row(page, "visits")
    assert 'name="col3-upper" value="5.0"' in schema_row(page, "visits")
    assert 'name="col2-categories" value="F, M, X"' in schema_row(page, "sex")
    [event] = events("dataset.schema_suggested_from_data")
    assert (event.actor, event.object_type, event.object_id, event.dataset_id) == (
        "curator1",
        "dataset",
        str(bare_dataset.pk),
        bare_dataset.pk,
    )
    assert event.details == {"columns": ["name", "age", "sex", "visits"]}
    details = json.dumps(event.details)
    assert not [value for value in NAMES + NUMBERS if value in details]
    bare_dataset.refresh_from_db()
    assert bare_dataset.schema == {}
    assert events("dataset.schema_changed") == []


def test_schema_form_of_a_submitted_dataset_is_fixed_and_ignores_posts(client, curator, published):
    # given
    client.force_login(curator)
    dataset = published.dataset
    events_before = AuditEvent.objects.count()

    # when
    shown = page_of(client.get(f"/datasets/{dataset.pk}/"))
    saved = client.post(f"/datasets/{dataset.pk}/", SCHEMA_POST)
    suggested = client.post(f"/datasets/{dataset.pk}/", {"action": "suggest"})

    # then
    note = "A release of this dataset was submitted, so its schema is fixed."
    assert note in shown
    assert "Save schema" not in shown
    assert "Suggest from data" not in shown
    assert (saved.status_code, suggested.status_code) == (200, 200)
    assert note in page_of(saved)
    assert "These suggestions were read from the data" not in page_of(suggested)
    dataset.refresh_from_db()
    assert dataset.schema == STORED_CLINIC_SCHEMA
    assert AuditEvent.objects.count() == events_before


# --- 5. wizard -------------------------------------------------------------------------------


def test_wizard_start_creates_a_count_draft_and_goes_to_statistics(client, curator, dataset):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        f"/datasets/{dataset.pk}/releases/new/", {"title": "Clinic statistics", "epsilon": "0.5"}
    )

    # then
    release = Release.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/releases/{release.pk}/statistics/"
    assert (release.status, release.title, release.created_by) == (
        "draft",
        "Clinic statistics",
        curator,
    )
    assert release.definition == {"kind": "pure_dp", "epsilon": 0.5}
    assert release.queries == [{"kind": "count"}]
    assert LedgerEntry.objects.count() == 0


def test_wizard_start_with_only_a_truth_probability_derives_epsilon(client, curator, dataset):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        f"/datasets/{dataset.pk}/releases/new/",
        {"title": "Clinic statistics", "epsilon": "", "truth_probability": "0.6"},
    )

    # then
    release = Release.objects.get()
    assert response.status_code == 302
    assert release.definition["kind"] == "pure_dp"
    assert release.definition["epsilon"] == pytest.approx(math.log(0.6 / 0.4), abs=1e-9)
    revisit = page_of(client.get(f"/releases/{release.pk}/privacy/"))
    assert f'name="epsilon" value="{release.definition["epsilon"]!r}"' in revisit


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"title": "Clinic statistics"}, "Set either ε or p."),
        ({"title": "", "epsilon": "0.5"}, "This field is required."),
        ({"title": "Clinic statistics", "epsilon": "25"}, "must be from 0.0001 to 20"),
    ],
    ids=["no-epsilon", "no-title", "epsilon-too-large"],
)
def test_wizard_start_with_bad_input_re_renders_and_creates_nothing(
    client, curator, dataset, data, message
):
    # given
    client.force_login(curator)

    # when
    response = client.post(f"/datasets/{dataset.pk}/releases/new/", data)

    # then
    assert response.status_code == 200
    assert f"<li>{message}</li>" in page_of(response)
    assert Release.objects.count() == 0
    assert events("release.drafted") == []


def test_wizard_start_without_a_schema_sends_the_curator_to_declare_one(
    client, curator, bare_dataset
):
    # given
    client.force_login(curator)

    # when
    response = client.get(f"/datasets/{bare_dataset.pk}/releases/new/", follow=True)

    # then
    assert response.redirect_chain == [(f"/datasets/{bare_dataset.pk}/", 302)]
    assert "Declare the schema (bounds and categories) before a release." in page_of(response)
    assert Release.objects.count() == 0


def test_statistics_formset_saves_the_queries_and_goes_to_preview(client, curator, dataset):
    # given
    client.force_login(curator)
    release = make_draft(curator, dataset, queries=[{"kind": "count"}])

    # when
    response = client.post(
        f"/releases/{release.pk}/statistics/",
        stat_post(
            {"kind": "count", "weight": "1"},
            {"kind": "histogram", "column": "sex", "weight": "1"},
            {"kind": "mean", "column": "age", "weight": "2"},
        ),
    )

    # then
    assert response.status_code == 302
    assert response["Location"] == f"/releases/{release.pk}/preview/"
    release.refresh_from_db()
    assert release.queries == [
        {"kind": "count"},
        {"kind": "histogram", "column": "sex"},
        {"kind": "mean", "column": "age", "weight": 2.0},
    ]
    assert [entry["epsilon"] for entry in release.preview] == pytest.approx([0.125, 0.125, 0.25])
    assert release.status == Release.Status.DRAFT


def test_numeric_histogram_bin_edges_are_saved_and_shown_again(client, curator, dataset):
    # given
    client.force_login(curator)
    release = make_draft(curator, dataset, queries=[{"kind": "count"}])

    # when
    response = client.post(
        f"/releases/{release.pk}/statistics/",
        stat_post({"kind": "histogram", "column": "age", "bins": "0, 50, 100", "weight": "1"}),
    )

    # then
    assert response.status_code == 302
    release.refresh_from_db()
    assert release.queries == [{"kind": "histogram", "column": "age", "bins": [0.0, 50.0, 100.0]}]
    [row] = statistic_rows(page_of(client.get(f"/releases/{release.pk}/statistics/")))
    assert 'name="stat-0-bins" value="0, 50, 100"' in row


def test_non_numeric_bin_edges_show_the_error_at_the_bins_field(client, curator, dataset):
    # given
    client.force_login(curator)
    release = make_draft(curator, dataset, queries=[{"kind": "count"}])

    # when
    response = client.post(
        f"/releases/{release.pk}/statistics/",
        stat_post({"kind": "histogram", "column": "age", "bins": "0, middle, 100", "weight": "1"}),
    )

    # then
    assert response.status_code == 200
    [row] = statistic_rows(page_of(response))
    assert (
        '<ul class="errorlist" id="id_stat-0-bins_error"><li>must be a list of numbers</li>' in row
    )
    release.refresh_from_db()
    assert release.queries == [{"kind": "count"}]


def test_statistics_formset_drops_deleted_rows(client, curator, draft):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        f"/releases/{draft.pk}/statistics/",
        stat_post(
            {"kind": "count", "weight": "1"},
            {"kind": "histogram", "column": "sex", "weight": "1", "DELETE": "on"},
            {"kind": "sum", "column": "age", "weight": "1", "DELETE": "on"},
            {"kind": "mean", "column": "age", "weight": "2"},
            initial=4,
        ),
    )

    # then
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.queries == [{"kind": "count"}, {"kind": "mean", "column": "age", "weight": 2.0}]


def test_statistics_page_lists_the_current_queries_with_their_epsilon_share(client, curator, draft):
    # given
    client.force_login(curator)

    # when
    page = page_of(client.get(f"/releases/{draft.pk}/statistics/"))

    # then
    rows = statistic_rows(page)
    assert len(rows) == 4
    assert '<option value="histogram" selected>' in rows[1]
    assert '<option value="sex" selected>' in rows[1]
    assert [re.search(r'<td class="share"[^>]*>([^<]*)</td>', r).group(1) for r in rows] == [
        "0.1",
        "0.1",
        "0.1",
        "0.2",
    ]
    assert '<input type="hidden" name="stat-TOTAL_FORMS" value="4"' in page


def test_invalid_statistic_re_renders_with_the_error_and_keeps_the_draft(client, curator, dataset):
    # given
    client.force_login(curator)
    release = make_draft(curator, dataset, queries=[{"kind": "count"}])
    updates_before = len(events("release.draft_updated"))

    # when
    response = client.post(
        f"/releases/{release.pk}/statistics/",
        stat_post(
            {"kind": "count", "weight": "1"}, {"kind": "sum", "column": "sex", "weight": "1"}
        ),
    )

    # then
    assert response.status_code == 200
    rows = statistic_rows(page_of(response))
    assert len(rows) == 2
    assert "<li>a sum needs a numeric column</li>" in rows[1]
    assert "errorlist" not in rows[0]
    release.refresh_from_db()
    assert release.queries == [{"kind": "count"}]
    assert len(events("release.draft_updated")) == updates_before


def test_preview_explains_accuracy_in_sentences_and_embeds_the_chart_data(client, curator, draft):
    # given
    client.force_login(curator)

    # when
    response = client.get(f"/releases/{draft.pk}/preview/")

    # then
    assert response.status_code == 200
    page = page_of(response)
    assert re.findall(r"With 95% probability [^<]*", page) == [
        "With 95% probability the published count is within ±30 of the true count.",
        "With 95% probability each published bar is within ±30 of its true count.",
        "With 95% probability the published sum is within ±2,996 of the true sum.",
        "With 95% probability the published mean is within ±100 of the true mean "
        "(for about 5 records).",
    ]
    chart = json_script(page, "error-chart-data")
    assert chart["epsilon"] == 0.5
    assert [series["name"] for series in chart["series"]] == [
        "Count of records",
        "Histogram of sex",
        "Sum of age",
        "Mean of age",
    ]
    assert [len(series["x"]) for series in chart["series"]] == [25, 25, 25, 25]
    assert chart["series"][0]["x"][0] == pytest.approx(0.05)
    assert chart["series"][0]["x"][-1] == pytest.approx(5.0)
    assert LedgerEntry.objects.count() == 0


def test_confirm_page_states_what_the_release_spends(client, curator, draft):
    # given
    client.force_login(curator)

    # when
    page = page_of(client.get(f"/releases/{draft.pk}/confirm/"))

    # then
    assert "<strong>ε-differential privacy with ε = 0.5</strong>" in page
    assert (
        "It will be charged ε = 0.5 to the dataset's budget (differential privacy), "
        "leaving ε = 0.5." in page
    )
    assert "<li>Count of records: geometric noise, ε = 0.1</li>" in page
    assert "<li>Mean of age: laplace+geometric noise, ε = 0.2</li>" in page


def test_confirm_submits_publishes_and_redirects_to_the_status_page(
    client, curator, draft, django_capture_on_commit_callbacks
):
    # given
    client.force_login(curator)

    # when
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/releases/{draft.pk}/confirm/")

    # then
    assert response.status_code == 302
    assert response["Location"] == f"/releases/{draft.pk}/"
    draft.refresh_from_db()
    assert (draft.status, draft.version) == ("published", 1)
    entry = LedgerEntry.objects.get(release=draft)
    assert (entry.state, entry.epsilon) == ("spent", Decimal("0.5"))
    status = page_of(client.get(response["Location"]))
    assert 'Status: <strong id="status-text">Published</strong>' in status
    assert (
        f'Published as version 1. <a href="/catalog/{draft.series.slug}/v1/" id="published-link">'
        in status
    )


def test_confirm_over_budget_shows_the_conflict_and_stays_a_draft(
    client, curator, dataset, django_capture_on_commit_callbacks
):
    # given
    client.force_login(curator)
    release = make_draft(curator, dataset, epsilon=1.5)

    # when
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/releases/{release.pk}/confirm/")

    # then
    assert response.status_code == 200
    assert (
        '<li class="error">Not enough privacy budget: this release requests ε = 1.5 '
        "but only ε = 1 remains.</li>" in page_of(response)
    )
    release.refresh_from_db()
    assert release.status == Release.Status.DRAFT
    assert LedgerEntry.objects.count() == 0
    assert events("release.submitted") == []


@pytest.mark.parametrize("step", ["privacy", "statistics", "preview", "confirm"])
def test_wizard_pages_of_a_submitted_release_redirect_to_its_status(
    client, curator, published, step
):
    # given
    client.force_login(curator)

    # when
    response = client.get(f"/releases/{published.pk}/{step}/")

    # then
    assert response.status_code == 302
    assert response["Location"] == f"/releases/{published.pk}/"


def test_posting_to_the_wizard_of_a_submitted_release_changes_nothing(
    client, curator, published, django_capture_on_commit_callbacks
):
    # given
    client.force_login(curator)
    events_before = AuditEvent.objects.count()

    # when
    with django_capture_on_commit_callbacks(execute=True):
        privacy = client.post(
            f"/releases/{published.pk}/privacy/", {"title": "Renamed", "epsilon": "0.1"}
        )
        confirm = client.post(f"/releases/{published.pk}/confirm/")

    # then
    assert (privacy.status_code, confirm.status_code) == (302, 302)
    published.refresh_from_db()
    assert (published.title, published.definition) == ("Clinic statistics", PURE_DP)
    assert LedgerEntry.objects.count() == 1
    assert AuditEvent.objects.count() == events_before


def test_revisiting_the_privacy_step_keeps_title_and_epsilon(client, curator, draft):
    # given
    client.force_login(curator)

    # when
    page = page_of(client.get(f"/releases/{draft.pk}/privacy/"))

    # then
    assert 'name="title" value="Clinic statistics"' in page
    assert 'name="epsilon" value="0.5"' in page
    assert f'<a href="/releases/{draft.pk}/statistics/">2. Statistics</a>' in page


def test_changing_the_privacy_step_updates_the_draft_and_keeps_its_statistics(
    client, curator, draft
):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        f"/releases/{draft.pk}/privacy/", {"title": "Clinic figures", "epsilon": "0.25"}
    )

    # then
    assert response.status_code == 302
    assert response["Location"] == f"/releases/{draft.pk}/statistics/"
    draft.refresh_from_db()
    assert (draft.title, draft.definition) == (
        "Clinic figures",
        {"kind": "pure_dp", "epsilon": 0.25},
    )
    assert draft.queries == [
        {"kind": "count"},
        {"kind": "histogram", "column": "sex"},
        {"kind": "sum", "column": "age"},
        {"kind": "mean", "column": "age", "weight": 2.0},
    ]
    assert Release.objects.count() == 1


def test_resaving_the_statistics_page_keeps_the_bin_edges_exactly(client, curator, dataset):
    # given a numeric histogram whose edges need more than six significant digits
    client.force_login(curator)
    bins = [0.0, 33.333333, 66.666667, 100.0]
    release = make_draft(
        curator, dataset, queries=[{"kind": "histogram", "column": "age", "bins": bins}]
    )
    [row] = statistic_rows(page_of(client.get(f"/releases/{release.pk}/statistics/")))
    shown = re.search(r'name="stat-0-bins" value="([^"]*)"', row).group(1)

    # when the curator only changes the weight and saves what the page shows
    response = client.post(
        f"/releases/{release.pk}/statistics/",
        stat_post({"kind": "histogram", "column": "age", "bins": shown, "weight": "2"}),
    )

    # then
    assert response.status_code == 302
    release.refresh_from_db()
    assert release.queries == [{"kind": "histogram", "column": "age", "bins": bins, "weight": 2.0}]


def test_preview_chart_covers_the_releases_own_small_epsilon(client, curator, dataset):
    # given
    client.force_login(curator)
    release = make_draft(curator, dataset, epsilon=0.005)

    # when
    page = page_of(client.get(f"/releases/{release.pk}/preview/"))

    # then
    chart = json_script(page, "error-chart-data")
    assert chart["epsilon"] == 0.005
    for series in chart["series"]:
        assert series["x"][0] <= 0.005 <= series["x"][-1]


def test_preview_of_a_draft_the_schema_no_longer_allows_sends_back_to_statistics(
    client, curator, dataset
):
    # given a draft with a histogram of sex, then sex declared an identifier
    client.force_login(curator)
    release = make_draft(curator, dataset)
    client.post(
        f"/datasets/{dataset.pk}/",
        {**SCHEMA_POST, "col1-upper": "100", "col2-kind": "identifier", "col3-upper": "10"},
    )
    dataset.refresh_from_db()
    assert dataset.schema["columns"]["sex"] == {"kind": "identifier"}

    # when
    response = client.get(f"/releases/{release.pk}/preview/")

    # then
    assert response.status_code == 302
    assert response["Location"] == f"/releases/{release.pk}/statistics/"


# --- 6. catalog ------------------------------------------------------------------------------


def test_catalog_search_filters_by_title(
    client, curator, dataset, django_capture_on_commit_callbacks
):
    # given
    for title in ("Clinic statistics", "Hospital beds"):
        publish(django_capture_on_commit_callbacks, curator, dataset, title=title, epsilon=0.1)

    # when
    found = page_of(client.get("/catalog/", {"q": "clinic"}))
    missing = page_of(client.get("/catalog/", {"q": "zebra"}))
    everything = page_of(client.get("/catalog/"))

    # then
    assert catalog_titles(found) == ["Clinic statistics"]
    assert '<input type="search" id="q" name="q" value="clinic" maxlength="200">' in found
    assert catalog_titles(missing) == []
    assert "No published release matches “zebra” with these filters." in missing
    assert catalog_titles(everything) == ["Hospital beds", "Clinic statistics"]


def test_catalog_paginates_ten_releases_per_page(
    client, curator, dataset, django_capture_on_commit_callbacks
):
    # given
    for number in range(11):
        publish(
            django_capture_on_commit_callbacks,
            curator,
            dataset,
            title=f"Release {number:02d}",
            epsilon=0.05,
            queries=[{"kind": "count"}],
        )

    # when
    first = page_of(client.get("/catalog/"))
    second = page_of(client.get("/catalog/", {"page": "2"}))

    # then
    assert "<span>Page 1 of 2</span>" in first
    assert catalog_titles(first) == [f"Release {n:02d}" for n in range(10, 0, -1)]
    assert '<a href="?page=2">Older →</a>' in first
    assert "<span>Page 2 of 2</span>" in second
    assert catalog_titles(second) == ["Release 00"]
    assert '<a href="?page=1">← Newer</a>' in second


def test_catalog_with_one_page_shows_no_pagination(client, published):
    # when
    page = page_of(client.get("/catalog/"))

    # then
    assert "Page 1 of" not in page


def test_version_page_shows_statistics_downloads_and_the_guarantee(client, published):
    # when
    response = client.get(f"/catalog/{published.series.slug}/v1/")

    # then
    assert response.status_code == 200
    page = page_of(response)
    assert re.findall(r"<h3>([^<]*)</h3>", page) == [
        "Count",
        "Histogram of sex",
        "Sum of age",
        "Mean of age",
    ]
    for file_format, label in (("csv", "CSV"), ("json", "JSON"), ("parquet", "Parquet")):
        url = reverse(
            "api-catalog-file",
            kwargs={"slug": published.series.slug, "version": 1, "file_format": file_format},
        )
        assert f'<a class="button" href="{url}" download>Download {label}</a>' in page
    assert "<h2>What this guarantee means</h2>" in page
    assert "<strong>ε-differential privacy with ε = 0.5</strong>" in page
    charts = json_script(page, "chart-data")
    assert [(chart["id"], chart["labels"]) for chart in charts] == [("chart-1", ["F", "M"])]
    assert re.findall(r"<small>(Mechanism [^·]+· ε = [^·]+· sensitivity [^ ]+) ", page) == [
        "Mechanism geometric · ε = 0.1 · sensitivity 1",
        "Mechanism geometric · ε = 0.1 · sensitivity 1",
        "Mechanism laplace · ε = 0.1 · sensitivity 100",
        "Mechanism laplace+geometric · ε = 0.2 · sensitivity 100",
    ]


def test_version_page_links_other_versions_of_the_series(
    client, curator, dataset, published, django_capture_on_commit_callbacks
):
    # given a second version in the same series
    second = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic statistics",
        definition={"kind": "pure_dp", "epsilon": 0.1},
        queries=[{"kind": "count"}],
        series_slug=published.series.slug,
    )
    with django_capture_on_commit_callbacks(execute=True):
        release_submit(release=second, user=curator)
    slug = published.series.slug

    # when
    page = page_of(client.get(f"/catalog/{slug}/v1/"))

    # then
    assert f'<a href="/catalog/{slug}/v2/">v2</a>' in page
    assert f'<a href="/catalog/{slug}/v1/">v1</a>' not in page


# --- 7. audit page ---------------------------------------------------------------------------


@pytest.fixture
def two_datasets(dataset, other_curator) -> tuple[Dataset, Dataset]:
    other = dataset_create(
        owner=other_curator, name="Other", upload=csv_upload(CLINIC_CSV_CRLF), budget_epsilon="1.0"
    )
    return dataset, other


def test_audit_page_lists_all_events_newest_first(client, compliance_user, two_datasets):
    # given
    client.force_login(compliance_user)

    # when
    page = page_of(client.get("/audit/"))

    # then
    expected = list(AuditEvent.objects.order_by("-id").values_list("id", "actor", "action"))
    assert audit_rows(page) == expected
    assert f"Hash chain intact: all {len(expected)} events verify." in page


def test_audit_page_filters_by_action(client, compliance_user, two_datasets):
    # given
    client.force_login(compliance_user)

    # when
    page = page_of(client.get("/audit/", {"action": "dataset.uploaded"}))

    # then
    assert audit_rows(page) == [
        (events("dataset.uploaded")[1].pk, "curator2", "dataset.uploaded"),
        (events("dataset.uploaded")[0].pk, "curator1", "dataset.uploaded"),
    ]
    assert '<option value="dataset.uploaded" selected>' in page


def test_audit_page_filters_by_dataset(client, compliance_user, two_datasets):
    # given
    client.force_login(compliance_user)
    clinic, other = two_datasets

    # when
    clinic_page = page_of(client.get("/audit/", {"dataset": str(clinic.pk)}))
    other_page = page_of(client.get("/audit/", {"dataset": str(other.pk)}))

    # then
    clinic_events = AuditEvent.objects.filter(dataset_id=clinic.pk).order_by("-id")
    assert audit_rows(clinic_page) == [(e.pk, "curator1", e.action) for e in clinic_events]
    assert [row[2] for row in audit_rows(clinic_page)] == [
        "dataset.schema_changed",
        "dataset.uploaded",
    ]
    assert [row[1:] for row in audit_rows(other_page)] == [("curator2", "dataset.uploaded")]


def test_audit_page_filters_by_action_and_dataset_together(client, compliance_user, two_datasets):
    # given
    client.force_login(compliance_user)
    clinic, _ = two_datasets

    # when
    page = page_of(
        client.get("/audit/", {"dataset": str(clinic.pk), "action": "dataset.schema_changed"})
    )

    # then
    [changed] = events("dataset.schema_changed")
    assert audit_rows(page) == [(changed.pk, "curator1", "dataset.schema_changed")]


def test_audit_page_with_an_impossible_since_shows_an_error_and_all_events(
    client, compliance_user, two_datasets
):
    # given
    client.force_login(compliance_user)

    # when
    response = client.get("/audit/", {"since": "2026-13-01T00:00"})

    # then
    assert response.status_code == 200
    page = page_of(response)
    assert (
        '<div role="alert"><ul class="errorlist"><li>Since must be an ISO-8601 date and time.</li>'
        "</ul></div>" in page
    )
    assert len(audit_rows(page)) == AuditEvent.objects.count()


def test_audit_page_with_a_non_number_dataset_shows_an_error_and_all_events(
    client, compliance_user, two_datasets
):
    # given
    client.force_login(compliance_user)

    # when
    response = client.get("/audit/", {"dataset": "abc"})

    # then
    assert response.status_code == 200
    page = page_of(response)
    assert "<li>Dataset must be a dataset id.</li>" in page
    assert len(audit_rows(page)) == AuditEvent.objects.count()


def test_audit_page_with_a_superscript_digit_dataset_shows_an_error(
    client, compliance_user, two_datasets
):
    # given
    client.force_login(compliance_user)

    # when
    response = client.get("/audit/", {"dataset": "²"})

    # then
    assert response.status_code == 200
    assert "<li>Dataset must be a dataset id.</li>" in page_of(response)


def test_audit_page_with_a_future_since_shows_no_events(client, compliance_user, two_datasets):
    # given
    client.force_login(compliance_user)

    # when
    page = page_of(client.get("/audit/", {"since": "2999-01-01T00:00"}))

    # then
    assert audit_rows(page) == []
    assert '<tr><td colspan="8">No events match.</td></tr>' in page
    assert "errorlist" not in page


def test_audit_page_names_the_first_tampered_event(
    client, compliance_user, two_datasets, database_administrator
):
    # given
    client.force_login(compliance_user)
    tampered = events("dataset.uploaded")[0]
    AuditEvent.objects.filter(pk=tampered.pk).update(details={"name": "Altered"})

    # when
    page = page_of(client.get("/audit/"))

    # then
    total = AuditEvent.objects.count()
    assert (
        f"Hash chain broken at event #{tampered.pk} ({total} events): its content does not "
        "match its hash."
    ) in page
    assert "Hash chain intact" not in page
