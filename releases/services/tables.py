"""Reading uploaded tables: strict CSV checks with messages that never quote a value.

The rules every read follows (README repeats them):

- UTF-8 text (a byte-order mark is ignored); UTF-16 and UTF-32 text are refused naming their
  encoding; a NUL byte anywhere refuses the file.
- Lines end in LF, CRLF or a lone CR (classic Mac); all three end a record outside quotes.
- The CSV dialect (delimiter among comma, semicolon and tab; quote character; initial spaces) is
  detected once, at upload, and stored with the dataset. Every later read passes the stored
  dialect back, so each record parses the same way every time. Quotes inside quoted fields are
  doubled (RFC 4180), and a quoted field must close before the file ends (else it would hold
  every later row).
- The first line is the header. A blank line inside the table is refused, naming its row; blank
  lines at the end of the file are ignored. A line whose fields are all empty (``,,``) is not
  blank: it is a record whose values are all missing.
"""

import codecs
import contextlib
import csv
import dataclasses
import functools
import gc
import io
import itertools
import os
import tempfile
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from privacy_engine.columnar import ColumnarWriter, text_field
from privacy_engine.wording import gettext_noop, phrase

# A column with at most this many distinct values (and repeats) is offered as categorical.
MAX_INFERRED_CATEGORIES = 30
# Present values of a column searched for a repeat batch by batch (a repeat spares counting its
# distinct values in the finished file); a column of unique values costs no more beyond them.
REPEAT_CHECK_VALUES = 1_000_000
DELIMITERS = ",;\t"
QUOTE_CHARACTERS = "\"'"
# Enough lines to see the delimiter and quoting, but a fixed amount: detection reads the same
# prefix of the same bytes every time.
DIALECT_SAMPLE_CHARACTERS = 4096
# Bytes per read when checking a file, rows per batch when converting it: memory stays bounded
# whatever the file's size.
CHUNK_BYTES = 1 << 20
BATCH_ROWS = 100_000
INITIAL_BATCH_ROWS = 256
BATCH_CHARACTERS = 32 << 20
# The longest physical line read (a record of 200 columns of 40,000 characters fits), and the
# longest column name.
LINE_CHARACTERS = 8 << 20
MAX_COLUMN_NAME = 200
# Bytes per block of the fast parser (a record may not be longer).
FAST_BLOCK_BYTES = 4 << 20
# The first bytes searched for the NUL pattern of UTF-16 text without a byte-order mark.
WIDE_SAMPLE_BYTES = 1024


class TableError(ValueError):
    """The upload is not a table this product can read; the message is safe to show."""


# Why an upload cannot be read: a dataset's failure reason or the upload form's error, stored in
# English and translated where a page shows it (releases/refusals.py).
DIALECT_INVALID = gettext_noop("The stored CSV dialect of this dataset is not valid.")
WIDE_TEXT = gettext_noop(
    "The file is {encoding} text, not UTF-8; save it as UTF-8 CSV (in a spreadsheet: CSV UTF-8)."
)
BINARY = gettext_noop("This does not look like a CSV file (it contains binary data).")
EMPTY = gettext_noop("The file is empty.")
LINE_TOO_LONG = gettext_noop("Line {line} is longer than {count} characters.")
NAME_TOO_LONG = gettext_noop("is longer than {count} characters")
NAME_CONTROL = gettext_noop("holds control or invisible characters")
UNCLOSED_QUOTE = gettext_noop(
    "Row {row} opens a quoted value that is never closed: the file ends inside it (a quote "
    "character is missing, or the file was cut short)."
)
VALUE_TOO_LONG = gettext_noop("Row {row} has a value longer than {count} characters.")
NOT_CSV = gettext_noop("The file is not valid CSV.")
NOT_UTF8 = gettext_noop("The file is not valid UTF-8 text; save it as UTF-8 CSV.")
FIRST_ROW_BLANK = gettext_noop(
    "Row 1 is blank: the first line must be the header. Remove blank lines inside the table "
    "(blank lines at the end of the file are ignored)."
)
TOO_MANY_COLUMNS = gettext_noop("The table has {count} columns; at most {limit} are allowed.")
UNNAMED_COLUMN = gettext_noop("Every column needs a name in the first row.")
BAD_COLUMN_NAME = gettext_noop("The name of column {position} {problem}.")
DUPLICATE_NAMES = gettext_noop("Column names in the first row must be distinct.")
NO_DELIMITER = gettext_noop("This does not look like a CSV file: no delimiter was found.")
BLANK_ROW = gettext_noop(
    "Row {row} is blank: remove blank lines inside the table (blank lines at the end of the "
    "file are ignored)."
)
FIELD_COUNT = gettext_noop("Row {row} has {count} fields but the header has {width}.")
NO_ROWS = gettext_noop("The file has a header but no rows.")
NOT_CONVERTED = gettext_noop("The file could not be converted.")


