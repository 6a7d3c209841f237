"""The guided path's page changes (issue 13, point 1): the upload's name from the file, columns
left undeclared saved as used by no statistic, "Save and choose what to publish →", a default
release title and one-click suggestions on the statistics step. The whole path in a browser,
with its interactions counted: tests/browser/test_guided_path.py."""

import re

import pytest

from audit.models import AuditEvent
from releases.models import Dataset, Release
from releases.services.datasets import dataset_name_from_file
from releases.services.releases import release_draft_create
from tests.conftest import CLINIC_CSV, csv_upload, statistics_formset

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def page_of(response) -> str:
    return response.content.decode()


# --- the upload's name -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file_name", "name"),
    [
        ("survey.csv", "survey"),
        ("Labour survey 2026.csv", "Labour survey 2026"),
        ("archive.2026.csv", "archive.2026"),
        ("C:\\Users\\ann\\survey.csv", "survey"),
        ("/home/ann/survey.csv", "survey"),
        ("survey", "survey"),
        (".csv", ".csv"),
        ("sur\x00vey\n.csv", "survey"),
        ("n" * 250 + ".csv", "n" * 200),
    ],
)
def test_a_dataset_name_from_a_file_name_drops_the_folder_and_the_extension(file_name, name):
    assert dataset_name_from_file(file_name) == name


@pytest.mark.parametrize("typed", ["", "   "], ids=["empty", "blank"])
def test_an_upload_without_a_name_takes_the_files_name(client, curator, typed):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        "/datasets/new/",
        {"name": typed, "file": csv_upload(CLINIC_CSV, name="survey.csv"), "budget_epsilon": "1"},
    )

    # then
    dataset = Dataset.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/datasets/{dataset.pk}/"
    assert dataset.name == "survey"
    uploaded = AuditEvent.objects.get(action="dataset.uploaded")
    assert uploaded.object_id == str(dataset.pk)


def test_a_typed_name_wins_over_the_files_name(client, curator):
    # given
    client.force_login(curator)

    # when
    client.post(
        "/datasets/new/",
        {"name": " Clinic ", "file": csv_upload(CLINIC_CSV, name="survey.csv")},
    )

    # then
    assert Dataset.objects.get().name == "Clinic"


def test_an_upload_without_a_name_or_a_file_asks_only_for_the_file(client, curator):
    # given
    client.force_login(curator)

    # when
    response = client.post("/datasets/new/", {"name": ""})

    # then
    page = page_of(response)
    assert response.status_code == 200
    assert "<li>Choose a CSV file to upload.</li>" in page
    assert "Give the dataset a name." not in page
    assert Dataset.objects.count() == 0


def test_the_upload_page_says_the_name_may_be_left_empty(client, curator):
    # given
    client.force_login(curator)

    # when
    page = page_of(client.get("/datasets/new/"))

    # then
    assert "Leave empty to use the file&#x27;s name." in page
    assert re.search(
        r'<input type="text" name="name"[^>]*placeholder="e.g. Labour survey 2026"', page
    )
    assert not re.search(r'<input type="text" name="name"[^>]*required', page)


def test_the_api_still_asks_for_a_name(curator_client):
    # when
    response = curator_client.post(
        "/api/v1/datasets/", {"file": csv_upload(CLINIC_CSV, name="survey.csv")}, format="multipart"
    )

    # then
    assert response.status_code == 400
    assert response.json()["errors"] == {"name": ["Give the dataset a name."]}
    assert Dataset.objects.count() == 0


# --- columns left undeclared -----------------------------------------------------------------

# The clinic table: name (read as an identifier), age and visits (numbers), sex (categories).
ONLY_VISITS = {
    "action": "save",
    "col0-kind": "identifier",
    "col1-kind": "numeric",
    "col2-kind": "categorical",
    "col3-kind": "numeric",
    "col3-lower": "0",
    "col3-upper": "10",
    "max_rows_per_person": "1",
}
AGE_SENTENCE = (
    "age: no bounds given, so no statistic can use it — choose Numeric and add them to publish it."
)
SEX_SENTENCE = (
    "sex: no categories given, so no statistic can use it — choose Categorical and add them to "
    "publish it."
)


