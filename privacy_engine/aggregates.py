"""Exact aggregates: what a release needs from the data before any noise, as plain requests that
every engine (engines.py) answers the same way.

Each request computes a *partial state* from one batch of typed rows, states of batches *merge*
exactly, and *finish* turns the merged state into the exact answer the mechanisms take. States are
exact (whole numbers, or an exact float sum by binary exponent), so the answer does not depend on
how an engine splits the table, in which order batches come, or on which machine each ran: the
in-process, out-of-core and distributed engines give identical answers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from privacy_engine.columnar import Labels, TypedTable
from privacy_engine.exact_sums import (
    exact_sum_state,
    float_up,
    merge_sum_states,
    round_sum_state,
    sum_grid,
)


@dataclass(frozen=True)
class RowCount:
    """Rows of the (contribution-bounded) table."""


@dataclass(frozen=True)
class CleanedNumbers:
    """A numeric column cleaned by its declared rules: missing values filled or dropped, every
    value clamped to [lower, upper]."""

    column: str
    lower: float
    upper: float
    fill: float | None

    def cleaned(self, table: TypedTable) -> np.ndarray:
        return self.clean(table.numbers[self.column])

    def clean(self, values: np.ndarray) -> np.ndarray:
        missing = np.isnan(values)
        if missing.any():
            values = (
                np.where(missing, self.fill, values) if self.fill is not None else values[~missing]
            )
        return np.clip(values, self.lower, self.upper)


@dataclass(frozen=True)
class GridSum(CleanedNumbers):
    """The cleaned values' exact sum rounded half up to a multiple of ``grid`` (exact_sums.py)."""

    grid: float = 1.0


@dataclass(frozen=True)
class PresentCount(CleanedNumbers):
    """How many cleaned values there are (all rows with a fill, else the non-missing ones)."""


@dataclass(frozen=True)
class BinCounts(CleanedNumbers):
    """Cleaned values per bin: [a, b) each, the last [a, b]."""

    edges: tuple[float, ...] = ()


@dataclass(frozen=True)
class RankCounts(CleanedNumbers):
    """For each of the increasing ``candidates``, how many cleaned values are below it and how
    many are at most it: the ranks a quantile's scores are computed from."""

    candidates: tuple[float, ...] = ()


@dataclass(frozen=True)
class CategoryCounts:
    """Records per bucket of a categorical column: a missing value ("") becomes ``fill`` or is
    dropped; a value outside the categories goes to ``other`` or is dropped."""

    column: str
    categories: tuple[str, ...]
    other: str | None
    fill: str | None

    @property
    def buckets(self) -> tuple[str, ...]:
        return (*self.categories, self.other) if self.other is not None else self.categories


@dataclass(frozen=True)
class PairCounts:
    """Records per pair of buckets of two columns, each categorical or a numeric column's bins
    (a 2-way table, row-major: the first column's buckets are rows); a record dropped by either
    column's rules is not counted."""

    first: CategoryCounts | BinCounts
    second: CategoryCounts | BinCounts

    @property
    def cells(self) -> int:
        return _bucket_count(self.first) * _bucket_count(self.second)


def _bucket_count(side: CategoryCounts | BinCounts) -> int:
    return len(side.buckets) if isinstance(side, CategoryCounts) else len(side.edges) - 1


