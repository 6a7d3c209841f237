"""Parsing is per record: the dialect is detected once at upload and stored, every later read uses
it, and the reader either returns a table or refuses with a TableError, for any bytes."""

import contextlib
import csv
import io
import string
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from releases.models import Dataset
from releases.services import tables
from releases.services.suggestions import dataset_schema_suggest
from releases.services.tables import TableError, table_convert
from tests.conftest import csv_upload, stored_cells

COMMA = {
    "delimiter": ",",
    "quotechar": '"',
    "doublequote": True,
    "escapechar": None,
    "skipinitialspace": False,
}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass(frozen=True)
class Parsed:
    frame: pd.DataFrame
    columns: list[dict[str, str]]
    dialect: dict


def table_parse(raw: bytes, *, dialect=None, max_columns=None) -> Parsed:
    """Convert ``raw`` as an upload is converted, and read the stored text cells back."""
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder, "t.csv"), Path(folder, "t.parquet")
        source.write_bytes(raw)
        try:
            converted = table_convert(source, target, dialect=dialect, max_columns=max_columns)
        except TableError:
            assert not target.exists()
            raise
        header = [column["name"] for column in converted.columns]
        frame = pd.DataFrame(stored_cells(str(target)), columns=header, dtype=str)
        return Parsed(frame=frame, columns=converted.columns, dialect=converted.dialect)


def table_load(path: str, *, dialect=None) -> pd.DataFrame:
    with open(path, "rb") as handle:
        return table_parse(handle.read(), dialect=dialect or None).frame


def cells(parsed) -> list[list[str]]:
    return parsed.frame.to_numpy().tolist()


# --- the dialect, detected once and stored -----------------------------------------------------


@pytest.mark.parametrize(
    ("content", "dialect"),
    [
        pytest.param(b"name,age\nAnn,34\nBob,51\n", COMMA, id="comma"),
        pytest.param(b"name;age\nAnn;34\nBob;51\n", {**COMMA, "delimiter": ";"}, id="semicolon"),
        pytest.param(b"name\tage\nAnn\t34\nBob\t51\n", {**COMMA, "delimiter": "\t"}, id="tab"),
    ],
)
def test_upload_stores_the_detected_dialect(curator_client, content, dialect):
    # when
    response = curator_client.post(
        "/api/v1/datasets/",
        {"name": "T", "budget_epsilon": "1", "file": csv_upload(content)},
        format="multipart",
    )

    # then
    assert response.status_code == 201
    assert Dataset.objects.get().csv_dialect == dialect


def test_a_doubled_quote_after_the_detection_sample_reads_as_one_quote():
    # given 6 KiB of unquoted rows (the detector sees no quote), then a quoted field with a
    # doubled quote inside
    raw = b"name,note\n" + b"Ann,plain\n" * 600 + b'Bob,"say ""hi"""\n'
    assert len(raw) > 4096

    # when
    parsed = table_parse(raw)

    # then
    assert parsed.dialect["doublequote"] is True
    assert cells(parsed)[-1] == ["Bob", 'say "hi"']


def test_later_reads_use_the_stored_dialect_and_never_detect_again(
    curator, monkeypatch, curator_client
):
    # given a stored semicolon table
    content = b"name;age;sex\nAnn;34;F\nBob;51;M\nCid;29;M\n"
    curator_client.post(
        "/api/v1/datasets/",
        {"name": "T", "budget_epsilon": "1", "file": csv_upload(content)},
        format="multipart",
    )
    dataset = Dataset.objects.get()

    def no_detection(text):
        raise AssertionError("a later read detected the dialect again")

    monkeypatch.setattr(tables, "table_dialect_detect", no_detection)

    # when
    suggestion = dataset_schema_suggest(dataset=dataset, user=curator)

    # then the stored columns hold the semicolon table's cells
    assert stored_cells(dataset.table.path) == [
        ["Ann", "34", "F"],
        ["Bob", "51", "M"],
        ["Cid", "29", "M"],
    ]
    assert suggestion["age"] == {"kind": "numeric", "lower": 29.0, "upper": 51.0}


def test_table_load_honours_the_dialect_it_is_given(tmp_path):
    # given a semicolon file and a stored comma dialect
    path = tmp_path / "t.csv"
    path.write_bytes(b"name;age\nAnn;34\n")

    # when
    frame = table_load(str(path), dialect=COMMA)

    # then it is read with commas: one column, not a detected semicolon table
    assert list(frame.columns) == ["name;age"]


