"""Lenient parsing of query-string values, shared by pages and the API."""

import re
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


def audit_filters_parse(params) -> tuple[dict, dict[str, list[str]]]:
    """The audit trail's filters from query parameters (``dataset``, ``actor``, ``action``,
    ``since``), and errors naming each bad one; bad filters are left out of the result."""
    errors: dict[str, list[str]] = {}
    filters: dict = {"actor": params.get("actor") or None, "action": params.get("action") or None}
    dataset = params.get("dataset") or None
    if dataset is not None:
        if re.fullmatch(r"[0-9]+", dataset):
            filters["dataset"] = int(dataset)
        else:
            errors["dataset"] = ["must be a dataset id"]
    since = params.get("since") or None
    if since is not None:
        filters["since"] = parse_iso_datetime(since)
        if filters["since"] is None:
            errors["since"] = ["must be an ISO-8601 date and time"]
    return filters, errors