@dataclass(frozen=True)
class ClusterSums:
    """One k-means iteration's two aggregations (the article's q_hist and q_sum), given public
    ``centroids`` (one coordinate per column, in column order).

    Each record's ``columns`` are cleaned by their declared rules (a missing value is filled, or
    the record is left out when that column has no fill; values are clamped to [lower, upper]);
    the record goes to the nearest centroid by squared Euclidean distance, the lowest index on a
    tie (computed column by column, element-wise, so the same on every engine and batching). Per
    cluster, the answer holds the number of records and, per column j, the exact sum of
    x_j − m_j with m_j = (lower_j + upper_j)/2 the middle of the bounds, rounded half up onto
    the grid of the half-range h_j = (upper_j − lower_j)/2 (exact_sums.py: n·m_j is taken off the
    exact sum of the cleaned values as a rational, so nothing rounds before the grid). One record
    moves a cluster's shifted sum of column j by at most h_j, hence its rounded sum by at most
    :meth:`step_bound` ``(j)``.

    The answer is ``(counts, sums)``: ``counts[c]`` an int, ``sums[c][j]`` a float.
    """

    columns: tuple[CleanedNumbers, ...]
    centroids: tuple[tuple[float, ...], ...]

    def midpoint(self, j: int) -> Fraction:
        column = self.columns[j]
        return (Fraction(column.lower) + Fraction(column.upper)) / 2

    def half_range(self, j: int) -> Fraction:
        column = self.columns[j]
        return (Fraction(column.upper) - Fraction(column.lower)) / 2

    def grid(self, j: int) -> float:
        """The grid of column j's shifted sums: that of values of magnitude h_j."""
        return sum_grid(float_up(self.half_range(j)))

    def step_bound(self, j: int) -> Fraction:
        """g·⌈h_j/g⌉: how far one record can move a cluster's rounded shifted sum of column j."""
        step = Fraction(self.grid(j))
        return step * math.ceil(self.half_range(j) / step)


@dataclass(frozen=True)
class Within:
    """``request`` computed on the records in ``groups`` only: those whose bucket of
    ``partition``'s column, under that column's rules (a missing value filled or dropped, an
    unknown one sent to the other bucket or dropped), is one of ``groups``. A record dropped by
    the partition column's rules is in no group. Requests restricted to disjoint groups read
    disjoint records, which is what lets their noise compose in parallel (footprint.py)."""

    request: Any
    partition: CategoryCounts
    groups: tuple[str, ...]

    def rows(self, table: TypedTable) -> np.ndarray:
        """Which rows of ``table`` are in the groups."""
        labels = table.labels[self.partition.column]
        index = {bucket: position for position, bucket in enumerate(self.partition.buckets)}
        wanted = np.asarray([index[group] for group in self.groups], dtype=np.int64)
        in_groups = np.isin(_bucket_of_value(labels, self.partition), wanted)
        return in_groups[labels.codes]


def _restricted_table(table: TypedTable, within: Sequence[Within]) -> TypedTable:
    """The rows in ``within``'s groups (all restricted to the same ones), with only the columns
    their requests read: a copy of what is needed, not of the whole batch."""
    numbers, labels = needed_columns([w.request for w in within])
    narrowed = TypedTable(
        row_count=table.row_count,
        numbers={name: table.numbers[name] for name in numbers},
        labels={name: table.labels[name] for name in labels},
    )
    return narrowed.take(within[0].rows(table))


Aggregate = (
    RowCount
    | GridSum
    | PresentCount
    | BinCounts
    | RankCounts
    | CategoryCounts
    | PairCounts
    | ClusterSums
    | Within
)


def needed_columns(requests: Iterable[Aggregate]) -> tuple[set[str], set[str]]:
    """The columns the requests read: (as numbers, as labels)."""
    numbers: set[str] = set()
    labels: set[str] = set()
    for request in requests:
        if isinstance(request, Within):
            inner_numbers, inner_labels = needed_columns([request.request])
            numbers |= inner_numbers
            labels |= inner_labels | {request.partition.column}
        elif isinstance(request, CleanedNumbers):
            numbers.add(request.column)
        elif isinstance(request, CategoryCounts):
            labels.add(request.column)
        elif isinstance(request, PairCounts):
            for side in (request.first, request.second):
                (numbers if isinstance(side, BinCounts) else labels).add(side.column)
        elif isinstance(request, ClusterSums):
            numbers.update(column.column for column in request.columns)
    return numbers, labels


# --- partial states, merge and finish ---------------------------------------------------------


def _category_state(labels: Labels, request: CategoryCounts) -> np.ndarray:
    per_value = np.bincount(labels.codes, minlength=len(labels.dictionary))
    bucket_of_value = _bucket_of_value(labels, request)
    kept = bucket_of_value >= 0
    counts = np.bincount(
        bucket_of_value[kept], weights=per_value[kept], minlength=len(request.buckets)
    )
    return counts.astype(np.int64)