def test_a_dataset_stored_without_a_dialect_is_detected_as_before(tmp_path):
    # given an old row's empty csv_dialect
    path = tmp_path / "t.csv"
    path.write_bytes(b"name;age\nAnn;34\n")

    # when
    frame = table_load(str(path), dialect={})

    # then
    assert frame.to_numpy().tolist() == [["Ann", "34"]]


# --- line endings, blank lines, NUL -----------------------------------------------------------


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_every_line_ending_reads_the_same_records(ending):
    # given
    raw = ending.join(["name,age", "Ann,34", '"Bob, Jr",51', ""]).encode()

    # when
    parsed = table_parse(raw)

    # then
    assert cells(parsed) == [["Ann", "34"], ["Bob, Jr", "51"]]


def test_a_line_break_inside_quotes_stays_in_the_field():
    # when
    parsed = table_parse(b'name,note\nAnn,"two\r\nlines"\nBob,"cr\ronly"\n')

    # then
    assert cells(parsed) == [["Ann", "two\r\nlines"], ["Bob", "cr\ronly"]]


def test_a_line_of_empty_fields_is_a_record_with_every_value_missing():
    # when
    parsed = table_parse(b"name,age\nAnn,34\n,\nBob,51\n")

    # then
    assert cells(parsed) == [["Ann", "34"], ["", ""], ["Bob", "51"]]


def test_blank_lines_at_the_end_are_ignored_and_inside_are_refused_naming_the_row():
    # given
    trailing = b"name,age\nAnn,34\nBob,51\n\n   \r\n\n"
    inside = b"name,age\r\nAnn,34\r\n   \r\nBob,51\r\n"

    # when
    parsed = table_parse(trailing)
    with pytest.raises(TableError) as refused:
        table_parse(inside)

    # then
    assert cells(parsed) == [["Ann", "34"], ["Bob", "51"]]
    assert str(refused.value) == (
        "Row 3 is blank: remove blank lines inside the table (blank lines at the end of the "
        "file are ignored)."
    )


def test_a_nul_byte_anywhere_is_refused():
    # given a NUL 100 KiB into the file
    raw = b"name,age\n" + b"Ann,34\n" * 15_000 + b"Bob,5\x001\n"

    # when
    with pytest.raises(TableError) as refused:
        table_parse(raw)

    # then
    assert str(refused.value) == "This does not look like a CSV file (it contains binary data)."


# --- properties -------------------------------------------------------------------------------

FUZZ_ALPHABET = st.sampled_from(
    [",", ";", "\t", '"', "'", "\r", "\n", " ", "a", "1", "-", ".", "e", "\x00", "é", "\ufeff"]
)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.lists(FUZZ_ALPHABET, max_size=200).map(lambda chars: "".join(chars).encode()),
    )
)
def test_any_bytes_give_a_table_or_a_table_error_and_reread_identically(raw):
    # when
    try:
        parsed = table_parse(raw)
    except TableError:
        return

    # then a later read with the stored dialect gives the same table
    again = table_parse(raw, dialect=parsed.dialect)
    pd.testing.assert_frame_equal(again.frame, parsed.frame)
    assert again.columns == parsed.columns


CELL_CHARACTERS = string.ascii_letters[:6] + string.digits[:4] + " ,;\t\"'-."


@st.composite
def written_tables(draw):
    """A table written by the csv module with a generated dialect, and that dialect."""
    delimiter = draw(st.sampled_from([",", ";", "\t"]))
    quotechar = draw(st.sampled_from(['"', "'"]))
    line_end = draw(st.sampled_from(["\r\n", "\n", "\r"]))
    skipinitialspace = draw(st.booleans())
    # The writer quotes a field holding a line-break character only if that character is in
    # its line terminator, so line breaks inside cells are drawn only with CRLF.
    alphabet = CELL_CHARACTERS + ("\r\n" if line_end == "\r\n" else "")
    width = draw(st.integers(min_value=2, max_value=4))
    header = draw(
        st.lists(
            st.text(string.ascii_lowercase, min_size=1, max_size=5),
            min_size=width,
            max_size=width,
            unique=True,
        )
    )
    cell = st.text(alphabet, max_size=6)
    if skipinitialspace:
        # A reader that skips spaces after a delimiter cannot give them back.
        cell = cell.map(lambda text: text.lstrip(" "))
    rows = draw(st.lists(st.lists(cell, min_size=width, max_size=width), min_size=1, max_size=6))
    dialect = {
        "delimiter": delimiter,
        "quotechar": quotechar,
        "doublequote": True,
        "escapechar": None,
        "skipinitialspace": skipinitialspace,
    }
    out = io.StringIO(newline="")
    writer = csv.writer(
        out, delimiter=delimiter, quotechar=quotechar, doublequote=True, lineterminator=line_end
    )
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode(), dialect, header, rows


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(written_tables())
def test_a_table_written_with_a_dialect_reads_back_the_same_cells_with_it(table):
    # given
    raw, dialect, header, rows = table

    # when
    parsed = table_parse(raw, dialect=dialect)

    # then the same cells, as stored: without surrounding whitespace, which no kind reads
    assert list(parsed.frame.columns) == header
    assert cells(parsed) == [[cell.strip() for cell in row] for row in rows]
    assert parsed.dialect == dialect