@pytest.fixture
def bare_dataset(curator):
    from releases.services.datasets import dataset_create

    return dataset_create(owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1")


def test_columns_left_without_bounds_or_categories_are_saved_as_used_by_no_statistic(
    client, curator, bare_dataset
):
    # given
    client.force_login(curator)

    # when
    response = client.post(f"/datasets/{bare_dataset.pk}/", ONLY_VISITS, follow=True)

    # then the schema is saved, age and sex as identifiers that no statistic may use
    bare_dataset.refresh_from_db()
    assert bare_dataset.schema["columns"] == {
        "name": {"kind": "identifier"},
        "age": {"kind": "identifier"},
        "sex": {"kind": "identifier"},
        "visits": {"kind": "numeric", "lower": 0.0, "upper": 10.0},
    }
    [event] = AuditEvent.objects.filter(action="dataset.schema_changed")
    assert event.details["columns"]["age"] == {"kind": "identifier", "from_data": False}
    # and the page says so plainly, for each of them and only for them
    page = page_of(response)
    assert response.redirect_chain == [(f"/datasets/{bare_dataset.pk}/", 302)]
    assert "Schema saved." in page
    assert (
        "No statistic can use age, sex: no bounds or categories were given for them. Add them on "
        "the dataset page to publish them."
    ) in page
    section = re.search(r'<div class="note" id="undeclared-columns">(.*?)</div>', page, re.S)
    assert section is not None
    assert re.findall(r"<li>(.*?)</li>", section.group(1)) == [AGE_SENTENCE, SEX_SENTENCE]


def test_the_undeclared_columns_are_still_said_when_the_page_is_shown_again(
    client, curator, bare_dataset
):
    # given
    client.force_login(curator)
    client.post(f"/datasets/{bare_dataset.pk}/", ONLY_VISITS)

    # when
    page = page_of(client.get(f"/datasets/{bare_dataset.pk}/"))

    # then
    assert AGE_SENTENCE in page
    assert SEX_SENTENCE in page
    assert "name: no" not in page  # read as an identifier: nothing to publish


def test_a_fully_declared_schema_says_nothing_of_undeclared_columns(client, curator, dataset):
    # given every column declared (CLINIC_SCHEMA)
    client.force_login(curator)

    # when
    page = page_of(client.get(f"/datasets/{dataset.pk}/"))

    # then
    assert 'id="undeclared-columns"' not in page


@pytest.mark.parametrize(
    ("started", "errors"),
    [
        ({"col1-lower": "0"}, ["id_col1-upper_error"]),
        ({"col1-upper": "100"}, ["id_col1-lower_error"]),
        ({"col1-typical": "40"}, ["id_col1-lower_error", "id_col1-upper_error"]),
        ({"col1-fill": "40"}, ["id_col1-lower_error", "id_col1-upper_error"]),
        ({"col1-lower": "zero"}, ["id_col1-lower_error"]),
        ({"col2-other": "other"}, ["id_col2-categories_error"]),
        ({"col2-fill": "F"}, ["id_col2-categories_error"]),
    ],
    ids=[
        "lower-only",
        "upper-only",
        "typical-only",
        "fill-only",
        "bad-lower",
        "other-only",
        "fill",
    ],
)
def test_a_column_started_but_incomplete_is_still_refused_naming_the_field(
    client, curator, bare_dataset, started, errors
):
    # given
    client.force_login(curator)

    # when
    response = client.post(f"/datasets/{bare_dataset.pk}/", {**ONLY_VISITS, **started})

    # then
    assert response.status_code == 200
    page = page_of(response)
    assert re.findall(r'id="(id_col\d-\w+_error)"', page) == errors
    bare_dataset.refresh_from_db()
    assert bare_dataset.schema == {}
    assert not AuditEvent.objects.filter(action="dataset.schema_changed").exists()


def test_the_api_schema_stays_strict_about_a_numeric_column_without_bounds(
    curator_client, bare_dataset
):
    # when
    response = curator_client.put(
        f"/api/v1/datasets/{bare_dataset.pk}/schema/",
        {"columns": {"age": {"kind": "numeric"}}},
        format="json",
    )

    # then
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "columns.age.lower": ["numeric columns need public bounds"],
        "columns.age.upper": ["numeric columns need public bounds"],
    }
    bare_dataset.refresh_from_db()
    assert bare_dataset.schema == {}


