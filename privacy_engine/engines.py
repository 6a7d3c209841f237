"""Engines: who computes a release's exact aggregates (aggregates.py) from a stored table.

- :class:`InProcessEngine` reads the needed typed columns whole (pyarrow, numpy): fastest while
  they fit in memory.
- :class:`OutOfCoreEngine` streams the Parquet file through DuckDB in batches, bounding
  contributions with a window over the file's row numbers and spilling to disk past its memory
  limit: tables larger than memory.
- :class:`DistributedEngine` hands the same work to a Dask cluster: each partition's partial states
  are computed where the partition is, and merged here.

All three compute the same exact states with the same functions, so they give identical answers;
the noise step that follows is the same code whatever produced them. The engines read data; the
privacy maths never depends on which one ran.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from privacy_engine.aggregates import (
    Aggregate,
    bound_contributions,
    finish,
    merge_all,
    needed_columns,
    partials,
)
from privacy_engine.columnar import (
    TypedTable,
    labels_of,
    number_field,
    read_typed,
    stored_names,
    table_source,
    text_field,
)

# The out-of-core query's column of person keys (no stored field has this name).
PERSON_KEY_COLUMN = "person_key_value"
# Rows per batch the out-of-core engine computes at once.
STREAM_BATCH_ROWS = 1_000_000


@dataclass(frozen=True)
class Bound:
    """Contribution bounding: at most ``per_person`` rows per value of ``person_key``."""

    person_key: str | None = None
    per_person: int = 1


@dataclass
class Aggregated:
    """Exact answers in request order, and seconds spent reading and computing."""

    answers: list[Any]
    timings: dict[str, float] = field(default_factory=dict)


class Engine(Protocol):
    name: str

    def aggregate(
        self, path: str | Path, requests: Sequence[Aggregate], bound: Bound
    ) -> Aggregated: ...


def _columns(requests: Sequence[Aggregate], bound: Bound) -> tuple[list[str], list[str]]:
    numbers, labels = needed_columns(requests)
    if bound.person_key is not None:
        labels.add(bound.person_key)
    return sorted(numbers), sorted(labels)


def _check_columns(path: str | Path, numbers: list[str], labels: list[str]) -> dict[str, int]:
    index = {name: i for i, name in enumerate(stored_names(path))}
    for name in [*numbers, *labels]:
        if name not in index:
            raise KeyError(name)
    return index


def aggregate_table(table: TypedTable, requests: Sequence[Aggregate], bound: Bound) -> list[Any]:
    """Exact answers from a table held in memory."""
    bounded = bound_contributions(table, bound.person_key, bound.per_person)
    return [finish(r, s) for r, s in zip(requests, partials(requests, bounded), strict=True)]


class InProcessEngine:
    name = "in_process"

    def aggregate(
        self, path: str | Path, requests: Sequence[Aggregate], bound: Bound
    ) -> Aggregated:
        numbers, labels = _columns(requests, bound)
        started = time.perf_counter()
        table = read_typed(path, numbers=numbers, labels=labels)
        read = time.perf_counter()
        answers = aggregate_table(table, requests, bound)
        return Aggregated(
            answers, {"read_s": read - started, "compute_s": time.perf_counter() - read}
        )


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _typed_batch(
    batch: pa.RecordBatch, numbers: list[str], labels: list[str], index: dict[str, int]
) -> TypedTable:
    return TypedTable(
        row_count=batch.num_rows,
        numbers={
            name: batch.column(number_field(index[name])).to_numpy(zero_copy_only=False)
            for name in numbers
        },
        labels={
            name: labels_of(pa.chunked_array([batch.column(text_field(index[name]))]))
            for name in labels
        },
    )


class _RunningRank:
    """Contribution bounding over rows sorted by person key, then by file order, batch by batch:
    a row is kept while fewer than ``per_person`` rows of its person came before it. The count of
    the last person of a batch carries over to the next batch."""

    def __init__(self, per_person: int) -> None:
        self.per_person = per_person
        self.last_key: str | None = None
        self.last_count = 0

    def keep(self, keys: pa.Array) -> np.ndarray:
        size = len(keys)
        if size == 0:
            return np.zeros(0, dtype=bool)
        new_run = np.empty(size, dtype=bool)
        new_run[0] = self.last_key is None or keys[0].as_py() != self.last_key
        if size > 1:
            new_run[1:] = pc.not_equal(keys.slice(1), keys.slice(0, size - 1)).to_numpy(
                zero_copy_only=False
            )
        positions = np.arange(size)
        rank = positions - np.maximum.accumulate(np.where(new_run, positions, 0))
        starts = np.flatnonzero(new_run)
        continued = starts[0] if starts.size else size
        rank[:continued] += self.last_count
        self.last_count = size - starts[-1] if starts.size else self.last_count + size
        self.last_key = keys[size - 1].as_py()
        return rank < self.per_person


class OutOfCoreEngine:
    """DuckDB over the Parquet file, in batches, within ``memory_limit_bytes``; peak memory stays
    near one batch plus DuckDB's limit. With a person key, DuckDB sorts the rows by key and file
    order (its external sort spills to ``spill_directory``) and :class:`_RunningRank` keeps each
    person's first rows as the sorted batches stream past."""

    name = "out_of_core"

    def __init__(
        self,
        *,
        memory_limit_bytes: int = 1 << 30,
        threads: int | None = None,
        spill_directory: str | None = None,
        batch_rows: int = STREAM_BATCH_ROWS,
    ) -> None:
        self.memory_limit_bytes = memory_limit_bytes
        # DuckDB needs some memory per thread: fewer threads under a small limit, not a failure.
        self.threads = max(1, min(threads or os.cpu_count() or 1, memory_limit_bytes // (32 << 20)))
        self.spill_directory = spill_directory
        self.batch_rows = batch_rows

    def _query(self, path: str, bound: Bound, fields: list[str], index: dict[str, int]) -> str:
        source = f"read_parquet('{path.replace(chr(39), chr(39) * 2)}', file_row_number = true)"
        selected = ", ".join(_quoted(f) for f in fields)
        if bound.person_key is None:
            return f"SELECT {selected} FROM {source}"
        key = _quoted(text_field(index[bound.person_key]))
        return (
            f"SELECT {key} AS {PERSON_KEY_COLUMN}, {selected} FROM {source} "
            f"WHERE {key} <> '' ORDER BY {key}, file_row_number"
        )

    def _batches(
        self, path: str, bound: Bound, fields: list[str], index: dict[str, int]
    ) -> Iterator[pa.RecordBatch]:
        import duckdb

        with tempfile.TemporaryDirectory(dir=self.spill_directory) as spill:
            connection = duckdb.connect(
                config={
                    "memory_limit": f"{max(self.memory_limit_bytes >> 20, 64)}MB",
                    "threads": self.threads,
                    "temp_directory": spill,
                    "preserve_insertion_order": False,
                }
            )
            try:
                # No progress bar drawn on the worker's output.
                connection.execute("SET enable_progress_bar = false")
                query = self._query(path, bound, fields, index)
                yield from connection.sql(query).to_arrow_reader(self.batch_rows)
            finally:
                connection.close()

    def aggregate(
        self, path: str | Path, requests: Sequence[Aggregate], bound: Bound
    ) -> Aggregated:
        path = str(path)
        # The person key is read by the query's window only: batches carry what requests read.
        numbers, labels = (sorted(names) for names in needed_columns(requests))
        keys = [bound.person_key] if bound.person_key is not None else []
        index = _check_columns(path, numbers, [*labels, *keys])
        fields = _fields(numbers, labels, index) or _fields([], keys, index)
        if not fields:
            return _count_only(path, requests)
        merged = merge_all(requests, [])
        reading = computing = 0.0
        batches = self._batches(path, bound, fields, index)
        ranks = _RunningRank(bound.per_person) if bound.person_key is not None else None
        while True:
            started = time.perf_counter()
            batch = next(batches, None)
            reading += time.perf_counter() - started
            if batch is None:
                break
            started = time.perf_counter()
            if ranks is not None:
                keep = ranks.keep(batch.column(PERSON_KEY_COLUMN))
                batch = batch.filter(pa.array(keep))
            typed = _typed_batch(batch, numbers, labels, index)
            # Batches come bounded by the query; merge each as it comes, keeping one state.
            merged = merge_all(requests, [merged, partials(requests, typed)])
            computing += time.perf_counter() - started
        answers = [finish(r, s) for r, s in zip(requests, merged, strict=True)]
        return Aggregated(answers, {"read_s": reading, "compute_s": computing})


def _fields(numbers: list[str], labels: list[str], index: dict[str, int]) -> list[str]:
    return sorted(
        {number_field(index[n]) for n in numbers} | {text_field(index[n]) for n in labels}
    )


def _parquet_file(location: str) -> pq.ParquetFile:
    filesystem, name = table_source(location)
    return pq.ParquetFile(name, filesystem=filesystem)


def _read_row_group(location: str, group: int, fields: list[str]) -> pd.DataFrame:
    """One row group's columns (runs on a Dask worker, which opens the location itself)."""
    return _parquet_file(location).read_row_group(group, columns=fields).to_pandas()


def _count_only(path: str, requests: Sequence[Aggregate]) -> Aggregated:
    """Requests that read no column (a row count without a person key): the file's metadata."""
    started = time.perf_counter()
    rows = _parquet_file(path).metadata.num_rows
    table = TypedTable(row_count=rows, numbers={}, labels={})
    answers = [finish(r, s) for r, s in zip(requests, partials(requests, table), strict=True)]
    return Aggregated(answers, {"read_s": time.perf_counter() - started, "compute_s": 0.0})


def _partition_states(
    frame: Any,
    requests: Sequence[Aggregate],
    numbers: list[str],
    labels: list[str],
    index: dict[str, int],
    key: str | None,
    earlier: Any,
    per_person: int,
) -> list[Any]:
    """One partition's partial states (runs on a Dask worker). With a person key, ``earlier``
    counts each person's rows in the partitions before this one (capped at ``per_person``), so a
    row's rank is earlier + its rank here: the first rows in file order are kept."""
    if key is not None:
        keys = frame[key].astype(str)
        rank = keys.map(earlier).fillna(0).to_numpy() + frame.groupby(keys, sort=False).cumcount()
        frame = frame[(keys != "").to_numpy() & (rank < per_person).to_numpy()]
    table = TypedTable(
        row_count=len(frame),
        numbers={name: frame[number_field(index[name])].to_numpy(dtype=float) for name in numbers},
        labels={
            name: labels_of(
                pa.chunked_array(
                    [pa.array(frame[text_field(index[name])].astype(str).tolist(), pa.string())]
                )
            )
            for name in labels
        },
    )
    return partials(requests, table)


def _key_counts(frame: Any, key: str) -> Any:
    return frame[key].astype(str).value_counts(sort=False)


def _add_counts(earlier: Any, counts: Any, per_person: int) -> Any:
    # Capped at per_person: a person already at the cap drops every later row whatever the count.
    return earlier.add(counts, fill_value=0).clip(upper=per_person).astype("int64")


class DistributedEngine:
    """A Dask cluster (``scheduler_address``, or an existing ``client``) computes each
    partition's partial states; this process merges them. Reading and computing happen together
    on the workers, so ``compute_s`` covers both and ``read_s`` is 0.

    Each worker reads its row groups from the table's location itself: a path on a file system
    the workers share, or an object storage URI (:func:`~privacy_engine.columnar.table_source`),
    so the table never passes through this process."""

    name = "distributed"

    def __init__(self, *, scheduler_address: str | None = None, client: Any = None) -> None:
        if scheduler_address is None and client is None:
            raise ValueError("a distributed engine needs a scheduler address or a client")
        self.scheduler_address = scheduler_address
        self.client = client

    def aggregate(
        self, path: str | Path, requests: Sequence[Aggregate], bound: Bound
    ) -> Aggregated:
        import dask
        from distributed import Client

        path = str(path)
        numbers, labels = _columns(requests, bound)
        index = _check_columns(path, numbers, labels)
        fields = _fields(numbers, labels, index)
        if not fields:
            return _count_only(path, requests)
        started = time.perf_counter()
        client = self.client or Client(self.scheduler_address)
        try:
            # One partition per row group, in file order: a large file spreads over the workers.
            groups = _parquet_file(path).metadata.num_row_groups
            key = None if bound.person_key is None else text_field(index[bound.person_key])
            earlier = dask.delayed(pd.Series)(dtype="int64")
            parts = []
            for group in range(groups):
                part = dask.delayed(_read_row_group)(path, group, fields)
                parts.append(
                    dask.delayed(_partition_states)(
                        part, list(requests), numbers, labels, index, key, earlier, bound.per_person
                    )
                )
                if key is not None:
                    counts = dask.delayed(_key_counts)(part, key)
                    earlier = dask.delayed(_add_counts)(earlier, counts, bound.per_person)
            states = client.compute(parts, sync=True)
        finally:
            if self.client is None:
                client.close()
        merged = merge_all(requests, states)
        answers = [finish(r, s) for r, s in zip(requests, merged, strict=True)]
        return Aggregated(answers, {"read_s": 0.0, "compute_s": time.perf_counter() - started})


ENGINE_KINDS = ("auto", "in_process", "out_of_core", "distributed")
# With a person key, DuckDB's sort bounds contributions faster and in less memory than hashing
# every key in this process from about this many rows (bench/scale.py: at 10⁶ rows 0.23 s
# against 0.29 s; at 10⁷, 2.7 s in 1.2 GiB against 5.7 s in 3.1 GiB; at 10⁵ in process is faster).
PERSON_KEY_IN_PROCESS_MAX_ROWS = 250_000


@dataclass(frozen=True)
class EngineChoice:
    """How to choose an engine per release: ``kind`` names one of ENGINE_KINDS; with ``"auto"``,
    in-process while the needed columns fit in ``memory_budget_bytes`` (about 8 bytes a value,
    twice for headroom) and, with a person key, the table has at most
    ``PERSON_KEY_IN_PROCESS_MAX_ROWS`` rows; else out-of-core. The distributed engine runs only
    when named, on the cluster at ``scheduler_address``."""

    kind: str = "auto"
    memory_budget_bytes: int = 1 << 30
    scheduler_address: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ENGINE_KINDS:
            raise ValueError(f"unknown engine {self.kind!r}; use one of {', '.join(ENGINE_KINDS)}")

    def engine_for(self, path: str | Path, requests: Sequence[Aggregate], bound: Bound) -> Engine:
        if self.kind == "in_process":
            return InProcessEngine()
        if self.kind == "out_of_core":
            return OutOfCoreEngine(memory_limit_bytes=self.memory_budget_bytes)
        if self.kind == "distributed":
            return DistributedEngine(scheduler_address=self.scheduler_address)
        numbers, labels = _columns(requests, bound)
        rows = _parquet_file(str(path)).metadata.num_rows
        estimate = 2 * 8 * rows * max(1, len(numbers) + len(labels))
        fits = estimate <= self.memory_budget_bytes
        if fits and (bound.person_key is None or rows <= PERSON_KEY_IN_PROCESS_MAX_ROWS):
            return InProcessEngine()
        return OutOfCoreEngine(memory_limit_bytes=self.memory_budget_bytes)


__all__ = [
    "ENGINE_KINDS",
    "Aggregated",
    "Bound",
    "DistributedEngine",
    "Engine",
    "EngineChoice",
    "InProcessEngine",
    "OutOfCoreEngine",
    "aggregate_table",
]
