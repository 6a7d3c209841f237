"""POST /api/v1/datasets/ with hostile and good uploads: field errors, nothing stored on failure,
and no cell value ever echoed back."""

import hashlib
from decimal import Decimal
from pathlib import Path

import pytest

from audit.models import AuditEvent
from releases.models import Dataset
from tests.conftest import CLINIC_CSV, csv_cells, csv_upload, stored_cells

URL = "/api/v1/datasets/"
SECRET = "SECRETVALUE"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def private_root(settings) -> Path:
    """This test's private storage root (a tmp dir set by the conftest)."""
    return Path(settings.PRIVATE_STORAGE_ROOT)


def stored_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def upload(client, content: bytes | None = CLINIC_CSV, **fields):
    data = {"name": "Clinic", "budget_epsilon": "1.0", "declared_size": "5"}
    if content is not None:
        data["file"] = csv_upload(content)
    for key, value in fields.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return client.post(URL, data, format="multipart")


def assert_nothing_created(root: Path) -> None:
    assert Dataset.objects.count() == 0
    assert stored_files(root) == []
    assert not AuditEvent.objects.filter(action="dataset.uploaded").exists()


HOSTILE_FILES = [
    pytest.param(b"", "The file is empty.", id="empty"),
    pytest.param(b"  \n\t\r\n   \n", "The file is empty.", id="whitespace-only"),
    pytest.param(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
        "This does not look like a CSV file (it contains binary data).",
        id="png-header",
    ),
    pytest.param(
        b"name,age\nAnn\x00\x00,34\n",
        "This does not look like a CSV file (it contains binary data).",
        id="nul-bytes",
    ),
    pytest.param(
        "name,city\nJosé,Zürich\n".encode("latin-1"),
        "The file is not valid UTF-8 text; save it as UTF-8 CSV.",
        id="latin-1",
    ),
    pytest.param(
        b"name,age,sex\nAnn,34,F\nBob,51\n",
        "Row 3 has 2 fields but the header has 3.",
        id="ragged-short-row",
    ),
    pytest.param(
        b"name,age,sex\nAnn,34,F,extra\n",
        "Row 2 has 4 fields but the header has 3.",
        id="ragged-long-row",
    ),
    pytest.param(b"name,age,sex\n", "The file has a header but no rows.", id="header-only"),
    pytest.param(
        b"name,age\nAnn,34\n\n\nBob,51\n",
        "Row 3 is blank: remove blank lines inside the table (blank lines at the end of the "
        "file are ignored).",
        id="blank-line-inside",
    ),
    pytest.param(
        b"\nname,age\nAnn,34\n",
        "Row 1 is blank: the first line must be the header. Remove blank lines inside the table "
        "(blank lines at the end of the file are ignored).",
        id="blank-line-before-header",
    ),
    pytest.param(
        b"name,age\n" + b"Ann,34\n" * 2000 + b"Bob\x00,51\n",
        "This does not look like a CSV file (it contains binary data).",
        id="nul-after-8-kib",
    ),
    pytest.param(
        b"name,age,name\nAnn,34,Bob\n",
        "Column names in the first row must be distinct.",
        id="duplicate-header",
    ),
    pytest.param(
        b"name,,sex\nAnn,34,F\n",
        "Every column needs a name in the first row.",
        id="blank-header-name",
    ),
    pytest.param(
        b"just some prose\nwithout any delimiter\n",
        "This does not look like a CSV file: no delimiter was found.",
        id="no-delimiter",
    ),
]


@pytest.mark.parametrize(("content", "message"), HOSTILE_FILES)
def test_hostile_file_is_refused_with_a_file_error_and_nothing_stored(
    curator_client, private_root, content, message
):
    # when
    response = upload(curator_client, content)

    # then
    assert response.status_code == 400
    assert response.json() == {"detail": "Invalid input.", "errors": {"file": [message]}}
    assert_nothing_created(private_root)