# --- "Save and choose what to publish →" -----------------------------------------------------


def test_the_dataset_page_offers_to_save_and_choose_what_to_publish(client, curator, bare_dataset):
    # given
    client.force_login(curator)

    # when
    page = page_of(client.get(f"/datasets/{bare_dataset.pk}/"))

    # then both buttons save; the new one goes on to the wizard
    assert '<button type="submit" name="action" value="save">Save schema</button>' in page
    assert (
        '<button type="submit" name="action" value="continue" class="button primary" '
        'id="save-and-continue">Save and choose what to publish →</button>'
    ) in page


def test_save_and_choose_saves_the_schema_and_opens_the_wizards_first_step(
    client, curator, bare_dataset
):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        f"/datasets/{bare_dataset.pk}/", {**ONLY_VISITS, "action": "continue"}, follow=True
    )

    # then
    assert response.redirect_chain == [(f"/datasets/{bare_dataset.pk}/releases/new/", 302)]
    bare_dataset.refresh_from_db()
    assert bare_dataset.schema["columns"]["visits"] == {
        "kind": "numeric",
        "lower": 0.0,
        "upper": 10.0,
    }
    page = page_of(response)
    assert 'id="privacy-form"' in page
    assert "Schema saved." in page
    assert "No statistic can use age, sex" in page
    assert not Release.objects.exists()  # the draft is made when the privacy step is saved


def test_save_and_choose_with_an_error_stays_on_the_dataset_page(client, curator, bare_dataset):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        f"/datasets/{bare_dataset.pk}/",
        {**ONLY_VISITS, "action": "continue", "col3-upper": ""},
    )

    # then
    assert response.status_code == 200
    assert 'id="id_col3-upper_error"' in page_of(response)
    bare_dataset.refresh_from_db()
    assert bare_dataset.schema == {}


# --- the privacy step's default title --------------------------------------------------------


def test_a_new_release_is_titled_after_its_dataset_by_default(client, curator, dataset):
    # given
    client.force_login(curator)

    # when
    page = page_of(client.get(f"/datasets/{dataset.pk}/releases/new/"))

    # then
    assert re.search(r'<input type="text" name="title" value="Clinic statistics"', page)


def test_the_privacy_step_is_accepted_as_it_comes(client, curator, dataset):
    # given the form as the page fills it: the default title and the dataset's share of ε
    client.force_login(curator)
    page = page_of(client.get(f"/datasets/{dataset.pk}/releases/new/"))
    title = re.search(r'name="title" value="([^"]*)"', page).group(1)
    epsilon = re.search(r'name="epsilon" value="([^"]*)"', page).group(1)

    # when
    response = client.post(
        f"/datasets/{dataset.pk}/releases/new/",
        {"title": title, "definition_kind": "pure_dp", "epsilon": epsilon},
    )

    # then
    release = Release.objects.get()
    assert response["Location"] == f"/releases/{release.pk}/statistics/"
    assert release.title == "Clinic statistics"
    assert [q["kind"] for q in release.queries] == ["count"]


def test_a_draft_keeps_its_own_title_on_the_privacy_step(client, curator, dataset):
    # given
    client.force_login(curator)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic 2026",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "count"}],
    )

    # when
    page = page_of(client.get(f"/releases/{draft.pk}/privacy/"))

    # then
    assert re.search(r'<input type="text" name="title" value="Clinic 2026"', page)


# --- one-click suggestions on the statistics step --------------------------------------------


@pytest.fixture
def draft(curator, dataset):
    return release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic statistics",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "count"}],
    )


def suggestions(page: str) -> list[tuple[str, str]]:
    return re.findall(
        r'<button type="submit" name="quick_add" value="([^"]*)" class="button secondary '
        r'quick-add"[^>]*>([^<]*)</button>',
        page,
    )