@dataclass(frozen=True)
class ConvertedTable:
    columns: list[dict[str, str]]
    dialect: dict[str, Any]
    row_count: int


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


RFC_4180_DIALECT: dict[str, Any] = {
    "delimiter": ",",
    "quotechar": '"',
    "doublequote": True,
    "escapechar": None,
    "skipinitialspace": False,
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
            raise TableError(DIALECT_INVALID)
    return options


def _is_blank(row: list[str]) -> bool:
    """An empty line, or one holding only spaces (one field of whitespace)."""
    return not row or (len(row) == 1 and not row[0].strip())


# Two line ends in a row (LF LF, LF CR or CR CR; CRLF LF and CRLF CR contain one of them): an
# empty line somewhere, or a line break inside a quoted value.
_EMPTY_LINE_MARKS = (b"\n\n", b"\n\r", b"\r\r")
# The same pairs as little-endian 16-bit numbers, to look for them in one comparison per pair.
_EMPTY_LINE_PAIRS = np.array(
    [int.from_bytes(mark, "little") for mark in _EMPTY_LINE_MARKS], dtype="<u2"
)


def _has_empty_line_mark(buffer: bytearray, size: int) -> bool:
    """Whether the first ``size`` bytes of ``buffer`` hold one of _EMPTY_LINE_MARKS, compared as
    16-bit pairs starting at even and at odd positions (without a CR only LF LF can occur)."""
    marks = _EMPTY_LINE_PAIRS if buffer.find(b"\r", 0, size) >= 0 else _EMPTY_LINE_PAIRS[:1]
    for start in (0, 1):
        pairs = np.frombuffer(buffer, dtype="<u2", count=(size - start) // 2, offset=start)
        if any((pairs == mark).any() for mark in marks):
            return True
    return False


@dataclass(frozen=True)
class _ByteFacts:
    delimited: bool
    # Whether the bytes may hold an empty line: then only the csv module can tell blank lines
    # from records of empty fields, so the fast parser is not used.
    empty_line: bool


def _wide_encoding(head: bytes) -> str | None:
    """The wide encoding (UTF-16 or UTF-32) whose byte-order mark starts ``head``, or UTF-16
    when every other byte is NUL (what spreadsheets save as "Unicode text"); else None. Such a
    file is text in the wrong encoding, not binary data, and the message says so."""
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "UTF-32"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "UTF-16"
    sample = head[: len(head) & ~1]  # whole 16-bit units
    if len(sample) >= 4:
        even, odd = sample[0::2], sample[1::2]
        for zeros, text in ((odd, even), (even, odd)):
            if not zeros.strip(b"\x00") and b"\x00" not in text:
                return "UTF-16"
    return None


def _check_bytes(handle: BinaryIO) -> _ByteFacts:
    """Refuse an empty file, text in UTF-16 or UTF-32, or binary data (a NUL byte anywhere),
    reading in chunks; then rewind. Anywhere, not only near the start: a NUL later in the file
    would otherwise be read (or crash a database) long after the upload was accepted."""
    blank, delimited, empty_line = True, False, False
    # One buffer, read into again and again: no new chunk (and no page faults) per read.
    buffer = bytearray(CHUNK_BYTES)
    previous = b""  # the last byte of the previous chunk
    first = True
    while size := handle.readinto(buffer):
        if first and (encoding := _wide_encoding(bytes(buffer[: min(size, WIDE_SAMPLE_BYTES)]))):
            raise TableError(phrase(WIDE_TEXT, encoding=encoding))
        first = False
        if buffer.find(b"\x00", 0, size) >= 0:
            raise TableError(BINARY)
        blank = blank and not buffer[:size].strip()
        delimited = delimited or any(buffer.find(d.encode(), 0, size) >= 0 for d in DELIMITERS)
        # The chunk, then its first byte after the previous chunk's last.
        boundary = previous + buffer[:1]
        empty_line = (
            empty_line
            or any(mark in boundary for mark in _EMPTY_LINE_MARKS)
            or _has_empty_line_mark(buffer, size)
        )
        previous = bytes(buffer[size - 1 : size])
    if blank:
        raise TableError(EMPTY)
    handle.seek(0)
    return _ByteFacts(delimited=delimited, empty_line=empty_line)


def _text(handle: BinaryIO) -> io.TextIOWrapper:
    # newline="" hands line ends to the csv module, which ends a record at LF, CRLF or CR alike
    # and keeps line breaks inside quoted fields; utf-8-sig drops a byte-order mark.
    return io.TextIOWrapper(handle, encoding="utf-8-sig", errors="strict", newline="")


class _BoundedLines:
    """The text's physical lines, each read with a bounded size: a line longer than
    LINE_CHARACTERS is refused before it is held whole (a row of millions of delimiters, or one
    huge field, would otherwise cost several times the file's size). Counts what it read."""

    def __init__(self, text: io.TextIOWrapper) -> None:
        self.text = text
        self.characters = 0
        self.number = 0
        # Set once the last line was handed out: a record the csv module completes after that
        # was completed by the end of the file, inside a quoted value.
        self.ended = False

    def __iter__(self) -> Iterator[str]:
        while line := self.text.readline(LINE_CHARACTERS + 1):
            self.number += 1
            self.characters += len(line)
            if len(line) > LINE_CHARACTERS:
                raise TableError(
                    phrase(LINE_TOO_LONG, line=self.number, count=f"{LINE_CHARACTERS:,}")
                )
            yield line
        self.ended = True


def _column_name_problem(name: str) -> str | None:
    """Why a header name cannot be a column's public name, or None."""
    if len(name) > MAX_COLUMN_NAME:
        return phrase(NAME_TOO_LONG, count=MAX_COLUMN_NAME)
    # Line breaks, other control characters and invisible format characters (direction
    # overrides, a second byte-order mark) would forge or hide text on pages and in files.
    if any(unicodedata.category(character) in ("Cc", "Cf") for character in name):
        return NAME_CONTROL
    return None


def _unclosed_quote(row_number: int) -> TableError:
    return TableError(phrase(UNCLOSED_QUOTE, row=row_number))


def _records(lines: _BoundedLines, options: dict[str, Any]) -> Iterator[list[str]]:
    """The records of ``lines``. A record the end of the file completes (it ended inside a
    quoted value) is refused: lenient parsing would make it one value holding every later row."""
    reader = csv.reader(lines, **options)
    number = 0
    try:
        for number, record in enumerate(reader, start=1):
            if lines.ended:
                raise _unclosed_quote(number)
            yield record
    except csv.Error as error:
        if str(error).startswith("field larger than field limit"):
            raise TableError(
                phrase(VALUE_TOO_LONG, row=number + 1, count=f"{FIELD_LIMIT:,}")
            ) from None
        raise TableError(NOT_CSV) from None
    except UnicodeDecodeError:
        raise TableError(NOT_UTF8) from None


@dataclass
class _Reading:
    header: list[str]
    # The header record as read, before names are stripped.
    raw_header: list[str]
    dialect: dict[str, Any]
    batches: Iterator[list[list[str]]]
    # The text stream the batches read: keep it, dropping it closes the file.
    stream: io.TextIOWrapper
    facts: _ByteFacts


def _table_rows(
    handle: BinaryIO,
    *,
    dialect: Mapping[str, Any] | None,
    max_columns: int | None,
    batch_rows: int = BATCH_ROWS,
) -> "_Reading":
    """The header, the dialect, and an iterator over batches of the validated records of a CSV
    file (see :class:`_Reading`).

    Every check is made while reading, so the records can be streamed in batches; iterating
    raises :class:`TableError` at the first bad record.
    """
    facts = _check_bytes(handle)
    text = _text(handle)
    if dialect:
        # A stored dialect may predate a key (an older version's): RFC 4180 fills the gaps.
        detected = {**RFC_4180_DIALECT, **dialect}
    else:
        try:
            detected = table_dialect_detect(text.read(DIALECT_SAMPLE_CHARACTERS))
        except UnicodeDecodeError:
            raise TableError(NOT_UTF8) from None
        text.seek(0)
    lines = _BoundedLines(text)
    records = _records(lines, _reader_options(detected))
    header_row = next(records, [])
    if _is_blank(header_row):
        if not any(not _is_blank(row) for row in records):
            raise TableError(EMPTY)
        raise TableError(FIRST_ROW_BLANK)
    header = [name.strip() for name in header_row]
    if max_columns is not None and len(header) > max_columns:
        raise TableError(phrase(TOO_MANY_COLUMNS, count=len(header), limit=max_columns))
    if any(not name for name in header):
        raise TableError(UNNAMED_COLUMN)
    for position, name in enumerate(header, start=1):
        if problem := _column_name_problem(name):
            raise TableError(phrase(BAD_COLUMN_NAME, position=position, problem=problem))
    if len(set(header)) != len(header):
        raise TableError(DUPLICATE_NAMES)
    if len(header) < 2 and not facts.delimited:
        raise TableError(NO_DELIMITER)

    def blank_inside(row_number: int) -> TableError:
        return TableError(phrase(BLANK_ROW, row=row_number))

    def body() -> Iterator[list[list[str]]]:
        width = len(header)
        first_blank: int | None = None
        any_rows = False
        number = 2  # the record number of the batch's first row
        # Batches start small and grow to about BATCH_CHARACTERS of text, up to batch_rows
        # rows, so wide rows never make a batch large.
        size, rows_read = min(INITIAL_BATCH_ROWS, batch_rows), 0
        while batch := list(itertools.islice(records, size)):
            rows_read += len(batch)
            per_row = max(1, lines.characters // rows_read)
            size = max(INITIAL_BATCH_ROWS, min(batch_rows, BATCH_CHARACTERS // per_row))
            start, number = number, number + len(batch)
            # The common case, checked without a Python step per row: every row has the
            # header's width (with two or more columns such a row cannot be blank).
            if width > 1 and set(map(len, batch)) == {width}:
                if first_blank is not None:
                    raise blank_inside(first_blank)
                any_rows = True
                yield batch
                continue
            kept = []
            for offset, row in enumerate(batch):
                if _is_blank(row):
                    first_blank = first_blank or start + offset
                    continue
                if first_blank is not None:
                    raise blank_inside(first_blank)
                if len(row) != width:
                    raise TableError(
                        phrase(FIELD_COUNT, row=start + offset, count=len(row), width=width)
                    )
                kept.append(row)
            if kept:
                any_rows = True
                yield kept
        if not any_rows:
            raise TableError(NO_ROWS)

    return _Reading(header, header_row, detected, body(), text, facts)


@dataclass
class _ColumnProfile:
    """What kind inference needs of one column, gathered batch by batch."""

    present: int = 0
    all_numeric: bool = True
    # Distinct present values while there are at most MAX_INFERRED_CATEGORIES + 1 of them.
    distinct: set[str] | None = dataclasses.field(default_factory=set)
    # Whether one batch held a present value twice. With more distinct values than a category
    # allows, that alone makes the column text: no count of its distinct values is needed.
    repeated: bool = False

    def add(self, text: pa.Array, number: pa.Array) -> None:
        present = pc.not_equal(text, "")
        count = pc.sum(present).as_py() or 0
        if not count:
            return
        checked = self.present
        self.present += count
        if self.all_numeric:
            unparsed = pc.and_(present, pc.is_nan(number))
            self.all_numeric = not pc.any(unparsed).as_py()
        look_for_repeats = (
            not self.repeated and not self.all_numeric and checked < REPEAT_CHECK_VALUES
        )
        if self.distinct is not None or look_for_repeats:
            # The distinct values, "" among them when a value is missing.
            unique = pc.unique(text)
            distinct = len(unique) - (count < len(text))
            self.repeated = self.repeated or distinct < count
            if self.distinct is not None and distinct > MAX_INFERRED_CATEGORIES:
                self.distinct = None
            elif self.distinct is not None:
                self.distinct.update(unique.to_pylist())
                self.distinct.discard("")
                if len(self.distinct) > MAX_INFERRED_CATEGORIES:
                    self.distinct = None

    def kind(self, distinct_present: Callable[[], int]) -> str:
        if not self.present:
            return "identifier"
        if self.all_numeric:
            return "numeric"
        if self.distinct is None and self.repeated:
            return "text"
        distinct = len(self.distinct) if self.distinct is not None else distinct_present()
        if distinct <= MAX_INFERRED_CATEGORIES and distinct < self.present:
            return "categorical"
        if distinct == self.present:
            return "identifier"
        return "text"


# Memory DuckDB may use to count a column's distinct values before spilling to disk.
DISTINCT_MEMORY_LIMIT = "256MB"


def _distinct_present(path: str | Path, index: int) -> int:
    """Distinct present values of a stored column, counted by DuckDB in bounded memory (a column
    of ten million identifiers would otherwise be hashed whole in this process)."""
    import duckdb

    field = text_field(index).replace('"', '""')
    source = str(path).replace("'", "''")
    with tempfile.TemporaryDirectory() as spill:
        connection = duckdb.connect(
            config={
                "memory_limit": DISTINCT_MEMORY_LIMIT,
                "temp_directory": spill,
                "threads": 2,
            }
        )
        try:
            connection.execute("SET enable_progress_bar = false")
            (count,) = connection.execute(
                f"SELECT count(DISTINCT \"{field}\") FROM read_parquet('{source}') "
                f"WHERE \"{field}\" <> ''"
            ).fetchone()
        finally:
            connection.close()
    return int(count)


@contextmanager
def _without_cyclic_gc() -> Iterator[None]:
    """Pause Python's cycle collector: a batch is a hundred thousand small lists, none in a
    cycle, and the collector would otherwise walk them again and again (a third of the time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _NotFast(Exception):
    """The fast parser cannot vouch for this file; the csv module decides."""


# Python's csv module refuses a field longer than this (csv.field_size_limit()); the fast parser
# must not accept what the reference refuses.
FIELD_LIMIT = csv.field_size_limit()


def _longest(column: pa.Array, length: Callable[[pa.Array], pa.Array]) -> int:
    """The greatest length of a value (0 for no value): in bytes (read from the offsets), which
    bounds the length in characters (decoded) from above."""
    return pc.max(length(column)).as_py() or 0


# A value no accepted file holds (a NUL refuses the file): the fast parser reads the file
# followed by a record of such values, which comes back as a record of its own only when the
# file did not end inside a quoted value.
_END_VALUE = "\x00"


class _WithEndRecord:
    """A binary file's bytes, then ``record`` on a line of its own."""

    def __init__(self, handle: BinaryIO, record: bytes) -> None:
        self.handle = handle
        self.record = record
        self.last = b"\n"
        self.closed = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        if data:
            self.last = data[-1:]
            return data
        tail, self.record = self.record, b""
        if tail and self.last not in (b"\n", b"\r"):
            tail = b"\n" + tail
        return tail

    def close(self) -> None:
        self.closed = True


def _fast_batches(
    handle: BinaryIO, reading: _Reading, block_bytes: int
) -> Iterator[list[pa.Array]]:
    """Batches of string columns parsed by Arrow's CSV reader, which reads every record exactly
    as the csv module does for the files it is used on (checked by a property test): two or more
    columns, no initial-space skipping, no empty line. Raises :class:`_NotFast` at anything it
    cannot vouch for (a record of another width, a field over the csv module's limit, any
    parse or encoding error, a file ending inside a quoted value), before the caller has kept
    any of its output."""
    width = len(reading.header)
    dialect = reading.dialect
    end_record = [_END_VALUE] * width
    try:
        reader = pacsv.open_csv(
            _WithEndRecord(handle, dialect["delimiter"].join(end_record).encode()),
            read_options=pacsv.ReadOptions(
                autogenerate_column_names=True, use_threads=False, block_size=block_bytes
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=dialect["delimiter"],
                quote_char=dialect["quotechar"],
                double_quote=True,
                escape_char=False,
                newlines_in_values=True,
                ignore_empty_lines=False,
                # No invalid_row_handler: a record of another width is an error (Arrow's default),
                # and a Python handler cannot even be called on a row that is not UTF-8 (Arrow
                # then prints the decoding error to stderr, in the worker's log).
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={f"f{i}": pa.string() for i in range(width)},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
        first = True
        # Each batch is held until the next one is read: the last must end with end_record.
        held: list[pa.Array] | None = None
        for batch in reader:
            if batch.num_columns != width:
                raise _NotFast
            columns = list(batch.columns)
            if first:
                first = False
                if [column[0].as_py() for column in columns] != reading.raw_header:
                    raise _NotFast
                columns = [column.slice(1) for column in columns]
            if any(_longest(column, pc.binary_length) > FIELD_LIMIT for column in columns) and any(
                _longest(column, pc.utf8_length) > FIELD_LIMIT for column in columns
            ):
                raise _NotFast
            if len(columns[0]):
                if held is not None:
                    yield held
                held = columns
        if held is None or [column[-1].as_py() for column in held] != end_record:
            # The file ended inside a quoted value, which then holds end_record.
            raise _NotFast
        if len(held[0]) > 1:
            yield [column.slice(0, len(column) - 1) for column in held]
    except (pa.ArrowException, UnicodeDecodeError, ValueError):
        raise _NotFast from None


_END = object()


def _read_ahead(items: Iterator[Any]) -> Iterator[Any]:
    """The items of ``items``, each next one read by a background thread while the caller works
    on the current one: for Arrow's CSV parser, which releases the GIL while it parses."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="csv-reader")
    try:
        pending = pool.submit(next, items, _END)
        while (item := pending.result()) is not _END:
            pending = pool.submit(next, items, _END)
            yield item
    finally:
        # Wait for the read under way before the iterator may be closed (here or by its owner).
        pool.shutdown(wait=True)
        close = getattr(items, "close", None)
        if close is not None:
            # A signal (a task's time limit) landing while the first read started can leave
            # that read running, and closing then fails: the error that stopped the reading is
            # the one to report.
            with contextlib.suppress(Exception):
                close()


def _write_batches(
    target: str | Path,
    header: list[str],
    batches: Iterator[Sequence[Any]],
    progress: Callable[[], None],
) -> tuple[list[_ColumnProfile], int]:
    profiles = [_ColumnProfile() for _ in header]
    with ColumnarWriter(target, header) as writer:
        for batch in batches:
            arrays = writer.write(batch)
            for position, profile in enumerate(profiles):
                profile.add(arrays[2 * position], arrays[2 * position + 1])
            progress()
    if writer.row_count == 0:
        Path(target).unlink(missing_ok=True)
        raise TableError(NO_ROWS)
    return profiles, writer.row_count


def table_convert(
    source: str | Path,
    target: str | Path,
    *,
    dialect: Mapping[str, Any] | None = None,
    max_columns: int | None = None,
    progress: Callable[[float], None] | None = None,
    batch_rows: int = BATCH_ROWS,
    fast: bool = True,
) -> ConvertedTable:
    """Validate a CSV file and convert it, batch by batch, to the columnar layout at ``target``.

    Refuses empty, binary (a NUL anywhere), non-UTF-8, header-only, ragged, blank-line and
    duplicate-header input, and a header of more than ``max_columns`` names, with a message
    naming rows or columns, never cell contents. Memory stays bounded by ``batch_rows``
    whatever the file's size. ``progress`` is called with the share of bytes read (0..1). On any
    error ``target`` is left absent. Raises only :class:`TableError`.

    Files Arrow's CSV reader is known to read exactly as the csv module does are parsed by it
    (several times faster); any doubt, and any error, sends the file to the csv module, which
    gives the messages. ``fast=False`` always uses the csv module.
    """
    with open(source, "rb") as handle, _without_cyclic_gc():
        total = max(1, os.fstat(handle.fileno()).st_size)

        def report() -> None:
            if progress is not None:
                progress(min(1.0, handle.tell() / total))

        reading = _table_rows(
            handle, dialect=dialect, max_columns=max_columns, batch_rows=batch_rows
        )
        header = reading.header
        written: tuple[list[_ColumnProfile], int] | None = None
        try:
            if (
                fast
                and len(header) >= 2
                and not reading.facts.empty_line
                and not reading.dialect["skipinitialspace"]
                and reading.dialect["doublequote"]
                and not reading.dialect["escapechar"]
            ):
                # The batches are parsed by a background thread (closed before the file is), so
                # progress reads the file's offset from its descriptor, not from the handle.
                with (
                    open(source, "rb") as fast_handle,
                    closing(
                        _read_ahead(_fast_batches(fast_handle, reading, FAST_BLOCK_BYTES))
                    ) as fast_batches,
                ):
                    descriptor = fast_handle.fileno()

                    def fast_report() -> None:
                        if progress is not None:
                            offset = os.lseek(descriptor, 0, os.SEEK_CUR)
                            progress(min(1.0, offset / total))

                    try:
                        written = _write_batches(target, header, fast_batches, fast_report)
                    except _NotFast:
                        Path(target).unlink(missing_ok=True)
            if written is None:
                written = _write_batches(
                    target,
                    header,
                    (list(zip(*batch, strict=True)) for batch in reading.batches),
                    report,
                )
        except TableError:
            raise
        except (OSError, pa.ArrowException, ValueError) as error:
            raise TableError(NOT_CONVERTED) from error
    profiles, row_count = written
    columns = [
        {
            "name": name,
            "inferred_kind": profile.kind(functools.partial(_distinct_present, target, index)),
        }
        for index, (name, profile) in enumerate(zip(header, profiles, strict=True))
    ]
    return ConvertedTable(columns=columns, dialect=reading.dialect, row_count=row_count)