# --- the fast parser reads exactly what the csv module reads ------------------------------------


def converted(raw: bytes, *, fast: bool, dialect=None):
    """What converting ``raw`` gives: the stored cells, columns and dialect, or the refusal."""
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder, "t.csv"), Path(folder, "t.parquet")
        source.write_bytes(raw)
        try:
            result = table_convert(source, target, dialect=dialect, fast=fast)
        except TableError as error:
            return ("refused", str(error))
        return (stored_cells(str(target)), result.columns, result.dialect)


FAST_ALPHABET = st.sampled_from(
    [",", ";", '"', "'", "\r", "\n", "\r\n", " ", "a", "1", "-", ".", "é", "\ufeff", "\t", "\x1c"]
)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(FAST_ALPHABET, max_size=120).map(lambda parts: ("a,b\n" + "".join(parts)).encode()),
)
def test_the_fast_parser_and_the_csv_module_give_the_same_table_or_refusal(raw):
    assert converted(raw, fast=True) == converted(raw, fast=False)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(written_tables())
def test_the_fast_parser_reads_written_tables_as_the_csv_module_does(table):
    raw, dialect, _, _ = table
    assert converted(raw, fast=True, dialect=dialect) == converted(raw, fast=False, dialect=dialect)


def test_a_large_clean_table_is_read_by_the_fast_parser(monkeypatch):
    # given a table with quoted fields and no empty line
    raw = b"name,note\n" + b"".join(b'P%d,"a, b ""%d"""\n' % (i, i) for i in range(50_000))
    calls = []
    real = tables._fast_batches

    def counting(*args, **kwargs):
        calls.append(1)
        yield from real(*args, **kwargs)

    monkeypatch.setattr(tables, "_fast_batches", counting)

    # when
    fast = converted(raw, fast=True)

    # then the fast parser was used, and gave what the csv module gives
    assert calls == [1]
    assert fast == converted(raw, fast=False)
    assert fast[0][1] == ["P1", 'a, b "1"']


def test_a_fast_parser_that_misreads_quotes_is_caught(monkeypatch):
    # given a fast parser that keeps quotes doubled (a deliberately broken one)
    real = tables._fast_batches

    def doubled(*args, **kwargs):
        for columns in real(*args, **kwargs):
            yield [pc.replace_substring(column, '"', '""') for column in columns]

    monkeypatch.setattr(tables, "_fast_batches", doubled)
    raw = b'a,b\n"x ""y""",2\n'

    # when / then the comparison above would fail
    assert converted(raw, fast=True) != converted(raw, fast=False)


# --- bounds on what one line or one name may hold (found by review) ------------------------


@pytest.mark.parametrize("ending", [b"", b"\n\n"], ids=["fast", "csv-module"])
def test_a_line_of_millions_of_delimiters_is_refused_before_it_is_held(ending):
    # given a body row of ten million commas (before: about 7× the file in memory)
    raw = b"a,b\n1,2\n" + b"," * 10_000_000 + b"\n3,4\n" + ending

    # when
    result = converted(raw, fast=True)

    # then
    assert result == ("refused", "Line 3 is longer than 8,388,608 characters.")


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (b'"a\nFORGED",b', "The name of column 1 holds control or invisible characters."),
        ("a,\u202eevil".encode(), "The name of column 2 holds control or invisible characters."),
        ("\ufeff\ufeffa,b".encode(), "The name of column 1 holds control or invisible characters."),
        (b"a," + b"n" * 201, "The name of column 2 is longer than 200 characters."),
    ],
)
def test_column_names_that_would_forge_or_flood_pages_are_refused(header, message):
    assert converted(header + b"\n1,2\n", fast=True) == ("refused", message)