def _row_buckets(table: TypedTable, side: CategoryCounts | BinCounts) -> np.ndarray:
    """Each row's bucket under its column's rules, -1 where the record is dropped: a category
    (or the other bucket), or a bin of the cleaned value ([a, b), the last [a, b])."""
    if isinstance(side, CategoryCounts):
        labels = table.labels[side.column]
        return _bucket_of_value(labels, side)[labels.codes]
    values = table.numbers[side.column]
    missing = np.isnan(values)
    filled = np.where(missing, side.fill if side.fill is not None else side.lower, values)
    edges = np.asarray(side.edges, dtype=float)
    bins = np.searchsorted(edges, np.clip(filled, side.lower, side.upper), side="right") - 1
    bins = np.minimum(bins, len(edges) - 2)
    if side.fill is None:
        bins[missing] = -1
    return bins


def _pair_state(table: TypedTable, request: PairCounts) -> np.ndarray:
    rows = _row_buckets(table, request.first)
    columns = _row_buckets(table, request.second)
    kept = (rows >= 0) & (columns >= 0)
    width = _bucket_count(request.second)
    cells = np.bincount(rows[kept] * width + columns[kept], minlength=request.cells)
    return cells.astype(np.int64)


def _bucket_of_value(labels: Labels, request: CategoryCounts) -> np.ndarray:
    """Each distinct value's bucket under the column's rules, -1 where the record is dropped."""
    buckets = list(request.buckets)
    categories = pa.array(list(request.categories), type=labels.dictionary.type)
    bucket_of_value = (
        pc.fill_null(pc.index_in(labels.dictionary, value_set=categories), -1)
        .to_numpy(zero_copy_only=False)
        .astype(np.int64)
    )
    if request.other is not None:
        bucket_of_value[bucket_of_value < 0] = buckets.index(request.other)
    missing = labels.code_of("")
    if missing is not None:
        if request.fill is None:
            bucket_of_value[missing] = -1
        elif request.fill in request.categories:
            bucket_of_value[missing] = request.categories.index(request.fill)
        else:
            bucket_of_value[missing] = (
                buckets.index(request.other) if request.other is not None else -1
            )
    return bucket_of_value


def nearest_centroid(
    columns: Sequence[np.ndarray], centroids: Sequence[Sequence[float]]
) -> np.ndarray:
    """Each row's nearest centroid (squared Euclidean distance; the lowest index on a tie),
    computed element-wise column by column: the same for a row whatever batch it is in."""
    rows = len(columns[0]) if columns else 0
    labels = np.zeros(rows, dtype=np.int64)
    best = np.full(rows, np.inf)
    distance, difference = np.empty(rows), np.empty(rows)
    for index, centre in enumerate(centroids):
        distance.fill(0.0)
        for values, coordinate in zip(columns, centre, strict=True):
            np.subtract(values, coordinate, out=difference)
            np.multiply(difference, difference, out=difference)
            distance += difference
        closer = distance < best
        labels[closer] = index
        np.minimum(best, distance, out=best)
    return labels


def _cleaned_rows(table: TypedTable, request: ClusterSums) -> list[np.ndarray]:
    """The request's columns, cleaned, for the records no column's rules leave out."""
    keep = np.ones(table.row_count, dtype=bool)
    cleaned = []
    for column in request.columns:
        values = table.numbers[column.column]
        missing = np.isnan(values)
        if column.fill is not None:
            values = np.where(missing, column.fill, values)
        else:
            keep &= ~missing
        cleaned.append(values)
    return [
        np.clip(values[keep], column.lower, column.upper)
        for values, column in zip(cleaned, request.columns, strict=True)
    ]


