"""Sums computed exactly, so that the published sensitivity bounds how far the answers the engine
really computes for neighbouring tables can differ, rounding included.

A floating-point sum carries rounding of about one ulp of its total. Next to max(|lower|, |upper|)
that is negligible, but a Blowfish sensitivity (θ, a partition width w, a narrow range) can be
smaller than one ulp of a large total: with θ = 1e-8 on bounds [0, 10⁶], neighbouring float sums
can differ by far more than θ, and noise calibrated to θ would not hide the change. So a sum is
computed as follows, and the argument holds for every table:

1. Each value is clamped to [lower, upper] (``np.clip`` returns the value or a bound: exact), so
   |x| ≤ m = max(|lower|, |upper|); at most ``MAX_ROWS`` rows are summed (a public cap).
2. Let T = Σ x be the exact (rational) sum. The engine answers Q(T) = g·⌊T/g + ½⌋: T rounded half
   up to a multiple of g, a power of two chosen from public facts only (m and ``MAX_ROWS``, never
   the private number of rows) with ``MAX_ROWS``·(m/g + 1) ≤ 2⁵³, so every multiple of g up to
   the largest possible |T| is an exact float. :func:`grid_sum` computes Q(T) with no rounding at
   all: every value is an integer times a power of two, T is summed exactly as integers per
   power of two (:func:`exact_sum_state`, mergeable across batches and machines), and the
   rounding to the grid is done on the exact rational.
3. Q is monotone and commutes with shifts by whole grid steps, and ⌊a⌋ − ⌊a − s⌋ ≤ ⌈s⌉ for
   s ≥ 0. So if neighbouring tables have |T − T'| ≤ Δ, then |Q(T) − Q(T')| ≤ g·⌈Δ/g⌉, the
   published sensitivity, computed from the parameters as exact rationals (:func:`ceil_to_grid`).
   It equals Δ whenever Δ is a multiple of g, as whole-number bounds, θ and w are while
   m ≤ 9·10⁵ (g ≤ 1 there; g = 2⁻¹³ for bounds [0, 100]).
4. A vector of sums is rounded componentwise. Where a policy bounds the L1 distance over J summed
   columns by θ, Σⱼ gⱼ·⌈dⱼ/gⱼ⌉ ≤ G·(⌈θ/G⌉ + J − 1) with G the coarsest of their grids (each gⱼ
   divides G): one record may move each column's sum by one grid step beyond its share of θ.
5. The mechanisms (OpenDP's Laplace and Gaussian measurements) take Q(T) with that sensitivity as
   their d_in; their own floating-point care is part of their privacy maps.

Rounding moves a published sum by at most g/2 (6·10⁻⁵ for bounds [0, 100]), far below the noise.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from privacy_engine.schema import MAX_ROWS

# Largest |value| / grid allowed, so that MAX_ROWS·(|value|/grid + 1) ≤ 2⁵³.
_STEPS_PER_VALUE = Fraction(2**53, MAX_ROWS) - 1
# Grids stay normal floats, so scaling a value by the grid is exact.
_MIN_GRID_EXPONENT = -1022


def sum_grid(magnitude: float) -> float:
    """The grid g of a sum of values with |x| ≤ ``magnitude``: the smallest power of two
    (≥ 2⁻¹⁰²²) with ``MAX_ROWS``·(magnitude/g + 1) ≤ 2⁵³."""
    exact = Fraction(magnitude)
    ratio = magnitude / float(_STEPS_PER_VALUE)
    # Start just below the answer (frexp's exponent is ⌈log₂⌉ or one more) and walk up.
    exponent = _MIN_GRID_EXPONENT
    if ratio > 0:
        exponent = max(exponent, math.frexp(ratio)[1] - 2)
    while exact > _STEPS_PER_VALUE * Fraction(2) ** exponent:
        exponent += 1
    return math.ldexp(1.0, exponent)


def grid_sum(values: np.ndarray, grid: float) -> float:
    """Q(Σ values): the exact sum rounded half up to a multiple of ``grid``, with no rounding
    anywhere else. ``values`` are finite, at most ``MAX_ROWS``, and |x| ≤ m for the m whose
    :func:`sum_grid` is ``grid``."""
    values = np.asarray(values, dtype=float)
    if values.size > MAX_ROWS:
        raise ValueError(f"an exact sum takes at most {MAX_ROWS} values")
    return round_sum_state(exact_sum_state(values, grid=grid), grid)


# A sum state splits each 53-bit integer mantissa in three parts of at most 18 bits: per
# exponent, float64 bincount sums of up to 2³⁴ such parts stay below 2⁵³, hence exact.
_PART_BITS = 18
_PART_MASK = (1 << _PART_BITS) - 1
MAX_BATCH_ROWS = 2**34


# Values per chunk: keeps a chunk's temporaries in the CPU's cache (2.5× faster than chunks of
# 2²² values at 10⁶ values) and every chunk's sums of whole steps within 64-bit integers (parts
# below 2⁴⁰, at most 2²² of them).
CHUNK_VALUES = 1 << 15
# The steps are this many binary places finer than the grid.
_FINE_PLACES = 40
_FINE_MASK = (1 << _FINE_PLACES) - 1


def exact_sum_state(values: np.ndarray, *, grid: float | None = None) -> dict[int, int]:
    """The exact sum of finite floats as {e: S}, meaning Σ S·2^e, with no per-row Python. States
    of parts of a table merge exactly (:func:`merge_sum_states`), in any order, on any machine.

    With the ``grid`` g of the values' magnitude (:func:`sum_grid`; |x| ≤ m), most values are
    whole multiples of the step h = g·2⁻⁴⁰: every x with ulp(x) ≥ h, such as every |x| ≥ g·2¹²
    (amounts in cents, ages). For those, k = x/h is exact (scaling by a power of two), a whole
    number with |k| < 2⁶⁰, and the k are summed in 64-bit integers split at 2⁴⁰. Only the rare
    others (tiny magnitudes with many significant bits) take the general path by exponent."""
    values = np.asarray(values, dtype=float)
    if values.size > MAX_BATCH_ROWS:
        raise ValueError(f"a batch holds at most {MAX_BATCH_ROWS} values")
    state: dict[int, int] = {}
    for start in range(0, values.size, CHUNK_VALUES):
        chunk = values[start : start + CHUNK_VALUES]
        part = _exponent_sums(chunk) if grid is None else _grid_sums(chunk, grid)
        state = merge_sum_states(state, part)
    return state


def _grid_sums(values: np.ndarray, grid: float) -> dict[int, int]:
    step = grid * 2.0**-_FINE_PLACES
    if step < 2.0**_MIN_GRID_EXPONENT:  # steps would be subnormal: scaling is no longer exact
        return _exponent_sums(values)
    with np.errstate(over="ignore"):  # a value too large overflows to ±inf: refused below
        steps = values * (1.0 / step)
    # The grid's contract (sum_grid): |x| ≤ m with m/g within _STEPS_PER_VALUE. NaN fails too.
    limit = float(_STEPS_PER_VALUE) * 2.0**_FINE_PLACES
    if values.size and not max(-float(steps.min()), float(steps.max())) <= limit:
        raise ValueError("values beyond the magnitude of their grid")
    # Truncation toward zero; a whole number of steps converts exactly (|k| < 2⁶⁰), and a value
    # that is not one is below 2⁵², so its truncation differs from it as a float too.
    whole = steps.astype(np.int64)
    other = whole != steps
    rest = values[:0]
    if other.any():
        rest = values[other]
        whole[other] = 0
    total = (int((whole >> _FINE_PLACES).sum()) << _FINE_PLACES) + int((whole & _FINE_MASK).sum())
    state = {math.frexp(step)[1] - 1: total} if total else {}
    return merge_sum_states(state, _exponent_sums(rest))


def _exponent_sums(values: np.ndarray) -> dict[int, int]:
    """Each value is m·2^e for a whole m with |m| < 2⁵³ (frexp, then scaling by 2⁵³: exact); the
    m of each exponent are summed exactly in three 18-bit parts."""
    if values.size == 0:
        return {}
    if values.size > MAX_BATCH_ROWS:
        raise ValueError(f"a batch holds at most {MAX_BATCH_ROWS} values")
    if not np.isfinite(values).all():
        raise ValueError("an exact sum takes finite values only")
    fraction, exponent = np.frexp(values)
    mantissa = np.ldexp(fraction, 53).astype(np.int64)
    exponent = exponent.astype(np.int64) - 53
    lowest = int(exponent.min())
    index = exponent - lowest
    length = int(index.max()) + 1
    # m = high·2³⁶ + middle·2¹⁸ + low exactly (shifts floor; the masked parts are ≥ 0).
    parts = (
        mantissa >> (2 * _PART_BITS),
        (mantissa >> _PART_BITS) & _PART_MASK,
        mantissa & _PART_MASK,
    )
    high, middle, low = (
        np.bincount(index, weights=part.astype(float), minlength=length) for part in parts
    )
    state: dict[int, int] = {}
    for position in np.flatnonzero((high != 0) | (middle != 0) | (low != 0)):
        total = (
            (int(high[position]) << (2 * _PART_BITS))
            + (int(middle[position]) << _PART_BITS)
            + int(low[position])
        )
        if total:
            state[lowest + int(position)] = total
    return state


def merge_sum_states(a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
    merged = dict(a)
    for exponent, total in b.items():
        merged[exponent] = merged.get(exponent, 0) + total
    return merged


def round_sum_state(state: dict[int, int], grid: float) -> float:
    """g·⌊T/g + ½⌋ for the exact T the state holds. With |T| within MAX_ROWS values of the grid's
    magnitude, |T/g| < 2⁵³, so the product is an exact float."""
    total = sum((Fraction(s) * Fraction(2) ** e for e, s in state.items()), Fraction(0))
    steps = math.floor(total / Fraction(grid) + Fraction(1, 2))
    return steps * grid


def ceil_to_grid(amount: Fraction, grid: float) -> Fraction:
    """g·⌈amount/g⌉: the bound on rounded sums when exact sums differ by at most ``amount``."""
    step = Fraction(grid)
    return step * math.ceil(amount / step)


def float_up(amount: Fraction) -> float:
    """The smallest float ≥ ``amount``: a published bound never rounds down."""
    value = float(amount)
    if Fraction(value) < amount:
        value = math.nextafter(value, math.inf)
    return value


def sqrt_up(amount: Fraction) -> float:
    """The smallest float whose square is ≥ ``amount``, for L2 sensitivities."""
    value = math.sqrt(float_up(amount))
    while Fraction(value) ** 2 < amount:
        value = math.nextafter(value, math.inf)
    while value > 0 and Fraction(math.nextafter(value, 0.0)) ** 2 >= amount:
        value = math.nextafter(value, 0.0)
    return value
