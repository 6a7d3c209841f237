"""Numbers on pages as people read them. The rounding and notation are the engine's
(privacy_engine.presentation); these filters only pick the arguments out of template values."""

from collections.abc import Iterable, Mapping
from typing import Any

from django import template

from privacy_engine.presentation import (
    format_delta,
    format_epsilon,
    format_published,
    format_significant,
    interval_halfwidth,
    to_decimal,
)

register = template.Library()

# The figures of a budget (releases.selectors.Budget) shown side by side.
BUDGET_FIGURES = ("total", "spent", "reserved", "remaining")


def _siblings(among: Any) -> Iterable[Any]:
    """The values shown beside a figure, which it must stay distinguishable from: a budget's
    figures, a mapping's values or a list."""
    if among is None or among == "":
        return ()
    if all(hasattr(among, name) for name in BUDGET_FIGURES):
        return [getattr(among, name) for name in BUDGET_FIGURES]
    if isinstance(among, Mapping):
        return list(among.values())
    if isinstance(among, Iterable) and not isinstance(among, str):
        return list(among)
    return (among,)


@register.filter
def epsilon(value: Any, among: Any = None) -> str:
    """ε written short (0.25, 0.3333, 5 × 10⁻⁵); ``among`` (a budget, or a list) the figures
    shown beside it, kept distinguishable. Empty for None."""
    return "" if value is None else format_epsilon(value, among=_siblings(among))


@register.filter
def delta(value: Any, among: Any = None) -> str:
    """δ in scientific notation (1.3 × 10⁻⁹); ``among`` as for :func:`epsilon`. Empty for None."""
    return "" if value is None else format_delta(value, among=_siblings(among))


def _ends(interval: Any) -> tuple[Any, Any] | None:
    if isinstance(interval, Mapping):
        return interval.get("low"), interval.get("high")
    if isinstance(interval, list | tuple) and len(interval) == 2:
        return interval[0], interval[1]
    return None


@register.filter
def published(value: Any, interval: Any = None) -> str:
    """A published value (or an end of its interval) rounded to the precision its 95% interval
    supports: ``interval`` is ``[low, high]``, a row with ``low`` and ``high``, or a half-width.
    The interval's own ends (a value equal to one) round outwards. Empty for None; anything else
    that is not a number as is."""
    if value is None:
        return ""
    ends = _ends(interval)
    if ends is None:
        return format_published(value, halfwidth=interval)
    rounding = "down" if value == ends[0] else "up" if value == ends[1] else "nearest"
    return format_published(value, halfwidth=interval_halfwidth(*ends), rounding=rounding)


@register.filter
def magnitude(value: Any, significant: int = 2) -> str:
    """An error, a half-width or a noise scale to ``significant`` digits, thousands separated
    (60,000 rather than 60000.000). Empty for None."""
    return "" if value is None else format_significant(value, significant=significant, grouped=True)


@register.filter
def exact(value: Any) -> str:
    """An exact decimal without trailing zeros (0.500000000000 → 0.5), for values scripts read
    back (data attributes), where rounding would change the amount."""
    number = to_decimal(value)
    if number is None:
        return "" if value is None else str(value)
    return format(number.normalize(), "f") if number else "0"
