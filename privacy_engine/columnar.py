"""Tables as typed columns: the Parquet layout an upload is converted to once, and the typed
arrays a release reads from it.

Layout (format 1). For the i-th column of the upload, in file order:

- ``text:i``: the value with surrounding whitespace removed (``str.strip``), ``""`` when missing.
  Categories, person keys and missingness read this, dictionary-encoded (integer codes).
- ``number:i``: the raw value read as a number (``pandas.to_numeric``): NaN when missing or not a
  number, ±inf beyond the float range. Bounds, sums and bins read this.

The schema metadata holds the header names in file order. Both columns are written for every
column, so any kind the curator declares later reads the same values as if the CSV were parsed
again, and a release reads only the columns its statistics use.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

FORMAT = "1"
METADATA_KEY = b"guided_release"
# Rows per Parquet row group: large enough for fast scans, small enough that one group's columns
# stay a few tens of megabytes in memory.
ROW_GROUP_ROWS = 1_000_000


def text_field(index: int) -> str:
    return f"text:{index}"


def number_field(index: int) -> str:
    return f"number:{index}"


# Exactly the characters Python's str.strip() removes (those for which str.isspace() is true), so
# the stored text is what a Python strip would give, computed by Arrow in one pass.
WHITESPACE = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())


# A value pandas.to_numeric can read starts (after ASCII blanks) with an optional sign and then a
# digit, a point and a digit, "inf" or "nan" in any case. Values that do not are not numbers, and
# skipping them spares to_numeric its slow path on text (identifiers, categories).
NUMBER_START = r"^[ \t\n\x0b\x0c\r]*[+-]?(?:[0-9]|\.[0-9]|(?i:inf|nan))"


# Plain decimals ("-12.5", "3e-7"): Arrow parses these to the correctly rounded double, as
# pandas.to_numeric does (both checked against Python's float() by a property test), and without
# a Python object per value.
PLAIN_DIGITS = 4300
PLAIN_DECIMAL = r"^-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"


def _matches(strings: pa.Array, pattern: str) -> np.ndarray:
    return pc.match_substring_regex(strings, pattern).to_numpy(zero_copy_only=False)


# What the first byte of a value says about NUMBER_START: 0 no match, 1 a match (a digit), 2 the
# next bytes decide ("." and a digit; "i" or "n" and "nf" or "an", in any case), 3 only the
# pattern decides (an ASCII blank or a sign).
_FIRST_BYTE = np.zeros(256, dtype=np.uint8)
_FIRST_BYTE[list(b"0123456789")] = 1
_FIRST_BYTE[list(b".iInN")] = 2
_FIRST_BYTE[list(b" \t\n\x0b\x0c\r+-")] = 3


def _number_starts(strings: pa.Array) -> np.ndarray:
    """Which values match NUMBER_START, read from their first bytes without a pattern for most
    values (text fails at its first byte); the pattern decides values that start with a blank or
    a sign."""
    if strings.type != pa.string() or strings.null_count or len(strings) == 0:
        return _matches(strings, NUMBER_START)
    _, offset_buffer, data_buffer = strings.buffers()
    offsets = np.frombuffer(
        offset_buffer, dtype=np.int32, count=len(strings) + 1, offset=4 * strings.offset
    )
    if data_buffer is None or offsets[-1] == offsets[0]:
        return np.zeros(len(strings), dtype=bool)
    data = np.frombuffer(data_buffer, dtype=np.uint8, count=offsets[-1])
    starts, lengths = offsets[:-1], np.diff(offsets)
    kinds = _FIRST_BYTE[np.where(lengths > 0, data[np.minimum(starts, len(data) - 1)], 0)]
    starts_number = kinds == 1
    decided_later = np.flatnonzero(kinds == 2)
    if len(decided_later):
        first = data[starts[decided_later]]
        # The next two bytes (0 past the end); "| 0x20" lowers a letter ("A" and "a" only give
        # "a", and so on).
        second, third = (
            np.where(
                lengths[decided_later] > step,
                data[np.minimum(starts[decided_later] + step, len(data) - 1)],
                0,
            )
            for step in (1, 2)
        )
        point = (first == ord(".")) & (second >= ord("0")) & (second <= ord("9"))
        first, second, third = first | 0x20, second | 0x20, third | 0x20
        infinity = (first == ord("i")) & (second == ord("n")) & (third == ord("f"))
        nan = (first == ord("n")) & (second == ord("a")) & (third == ord("n"))
        starts_number[decided_later] = point | infinity | nan
    undecided = kinds == 3
    if undecided.any():
        starts_number[undecided] = _matches(strings.filter(pa.array(undecided)), NUMBER_START)
    return starts_number


def _plain(strings: pa.Array) -> np.ndarray:
    # Up to PLAIN_DIGITS characters: pandas (through Python's int) reads no longer whole number.
    return pc.and_(
        pc.match_substring_regex(strings, PLAIN_DECIMAL),
        pc.less_equal(pc.binary_length(strings), PLAIN_DIGITS),
    ).to_numpy(zero_copy_only=False)


def _every_value_plain(strings: pa.Array) -> np.ndarray | None:
    """The numbers of a column whose every value is missing ("") or a plain decimal, read by one
    Arrow cast and no pattern; None for any other column.

    The cast accepts decimals (also after a "+", which pandas reads with a parser that is not
    correctly rounded, so those are left to the general path) and words such as "inf" and
    "nan", and nothing else: so a cast that succeeds with finite results only, on values of at
    most PLAIN_DIGITS characters none of which starts with "+", read plain decimals only, which
    Arrow reads as pandas does (see :data:`PLAIN_DECIMAL`)."""
    lengths = pc.binary_length(strings)
    if pc.max(lengths).as_py() > PLAIN_DIGITS or pc.any(pc.starts_with(strings, "+")).as_py():
        return None
    empty = pc.equal(lengths, 0)
    missing = pc.any(empty).as_py()
    try:
        numbers = pc.cast(
            pc.if_else(empty, "0", strings) if missing else strings, pa.float64()
        ).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        return None
    if not np.isfinite(numbers).all():
        return None
    return np.where(empty.to_numpy(zero_copy_only=False), np.nan, numbers) if missing else numbers


# How many leading values decide which test runs first (either order gives the same answer).
_SAMPLE_VALUES = 64


def read_numbers(strings: pa.Array) -> np.ndarray:
    """Each raw value read as pandas.to_numeric(errors="coerce") reads it (NaN if not a number).

    A column that starts with plain decimals (missing values aside) is first read by one cast
    (:func:`_every_value_plain`); if that cannot vouch for it, or the column starts otherwise,
    each value is tested by one pattern and, only where needed, by the other (every plain decimal
    also has a number's start): plainness first for numeric-looking columns, a number's start
    first for others (most text fails it at once)."""
    numbers = np.full(len(strings), np.nan)
    if len(strings) == 0:
        return numbers
    sample = strings.slice(0, _SAMPLE_VALUES)
    present = pc.greater(pc.binary_length(sample), 0).to_numpy(zero_copy_only=False)
    if present.any() and _plain(sample)[present].all():
        every = _every_value_plain(strings)
        if every is not None:
            return every
        plain = _plain(strings)
        rest = ~plain
        if rest.any():
            rest[rest] = _number_starts(strings.filter(pa.array(rest)))
    else:
        candidates = _number_starts(strings)
        plain = np.zeros(len(strings), dtype=bool)
        if candidates.any():
            plain[candidates] = _plain(strings.filter(pa.array(candidates)))
        rest = candidates & ~plain
    if plain.any():
        try:
            numbers[plain] = pc.cast(strings.filter(pa.array(plain)), pa.float64()).to_numpy()
        except pa.ArrowInvalid:  # not seen for plain decimals; should it happen, pandas decides
            rest |= plain
            plain[:] = False
    if rest.any():
        series = pd.Series(strings.filter(pa.array(rest)).to_pylist(), dtype=object)
        numbers[rest] = pd.to_numeric(series, errors="coerce").to_numpy(
            dtype=float, na_value=np.nan
        )
    return numbers


def typed_batch(raw_columns: Sequence[Sequence[str] | pa.Array]) -> list[pa.Array]:
    """The stored arrays of one batch of raw string columns: per column, its text then its
    number. The only place raw values become typed ones."""
    arrays: list[pa.Array] = []
    for raw in raw_columns:
        strings = raw if isinstance(raw, pa.Array) else pa.array(raw, type=pa.string())
        arrays.append(pc.utf8_trim(strings, characters=WHITESPACE))
        arrays.append(pa.array(read_numbers(strings), type=pa.float64()))
    return arrays


def _arrow_schema(names: Sequence[str]) -> pa.Schema:
    fields = []
    for index in range(len(names)):
        fields.append(pa.field(text_field(index), pa.string(), nullable=False))
        fields.append(pa.field(number_field(index), pa.float64(), nullable=False))
    metadata = {METADATA_KEY: json.dumps({"format": FORMAT, "columns": list(names)}).encode()}
    return pa.schema(fields, metadata=metadata)


class ColumnarWriter:
    """Writes batches of raw string columns to a Parquet file in the layout above.

    Use as a context manager; on an exception the partial file is removed.
    """

    def __init__(self, path: str | Path, names: Sequence[str]) -> None:
        self.path = Path(path)
        self.names = list(names)
        self.row_count = 0
        self._schema = _arrow_schema(self.names)
        # No column statistics: nothing reads them (releases scan whole columns), and writing
        # them cost a quarter of the write.
        self._writer = pq.ParquetWriter(
            str(self.path), self._schema, compression="snappy", write_statistics=False
        )
        # Batches are encoded and written by one background thread (Arrow releases the GIL),
        # while the caller reads and types the next batch: one batch in flight at most.
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="columnar-writer")
        self._pending: Future[None] | None = None

    def write(self, raw_columns: Sequence[Sequence[str] | pa.Array]) -> list[pa.Array]:
        """Append one batch: one sequence (or Arrow string array) of raw strings per column, all
        of the same length.
        Returns the arrays written (per column, its text then its number)."""
        if len(raw_columns) != len(self.names):
            raise ValueError("one sequence of values per column")
        arrays = typed_batch(raw_columns)
        batch = pa.record_batch(arrays, schema=self._schema)
        self._finish_pending()
        self._pending = self._pool.submit(
            self._writer.write_batch, batch, row_group_size=ROW_GROUP_ROWS
        )
        self.row_count += batch.num_rows
        return arrays

    def _finish_pending(self) -> None:
        """Wait for the batch being written; raise what writing it raised."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        try:
            self._finish_pending()
        finally:
            self._pool.shutdown()
            self._writer.close()

    def __enter__(self) -> ColumnarWriter:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        try:
            self.close()
        except BaseException:  # an interrupt while waiting for the last write included
            self.path.unlink(missing_ok=True)
            if error is None:
                raise
            # Otherwise the error that stopped the writing is the one to report.
        if error is not None:
            self.path.unlink(missing_ok=True)


def write_frame(frame: pd.DataFrame, path: str | Path) -> None:
    """Store a DataFrame of raw strings (a parsed CSV) in the columnar layout."""
    with ColumnarWriter(path, [str(name) for name in frame.columns]) as writer:
        writer.write([frame[name].tolist() for name in frame.columns])


@dataclass(frozen=True)
class Labels:
    """A text column as integer codes into a dictionary of distinct stripped values."""

    codes: np.ndarray
    dictionary: pa.Array

    def take(self, mask: np.ndarray) -> Labels:
        return Labels(codes=self.codes[mask], dictionary=self.dictionary)

    def code_of(self, value: str) -> int | None:
        """The code of ``value``, or None when no row holds it."""
        found = pc.index(self.dictionary, value).as_py()
        return None if found < 0 else found


@dataclass(frozen=True)
class TypedTable:
    """The typed columns a release needs, by column name: numbers as float64 arrays, text as
    :class:`Labels`. ``row_count`` counts every row of the table."""

    row_count: int
    numbers: Mapping[str, np.ndarray]
    labels: Mapping[str, Labels]

    def take(self, mask: np.ndarray) -> TypedTable:
        """The rows where ``mask`` is true."""
        return TypedTable(
            row_count=int(np.count_nonzero(mask)),
            numbers={name: values[mask] for name, values in self.numbers.items()},
            labels={name: labels.take(mask) for name, labels in self.labels.items()},
        )


def labels_of(column: pa.ChunkedArray) -> Labels:
    """Codes and a dictionary of distinct values, whatever encoding each chunk came in.

    Few distinct values (categories): the chunks' small dictionaries are unified. Many (person
    keys): the values are encoded once, whole, which is cheaper than unifying large dictionaries
    and distinct by construction."""
    if column.num_chunks == 0:
        return Labels(codes=np.zeros(0, dtype=np.int64), dictionary=pa.array([], pa.string()))
    if pa.types.is_dictionary(column.type):
        if 4 * sum(len(chunk.dictionary) for chunk in column.chunks) <= len(column):
            return _unified(column)
        column = pa.chunked_array([chunk.dictionary_decode() for chunk in column.chunks])
    # large_string: the whole column may hold more than 2 GiB of text.
    whole = column.cast(pa.large_string()).combine_chunks()
    encoded = pc.dictionary_encode(whole)
    return Labels(
        codes=encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False),
        dictionary=encoded.dictionary,
    )


