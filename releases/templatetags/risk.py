"""Filters the risk card (templates/partials/risk_card.html) writes its numbers with."""

import math

from django import template

register = template.Library()


@register.filter
def percent(probability) -> str:
    """A probability as a percentage people read: one decimal, never rounded up to a certainty
    or down to zero ("above 99.9%", "below 0.1%"), so 0.99996 never reads "100.0%"."""
    value = float(probability) * 100
    if value >= 100:
        return "100%"
    if value > 99.9:
        return "above 99.9%"
    if 0 < value < 0.1:
        return "below 0.1%"
    return f"{value:.1f}%"


@register.filter
def one_in(probability) -> str:
    """A small probability as "1 in N", N to three significant digits with thousands
    separators (1.2755e-9 → "1 in 784,000,000")."""
    value = float(probability)
    if not value > 0:
        return "0"
    if value >= 1:
        return "1 in 1"
    chances = 1 / value
    digits = max(0, math.floor(math.log10(chances)) - 2)
    rounded = round(chances / 10**digits) * 10**digits
    return f"1 in {rounded:,.0f}"
