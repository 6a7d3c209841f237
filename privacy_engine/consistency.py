"""Consistency across published tables: post-processing that makes every published 2-way table
(and every histogram of one of its columns) agree on their shared totals, with no negative count.

No vetted library offers this for tables of different mechanisms, so it is written here, after
Qardaji, Yang and Li's PriView (2014) and the statistics offices' raking:

1. The grand total is the inverse-variance weighted mean of every table's noisy total.
2. Each shared variable (a column with its buckets) gets one consensus 1-way table: the
   inverse-variance weighted mean, per bucket, of every table's noisy sum over that bucket, shifted
   equally to sum to the grand total (least squares), then made non-negative by setting negative
   buckets to 0 and scaling the rest back to the grand total.
3. Each 2-way table is raked (iterative proportional fitting) from its noisy cells, negatives set
   to 0 (or, when those zeros make the margins unreachable, to a tiny positive start), until its
   row and column sums are the consensus tables; raking keeps every cell non-negative. A
   histogram is its consensus table.

Everything here reads only noisy answers and public facts (the noise's variance), so it costs no
privacy. Each published number's interval is widened by how far this moved it from its own noisy
estimate (:func:`widened_interval`), so it keeps its coverage.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privacy_engine import ranges

# Raking stops when every margin is within this fraction of the total (plus this much), or after
# RAKING_ROUNDS rounds (the last column scaling leaves the column sums exact).
RAKING_TOLERANCE = 1e-10
RAKING_ROUNDS = 5000
# Rounds tried from the noisy cells themselves before starting again from a positive floor.
ZERO_START_ROUNDS = 500
# A noisy cell at or below 0 starts raking at this fraction of a cell's even share: raking keeps a
# zero at zero, which could make the margins impossible to meet.
START_FLOOR = 1e-6


@dataclass(frozen=True)
class NoisyTable:
    """One statistic's noisy cells, before any post-processing, and how to publish them.

    ``variables`` name its axes (a column with its buckets: two tables share a variable when both
    match); ``cells`` has one axis per variable; ``noise`` and ``scale`` are its mechanism's
    (``"geometric"`` or ``"gaussian"``); ``publish`` turns consistent cells into the statistic's
    (value, ci95)."""

    variables: tuple[Hashable, ...]
    cells: np.ndarray
    noise: str
    scale: float
    publish: Callable[[np.ndarray], tuple[Any, Any]]

    @property
    def cell_variance(self) -> float:
        return ranges.node_variance(self.noise, self.scale)


def drops_records(column: Any) -> bool:
    """Whether a column's declared rules can leave a record out (a missing value without a fill;
    a categorical value outside the list without an other bucket). Tables whose columns can do
    that count fewer records than a histogram of one of them, so their totals are not the same
    quantity and are not made to agree (the rules are public; whether they dropped anything is
    not, so it is never looked at)."""
    if getattr(column, "fill", None) is None:
        return True
    return getattr(column, "kind", "") == "categorical" and column.other is None


def variable_key(name: str, buckets: tuple[str, ...], universe: tuple[str, ...]) -> Hashable:
    """What makes two statistics' totals over a column the same quantity: the column, its
    buckets, and the columns of the statistic that can drop records (the records counted)."""
    return (name, buckets, universe)


def _projection(table: NoisyTable, axis: int) -> tuple[np.ndarray, float]:
    """The table's noisy sums per bucket of axis ``axis``, and the variance of each."""
    if table.cells.ndim == 1:
        return table.cells.astype(float), table.cell_variance
    other = 1 - axis
    summed = table.cells.shape[other]
    return table.cells.sum(axis=other).astype(float), summed * table.cell_variance


def non_negative(values: np.ndarray, total: float) -> np.ndarray:
    """Negative entries set to 0, the rest scaled to ``total`` (spread evenly if none is left)."""
    kept = np.maximum(values, 0.0)
    present = kept.sum()
    if total <= 0.0:
        return np.zeros_like(kept)
    if present <= 0.0:
        return np.full_like(kept, total / len(kept))
    return kept * (total / present)