def _unified(column: pa.ChunkedArray) -> Labels:
    column = column.unify_dictionaries()
    dictionary = column.chunk(0).dictionary
    # Codes keep Arrow's index type (int32): widening would copy every row for nothing.
    codes = np.concatenate(
        [chunk.indices.to_numpy(zero_copy_only=False) for chunk in column.chunks]
    )
    distinct = pc.unique(dictionary)
    if len(distinct) != len(dictionary):
        # Unified dictionaries are distinct in practice; if not, one code per value anyway.
        remap = pc.index_in(dictionary, value_set=distinct).to_numpy(zero_copy_only=False)
        codes, dictionary = remap[codes], distinct
    return Labels(codes=codes, dictionary=dictionary)


def table_source(location: str | Path) -> tuple[pafs.FileSystem, str]:
    """The file system and path of a stored table: a local path, or a URI such as
    ``s3://bucket/key?endpoint_override=http://host:9000&scheme=http``, which each process
    resolves with its own credentials (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``), so none
    travel with the location."""
    location = str(location)
    if "://" in location:
        return pafs.FileSystem.from_uri(location)
    return pafs.LocalFileSystem(), location


def stored_names(path: str | Path) -> list[str]:
    """The header names of a stored table (a local path or a URI), in file order."""
    filesystem, name = table_source(path)
    metadata = pq.read_schema(name, filesystem=filesystem).metadata or {}
    layout = json.loads(metadata[METADATA_KEY])
    if layout.get("format") != FORMAT:
        raise ValueError("unknown columnar format")
    return list(layout["columns"])


