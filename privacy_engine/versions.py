"""Comparing one published number across two versions of a release (post-processing only).

Two versions of a series draw independent noise, so the same true value is published twice with
different errors. Each published 95% interval covers the true value with probability 0.95; when
the two intervals overlap, one true value can lie in both, and the change between the versions may
be noise alone. When they do not overlap, the true value most likely changed (or one of the two
5% misses happened). Overlap is the reading the published intervals support without any further
assumption about the noise's shape (Laplace, geometric, Gaussian, clamped or not); it is
conservative: a real change smaller than the two half-widths together is not flagged.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class ValueChange:
    """One number in two versions: ``difference`` is ``after - before`` (None when either is
    missing); ``within_intervals`` is whether the two published 95% intervals overlap (None when
    either version publishes no interval for it)."""

    before: float | None
    after: float | None
    difference: float | None
    within_intervals: bool | None


def _interval(ci95: object) -> tuple[float, float] | None:
    if not isinstance(ci95, list | tuple) or len(ci95) != 2:
        return None
    low, high = ci95
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (low, high)):
        return None
    return float(low), float(high)


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def compare_published(
    *, before: object, before_ci95: object, after: object, after_ci95: object
) -> ValueChange:
    """Compare a number published by two versions with their 95% intervals ``[low, high]``.

    Values that are not numbers (absent from one version) give no difference; intervals that are
    absent give no verdict."""
    first, second = _number(before), _number(after)
    difference = None if first is None or second is None else second - first
    intervals = _interval(before_ci95), _interval(after_ci95)
    within = None
    if difference is not None and intervals[0] is not None and intervals[1] is not None:
        (low_1, high_1), (low_2, high_2) = intervals
        within = low_1 <= high_2 and low_2 <= high_1
    return ValueChange(before=first, after=second, difference=difference, within_intervals=within)