def _cluster_state(table: TypedTable, request: ClusterSums) -> tuple[np.ndarray, list[Any]]:
    """Per cluster, the count and each column's exact sum state of the cleaned values (the
    shift by the midpoint is applied exactly in :func:`finish`), block by block."""
    k, d = len(request.centroids), len(request.columns)
    columns = _cleaned_rows(table, request)
    grids = [sum_grid(max(abs(c.lower), abs(c.upper))) for c in request.columns]
    counts = np.zeros(k, dtype=np.int64)
    sums: list[Any] = [{} for _ in range(k * d)]
    rows = len(columns[0]) if columns else 0
    for start in range(0, rows, BLOCK_VALUES):
        block = [values[start : start + BLOCK_VALUES] for values in columns]
        labels = nearest_centroid(block, request.centroids)
        per_cluster = np.bincount(labels, minlength=k)
        counts += per_cluster.astype(np.int64)
        # Each column's values grouped by cluster: one sort (a radix sort on small integers),
        # then a slice per cluster.
        order = np.argsort(labels.astype(np.uint8 if k <= 256 else np.int64), kind="stable")
        ends = np.cumsum(per_cluster)
        for j, values in enumerate(block):
            grouped = values[order]
            for cluster in np.flatnonzero(per_cluster):
                part = exact_sum_state(
                    grouped[ends[cluster] - per_cluster[cluster] : ends[cluster]], grid=grids[j]
                )
                sums[cluster * d + j] = merge_sum_states(sums[cluster * d + j], part)
    return counts, sums


def _shifted_sum(state: dict[int, int], count: int, request: ClusterSums, j: int) -> float:
    """g·⌊(T − n·m_j)/g + ½⌋ for the exact sum T the state holds: |T − n·m_j| ≤ n·h_j, within
    the grid's exact range (exact_sums.py)."""
    total = sum((Fraction(s) * Fraction(2) ** e for e, s in state.items()), Fraction(0))
    shifted = total - count * request.midpoint(j)
    grid = Fraction(request.grid(j))
    return math.floor(shifted / grid + Fraction(1, 2)) * float(grid)


def partial(request: Aggregate, table: TypedTable) -> Any:
    """The request's state on one batch of (contribution-bounded) rows."""
    if isinstance(request, Within):
        return partial(request.request, _restricted_table(table, [request]))
    if isinstance(request, RowCount):
        return table.row_count
    if isinstance(request, ClusterSums):
        return _cluster_state(table, request)
    if isinstance(request, CategoryCounts):
        return _category_state(table.labels[request.column], request)
    if isinstance(request, PairCounts):
        return _pair_state(table, request)
    (state,) = _numbers_states([request], table.numbers[request.column])
    return state


# Numeric columns are cleaned and aggregated this many values at a time: each pass over a block
# stays in the CPU's cache and its temporaries are reused, where whole-column temporaries cost a
# page fault per 4 KiB (measured 2.5× slower for an exact sum of 10⁶ values).
BLOCK_VALUES = 1 << 15


def _numbers_state(request: CleanedNumbers, cleaned: np.ndarray) -> Any:
    if isinstance(request, GridSum):
        return exact_sum_state(cleaned, grid=request.grid)
    if isinstance(request, PresentCount):
        return len(cleaned)
    if isinstance(request, RankCounts):
        ordered = np.sort(cleaned)
        candidates = np.asarray(request.candidates, dtype=float)
        return np.stack(
            [
                np.searchsorted(ordered, candidates, side="left"),
                np.searchsorted(ordered, candidates, side="right"),
            ]
        ).astype(np.int64)
    assert isinstance(request, BinCounts)
    counts, _ = np.histogram(cleaned, bins=np.asarray(request.edges, dtype=float))
    return counts.astype(np.int64)


def _numbers_states(group: Sequence[CleanedNumbers], values: np.ndarray) -> list[Any]:
    """The states of requests that clean one column the same way, block by block."""
    states = [empty(request) for request in group]
    for start in range(0, len(values), BLOCK_VALUES):
        cleaned = group[0].clean(values[start : start + BLOCK_VALUES])
        states = [
            merge(request, state, _numbers_state(request, cleaned))
            for request, state in zip(group, states, strict=True)
        ]
    return states


def merge(request: Aggregate, a: Any, b: Any) -> Any:
    """Two batches' states as one; exact and order-free."""
    if isinstance(request, Within):
        return merge(request.request, a, b)
    if isinstance(request, GridSum):
        return merge_sum_states(a, b)
    if isinstance(request, ClusterSums):
        return a[0] + b[0], [merge_sum_states(x, y) for x, y in zip(a[1], b[1], strict=True)]
    return a + b