# --- the byte check and the kinds, read in pieces, are what the whole file gives -----------------


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"\n", b"\r", b"\r\n", b"a", b",", b" ", b";", b"\t", b"\x0b"]),
        max_size=40,
    ).map(b"".join),
    st.sampled_from([1, 2, 3, 5, 8, 1 << 20]),
)
def test_the_byte_check_read_in_chunks_finds_what_the_whole_file_holds(raw, chunk_bytes):
    # given
    handle = io.BufferedReader(io.BytesIO(raw))

    # when
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tables, "CHUNK_BYTES", chunk_bytes)
        try:
            facts = tables._check_bytes(handle)
        except TableError as error:
            facts = str(error)

    # then
    if not raw.strip():
        assert facts == "The file is empty."
    else:
        assert facts == tables._ByteFacts(
            delimited=any(d.encode() in raw for d in tables.DELIMITERS),
            empty_line=any(mark in raw for mark in (b"\n\n", b"\n\r", b"\r\r")),
        )
        assert handle.tell() == 0


def whole_column_kind(values: list[str]) -> str:
    """The kind the inference rules give a column read whole (the reference)."""
    present = [value.strip() for value in values if value.strip()]
    if not present:
        return "identifier"
    numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
    if all(not pd.isna(n) for n, v in zip(numbers, values, strict=True) if v.strip()):
        return "numeric"
    distinct = len(set(present))
    if distinct <= tables.MAX_INFERRED_CATEGORIES and distinct < len(present):
        return "categorical"
    return "identifier" if distinct == len(present) else "text"


@st.composite
def kind_columns(draw) -> list[str]:
    """A column of few values, or of identifiers, unique or with a repeat somewhere."""
    size = draw(st.integers(1, 120))
    if draw(st.booleans()):
        cell = st.sampled_from(["", " ", "x", "1", "2.5", "n/a"]) | st.integers(0, 40).map(str)
        return draw(st.lists(cell, min_size=size, max_size=size))
    values = [f"P{index}" for index in range(size)]
    if draw(st.booleans()):
        values[draw(st.integers(0, size - 1))] = draw(st.sampled_from(["", "P0", "P1"]))
    return values


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.tuples(kind_columns(), kind_columns()),
    st.sampled_from([1, 7, 50]),
    st.sampled_from([1, 40, 1_000_000]),
    st.booleans(),
)
def test_kinds_inferred_batch_by_batch_are_the_kinds_of_whole_columns(
    columns, batch_rows, repeat_check_values, fast
):
    # given a table read in batches of batch_rows (the csv module) or whole (the fast parser),
    # with repeats looked for in the first repeat_check_values values only
    size = min(map(len, columns))
    columns = [column[:size] for column in columns]
    raw = ("a,b\n" + "".join(f"{a},{b}\n" for a, b in zip(*columns, strict=True))).encode()

    # when
    with (
        pytest.MonkeyPatch.context() as patch,
        tempfile.TemporaryDirectory() as folder,
    ):
        patch.setattr(tables, "REPEAT_CHECK_VALUES", repeat_check_values)
        source = Path(folder, "t.csv")
        source.write_bytes(raw)
        result = table_convert(source, Path(folder, "t.parquet"), batch_rows=batch_rows, fast=fast)

    # then
    assert [column["inferred_kind"] for column in result.columns] == [
        whole_column_kind(column) for column in columns
    ]


def test_batches_read_ahead_come_in_order_and_the_reader_s_error_is_raised():
    # given
    def batches():
        yield 1
        yield 2
        raise tables._NotFast

    seen = []

    def consume() -> None:
        seen.extend(tables._read_ahead(batches()))

    # when / then
    with pytest.raises(tables._NotFast):
        consume()
    assert seen == [1, 2]


def test_batches_read_ahead_and_left_early_close_their_reader():
    # given
    closed = []

    def batches():
        try:
            yield from range(10)
        finally:
            closed.append(True)

    # when
    with contextlib.closing(tables._read_ahead(batches())) as ahead:
        first = next(ahead)

    # then
    assert (first, closed) == (0, [True])