@pytest.mark.parametrize(
    ("fields", "content", "errors"),
    [
        pytest.param({}, None, {"file": ["Choose a CSV file to upload."]}, id="missing-file"),
        pytest.param(
            {"name": None}, CLINIC_CSV, {"name": ["Give the dataset a name."]}, id="missing-name"
        ),
        pytest.param(
            {"name": "   "}, CLINIC_CSV, {"name": ["Give the dataset a name."]}, id="blank-name"
        ),
        pytest.param(
            {"name": "n" * 201},
            CLINIC_CSV,
            {"name": ["Use at most 200 characters."]},
            id="long-name",
        ),
        pytest.param(
            {"budget_epsilon": "-1"},
            CLINIC_CSV,
            {"budget_epsilon": ["must be a number greater than 0"]},
            id="negative-budget",
        ),
        pytest.param(
            {"budget_epsilon": "0"},
            CLINIC_CSV,
            {"budget_epsilon": ["must be a number greater than 0"]},
            id="zero-budget",
        ),
        pytest.param(
            {"budget_epsilon": "lots"},
            CLINIC_CSV,
            {"budget_epsilon": ["must be a number"]},
            id="non-numeric-budget",
        ),
        pytest.param(
            {"budget_epsilon": "NaN"},
            CLINIC_CSV,
            {"budget_epsilon": ["must be a number greater than 0"]},
            id="nan-budget",
        ),
        pytest.param(
            {"budget_epsilon": "Infinity"},
            CLINIC_CSV,
            {"budget_epsilon": ["must be a number greater than 0"]},
            id="infinite-budget",
        ),
        pytest.param(
            {"budget_epsilon": "1e12"},
            CLINIC_CSV,
            {"budget_epsilon": ["is too large"]},
            id="huge-budget",
        ),
        pytest.param(
            {"budget_delta": "1"}, CLINIC_CSV, {"budget_delta": ["must be below 1"]}, id="delta-one"
        ),
        pytest.param(
            {"budget_delta": "-0.1"},
            CLINIC_CSV,
            {"budget_delta": ["must be a number greater than 0"]},
            id="negative-delta",
        ),
        pytest.param(
            {"declared_size": "many"},
            CLINIC_CSV,
            {"declared_size": ["must be a positive whole number"]},
            id="bad-size",
        ),
        pytest.param(
            {"declared_size": "0"},
            CLINIC_CSV,
            {"declared_size": ["must be a positive whole number"]},
            id="zero-size",
        ),
        pytest.param(
            {"name": "Clinic\nforged line"},
            CLINIC_CSV,
            {"name": ["Do not use control characters (such as NUL, tabs or line breaks)."]},
            id="line-break-in-name",
        ),
        pytest.param(
            {"declared_size": str(10**12)},
            CLINIC_CSV,
            {
                "declared_size": [
                    "must be at most 10,000,000,000, the largest table the engine answers"
                ]
            },
            id="size-10-to-the-12",
        ),
        pytest.param(
            {"declared_size": "9" * 5000},
            CLINIC_CSV,
            {
                "declared_size": [
                    "must be at most 10,000,000,000, the largest table the engine answers"
                ]
            },
            id="size-5000-digits",
        ),
        pytest.param(
            {"declared_size": "1e3"},
            CLINIC_CSV,
            {"declared_size": ["must be a positive whole number"]},
            id="size-in-exponent-form",
        ),
        pytest.param(
            {"budget_delta": "0." + "0" * 30 + "1"},
            CLINIC_CSV,
            {"budget_delta": ["use at most 30 decimal places"]},
            id="delta-31-places",
        ),
        pytest.param(
            {"budget_epsilon": "0." + "0" * 12 + "1"},
            CLINIC_CSV,
            {"budget_epsilon": ["use at most 12 decimal places"]},
            id="epsilon-13-places",
        ),
        pytest.param(
            {"confirm_new_budget": "perhaps"},
            CLINIC_CSV,
            {"confirm_new_budget": ["must be true or false"]},
            id="confirm-not-a-boolean",
        ),
        pytest.param(
            {"name": None, "budget_epsilon": "-2"},
            None,
            {
                "name": ["Give the dataset a name."],
                "file": ["Choose a CSV file to upload."],
                "budget_epsilon": ["must be a number greater than 0"],
            },
            id="all-at-once",
        ),
    ],
)
def test_bad_fields_are_named_and_nothing_stored(
    curator_client, private_root, fields, content, errors
):
    # when
    response = upload(curator_client, content, **fields)

    # then
    assert response.status_code == 400
    assert response.json() == {"detail": "Invalid input.", "errors": errors}
    assert_nothing_created(private_root)


