"""English the engine or a worker stored (a failure's reason, a refusal), shown in the reader's
language: ``{{ release.failure_reason|engine_text }}`` (releases/translations.py)."""

from django import template

from releases.translations import engine_text as translated

register = template.Library()


@register.filter
def engine_text(text: str | None) -> str:
    return translated(text)
