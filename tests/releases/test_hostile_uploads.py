"""Hostile input, no loss (issue 12, point 8): one corpus of hostile files, each sent through
the API (POST /api/v1/datasets/) and through the upload page (/datasets/new/).

A refused file gets a message naming the problem (a row, a column, the encoding, the limit) and
never a cell value; it leaves no Dataset row, no audit event and no file in private storage. An
accepted file keeps every value, is stored under a generated name whatever the client called it,
and any CSV the product writes back defuses spreadsheet formulas. Files above
DATASET_CONVERT_INLINE_BYTES convert in the (here eager) worker task: a hostile one ends
``failed`` with the same message and nothing stored. A real worker killed mid-conversion leaves
the upload re-processable (tests/releases/test_worker_ingest.py) or, out of attempts, cleanly
failed (below).

Files are sent as raw multipart bodies: Django's test client would send only the file name's
last component, and the path-traversal names must reach the server as a hostile client sends
them."""

import codecs
import csv
import gzip
import html
import io
import itertools
import json
import re
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest
import requests
from django.test import Client

from audit.models import AuditEvent
from releases.models import Dataset, ReleaseFile
from releases.services.datasets import dataset_create
from releases.services.runs import FORMULA_TRIGGERS
from tests.conftest import csv_upload, publish_through_api, stored_cells
from tests.processes import Stack, api_token, kill, sqlite_env, start_stack

API_URL = "/api/v1/datasets/"
PAGE_URL = "/datasets/new/"
# In every data row of the text cases: no answer may ever contain it.
SECRET = "SECRETVALUE"
# In the hostile file names: the product must not keep or show the client's name.
NAME_MARK = "HOSTILENAME"
INTERFACES = ["api", "page"]
GENERATED_TABLE = re.compile(r"tables/[0-9a-f]{32}\.parquet")

BINARY = "This does not look like a CSV file (it contains binary data)."
NOT_UTF8 = "The file is not valid UTF-8 text; save it as UTF-8 CSV."
UTF16 = "The file is UTF-16 text, not UTF-8; save it as UTF-8 CSV (in a spreadsheet: CSV UTF-8)."


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# --- sending an upload as a hostile client does ---------------------------------------------