def test_file_over_the_size_limit_is_refused(curator_client, private_root, settings):
    # given a valid CSV one byte over a 1 MB limit
    settings.DATASET_MAX_UPLOAD_BYTES = 1024 * 1024
    head = b"name,age\n"
    row = f"{SECRET},34\n".encode()
    content = head + row * ((settings.DATASET_MAX_UPLOAD_BYTES - len(head)) // len(row) + 1)
    content = content[: settings.DATASET_MAX_UPLOAD_BYTES + 1]
    assert len(content) == settings.DATASET_MAX_UPLOAD_BYTES + 1

    # when
    response = upload(curator_client, content)

    # then
    assert response.status_code == 400
    assert response.json() == {
        "detail": "Invalid input.",
        "errors": {"file": ["The file is larger than the limit of 1 MB."]},
    }
    assert SECRET not in response.content.decode()
    assert_nothing_created(private_root)


def test_file_exactly_at_the_size_limit_is_accepted(curator_client, private_root, settings):
    # given
    settings.DATASET_MAX_UPLOAD_BYTES = len(CLINIC_CSV)

    # when
    response = upload(curator_client, CLINIC_CSV)

    # then
    assert response.status_code == 201
    assert Dataset.objects.count() == 1


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(f"name,age,sex\nAnn,34,F\n{SECRET},51\n".encode(), id="ragged"),
        pytest.param(f"name,age\n{SECRET},34,{SECRET}\n".encode(), id="ragged-long"),
        pytest.param(f"name,note\nAnn,{SECRET} caf\xe9\n".encode("latin-1"), id="latin-1"),
        pytest.param(f"name,age\n{SECRET}\x00,34\n".encode(), id="nul"),
        pytest.param(f"{SECRET}\n{SECRET}\n".encode(), id="no-delimiter"),
        pytest.param(f'name,age\n"{SECRET},34\n'.encode(), id="unterminated-quote"),
    ],
)
def test_upload_errors_never_echo_a_cell_value(curator_client, private_root, content):
    # when
    response = upload(curator_client, content)

    # then
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"file"}
    assert SECRET not in response.content.decode()
    assert_nothing_created(private_root)


def test_good_upload_returns_columns_with_inferred_kinds(curator_client, private_root):
    # when
    response = upload(curator_client, CLINIC_CSV)

    # then
    assert response.status_code == 201
    body = response.json()
    dataset = Dataset.objects.get()
    assert body["id"] == dataset.pk
    assert body["name"] == "Clinic"
    assert body["row_count"] == 5
    assert body["columns"] == [
        {"name": "name", "inferred_kind": "identifier"},
        {"name": "age", "inferred_kind": "numeric"},
        {"name": "sex", "inferred_kind": "categorical"},
        {"name": "visits", "inferred_kind": "numeric"},
    ]
    assert body["schema"] is None
    assert body["declared_size"] == 5
    assert {k: Decimal(v) for k, v in body["budget"].items()} == {
        "total": Decimal(1),
        "spent": Decimal(0),
        "reserved": Decimal(0),
        "remaining": Decimal(1),
    }


def test_good_upload_stores_the_table_privately_in_columns_and_audits_names_only(
    curator_client, private_root
):
    # when
    upload(curator_client, CLINIC_CSV)

    # then the only file kept is the columnar table, which holds every cell; the CSV is gone
    dataset = Dataset.objects.get()
    [stored] = stored_files(private_root)
    assert Path(dataset.table.path) == stored
    assert stored_cells(str(stored)) == csv_cells(CLINIC_CSV)
    assert not dataset.file
    event = AuditEvent.objects.get(action="dataset.uploaded")
    assert (event.actor, event.object_id, event.dataset_id) == (
        "curator1",
        str(dataset.pk),
        dataset.pk,
    )
    assert event.details == {
        "name": "Clinic",
        "columns": ["name", "age", "sex", "visits"],
        "budget_epsilon": "1.0",
        "budget_delta": "0",
        "sha256": hashlib.sha256(CLINIC_CSV).hexdigest(),
        "status": "ready",
    }


def test_upload_without_budget_uses_the_default_budget(curator_client, private_root, settings):
    # given
    settings.DEFAULT_BUDGET_EPSILON = "2.5"

    # when
    response = upload(curator_client, CLINIC_CSV, budget_epsilon=None, declared_size=None)

    # then
    assert response.status_code == 201
    dataset = Dataset.objects.get()
    assert dataset.budget_epsilon == Decimal("2.5")
    assert dataset.budget_delta == Decimal(0)
    assert dataset.declared_size is None


