"""Filters the risk card (templates/partials/risk_card.html) writes its numbers with, in the
active language."""

import math

from django import template
from django.utils.translation import gettext

register = template.Library()


@register.filter
def percent(probability) -> str:
    """An upper bound on a probability as a percentage people read: one decimal, rounded up (a
    bound must not read lower than it is), never a certainty or zero by rounding ("above
    99.9%", "below 0.1%")."""
    value = float(probability) * 100
    if value >= 100:
        return "100%"
    if value > 99.9:
        return gettext("above 99.9%")
    if 0 < value < 0.1:
        return gettext("below 0.1%")
    return f"{math.ceil(round(value * 10, 9)) / 10:.1f}%"


@register.filter
def one_in(probability) -> str:
    """A small probability as "1 in N", N rounded down to three significant digits so the chance
    never reads smaller than it is (1.2755e-9 → "1 in 783,000,000"); from 1% up, a percentage."""
    value = float(probability)
    if not value > 0:
        return "0"
    if value >= 0.01:
        return percent(value)
    chances = 1 / value
    digits = max(0, math.floor(math.log10(chances)) - 2)
    rounded = math.floor(chances / 10**digits) * 10**digits
    return gettext("1 in %(chances)s") % {"chances": f"{rounded:,.0f}"}
