"""Lenient parsing of query-string values, shared by pages and the API."""

from datetime import UTC, datetime

from django.utils import timezone
from django.utils.dateparse import parse_datetime


def parse_iso_datetime(text: str) -> datetime | None:
    """An aware datetime from ISO-8601 text (naive means UTC), or ``None`` if it is not one,
    including well-formed but impossible dates such as month 13."""
    try:
        value = parse_datetime(text.strip())
    except ValueError:
        return None
    if value is not None and timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    return value