@pytest.mark.parametrize(
    ("content", "columns"),
    [
        pytest.param(b"\xef\xbb\xbfname,age\nAnn,34\nBob,51\n", ["name", "age"], id="utf-8-bom"),
        pytest.param(b"name;age\nAnn;34\nBob;51\n", ["name", "age"], id="semicolons"),
        pytest.param(b"name\tage\nAnn\t34\nBob\t51\n", ["name", "age"], id="tabs"),
        pytest.param(b"name,age\r\nAnn,34\r\nBob,51\r\n", ["name", "age"], id="crlf"),
        pytest.param(
            b"name,age\nAnn,34\nBob,51\n\n  \n\n", ["name", "age"], id="trailing-blank-lines"
        ),
        pytest.param(b"name,age\rAnn,34\rBob,51\r", ["name", "age"], id="cr-only"),
    ],
)
def test_common_csv_variants_are_accepted(curator_client, private_root, content, columns):
    # when
    response = upload(curator_client, content)

    # then
    assert response.status_code == 201
    assert [c["name"] for c in response.json()["columns"]] == columns
    assert response.json()["row_count"] == 2


def test_upload_is_stored_under_the_current_private_storage_root(curator_client, settings):
    # given the conftest's per-test PRIVATE_STORAGE_ROOT (a tmp dir)
    root = Path(settings.PRIVATE_STORAGE_ROOT)

    # when
    response = upload(curator_client, CLINIC_CSV)

    # then
    assert response.status_code == 201
    dataset = Dataset.objects.get()
    assert Path(dataset.table.path).is_relative_to(root)


@pytest.mark.parametrize("budget", ["0.0000000000001", "1e-30"])
def test_budget_below_the_ledger_precision_is_refused(curator_client, private_root, budget):
    # when
    response = upload(curator_client, CLINIC_CSV, budget_epsilon=budget)

    # then
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["budget_epsilon"]
    assert_nothing_created(private_root)


@pytest.mark.parametrize(
    ("size", "stored"),
    [
        pytest.param("10000000000", 10**10, id="the-cap"),
        pytest.param(" 0042 ", 42, id="leading-zeros-and-spaces"),
    ],
)
def test_declared_size_up_to_the_engine_cap_is_accepted(curator_client, private_root, size, stored):
    # when
    response = upload(curator_client, CLINIC_CSV, declared_size=size)

    # then
    assert response.status_code == 201, response.json()
    assert response.json()["declared_size"] == stored
    assert Dataset.objects.get().declared_size == stored


@pytest.mark.parametrize(
    "delta",
    [
        pytest.param("1e-30", id="smallest"),
        pytest.param("0.000000000000000000000000000123", id="thirty-places"),
        pytest.param("0.00000000000001", id="1e-14"),
    ],
)
def test_delta_budget_keeps_up_to_thirty_decimal_places_exactly(
    curator_client, private_root, delta
):
    # when
    response = upload(curator_client, CLINIC_CSV, budget_delta=delta)

    # then
    assert response.status_code == 201, response.json()
    assert Dataset.objects.get().budget_delta == Decimal(delta)
    assert Decimal(response.json()["budget_delta"]["total"]) == Decimal(delta)


def test_table_with_more_columns_than_the_limit_is_refused_naming_file(
    curator_client, private_root, settings
):
    # given a limit of 3 columns and a table of 4
    settings.DATASET_MAX_COLUMNS = 3

    # when
    response = upload(curator_client, CLINIC_CSV)

    # then
    assert response.status_code == 400
    assert response.json() == {
        "detail": "Invalid input.",
        "errors": {"file": ["The table has 4 columns; at most 3 are allowed."]},
    }
    assert_nothing_created(private_root)


def test_table_with_exactly_the_column_limit_is_accepted(curator_client, private_root, settings):
    # given
    settings.DATASET_MAX_COLUMNS = 4

    # when
    response = upload(curator_client, CLINIC_CSV)

    # then
    assert response.status_code == 201


@pytest.mark.parametrize("name", ["Clinic\x00", "Cli\x00nic", "Clinic\x1b[31m"])
def test_service_refuses_control_characters_in_the_name_on_any_backend(curator, private_root, name):
    # given a name PostgreSQL could not store (NUL) or that forges terminal output
    from releases.services.datasets import dataset_create
    from releases.services.errors import ValidationFailed

    # when
    with pytest.raises(ValidationFailed) as refused:
        dataset_create(owner=curator, name=name, upload=csv_upload(), budget_epsilon="1")

    # then
    assert refused.value.errors == {
        "name": ["Do not use control characters (such as NUL, tabs or line breaks)."]
    }
    assert_nothing_created(private_root)


def test_upload_page_shows_a_nul_in_the_name_as_an_error_on_name(client, curator, private_root):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        "/datasets/new/",
        {"name": "Clinic\x00", "file": csv_upload(), "budget_epsilon": "1"},
    )

    # then
    assert response.status_code == 200
    page = response.content.decode()
    assert "Do not use control characters (such as NUL, tabs or line breaks)." in page
    assert_nothing_created(private_root)
