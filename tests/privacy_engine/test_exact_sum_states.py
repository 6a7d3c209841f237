"""Exact sum states (exact_sums.py): whatever the path (whole steps of the fine grid, exponents)
and however a table is cut into chunks, blocks or batches, the state holds the exact rational
sum."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy_engine import aggregates, exact_sums
from privacy_engine.aggregates import BinCounts, GridSum, PresentCount, finish, partials
from privacy_engine.columnar import TypedTable
from privacy_engine.exact_sums import (
    exact_sum_state,
    merge_sum_states,
    round_sum_state,
    sum_grid,
)


def exact(state: dict[int, int]) -> Fraction:
    return sum((Fraction(s) * Fraction(2) ** e for e, s in state.items()), Fraction(0))


@st.composite
def bounded_values(draw):
    magnitude = draw(st.sampled_from([1e-300, 1e-6, 1.0, 100.0, 2e5, 9e5, 1e15]))
    values = draw(
        st.lists(
            st.floats(min_value=-magnitude, max_value=magnitude, allow_subnormal=True),
            max_size=40,
        )
    )
    return magnitude, np.array(values, dtype=float)


@settings(max_examples=400, deadline=None)
@given(bounded_values(), st.integers(min_value=1, max_value=7))
def test_every_path_and_chunking_holds_the_exact_sum(case, chunk):
    # given values within their grid's magnitude, cut into chunks of ``chunk`` values
    magnitude, values = case
    truth = sum((Fraction(v) for v in values.tolist()), Fraction(0))

    # when
    original, exact_sums.CHUNK_VALUES = exact_sums.CHUNK_VALUES, chunk
    try:
        on_grid = exact_sum_state(values, grid=sum_grid(magnitude))
        by_exponent = exact_sum_state(values)
        halves = merge_sum_states(
            exact_sum_state(values[: len(values) // 2], grid=sum_grid(magnitude)),
            exact_sum_state(values[len(values) // 2 :]),
        )
    finally:
        exact_sums.CHUNK_VALUES = original

    # then
    assert exact(on_grid) == exact(by_exponent) == exact(halves) == truth


def test_values_beyond_their_grids_magnitude_are_refused():
    with pytest.raises(ValueError, match="beyond the magnitude"):
        exact_sum_state(np.array([1e300]), grid=sum_grid(1.0))


def test_a_dropped_chunk_is_caught(monkeypatch):
    # given a chunked sum that loses its last chunk (a deliberately broken one)
    values = np.arange(10, dtype=float)
    monkeypatch.setattr(exact_sums, "CHUNK_VALUES", 3)
    real = exact_sums._grid_sums
    calls = []

    def losing(chunk, grid):
        calls.append(1)
        return real(chunk, grid) if len(calls) < 4 else {}

    monkeypatch.setattr(exact_sums, "_grid_sums", losing)

    # when / then the comparison above would fail
    assert exact(exact_sum_state(values, grid=sum_grid(10.0))) != 45


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_value_is_refused_on_every_path(bad):
    with pytest.raises(ValueError, match="finite"):
        exact_sum_state(np.array([1.0, bad]))
    with pytest.raises(ValueError, match="beyond the magnitude"):
        exact_sum_state(np.array([1.0, bad]), grid=sum_grid(1.0))


def test_many_values_at_the_edge_of_their_grid_are_refused_not_overflowed():
    # given values just beyond what the grid's contract allows (found by review: 4096 values of
    # g·2⁵² used to overflow the chunk's integer sum and give 0)
    grid = sum_grid(1.0)
    values = np.full(4096, grid * 2.0**52)

    # when / then
    with pytest.raises(ValueError, match="beyond the magnitude"):
        exact_sum_state(values, grid=grid)


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.floats(min_value=-1e6, max_value=1e6), st.just(math.nan)), max_size=40
    ),
    fill=st.one_of(st.none(), st.just(3.25)),
    block=st.integers(min_value=1, max_value=7),
)
def test_numeric_requests_give_the_same_states_whatever_the_block_size(values, fill, block):
    # given: a column's sum, count and histogram, cleaned the same way
    column = np.array(values, dtype=float)
    table = TypedTable(row_count=len(values), numbers={"x": column}, labels={})
    shared = {"column": "x", "lower": -500.0, "upper": 1000.0, "fill": fill}
    requests = [
        GridSum(**shared, grid=sum_grid(1000.0)),
        PresentCount(**shared),
        BinCounts(**shared, edges=(-500.0, 0.0, 10.0, 1000.0)),
    ]
    cleaned = np.clip(
        np.where(np.isnan(column), fill, column) if fill is not None else column[~np.isnan(column)],
        -500.0,
        1000.0,
    )

    # when: blocks of a few values (a block boundary inside the data) against one block
    original = aggregates.BLOCK_VALUES
    try:
        aggregates.BLOCK_VALUES = block
        blocked = [finish(r, s) for r, s in zip(requests, partials(requests, table), strict=True)]
    finally:
        aggregates.BLOCK_VALUES = original

    # then: the whole column's exact answers
    assert blocked == [
        round_sum_state(exact_sum_state(cleaned, grid=requests[0].grid), requests[0].grid),
        len(cleaned),
        np.histogram(cleaned, bins=[-500.0, 0.0, 10.0, 1000.0])[0].tolist(),
    ]