def multipart(fields: dict[str, str], file_name: str | None, content: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body holding ``fields`` and one file part named exactly
    ``file_name`` (no file part when None), and its content type."""
    boundary = f"hostile-{uuid.uuid4().hex}"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
        for key, value in fields.items()
    ]
    if file_name is not None:
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{file_name}"\r\nContent-Type: text/csv\r\n\r\n'.encode()
            + content
            + b"\r\n"
        )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def send(client, url: str, *, content: bytes, file_name: str = "table.csv", name: str = "Hostile"):
    body, content_type = multipart(
        {"name": name, "budget_epsilon": "1", "declared_size": "100"}, file_name, content
    )
    return client.post(url, data=body, content_type=content_type)


@pytest.fixture
def page_client(curator) -> Client:
    client = Client()
    client.force_login(curator)
    return client


@pytest.fixture
def clients(curator_client, page_client) -> dict:
    return {"api": (curator_client, API_URL), "page": (page_client, PAGE_URL)}


@pytest.fixture
def existing(curator) -> Dataset:
    """A dataset already stored: a refusal must leave its row and its table as they were."""
    return dataset_create(owner=curator, name="Existing", upload=csv_upload(), budget_epsilon="1")


def files_under(root: Path) -> set[Path]:
    return {path for path in Path(root).rglob("*") if path.is_file()}


@dataclass(frozen=True)
class Snapshot:
    """What an upload may change: dataset rows, upload events, every file of the test's tree."""

    datasets: set[int]
    uploaded_events: int
    files: set[Path]

    @classmethod
    def take(cls, root: Path) -> "Snapshot":
        return cls(
            datasets=set(Dataset.objects.values_list("pk", flat=True)),
            uploaded_events=AuditEvent.objects.filter(action="dataset.uploaded").count(),
            files=files_under(root),
        )


def page_errors(response) -> list[str]:
    """The messages of the upload page's error lists, unescaped."""
    page = response.content.decode()
    return [
        html.unescape(message)
        for block in re.findall(r'<ul class="errorlist"[^>]*>(.*?)</ul>', page, re.S)
        for message in re.findall(r"<li>(.*?)</li>", block, re.S)
    ]


def file_field_errors(response) -> list[str]:
    """The messages shown under the page's file field."""
    page = response.content.decode()
    field = re.search(r'<input type="file" name="file".*?</div>', page, re.S)
    assert field is not None, "the upload form's file field is not on the page"
    return [html.unescape(m) for m in re.findall(r"<li>(.*?)</li>", field.group(0), re.S)]


def assert_refused(
    interface: str, response, errors: dict[str, list[str]], *, body_unreadable: bool = False
) -> None:
    if interface == "api":
        assert response.status_code == 400, response.content[:500]
        assert response.json() == {"detail": "Invalid input.", "errors": errors}
    elif body_unreadable:
        # Django refuses the body before any view runs (in production the CSRF check reads
        # it first): its plain 400 page, with nothing created.
        assert response.status_code == 400, response.status_code
    else:
        # The page answers with the form again, the message under the field at fault.
        assert response.status_code == 200, response.status_code
        assert b'id="upload-form"' in response.content
        if "file" in errors:
            assert file_field_errors(response) == errors["file"]
        assert sorted(page_errors(response)) == sorted(itertools.chain(*errors.values()))
    assert SECRET not in response.content.decode(errors="replace")


# --- the corpus ------------------------------------------------------------------------------

TEXT = f"name,age,sex\nAnn,34,F\n{SECRET},51,M\n"
# Good rows filling the first mebibyte: what comes after them is past the first chunk read.
ROWS_IN_A_MEBIBYTE = 1024 * 1024 // len(f"{SECRET},34\n") + 1
ONE_MEBIBYTE_OF_ROWS = "name,age\n" + f"{SECRET},34\n" * ROWS_IN_A_MEBIBYTE


@cache
def nul_after_a_mebibyte() -> bytes:
    return ONE_MEBIBYTE_OF_ROWS.encode() + b"Bob,5\x001\n" + b"Cid,29\n" * 100


@cache
def invalid_utf8_after_a_mebibyte() -> bytes:
    return ONE_MEBIBYTE_OF_ROWS.encode() + b"Jos\xe9,51\n" + b"Cid,29\n" * 100


@cache
def ten_thousand_columns() -> bytes:
    header = ",".join(f"c{i}" for i in range(10_000))
    return f"{header}\n{','.join([SECRET] * 10_000)}\n".encode()


@cache
def one_line_of_twenty_mebibytes() -> bytes:
    return (SECRET.encode() + b",") * (20 * 1024 * 1024 // (len(SECRET) + 1))


@cache
def just_over_a_mebibyte() -> bytes:
    content = ONE_MEBIBYTE_OF_ROWS.encode()[: 1024 * 1024 + 1]
    assert len(content) == 1024 * 1024 + 1
    return content


def zip_archive() -> bytes:
    """A ZIP holding a CSV: what an .xlsx workbook or a zipped export is."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("table.csv", TEXT)
    return out.getvalue()


ELF_HEADER = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 8 + b"\x02\x00\x3e\x00\x01\x00\x00\x00"
PNG_HEADER = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02"


@dataclass(frozen=True)
class Refused:
    content: Callable[[], bytes]
    # The field errors, formatted with the test's settings (e.g. {DATASET_MAX_COLUMNS}).
    errors: dict[str, list[str]]
    file_name: str = "table.csv"
    name: str = "Hostile"
    # Settings for this case: limits shrunk so the corpus runs fast, or raised to reach a check.
    limits: dict[str, int] = field(default_factory=dict)
    # A multipart body Django itself cannot parse: the errors name "body".
    body_unreadable: bool = False

    def expected(self, settings) -> dict[str, list[str]]:
        values = {name: getattr(settings, name) for name in ("DATASET_MAX_COLUMNS",)}
        return {
            key: [m.format(**values) for m in messages] for key, messages in self.errors.items()
        }


def file_error(message: str) -> dict[str, list[str]]:
    return {"file": [message]}


REFUSED = [
    pytest.param(
        Refused(lambda: codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"), file_error(UTF16)),
        id="utf-16-le-with-bom",
    ),
    pytest.param(
        Refused(lambda: codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"), file_error(UTF16)),
        id="utf-16-be-with-bom",
    ),
    pytest.param(Refused(lambda: TEXT.encode("utf-16-le"), file_error(UTF16)), id="utf-16-no-bom"),
    pytest.param(
        Refused(
            lambda: TEXT.encode("utf-32"),
            file_error(
                "The file is UTF-32 text, not UTF-8; save it as UTF-8 CSV "
                "(in a spreadsheet: CSV UTF-8)."
            ),
        ),
        id="utf-32-with-bom",
    ),
    # Latin-1 and cp1252 are not guessed: a guess could read the bytes as other letters.
    pytest.param(
        Refused(
            lambda: f"name,city\n{SECRET}José,Zürich\n".encode("latin-1"), file_error(NOT_UTF8)
        ),
        id="latin-1",
    ),
    pytest.param(
        Refused(lambda: f"name,note\n{SECRET},“quoted”\n".encode("cp1252"), file_error(NOT_UTF8)),
        id="cp1252-smart-quotes",
    ),
    pytest.param(
        Refused(
            lambda: f"name,age,sex\nAnn,34,F\n{SECRET},51,M,{SECRET}\n".encode(),
            file_error("Row 3 has 4 fields but the header has 3."),
        ),
        id="ragged-too-many-fields",
    ),
    pytest.param(
        Refused(
            lambda: f"name,age,sex\nAnn,34,F\nBob,51,M\n{SECRET},29\n".encode(),
            file_error("Row 4 has 2 fields but the header has 3."),
        ),
        id="ragged-too-few-fields",
    ),
    # Found here: the quoted value swallowed every later row, and the table was accepted short.
    pytest.param(
        Refused(
            lambda: f'name,note\nAnn,"{SECRET}\nBob,fine\nCid,fine\n'.encode(),
            file_error(
                "Row 2 opens a quoted value that is never closed: the file ends inside it "
                "(a quote character is missing, or the file was cut short)."
            ),
        ),
        id="quote-never-closed",
    ),
    # The same, read by the csv module (an empty line inside quotes keeps the fast parser away).
    pytest.param(
        Refused(
            lambda: f'name,note\nAnn,fine\nBob,"{SECRET}\n\nCid,fine\n'.encode(),
            file_error(
                "Row 3 opens a quoted value that is never closed: the file ends inside it "
                "(a quote character is missing, or the file was cut short)."
            ),
        ),
        id="quote-never-closed-around-an-empty-line",
    ),
    pytest.param(Refused(lambda: b"", file_error("The file is empty.")), id="zero-bytes"),
    pytest.param(
        Refused(lambda: b"name,age,sex\r\n", file_error("The file has a header but no rows.")),
        id="header-only",
    ),
    pytest.param(
        Refused(
            ten_thousand_columns,
            file_error("The table has 10000 columns; at most {DATASET_MAX_COLUMNS} are allowed."),
        ),
        id="ten-thousand-columns",
    ),
    pytest.param(
        Refused(
            one_line_of_twenty_mebibytes,
            file_error("Line 1 is longer than 8,388,608 characters."),
            # Converted during the request, where the refusal is a 400.
            limits={"DATASET_CONVERT_INLINE_BYTES": 32 * 1024 * 1024},
        ),
        id="one-20-mib-line-without-newline",
    ),
    pytest.param(
        Refused(
            lambda: b"name,note\nAnn," + SECRET.encode() * 20_000 + b"\n",
            file_error("Row 2 has a value longer than 131,072 characters."),
        ),
        id="one-value-of-200-kb",
    ),
    pytest.param(Refused(lambda: PNG_HEADER, file_error(BINARY), "photo.csv"), id="png-as-csv"),
    pytest.param(Refused(zip_archive, file_error(BINARY), "workbook.csv"), id="zip-as-csv"),
    pytest.param(
        Refused(lambda: gzip.compress(TEXT.encode(), mtime=0), file_error(BINARY), "t.csv"),
        id="gzip-as-csv",
    ),
    pytest.param(Refused(lambda: ELF_HEADER, file_error(BINARY), "program.csv"), id="elf-as-csv"),
    pytest.param(
        Refused(nul_after_a_mebibyte, file_error(BINARY)), id="nul-byte-after-1-mib-of-rows"
    ),
    pytest.param(
        Refused(invalid_utf8_after_a_mebibyte, file_error(NOT_UTF8)),
        id="invalid-utf-8-after-1-mib-of-rows",
    ),
    pytest.param(
        Refused(
            just_over_a_mebibyte,
            file_error("The file is larger than the limit of 1 MB."),
            limits={"DATASET_MAX_UPLOAD_BYTES": 1024 * 1024},
        ),
        id="one-byte-over-the-upload-limit",
    ),
    # Django drops a file part whose name is only a path ("..", "/"): no file was received.
    pytest.param(
        Refused(lambda: TEXT.encode(), file_error("Choose a CSV file to upload."), "../.."),
        id="file-name-only-dots",
    ),
    # Django reads at most 1,024 bytes of a part's headers; browsers send names of at most 255.
    pytest.param(
        Refused(
            lambda: TEXT.encode(),
            {"body": ["Multipart form parse error - Request max total header size exceeded."]},
            f"{NAME_MARK}{'x' * 10_000}.csv",
            body_unreadable=True,
        ),
        id="file-name-of-10-000-characters",
    ),
    pytest.param(
        Refused(
            lambda: TEXT.encode(),
            {"name": ["Do not use control characters (such as NUL, tabs or line breaks)."]},
            name="../../etc/passwd\r\nForged: line",
        ),
        id="display-name-with-a-line-break",
    ),
]


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("case", REFUSED)
def test_a_hostile_file_is_refused_naming_the_problem_and_nothing_is_kept(
    case, interface, clients, existing, settings, tmp_path
):
    # given
    for setting, value in case.limits.items():
        setattr(settings, setting, value)
    client, url = clients[interface]
    before = Snapshot.take(tmp_path)

    # when
    response = send(client, url, content=case.content(), file_name=case.file_name, name=case.name)

    # then
    assert_refused(
        interface, response, case.expected(settings), body_unreadable=case.body_unreadable
    )
    assert Snapshot.take(tmp_path) == before
    existing.refresh_from_db()
    assert existing.status == "ready"
    assert Path(existing.table.path) in before.files


@dataclass(frozen=True)
class Accepted:
    content: bytes
    header: list[str]
    # The cells as stored: without surrounding whitespace, which no kind reads.
    rows: list[list[str]]
    file_name: str = "table.csv"


FORMULAS = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(1)", "\t=1+2"]
FORMULA_CSV = (
    "name,payload\n" + "".join(f'P{i},"{value}"\n' for i, value in enumerate(FORMULAS))
).encode()
PLAIN_CSV = b"name,age\nAnn,34\nBob,51\n"

ACCEPTED = [
    pytest.param(
        Accepted(
            b"\xef\xbb\xbfname,age\r\nAnn,34\r\nBob,51\r\n",
            ["name", "age"],
            [["Ann", "34"], ["Bob", "51"]],
        ),
        id="utf-8-with-bom",
    ),
    pytest.param(
        Accepted(
            b'name,note\nAnn,"line one\nline two, still one value"\nBob,"""quoted"""\n',
            ["name", "note"],
            [["Ann", "line one\nline two, still one value"], ["Bob", '"quoted"']],
        ),
        id="quoted-newline-lf",
    ),
    pytest.param(
        Accepted(
            b'name,note\r\nAnn,"line one\r\nline two"\r\nBob,plain\r\n',
            ["name", "note"],
            [["Ann", "line one\r\nline two"], ["Bob", "plain"]],
        ),
        id="quoted-newline-crlf",
    ),
    # Formula payloads are data: kept as sent (see the export test below for what is written).
    pytest.param(
        Accepted(
            FORMULA_CSV,
            ["name", "payload"],
            [[f"P{i}", value.strip()] for i, value in enumerate(FORMULAS)],
        ),
        id="formula-payloads",
    ),
    pytest.param(
        Accepted(
            PLAIN_CSV, ["name", "age"], [["Ann", "34"], ["Bob", "51"]], f"../../etc/{NAME_MARK}.csv"
        ),
        id="file-name-climbing-out",
    ),
    pytest.param(
        Accepted(
            PLAIN_CSV, ["name", "age"], [["Ann", "34"], ["Bob", "51"]], f"/etc/{NAME_MARK}.csv"
        ),
        id="file-name-absolute",
    ),
    pytest.param(
        Accepted(
            PLAIN_CSV,
            ["name", "age"],
            [["Ann", "34"], ["Bob", "51"]],
            f"..\\..\\Windows\\System32\\{NAME_MARK}.csv",
        ),
        id="file-name-with-backslashes",
    ),
    pytest.param(
        Accepted(
            PLAIN_CSV, ["name", "age"], [["Ann", "34"], ["Bob", "51"]], f"{NAME_MARK}\x00.csv.exe"
        ),
        id="file-name-with-nul",
    ),
    pytest.param(
        Accepted(
            PLAIN_CSV,
            ["name", "age"],
            [["Ann", "34"], ["Bob", "51"]],
            NAME_MARK + "x" * (255 - len(NAME_MARK) - 4) + ".csv",
        ),
        id="file-name-of-255-characters",
    ),
]


def created_dataset(interface: str, response, before: Snapshot) -> Dataset:
    (new_id,) = set(Dataset.objects.values_list("pk", flat=True)) - before.datasets
    if interface == "api":
        assert response.status_code == 201, response.content[:500]
        assert response.json()["id"] == new_id
    else:
        assert response.status_code == 302, response.content[:500]
        assert response["Location"] == f"/datasets/{new_id}/"
    return Dataset.objects.get(pk=new_id)


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("case", ACCEPTED)
def test_an_awkward_but_valid_file_is_kept_whole_under_a_generated_name(
    case, interface, clients, existing, settings, tmp_path
):
    # given
    client, url = clients[interface]
    before = Snapshot.take(tmp_path)

    # when
    response = send(client, url, content=case.content, file_name=case.file_name)

    # then every value is kept, and the header is clean (no byte-order mark in the first name)
    dataset = created_dataset(interface, response, before)
    assert (dataset.status, dataset.row_count) == ("ready", len(case.rows))
    assert dataset.column_names == case.header
    assert not any("\ufeff" in name for name in dataset.column_names)
    assert stored_cells(dataset.table.path) == case.rows

    # and the only new file is the table, inside private storage, under a generated name
    private = Path(settings.PRIVATE_STORAGE_ROOT).resolve()
    assert GENERATED_TABLE.fullmatch(dataset.table.name)
    assert files_under(tmp_path) - before.files == {Path(dataset.table.path)}
    assert Path(dataset.table.path).resolve().is_relative_to(private)

    # and the client's file name is kept nowhere and shown nowhere
    assert dataset.name == "Hostile"
    row = json.dumps(Dataset.objects.filter(pk=dataset.pk).values().get(), default=str)
    events = json.dumps(list(AuditEvent.objects.values_list("details", flat=True)))
    page = dataset_as_shown(client, interface, dataset)
    for text in (row, events, response.content.decode(), page):
        assert NAME_MARK not in text


def dataset_as_shown(client, interface: str, dataset: Dataset) -> str:
    """The dataset as its curator sees it: the API's detail, or the dataset page."""
    path = f"/api/v1/datasets/{dataset.pk}/" if interface == "api" else f"/datasets/{dataset.pk}/"
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode()


HOSTILE_DISPLAY_NAME = '../../etc/passwd <script>alert("x")</script> C:\\Windows'


@pytest.mark.parametrize("interface", INTERFACES)
def test_a_display_name_that_looks_like_a_path_or_markup_is_only_a_label(
    interface, clients, page_client, existing, tmp_path
):
    # given
    client, url = clients[interface]
    before = Snapshot.take(tmp_path)

    # when
    response = send(client, url, content=PLAIN_CSV, name=HOSTILE_DISPLAY_NAME)

    # then it is kept as typed, decides no path, and is shown as text, never as markup
    dataset = created_dataset(interface, response, before)
    assert dataset.name == HOSTILE_DISPLAY_NAME
    assert files_under(tmp_path) - before.files == {Path(dataset.table.path)}
    assert GENERATED_TABLE.fullmatch(dataset.table.name)
    page = page_client.get(f"/datasets/{dataset.pk}/").content.decode()
    assert html.escape(HOSTILE_DISPLAY_NAME) in page
    assert "<script>alert" not in page


def test_formula_payloads_uploaded_as_data_are_defused_in_the_published_csv(
    curator_client, page_client, django_capture_on_commit_callbacks
):
    # given the formula corpus file uploaded through the page, its payloads declared as the
    # categories of a public column (the only way a cell's text reaches a published file)
    response = send(page_client, PAGE_URL, content=FORMULA_CSV)
    assert response.status_code == 302
    dataset = Dataset.objects.get(name="Hostile")
    categories = [value.strip() for value in FORMULAS]
    schema = curator_client.put(
        f"/api/v1/datasets/{dataset.pk}/schema/",
        {"columns": {"payload": {"kind": "categorical", "categories": categories}}},
        format="json",
    )
    assert schema.status_code == 200, schema.json()

    # when a histogram of them is published
    release = publish_through_api(
        curator_client,
        django_capture_on_commit_callbacks,
        {
            "dataset": dataset.pk,
            "title": "Payloads",
            "definition": {"kind": "pure_dp", "epsilon": 0.5},
            "queries": [{"kind": "histogram", "column": "payload"}],
        },
    )

    # then every category cell starts with the escape, and stripping it gives the value back
    record = ReleaseFile.objects.get(release=release, format="csv")
    with record.file.open("rb") as handle:
        text = handle.read().decode()
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [row["category"] for row in rows] == ["'" + value for value in categories]
    for row in rows:
        for value in row.values():
            assert not value.startswith(FORMULA_TRIGGERS), row


# --- the worker path: files above DATASET_CONVERT_INLINE_BYTES --------------------------------

WORKER_CASES = [
    pytest.param(
        lambda: codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"), UTF16, id="utf-16-with-bom"
    ),
    pytest.param(
        lambda: f"name,age,sex\nAnn,34,F\n{SECRET},51,M,{SECRET}\n".encode(),
        "Row 3 has 4 fields but the header has 3.",
        id="ragged-too-many-fields",
    ),
    pytest.param(
        lambda: ONE_MEBIBYTE_OF_ROWS.encode() + f'Ann,"{SECRET}\nBob,1\n'.encode(),
        f"Row {ROWS_IN_A_MEBIBYTE + 2} opens a quoted value that is never closed: the file "
        "ends inside it (a quote character is missing, or the file was cut short).",
        id="quote-never-closed-after-1-mib",
    ),
    pytest.param(nul_after_a_mebibyte, BINARY, id="nul-byte-after-1-mib-of-rows"),
    pytest.param(invalid_utf8_after_a_mebibyte, NOT_UTF8, id="invalid-utf-8-after-1-mib-of-rows"),
    pytest.param(
        ten_thousand_columns,
        "The table has 10000 columns; at most {DATASET_MAX_COLUMNS} are allowed.",
        id="ten-thousand-columns",
    ),
    pytest.param(
        one_line_of_twenty_mebibytes,
        "Line 1 is longer than 8,388,608 characters.",
        id="one-20-mib-line-without-newline",
    ),
    pytest.param(zip_archive, BINARY, id="zip-as-csv"),
]


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize(("content", "reason"), WORKER_CASES)
def test_a_hostile_file_converted_by_the_worker_ends_failed_naming_the_problem(
    content,
    reason,
    interface,
    clients,
    existing,
    settings,
    tmp_path,
    django_capture_on_commit_callbacks,
):
    # given every upload is large: it is answered at once and converted by the worker's task
    settings.DATASET_CONVERT_INLINE_BYTES = 0
    reason = reason.format(DATASET_MAX_COLUMNS=settings.DATASET_MAX_COLUMNS)
    client, url = clients[interface]
    before = Snapshot.take(tmp_path)

    # when (the task runs once the upload's transaction commits)
    with django_capture_on_commit_callbacks(execute=True):
        response = send(client, url, content=content())

    # then the dataset is failed, saying why, and neither the upload nor a table is kept
    dataset = created_dataset(interface, response, before)
    assert (dataset.status, dataset.failure_reason) == ("failed", reason)
    assert (dataset.file.name, dataset.table.name, dataset.row_count) == ("", "", None)
    assert files_under(tmp_path) == before.files
    shown = dataset_as_shown(client, interface, dataset)
    assert (html.escape(reason) if interface == "page" else json.dumps(reason)[1:-1]) in shown
    assert SECRET not in shown
    assert SECRET not in response.content.decode()
    event = AuditEvent.objects.get(action="dataset.conversion_failed")
    assert event.details == {"reason": reason}


# --- a real worker killed mid-conversion, out of attempts --------------------------------------

BIG_ROWS = 1_000_000


@pytest.fixture
def one_attempt_stack(tmp_path, stacks) -> Iterator[Stack]:
    env = sqlite_env(tmp_path)
    env.update(
        {
            "DATASET_CONVERT_INLINE_BYTES": "1000",
            "RELEASE_HEARTBEAT_SECONDS": "0.5",
            "RELEASE_STALE_SECONDS": "3",
            # The killed attempt is the only one allowed: the upload must end failed, cleanly.
            "RELEASE_MAX_DELIVERIES": "1",
        }
    )
    yield from start_stack(env, tmp_path, stacks)


@pytest.mark.worker
def test_a_worker_killed_mid_conversion_with_no_attempt_left_ends_failed_leaving_no_file(
    one_attempt_stack,
):
    # given a large upload a real worker has started converting
    stack = one_attempt_stack
    curator = api_token(stack, "e2e-curator")
    table = "patient,age,sex\n" + "".join(
        f"P{i:07d},{(i * 37) % 90 + 5},{'F' if i % 3 else 'M'}\n" for i in range(BIG_ROWS)
    )
    created = requests.post(
        f"{stack.base_url}/api/v1/datasets/",
        headers=curator,
        data={"name": "register", "budget_epsilon": "1"},
        files={"file": ("register.csv", table.encode(), "text/csv")},
        timeout=60,
    )
    assert created.status_code == 201, created.text
    detail_url = f"{stack.base_url}/api/v1/datasets/{created.json()['id']}/"
    deadline = time.monotonic() + 60
    while True:
        detail = requests.get(detail_url, headers=curator, timeout=10).json()
        if detail["status"] == "processing" and detail["progress"] > 0:
            break
        assert detail["status"] == "processing", "converted before the kill: use a larger table"
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(0.05)

    # when that worker is killed (SIGKILL) and another starts
    kill(stack.worker)
    stack.start_worker("worker-2")
    deadline = time.monotonic() + 90
    while (detail := requests.get(detail_url, headers=curator, timeout=10).json())[
        "status"
    ] == "processing":
        assert time.monotonic() < deadline, f"conversion stuck\n{stack.logs()}"
        time.sleep(0.3)

    # then the new worker's reaper failed it, saying why, and the upload and the killed
    # attempt's partial table are both gone
    assert detail["status"] == "failed"
    assert detail["failure_reason"] == (
        "The worker converting this table stopped before finishing, once (killed or out of "
        "memory); it is not tried again."
    )
    assert detail["row_count"] is None
    private = Path(stack.env["VAR_DIR"]) / "private"
    assert [p for p in private.rglob("*") if p.is_file()] == []


def test_a_request_django_refuses_outright_gets_a_page_that_says_so(curator):
    from django.test import Client

    client = Client()
    client.force_login(curator)
    name = "n" * 2000 + ".csv"
    body = (
        b'--B\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n'
        b'--B\r\nContent-Disposition: form-data; name="file"; filename="'
        + name.encode()
        + b'"\r\nContent-Type: text/csv\r\n\r\na,b\n1,2\n\r\n--B--\r\n'
    )

    response = client.post("/datasets/new/", body, content_type="multipart/form-data; boundary=B")

    assert response.status_code == 400
    assert "This request could not be read" in response.content.decode()
