"""Reading uploaded tables: strict CSV checks with messages that never quote a value.

The rules every read follows (README repeats them):

- UTF-8 text (a byte-order mark is ignored); a NUL byte anywhere refuses the file.
- Lines end in LF, CRLF or a lone CR (classic Mac); all three end a record outside quotes.
- The CSV dialect (delimiter among comma, semicolon and tab; quote character; initial spaces) is
  detected once, at upload, and stored with the dataset. Every later read passes the stored
  dialect back, so each record parses the same way every time. Quotes inside quoted fields are
  doubled (RFC 4180).
- The first line is the header. A blank line inside the table is refused, naming its row; blank
  lines at the end of the file are ignored. A line whose fields are all empty (``,,``) is not
  blank: it is a record whose values are all missing.
"""

import csv
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

# A column with at most this many distinct values (and repeats) is offered as categorical.
MAX_INFERRED_CATEGORIES = 30
DELIMITERS = ",;\t"
QUOTE_CHARACTERS = "\"'"
# Enough lines to see the delimiter and quoting, but a fixed amount: detection reads the same
# prefix of the same bytes every time.
DIALECT_SAMPLE_CHARACTERS = 4096


class TableError(ValueError):
    """The upload is not a table this product can read; the message is safe to show."""


@dataclass(frozen=True)
class ParsedTable:
    frame: pd.DataFrame
    columns: list[dict[str, str]]
    # The dialect the table was read with, as stored in Dataset.csv_dialect.
    dialect: dict[str, Any]


def _decode(raw: bytes) -> str:
    if not raw.strip():
        raise TableError("The file is empty.")
    # Anywhere, not only near the start: a NUL later in the file would otherwise be read (or
    # crash a database) long after the upload was accepted.
    if b"\x00" in raw:
        raise TableError("This does not look like a CSV file (it contains binary data).")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TableError("The file is not valid UTF-8 text; save it as UTF-8 CSV.") from None


def table_dialect_detect(text: str) -> dict[str, Any]:
    """The dialect of ``text``, from its first lines, as plain JSON to store with the dataset.

    Only the delimiter, the quote character and initial spaces are guessed; quotes are always
    doubled and never escaped (RFC 4180), because a guess from the first lines alone ("no doubled
    quote seen yet") would read a later record differently.
    """
    sample = text[:DIALECT_SAMPLE_CHARACTERS].replace("\r\n", "\n").replace("\r", "\n")
    try:
        sniffed = csv.Sniffer().sniff(sample, delimiters=DELIMITERS)
        delimiter, quotechar = sniffed.delimiter, sniffed.quotechar
        skipinitialspace = bool(sniffed.skipinitialspace)
    except csv.Error:
        delimiter, quotechar, skipinitialspace = ",", '"', False
    if delimiter not in DELIMITERS or quotechar not in QUOTE_CHARACTERS:
        delimiter, quotechar, skipinitialspace = ",", '"', False
    return {
        "delimiter": delimiter,
        "quotechar": quotechar,
        "doublequote": True,
        "escapechar": None,
        "skipinitialspace": skipinitialspace,
    }


def _reader_options(dialect: Mapping[str, Any]) -> dict[str, Any]:
    """csv.reader keyword arguments from a stored dialect."""
    options = {
        "delimiter": dialect.get("delimiter", ","),
        "quotechar": dialect.get("quotechar", '"'),
        "doublequote": bool(dialect.get("doublequote", True)),
        "escapechar": dialect.get("escapechar") or None,
        "skipinitialspace": bool(dialect.get("skipinitialspace", False)),
    }
    for key in ("delimiter", "quotechar", "escapechar"):
        value = options[key]
        if value is not None and (not isinstance(value, str) or len(value) != 1):
            raise TableError("The stored CSV dialect of this dataset is not valid.")
    return options


def _is_blank(row: list[str]) -> bool:
    """An empty line, or one holding only spaces (one field of whitespace)."""
    return not row or (len(row) == 1 and not row[0].strip())


def _records(text: str, options: dict[str, Any]) -> Iterator[list[str]]:
    # newline="" hands line ends to the csv module, which ends a record at LF, CRLF or CR alike
    # and keeps line breaks inside quoted fields.
    reader = csv.reader(io.StringIO(text, newline=""), **options)
    try:
        yield from reader
    except csv.Error:
        raise TableError("The file is not valid CSV.") from None


def _infer_kind(series: pd.Series) -> str:
    present = series[series.str.strip() != ""]
    if present.empty:
        return "identifier"
    numeric = pd.to_numeric(present, errors="coerce")
    if numeric.notna().all():
        return "numeric"
    distinct = present.nunique()
    if distinct <= MAX_INFERRED_CATEGORIES and distinct < len(present):
        return "categorical"
    if distinct == len(present):
        return "identifier"
    return "text"


def table_parse(
    raw: bytes,
    *,
    dialect: Mapping[str, Any] | None = None,
    max_columns: int | None = None,
) -> ParsedTable:
    """Parse a CSV upload with ``dialect`` (a stored one), or detect it when none is given.

    Refuses empty, binary (a NUL anywhere), non-UTF-8, header-only, ragged, blank-line and
    duplicate-header input, and a header of more than ``max_columns`` names, with a message
    naming rows or columns, never cell contents. Raises only :class:`TableError`.
    """
    text = _decode(raw)
    detected = dict(dialect) if dialect else table_dialect_detect(text)
    records = _records(text, _reader_options(detected))
    header_row = next(records, [])
    if _is_blank(header_row):
        if not any(not _is_blank(row) for row in records):
            raise TableError("The file is empty.")
        raise TableError(
            "Row 1 is blank: the first line must be the header. Remove blank lines inside the "
            "table (blank lines at the end of the file are ignored)."
        )
    header = [name.strip() for name in header_row]
    if max_columns is not None and len(header) > max_columns:
        raise TableError(f"The table has {len(header)} columns; at most {max_columns} are allowed.")
    if any(not name for name in header):
        raise TableError("Every column needs a name in the first row.")
    if len(set(header)) != len(header):
        raise TableError("Column names in the first row must be distinct.")
    if len(header) < 2 and not any(delimiter in text for delimiter in DELIMITERS):
        raise TableError("This does not look like a CSV file: no delimiter was found.")
    body: list[list[str]] = []
    first_blank: int | None = None
    for number, row in enumerate(records, start=2):
        if _is_blank(row):
            first_blank = first_blank or number
            continue
        if first_blank is not None:
            raise TableError(
                f"Row {first_blank} is blank: remove blank lines inside the table (blank lines "
                "at the end of the file are ignored)."
            )
        if len(row) != len(header):
            raise TableError(
                f"Row {number} has {len(row)} fields but the header has {len(header)}."
            )
        body.append(row)
    if not body:
        raise TableError("The file has a header but no rows.")
    frame = pd.DataFrame(body, columns=header, dtype=str)
    columns = [{"name": name, "inferred_kind": _infer_kind(frame[name])} for name in header]
    return ParsedTable(frame=frame, columns=columns, dialect=detected)


def table_load(path: str, *, dialect: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Load a stored upload (already validated) as strings; the engine converts by schema.

    Pass the dataset's stored ``csv_dialect`` so the table reads exactly as it did at upload;
    an empty or missing one (datasets stored before dialects were) is detected again.
    """
    with open(path, "rb") as handle:
        return table_parse(handle.read(), dialect=dialect or None).frame
