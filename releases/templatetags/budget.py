from decimal import Decimal

from django import template

register = template.Library()


@register.inclusion_tag("partials/budget_bar.html")
def budget_bar(budget) -> dict:
    """Spent, reserved and remaining shares of a budget as percentages for a stacked bar."""
    total = budget.total or Decimal(1)

    def share(amount: Decimal) -> str:
        return f"{max(Decimal(0), amount) / total * 100:.1f}"

    return {
        "budget": budget,
        "spent": share(budget.spent),
        "reserved": share(budget.reserved),
        "remaining": share(budget.remaining),
    }


@register.filter
def epsilon(value) -> str:
    """An ε amount without trailing zeros (0.500000000000 → 0.5)."""
    return format(Decimal(value).normalize(), "f")
