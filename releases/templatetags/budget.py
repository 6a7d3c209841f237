from decimal import Decimal

from django import template

from releases.templatetags import numbers

register = template.Library()
# The number filters, so that a template loading this library writes ε and δ as every page does.
for _name in ("epsilon", "delta", "exact", "published", "magnitude"):
    register.filter(_name, numbers.register.filters[_name])


@register.inclusion_tag("partials/budget_bar.html")
def budget_bar(budget) -> dict:
    """Spent, reserved and remaining shares of a budget as percentages for a stacked bar."""
    total = budget.total or Decimal(1)

    def share(amount: Decimal) -> str:
        return f"{max(Decimal(0), amount) / total * 100:.1f}"

    spent, reserved = share(budget.spent), share(budget.reserved)
    return {
        "budget": budget,
        "spent": spent,
        "reserved": reserved,
        "remaining": share(budget.remaining),
        # Where the remaining part starts: after the spent and reserved ones, as drawn.
        "remaining_from": f"{Decimal(spent) + Decimal(reserved):.1f}",
    }


@register.filter
def readable(value):
    """A number as people read it: at most 6 significant digits, so that a float's last-digit
    artefacts (0.26666666666666666, 3.7500000000000004) do not show; anything else as is."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return value
    return f"{value:.6g}"


@register.filter
def share(value) -> str:
    """A composition share (an exact decimal, up to ~55 digits when a float's binary expansion
    is written out) to 12 significant digits, marked "≈" when that rounds it."""
    try:
        exact = Decimal(str(value))
    except (ArithmeticError, ValueError):
        return str(value)
    shown = Decimal(f"{exact:.12g}")
    text = format(shown.normalize(), "f")
    return text if shown == exact else f"≈ {text}"
