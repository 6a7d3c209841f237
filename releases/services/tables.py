"""Reading uploaded tables: strict CSV checks with messages that never quote a value."""

import csv
import io
from dataclasses import dataclass

import pandas as pd

# A column with at most this many distinct values (and repeats) is offered as categorical.
MAX_INFERRED_CATEGORIES = 30


class TableError(ValueError):
    """The upload is not a table this product can read; the message is safe to show."""


@dataclass(frozen=True)
class ParsedTable:
    frame: pd.DataFrame
    columns: list[dict[str, str]]


def _decode(raw: bytes) -> str:
    if not raw.strip():
        raise TableError("The file is empty.")
    if b"\x00" in raw[:8192]:
        raise TableError("This does not look like a CSV file (it contains binary data).")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TableError("The file is not valid UTF-8 text; save it as UTF-8 CSV.") from None


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


def table_parse(raw: bytes) -> ParsedTable:
    """Parse a CSV upload. Refuses empty, binary, non-UTF-8, header-only, ragged and
    duplicate-header input with a message naming rows or columns, never cell contents."""
    text = _decode(raw)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = list(csv.reader(io.StringIO(text), dialect))
    except csv.Error:
        raise TableError("The file is not valid CSV.") from None
    rows = [row for row in rows if row and any(cell.strip() for cell in row)]
    if not rows:
        raise TableError("The file is empty.")
    header = [name.strip() for name in rows[0]]
    if any(not name for name in header):
        raise TableError("Every column needs a name in the first row.")
    if len(set(header)) != len(header):
        raise TableError("Column names in the first row must be distinct.")
    if len(header) < 2 and "," not in text and ";" not in text and "\t" not in text:
        raise TableError("This does not look like a CSV file: no delimiter was found.")
    body = rows[1:]
    if not body:
        raise TableError("The file has a header but no rows.")
    for number, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise TableError(
                f"Row {number} has {len(row)} fields but the header has {len(header)}."
            )
    frame = pd.DataFrame(body, columns=header, dtype=str)
    columns = [{"name": name, "inferred_kind": _infer_kind(frame[name])} for name in header]
    return ParsedTable(frame=frame, columns=columns)


def table_load(path: str) -> pd.DataFrame:
    """Load a stored upload (already validated) as strings; the engine converts by schema."""
    with open(path, "rb") as handle:
        return table_parse(handle.read()).frame
