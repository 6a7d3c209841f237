"""Lenient parsing of query-string values, shared by pages and the API."""

import math
import re
from datetime import UTC, datetime

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

NUL_MESSAGE = "must not contain a NUL character"
SINCE_MESSAGE = "must be an ISO-8601 date and time"
SINCE_RANGE_MESSAGE = "must be an ISO-8601 date and time between the years 1 and 9999 in UTC"


def parse_iso_datetime(text: str) -> datetime | None:
    """An aware datetime in UTC from ISO-8601 text (naive means UTC), or ``None`` if it is not
    one, including well-formed but impossible dates such as month 13 and dates that leave the
    years 1–9999 once converted to UTC (``0001-01-01T00:00+01:00``)."""
    value, _ = _parse_iso_datetime(text)
    return value


def _parse_iso_datetime(text: str) -> tuple[datetime | None, str | None]:
    try:
        value = parse_datetime(text.strip())
    except ValueError:
        return None, SINCE_MESSAGE
    if value is None:
        return None, SINCE_MESSAGE
    if timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    try:
        # Converted here, so the database is never asked to convert a date it cannot represent.
        return value.astimezone(UTC), None
    except OverflowError:
        return None, SINCE_RANGE_MESSAGE


# Plain decimal notation only: float() would also read "1_0", Arabic-Indic or full-width digits
# and padding, many spellings of one range that each miss the public cache.
DECIMAL_NUMBER = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
# Longer text is no number a reader means (and float() of 100,000 digits costs time).
MAX_NUMBER_TEXT = 40


def parse_finite_number(text: str) -> float | None:
    """A finite float from query-string text in plain decimal notation (20, -1.5, 2e3), or
    ``None`` for anything else ("nan", "inf", "1e999", "", "1_0", "٢", garbage)."""
    if len(text) > MAX_NUMBER_TEXT or not DECIMAL_NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def text_param_problem(text: str) -> str | None:
    """Why a free-text parameter cannot be used in a query (PostgreSQL refuses NUL
    characters), or ``None``."""
    return NUL_MESSAGE if "\x00" in text else None


def audit_filters_parse(params) -> tuple[dict, dict[str, list[str]]]:
    """The audit trail's filters from query parameters (``dataset``, ``actor``, ``action``,
    ``since``, ``until``), and errors naming each bad one; bad filters are left out of the
    result."""
    errors: dict[str, list[str]] = {}
    filters: dict = {}
    for name in ("actor", "action"):
        value = params.get(name) or None
        problem = None if value is None else text_param_problem(value)
        if problem is not None:
            errors[name] = [problem]
            value = None
        filters[name] = value
    dataset = params.get("dataset") or None
    if dataset is not None:
        # At most 19 digits (a 64-bit id) before int(): 5,000 would be a ValueError of its own.
        if re.fullmatch(r"[0-9]{1,19}", dataset) and int(dataset) < 2**63:
            filters["dataset"] = int(dataset)
        else:
            errors["dataset"] = ["must be a dataset id"]
    for name in ("since", "until"):
        text = params.get(name) or None
        if text is not None:
            filters[name], problem = _parse_iso_datetime(text)
            if problem is not None:
                errors[name] = [problem]
    return filters, errors


def audit_anchor_parse(params) -> tuple[list[dict], dict[str, list[str]]]:
    """An anchor to check the trail against, from ``anchor_hash`` (64 hexadecimal digits) and,
    optionally, ``anchor_event`` (its event's id); errors naming each bad one."""
    errors: dict[str, list[str]] = {}
    digest = params.get("anchor_hash") or None
    event = params.get("anchor_event") or None
    if digest is None:
        if event is not None:
            errors["anchor_hash"] = ["give the anchored hash with anchor_event"]
        return [], errors
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        errors["anchor_hash"] = ["must be 64 lowercase hexadecimal digits"]
    anchor: dict = {"hash": digest}
    if event is not None:
        if re.fullmatch(r"[0-9]{1,19}", event) and int(event) < 2**63:
            anchor["event"] = int(event)
        else:
            errors["anchor_event"] = ["must be an event id"]
    return ([] if errors else [anchor]), errors


def range_params_parse(params) -> tuple[tuple[float, float] | None, dict[str, list[str]]]:
    """A range's ``from`` and ``to`` (numbers in the column's units) from query parameters, and
    errors naming each missing or bad one."""
    errors: dict[str, list[str]] = {}
    values = []
    for name in ("from", "to"):
        value = parse_finite_number(params.get(name, ""))
        if value is None:
            errors[name] = ["must be a finite number, e.g. 20"]
        values.append(value)
    if errors:
        return None, errors
    low, high = values
    if low >= high:
        return None, {"to": ["must be above from"]}
    return (low, high), {}


# The catalog's filters (pages and API): the definition kinds a release can have.
CATALOG_KINDS = ("pure_dp", "approx_dp", "blowfish")
# A search longer than this is no title or column name anyone types.
MAX_SEARCH = 200
DATE_MESSAGE = "must be a date, e.g. 2026-11-25"


def catalog_filters_parse(params, search_name: str) -> tuple[dict, dict[str, list[str]]]:
    """The catalog's filters from query parameters: ``search_name`` (``q`` on pages,
    ``search`` in the API; a title or a statistic's column), ``kind`` (the definition's),
    ``since`` and ``until`` (publication dates, inclusive); errors name each bad one, which is
    left out of the result."""
    errors: dict[str, list[str]] = {}
    filters: dict = {"search": None, "kind": None, "since": None, "until": None}
    search = (params.get(search_name) or "").strip()
    if search:
        problem = text_param_problem(search)
        if problem is None and len(search) > MAX_SEARCH:
            problem = f"must be at most {MAX_SEARCH} characters"
        if problem is None:
            filters["search"] = search
        else:
            errors[search_name] = [problem]
    kind = params.get("kind") or None
    if kind is not None:
        if kind in CATALOG_KINDS:
            filters["kind"] = kind
        else:
            errors["kind"] = [f"must be one of: {', '.join(CATALOG_KINDS)}"]
    for name in ("since", "until"):
        text = (params.get(name) or "").strip()
        if not text:
            continue
        try:
            day = parse_date(text) if len(text) <= 10 else None
        except ValueError:  # well-formed but impossible, such as month 13
            day = None
        if day is None:
            errors[name] = [DATE_MESSAGE]
        else:
            filters[name] = day
    return filters, errors
