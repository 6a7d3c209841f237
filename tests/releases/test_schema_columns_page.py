"""The dataset page's column form (issue 13, point 3): each column shows only the fields of its
kind, id-like columns start as identifiers, examples sit in the placeholders, the fill-in helper
says what it does, and nothing typed is lost on an error. Also the typical value (point 6) on
that form and the simulated preview's label for it."""

from html.parser import HTMLParser

import pytest

from audit.models import AuditEvent
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create
from tests.conftest import CLINIC_SCHEMA, csv_upload

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


class _SchemaRows(HTMLParser):
    """Per column of the schema table: each group of kind fields with its kinds, whether it is
    hidden, and the names and values of the inputs in it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: dict[str, list[dict]] = {}
        self.row: list[dict] | None = None
        self.in_row_header = False
        self.group: dict | None = None
        self.depth = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "tr" and "schema-column" in (attributes.get("class") or ""):
            self.row = []
        elif tag == "th" and self.row is not None and attributes.get("scope") == "row":
            self.in_row_header = True
        elif self.row is not None and "kind-fields" in (attributes.get("class") or "").split():
            self.group = {
                "kinds": attributes["data-kinds"].split(),
                "hidden": "hidden" in attributes,
                "inputs": {},
                "text": "",
            }
            self.depth = 0
            self.row.append(self.group)
        elif self.group is not None:
            if tag in ("div", "p", "ul", "li"):
                self.depth += 1
            if tag == "input":
                name = attributes["name"].split("-", 1)[1]
                self.group["inputs"][name] = attributes

    def handle_endtag(self, tag):
        if self.group is not None and tag in ("div", "p", "ul", "li"):
            if self.depth == 0:
                self.group = None
            else:
                self.depth -= 1
        if tag == "tr":
            self.row = None

    def handle_data(self, data):
        if self.in_row_header and self.row is not None:
            self.rows[data] = self.row
            self.in_row_header = False
        elif self.group is not None:
            self.group["text"] += data


def schema_groups(response) -> dict[str, list[dict]]:
    parser = _SchemaRows()
    parser.feed(response.content.decode())
    return parser.rows


def shown_fields(groups: list[dict]) -> list[str]:
    return [name for group in groups if not group["hidden"] for name in group["inputs"]]


def hidden_fields(groups: list[dict]) -> list[str]:
    return [name for group in groups if group["hidden"] for name in group["inputs"]]


def value_of(groups: list[dict], field: str) -> str | None:
    for group in groups:
        if field in group["inputs"]:
            return group["inputs"][field].get("value")
    raise AssertionError(f"no {field} box")


SAVE = {
    "action": "save",
    "col0-kind": "identifier",
    "col1-kind": "numeric",
    "col1-lower": "0",
    "col1-upper": "100",
    "col2-kind": "categorical",
    "col2-categories": "F, M",
    "col3-kind": "numeric",
    "col3-lower": "0",
    "col3-upper": "10",
    "max_rows_per_person": "1",
}


def test_each_column_shows_only_the_fields_of_its_declared_kind(client, curator, dataset):
    # given name identifier, age and visits numeric, sex categorical
    client.force_login(curator)

    # when
    rows = schema_groups(client.get(f"/datasets/{dataset.pk}/"))

    # then
    assert list(rows) == ["name", "age", "sex", "visits"]
    assert shown_fields(rows["name"]) == []
    assert [g["text"].strip() for g in rows["name"] if not g["hidden"]] == [
        "Not used by any statistic: nothing to declare."
    ]
    assert shown_fields(rows["age"]) == ["lower", "upper", "typical", "fill"]
    assert hidden_fields(rows["age"]) == ["categories", "other"]
    assert shown_fields(rows["sex"]) == ["categories", "other", "fill"]
    assert hidden_fields(rows["sex"]) == ["lower", "upper", "typical"]
    assert shown_fields(rows["visits"]) == ["lower", "upper", "typical", "fill"]
    assert all(g["hidden"] for g in rows["age"] if g["kinds"] == ["identifier"])


def test_the_posted_kind_decides_the_fields_shown_again_and_the_other_kinds_values_stay(
    client, curator, dataset
):
    # given sex switched to numeric with a lower bound only: refused (a column left with no
    # bounds at all is saved as used by no statistic: tests/releases/test_guided_path_pages.py)
    client.force_login(curator)

    # when
    response = client.post(
        f"/datasets/{dataset.pk}/", {**SAVE, "col2-kind": "numeric", "col2-lower": "0"}
    )

    # then the numeric boxes show with the error at the missing bound, and the categories typed
    # are still there
    assert response.status_code == 200
    sex = schema_groups(response)["sex"]
    assert shown_fields(sex) == ["lower", "upper", "typical", "fill"]
    assert value_of(sex, "categories") == "F, M"
    assert value_of(sex, "lower") == "0"
    page = response.content.decode()
    assert page.count("numeric columns need public bounds") == 1
    assert 'id="id_col2-upper_error"' in page
    dataset.refresh_from_db()
    assert dataset.schema["columns"]["sex"]["kind"] == "categorical"


def test_a_value_left_in_another_kinds_box_is_ignored_not_refused(client, curator, dataset):
    # given age declared an identifier, its bound boxes still holding text
    client.force_login(curator)
    post = {**SAVE, "col1-kind": "identifier", "col1-lower": "zero", "col1-typical": "many"}

    # when
    response = client.post(f"/datasets/{dataset.pk}/", post)

    # then
    assert response.status_code == 302
    dataset.refresh_from_db()
    assert dataset.schema["columns"]["age"] == {"kind": "identifier"}


def test_id_like_columns_start_as_identifiers_and_the_page_says_why(client, curator):
    # given a table whose numbered ids read as numbers
    table = (
        b"patient_id,PatientUUID,age,sex,valid\n"
        b"1,a1,34,F,1\n2,b2,51,M,0\n3,c3,29,M,1\n4,d4,70,F,1\n"
    )
    dataset = dataset_create(
        owner=curator, name="Ids", upload=csv_upload(table), budget_epsilon="1.0"
    )
    client.force_login(curator)
    assert dataset.columns[0] == {"name": "patient_id", "inferred_kind": "numeric"}

    # when
    response = client.get(f"/datasets/{dataset.pk}/")

    # then
    page = response.content.decode()
    rows = schema_groups(response)
    kinds = {name: _selected_kind(page, index) for index, name in enumerate(rows)}
    assert kinds == {
        "patient_id": "identifier",
        "PatientUUID": "identifier",
        "age": "numeric",
        "sex": "categorical",
        "valid": "numeric",
    }
    assert page.count("the name looks like an identifier") == 2
    assert shown_fields(rows["patient_id"]) == []
    # and a person key may be chosen among them
    assert '<option value="patient_id">patient_id</option>' in page


def _selected_kind(page: str, index: int) -> str:
    select = page.split(f'name="col{index}-kind"', 1)[1].split("</select>", 1)[0]
    return select.split(" selected>", 1)[0].rsplit('value="', 1)[1].rstrip('"')


def test_boxes_give_examples_in_their_placeholders(client, curator, dataset):
    # given
    client.force_login(curator)

    # when
    rows = schema_groups(client.get(f"/datasets/{dataset.pk}/"))

    # then
    def placeholders(column):
        return {
            name: attributes.get("placeholder")
            for group in rows[column]
            for name, attributes in group["inputs"].items()
        }

    assert placeholders("age") == {
        "lower": "e.g. 0",
        "upper": "e.g. 120",
        "typical": "e.g. 35",
        "categories": "e.g. F, M",
        "other": "e.g. other",
        "fill": "e.g. 0",
    }
    assert placeholders("sex")["fill"] == "e.g. F"


def test_the_fill_in_helper_says_in_plain_words_what_it_does(client, curator, dataset):
    # given
    client.force_login(curator)

    # when
    page = client.get(f"/datasets/{dataset.pk}/").content.decode()

    # then
    assert (
        '<button type="submit" name="action" value="suggest" class="button secondary" '
        'id="fill-from-data">Fill in from my data — reveals exact values, recorded in the audit '
        "trail</button>"
    ) in page
    assert "leaks, audited" not in page


def test_the_typical_value_is_explained_as_public_and_saved_and_shown_again(
    client, curator, dataset
):
    # given
    client.force_login(curator)

    # when
    saved = client.post(f"/datasets/{dataset.pk}/", {**SAVE, "col1-typical": "45"})
    response = client.get(f"/datasets/{dataset.pk}/")

    # then
    assert saved.status_code == 302
    dataset.refresh_from_db()
    assert dataset.schema["columns"]["age"] == {
        "kind": "numeric",
        "lower": 0.0,
        "upper": 100.0,
        "typical": 45.0,
    }
    assert value_of(schema_groups(response)["age"], "typical") == "45.0"
    page = response.content.decode()
    assert "a usual value that is public like the bounds" in page
    assert 'aria-describedby="help-typical"' in page


def test_every_typed_value_is_kept_after_an_error(client, curator, dataset):
    # given a typical value outside the bounds, everything else filled in
    client.force_login(curator)
    post = {
        **SAVE,
        "col1-lower": "18",
        "col1-upper": "90",
        "col1-typical": "95",
        "col1-fill": "40",
        "col2-categories": "F, M, X",
        "col2-other": "unknown",
        "col2-fill": "X",
        "col3-lower": "1",
        "col3-upper": "12",
        "col3-typical": "3",
        "person_key": "name",
        "max_rows_per_person": "4",
    }
    changes_before = AuditEvent.objects.filter(action="dataset.schema_changed").count()

    # when
    response = client.post(f"/datasets/{dataset.pk}/", post)

    # then refused, naming the field in its row
    assert response.status_code == 200
    rows = schema_groups(response)
    age_numeric = next(g for g in rows["age"] if g["kinds"] == ["numeric"])
    assert not age_numeric["hidden"]
    assert "the typical value must lie within the bounds" in age_numeric["text"]
    # and every box still holds what was typed
    kept = {
        f"col{index}-{name}": value_of(rows[column], name)
        for index, column in enumerate(rows)
        for group in rows[column]
        for name in group["inputs"]
        if f"col{index}-{name}" in post
    }
    assert kept == {k: v for k, v in post.items() if k[:3] == "col" and not k.endswith("-kind")}
    page = response.content.decode()
    assert '<option value="name" selected>name</option>' in page
    assert 'name="max_rows_per_person" id="id_max_rows_per_person" value="4"' in page
    dataset.refresh_from_db()
    assert "typical" not in dataset.schema["columns"]["age"]
    assert AuditEvent.objects.filter(action="dataset.schema_changed").count() == changes_before


def test_filling_in_from_the_data_keeps_what_was_typed_beyond_bounds_and_categories(
    client, curator
):
    # given an undeclared table, the curator having typed kinds and a typical value
    dataset = dataset_create(owner=curator, name="Bare", upload=csv_upload(), budget_epsilon="1")
    client.force_login(curator)
    typed = {
        "action": "suggest",
        "col0-kind": "identifier",
        "col1-kind": "numeric",
        "col1-lower": "0",
        "col1-typical": "40",
        "col2-kind": "categorical",
        "col2-other": "other",
        "col3-kind": "identifier",
        "col3-lower": "7",
    }

    # when
    response = client.post(f"/datasets/{dataset.pk}/", typed)

    # then the bounds and categories come from the data, all else is as typed
    rows = schema_groups(response)
    assert (value_of(rows["age"], "lower"), value_of(rows["age"], "upper")) == ("29.0", "120.0")
    assert value_of(rows["age"], "typical") == "40"
    assert value_of(rows["sex"], "categories") == "F, M, X"
    assert value_of(rows["sex"], "other") == "other"
    assert shown_fields(rows["visits"]) == []
    assert value_of(rows["visits"], "lower") == "7"
    assert AuditEvent.objects.filter(action="dataset.schema_suggested_from_data").count() == 1


# --- the simulated preview's label --------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "sentence"),
    [
        ({}, "Every simulated age is 50, the midpoint of the bounds: declare a public typical"),
        ({"typical": 38}, "Every simulated age is 38, the declared typical value."),
    ],
    ids=["midpoint", "typical"],
)
def test_the_preview_says_which_value_the_simulated_table_uses(client, curator, age, sentence):
    # given
    dataset = dataset_create(owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1")
    columns = {**CLINIC_SCHEMA["columns"], "age": {**CLINIC_SCHEMA["columns"]["age"], **age}}
    dataset = dataset_schema_update(
        dataset=dataset, user=curator, schema={**CLINIC_SCHEMA, "columns": columns}
    )
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages",
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[{"kind": "mean", "column": "age"}, {"kind": "sum", "column": "age"}],
    )
    client.force_login(curator)

    # when
    page = client.get(f"/releases/{draft.pk}/preview/").content.decode()

    # then once per column
    assert page.count(sentence) == 1
    assert page.count("Every simulated") == 1