def empty(request: Aggregate) -> Any:
    if isinstance(request, Within):
        return empty(request.request)
    if isinstance(request, GridSum):
        return {}
    if isinstance(request, BinCounts):
        return np.zeros(len(request.edges) - 1, dtype=np.int64)
    if isinstance(request, RankCounts):
        return np.zeros((2, len(request.candidates)), dtype=np.int64)
    if isinstance(request, CategoryCounts):
        return np.zeros(len(request.buckets), dtype=np.int64)
    if isinstance(request, PairCounts):
        return np.zeros(request.cells, dtype=np.int64)
    if isinstance(request, ClusterSums):
        k, d = len(request.centroids), len(request.columns)
        return np.zeros(k, dtype=np.int64), [{} for _ in range(k * d)]
    return 0


def finish(request: Aggregate, state: Any) -> Any:
    """The exact answer: an int, a float (a grid sum) or a list of ints (counts per cell)."""
    if isinstance(request, Within):
        return finish(request.request, state)
    if isinstance(request, GridSum):
        return round_sum_state(state, request.grid)
    if isinstance(request, BinCounts | CategoryCounts | PairCounts):
        return [int(count) for count in state]
    if isinstance(request, RankCounts):
        return [[int(count) for count in row] for row in state]
    if isinstance(request, ClusterSums):
        counts, sums = state
        d = len(request.columns)
        return [int(count) for count in counts], [
            [_shifted_sum(sums[cluster * d + j], int(count), request, j) for j in range(d)]
            for cluster, count in enumerate(counts)
        ]
    return int(state)


def _source(request: Aggregate) -> tuple:
    """What a request reads: requests with the same source clean its values once."""
    if isinstance(request, CleanedNumbers):
        return ("numbers", request.column, request.lower, request.upper, request.fill)
    return (request,)


def partials(requests: Sequence[Aggregate], table: TypedTable) -> list[Any]:
    """Every request's state on one batch; a request asked twice is computed once, and requests
    that clean a numeric column the same way share one pass over it; requests restricted to the
    same groups share one selection of their rows."""
    restricted: dict[tuple, list[Within]] = {}
    for request in dict.fromkeys(requests):
        if isinstance(request, Within):
            restricted.setdefault((request.partition, request.groups), []).append(request)
    states_within: dict[Aggregate, Any] = {}
    for within in restricted.values():
        inner = partials([w.request for w in within], _restricted_table(table, within))
        states_within.update(zip(within, inner, strict=True))
    groups: dict[tuple, list[Aggregate]] = {}
    for request in dict.fromkeys(requests):
        if not isinstance(request, Within):
            groups.setdefault(_source(request), []).append(request)

    def states_of(group: list[Aggregate]) -> list[Any]:
        first = group[0]
        if isinstance(first, CleanedNumbers):
            return _numbers_states(group, table.numbers[first.column])  # type: ignore[arg-type]
        return [partial(first, table)]

    results = [states_of(group) for group in groups.values()]
    states = {
        request: state
        for group, result in zip(groups.values(), results, strict=True)
        for request, state in zip(group, result, strict=True)
    }
    states.update(states_within)
    return [states[request] for request in requests]


def merge_all(requests: Sequence[Aggregate], states: Iterable[list[Any]]) -> list[Any]:
    merged = [empty(request) for request in requests]
    for batch in states:
        merged = [merge(r, a, b) for r, a, b in zip(requests, merged, batch, strict=True)]
    return merged


# --- contribution bounding in memory ----------------------------------------------------------


def bound_contributions(table: TypedTable, person_key: str | None, per_person: int) -> TypedTable:
    """Keep at most ``per_person`` rows per person (first in file order) and drop rows without a
    key: a stable rule that uses the key only to bound contributions."""
    if person_key is None:
        return table
    keys = table.labels[person_key]
    codes = keys.codes
    # Rank of each row within its person, in file order: sort stably by key, number each run.
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    run_lengths = np.diff(np.r_[starts, len(codes)])
    rank = np.empty(len(codes), dtype=np.int64)
    rank[order] = np.arange(len(codes)) - np.repeat(starts, run_lengths)
    keep = rank < per_person
    missing = keys.code_of("")
    if missing is not None:
        keep &= codes != missing
    return table.take(keep)