def consensus(tables: Sequence[NoisyTable]) -> tuple[float, dict[Hashable, np.ndarray]]:
    """The grand total and each variable's consensus 1-way table (steps 1 and 2)."""
    totals = np.array([float(t.cells.sum()) for t in tables])
    total_variances = np.array([t.cells.size * t.cell_variance for t in tables])
    grand = max(0.0, float(np.sum(totals / total_variances) / np.sum(1.0 / total_variances)))
    sums: dict[Hashable, np.ndarray] = {}
    weights: dict[Hashable, float | np.ndarray] = {}
    for table in tables:
        for axis, variable in enumerate(table.variables):
            projection, variance = _projection(table, axis)
            sums[variable] = sums.get(variable, 0.0) + projection / variance
            weights[variable] = weights.get(variable, 0.0) + 1.0 / variance
    margins = {}
    for variable, weighted in sums.items():
        mean = weighted / weights[variable]
        mean = mean + (grand - mean.sum()) / len(mean)
        margins[variable] = non_negative(mean, grand)
    return grand, margins


def rake(start: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Non-negative cells near ``start`` (by raking) whose row and column sums are ``rows`` and
    ``columns`` (non-negative, with equal sums)."""
    total = float(rows.sum())
    if total <= 0.0:
        return np.zeros_like(start, dtype=float)
    tolerance = RAKING_TOLERANCE * (total + 1.0)
    kept = np.maximum(start.astype(float), 0.0)
    # From the noisy cells with negatives at 0 (a table that already fits stays as it is); if
    # its zeros make the margins unreachable, from a tiny positive floor instead.
    raked, fits = _raked(kept, rows, columns, tolerance, ZERO_START_ROUNDS)
    if fits:
        return raked
    floor = START_FLOOR * total / start.size
    raked, _ = _raked(np.maximum(kept, floor), rows, columns, tolerance, RAKING_ROUNDS)
    return raked


def _raked(
    cells: np.ndarray, rows: np.ndarray, columns: np.ndarray, tolerance: float, rounds: int
) -> tuple[np.ndarray, bool]:
    """Raking of ``cells`` (a copy): the cells, and whether their margins came within
    ``tolerance`` within ``rounds`` rounds."""
    cells = cells.copy()
    for _ in range(rounds):
        if (
            np.max(np.abs(cells.sum(axis=1) - rows)) <= tolerance
            and np.max(np.abs(cells.sum(axis=0) - columns)) <= tolerance
        ):
            return cells, True
        cells *= _ratio(rows, cells.sum(axis=1))[:, None]
        cells *= _ratio(columns, cells.sum(axis=0))[None, :]
    return cells, False


def _ratio(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """target / current, 0 where the current sum is 0 (its target is then 0 too)."""
    return np.divide(target, current, out=np.zeros_like(target, dtype=float), where=current > 0)


def make_consistent(tables: Sequence[NoisyTable]) -> list[np.ndarray]:
    """Consistent, non-negative cells for each table, in order (steps 1 to 3)."""
    _, margins = consensus(tables)
    out = []
    for table in tables:
        if table.cells.ndim == 1:
            out.append(margins[table.variables[0]])
        else:
            first, second = table.variables
            out.append(rake(table.cells, margins[first], margins[second]))
    return out


def widened_interval(published: float, noisy: float, halfwidth: float) -> list[float]:
    """[p − d − h, p + d + h] with d = |p − n|, the low end at least 0: it holds the truth t
    whenever the noisy estimate n was within h of it, since |p − t| ≤ |p − n| + |n − t|."""
    reach = abs(published - noisy) + halfwidth
    return [max(0.0, published - reach), published + reach]


def sum_halfwidth(cells: int, noise: str, scale: float) -> float:
    """The 95% half-width of the sum of ``cells`` independent noises (ranges.error_halfwidth)."""
    return ranges.error_halfwidth(np.ones(cells), noise, scale)


def components(tables: Sequence[NoisyTable]) -> list[list[int]]:
    """Groups of tables (their indexes) linked by shared variables, each in order."""
    parent = list(range(len(tables)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[Hashable, int] = {}
    for index, table in enumerate(tables):
        for variable in table.variables:
            if variable in owner:
                parent[root(index)] = root(owner[variable])
            else:
                owner[variable] = index
    groups: dict[int, list[int]] = {}
    for index in range(len(tables)):
        groups.setdefault(root(index), []).append(index)
    return list(groups.values())