def read_typed(
    path: str | Path, *, numbers: Iterable[str] = (), labels: Iterable[str] = ()
) -> TypedTable:
    """Read only the named columns of a stored table: ``numbers`` as float64, ``labels`` as codes.
    Raises KeyError naming a column the table does not hold."""
    names = stored_names(path)
    index = {name: i for i, name in enumerate(names)}
    numbers, labels = sorted(set(numbers)), sorted(set(labels))
    for name in [*numbers, *labels]:
        if name not in index:
            raise KeyError(name)
    text_fields = [text_field(index[name]) for name in labels]
    number_fields = [number_field(index[name]) for name in numbers]
    source = pq.ParquetFile(str(path))
    row_count = source.metadata.num_rows
    if not text_fields and not number_fields:
        return TypedTable(row_count=row_count, numbers={}, labels={})
    table = pq.read_table(
        str(path), columns=[*text_fields, *number_fields], read_dictionary=text_fields
    )
    return TypedTable(
        row_count=row_count,
        numbers={
            name: table.column(field).to_numpy()
            for name, field in zip(numbers, number_fields, strict=True)
        },
        labels={
            name: labels_of(table.column(field))
            for name, field in zip(labels, text_fields, strict=True)
        },
    )


def typed_from_frame(
    frame: pd.DataFrame, *, numbers: Iterable[str] = (), labels: Iterable[str] = ()
) -> TypedTable:
    """The same typed columns from an in-memory DataFrame of raw strings, through the same
    conversion as a stored table (:func:`typed_batch`)."""
    numbers, labels = sorted(set(numbers)), sorted(set(labels))
    out_numbers: dict[str, np.ndarray] = {}
    out_labels: dict[str, Labels] = {}
    for name in sorted({*numbers, *labels}):
        series = frame[name].astype(object)
        # A missing cell of a DataFrame (None, NaN) reads as an empty CSV field would.
        raw = series.where(series.notna(), "").astype(str).tolist()
        text, number = typed_batch([raw])
        if name in numbers:
            out_numbers[name] = number.to_numpy()
        if name in labels:
            out_labels[name] = labels_of(pa.chunked_array([text]))
    return TypedTable(row_count=len(frame), numbers=out_numbers, labels=out_labels)