def row_choices(page: str) -> list[tuple[str, str]]:
    """Each statistic row's chosen kind and column."""
    kinds = re.findall(
        r'<select name="stat-\d+-kind".*?<option value="(\w+)" selected>', page, re.S
    )
    columns = [
        (re.search(r'<option value="([^"]*)" selected>', select) or [None, ""])[1]
        for select in re.findall(r'<select name="stat-\d+-column".*?</select>', page, re.S)
    ]
    return list(zip(kinds, columns, strict=True))


def test_the_statistics_step_suggests_one_statistic_per_declared_column(client, curator, draft):
    # given the clinic schema: age and visits numeric, sex categorical, name an identifier
    client.force_login(curator)

    # when
    page = page_of(client.get(f"/releases/{draft.pk}/statistics/"))

    # then
    assert suggestions(page) == [
        ("mean:age", "+ Mean of age"),
        ("histogram:sex", "+ Histogram of sex"),
        ("mean:visits", "+ Mean of visits"),
    ]
    # and Enter in a box still saves: the form's first submit button is the hidden default one
    buttons = re.findall(r"<button[^>]*>", page[page.index('id="statistics-form"') :])
    assert buttons[0] == '<button type="submit" hidden tabindex="-1" aria-hidden="true">'


def test_a_statistic_already_chosen_is_not_suggested_again(client, curator, dataset):
    # given
    client.force_login(curator)
    chosen = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clinic statistics",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "count"}, {"kind": "histogram", "column": "sex"}],
    )

    # when
    page = page_of(client.get(f"/releases/{chosen.pk}/statistics/"))

    # then
    assert [value for value, _ in suggestions(page)] == ["mean:age", "mean:visits"]


def test_a_suggestion_without_scripts_adds_its_row_and_saves_nothing(client, curator, draft):
    # given the statistics form as posted by the suggestion's button
    client.force_login(curator)
    post = {**statistics_formset({"kind": "count"}), "quick_add": "histogram:sex"}

    # when
    response = client.post(f"/releases/{draft.pk}/statistics/", post)

    # then the page shows the count and the histogram, without error
    assert response.status_code == 200
    page = page_of(response)
    assert row_choices(page) == [("count", ""), ("histogram", "sex")]
    assert 'name="stat-TOTAL_FORMS" value="2"' in page
    assert 'class="errorlist' not in page
    assert [value for value, _ in suggestions(page)] == ["mean:age", "mean:visits"]
    # and nothing was saved until the curator saves
    draft.refresh_from_db()
    assert [q["kind"] for q in draft.queries] == ["count"]


def test_two_suggestions_then_save_without_scripts_keep_all_three_statistics(
    client, curator, draft
):
    # given
    client.force_login(curator)
    url = f"/releases/{draft.pk}/statistics/"
    post = {**statistics_formset({"kind": "count"}), "quick_add": "histogram:sex"}
    client.post(url, post)
    post = {
        **statistics_formset({"kind": "count"}, {"kind": "histogram", "column": "sex"}),
        "quick_add": "mean:age",
    }
    second = page_of(client.post(url, post))
    assert row_choices(second) == [("count", ""), ("histogram", "sex"), ("mean", "age")]

    # when the curator saves
    response = client.post(
        url,
        statistics_formset(
            {"kind": "count"},
            {"kind": "histogram", "column": "sex"},
            {"kind": "mean", "column": "age"},
        ),
    )

    # then
    assert response["Location"] == f"/releases/{draft.pk}/preview/"
    draft.refresh_from_db()
    assert [(q["kind"], q.get("column")) for q in draft.queries] == [
        ("count", None),
        ("histogram", "sex"),
        ("mean", "age"),
    ]


@pytest.mark.parametrize(
    "value",
    ["mean:sex", "histogram:age", "mean:name", "mean:nothing", "count:", "", "histogram"],
)
def test_a_suggestion_not_offered_adds_nothing_and_saves_nothing(client, curator, draft, value):
    # given
    client.force_login(curator)
    post = {**statistics_formset({"kind": "count"}), "quick_add": value}

    # when
    response = client.post(f"/releases/{draft.pk}/statistics/", post)

    # then
    assert response.status_code == 200
    assert row_choices(page_of(response)) == [("count", "")]
    draft.refresh_from_db()
    assert [q["kind"] for q in draft.queries] == ["count"]
