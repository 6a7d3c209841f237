"""Published versions after publication: withdrawal, a new version from an old one, the diff
between two versions of a series, and how to cite one.

A published version never changes (the database refuses it: migration 0010). A withdrawal is a
row beside the version, with its reason; the version stays in the catalog with its numbers and
files, marked withdrawn. A new version is a new draft in the same series: it draws new noise and
spends budget again when submitted.
"""

import json
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext

from audit.chain import AuditAction, audit_record
from privacy_engine.versions import ValueChange, compare_published
from releases.models import Release, Withdrawal
from releases.selectors import KIND_TITLES, cell_interval, release_answer_statistics
from releases.services.errors import Conflict
from releases.services.releases import release_draft_create, series_next_version
from releases.services.text import free_text_clean

REASON_MAX_LENGTH = 2000
# Who publishes, in citations: no setting names an organisation, so the site's own name.
PUBLISHER = "Guided data release"
DEFINITION_NAMES = {
    "pure_dp": "ε-differential privacy",
    "approx_dp": "(ε, δ)-differential privacy",
    "blowfish": "Blowfish privacy",
}
# The definition's fields a diff compares, in the order it lists them.
DEFINITION_FIELDS = ("kind", "epsilon", "delta", "policy")
# How each statistic was released: compared field by field between matched statistics.
METHOD_FIELDS = ("mechanism", "epsilon", "delta", "sensitivity", "noise_scale")


def withdrawal_reason_clean(reason: Any) -> str:
    """A withdrawal's reason as stored (see :func:`free_text_clean`): shown on public pages, in
    the feed and in the JSON documents."""
    return free_text_clean(
        reason,
        field="reason",
        noun=gettext("The reason"),
        max_length=REASON_MAX_LENGTH,
        missing=gettext("Say why the version is withdrawn."),
    )


def release_withdraw(*, release: Release, user, reason: Any) -> Withdrawal:
    """Withdraw a published version, once, with a public reason. The version itself is not
    touched (its row, numbers and files stay as published); the withdrawal and its audit event
    are written in one transaction. :class:`Conflict` when it is not published or already
    withdrawn."""
    text = withdrawal_reason_clean(reason)
    try:
        with transaction.atomic():
            locked = Release.objects.select_related("series").select_for_update().get(pk=release.pk)
            if locked.status != Release.Status.PUBLISHED:
                raise Conflict("Only a published version can be withdrawn.")
            if Withdrawal.objects.filter(release=locked).exists():
                raise Conflict("This version was already withdrawn; a withdrawal is final.")
            withdrawal = Withdrawal.objects.create(release=locked, withdrawn_by=user, reason=text)
            audit_record(
                actor=user,
                action=AuditAction.RELEASE_WITHDRAWN,
                object_type="release",
                object_id=locked.pk,
                dataset_id=locked.dataset_id,
                details={"slug": locked.series.slug, "version": locked.version, "reason": text},
            )
    except IntegrityError:
        # Two withdrawals at once: the one-to-one row lets only the first in.
        raise Conflict("This version was already withdrawn; a withdrawal is final.") from None
    return withdrawal


def release_new_version(*, release: Release, user) -> Release:
    """A draft in the published release's series with the same title, definition and statistics,
    planned again against the dataset's current schema (:class:`ValidationFailed` names what no
    longer fits). Submitting it draws new noise and spends budget again."""
    if release.status != Release.Status.PUBLISHED:
        raise Conflict("A new version can only be drafted from a published version.")
    return release_draft_create(
        user=user,
        dataset=release.dataset,
        title=release.title,
        definition=release.definition,
        queries=release.queries,
        series_slug=release.series.slug,
    )


def version_next_number(*, release: Release) -> int | None:
    """The version a draft becomes if it is the next one published in its series; None when the
    series has no published version yet (the draft is its first)."""
    number = series_next_version(release.series)
    return number if number > 1 else None


def _amount(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def version_citation(*, release: Release, url: str) -> str:
    """A suggested citation of one published version: title, version, publisher, year, its
    permanent URL and its guarantee."""
    definition = release.definition
    kind = definition.get("kind")
    guarantee = f"ε = {_amount(definition.get('epsilon'))}"
    if kind == "approx_dp":
        guarantee += f", δ = {_amount(definition.get('delta'))}"
    if kind == "blowfish":
        guarantee += f", policy {(definition.get('policy') or {}).get('graph')}"
    name = DEFINITION_NAMES.get(kind, str(kind))
    year = release.published_at.year if release.published_at else ""
    return (
        f"{release.title} (version {release.version}). {PUBLISHER}, {year}. {url}. "
        f"Released under {name} ({guarantee})."
    )


def _statistic_key(query: dict) -> str:
    """What a statistic measures: its kind, columns and parameters (a weight only splits ε)."""
    return json.dumps({k: v for k, v in query.items() if k != "weight"}, sort_keys=True)


def _described(query: dict, statistic: dict | None) -> dict[str, Any]:
    columns = query.get("columns") or ([query["column"]] if query.get("column") else [])
    kind = query.get("kind", "")
    return {
        "kind": kind,
        "title": KIND_TITLES.get(kind, str(kind).capitalize()),
        "column": query.get("column"),
        "columns": list(columns),
        "label": ", ".join(columns),
        "query": {k: v for k, v in query.items() if k != "weight"},
        "epsilon": statistic.get("epsilon") if statistic else None,
    }


class AnswersMismatch(Exception):
    """A published version whose stored answers are not one per planned statistic: its stored
    answers were altered (the database refuses it since migration 0010) or lost."""


def _keyed(release: Release) -> list[tuple[str, dict, dict]]:
    """Each statistic of a published version with its stored answer, paired by position."""
    statistics = release_answer_statistics(release=release)
    if len(statistics) != len(release.queries):
        raise AnswersMismatch(
            f"release {release.pk} has {len(statistics)} stored answers for "
            f"{len(release.queries)} planned statistics: they cannot be paired"
        )
    return [
        (_statistic_key(query), query, statistic)
        for query, statistic in zip(release.queries, statistics, strict=True)
    ]


def _change(change: ValueChange, cell: str | None, before_ci95: Any, after_ci95: Any) -> dict:
    return {
        "cell": cell,
        "from": change.before,
        "to": change.after,
        "difference": change.difference,
        "within_intervals": change.within_intervals,
        "from_ci95": before_ci95,
        "to_ci95": after_ci95,
    }


def _values(before: dict, after: dict, max_cells: int) -> tuple[list[dict] | None, str]:
    """The published values of one statistic in both versions, side by side; None (and why)
    when they are not compared here."""
    first, second = before.get("value"), after.get("value")
    if isinstance(first, list) or isinstance(second, list):
        return None, "Clusters are not matched across versions: compare their centres by eye."
    if isinstance(first, dict) and isinstance(second, dict):
        cells = list(dict.fromkeys([*second, *first]))
        if len(cells) > max_cells:
            return None, f"{len(cells):,} cells: compare the versions' files."
        rows = []
        for cell in cells:
            before_ci95 = list(cell_interval(before, cell)) if cell in first else None
            after_ci95 = list(cell_interval(after, cell)) if cell in second else None
            change = compare_published(
                before=first.get(cell),
                before_ci95=before_ci95,
                after=second.get(cell),
                after_ci95=after_ci95,
            )
            rows.append(_change(change, cell, before_ci95, after_ci95))
        return rows, ""
    if isinstance(first, dict) or isinstance(second, dict) or first is None or second is None:
        return None, "Published in another shape in each version."
    change = compare_published(
        before=first, before_ci95=before.get("ci95"), after=second, after_ci95=after.get("ci95")
    )
    return [_change(change, None, before.get("ci95"), after.get("ci95"))], ""


def version_diff(*, before: Release, after: Release, max_cells: int) -> dict[str, Any]:
    """What changed between two published versions: the definition field by field; statistics
    added and removed (matched by kind, columns and parameters); and for each statistic in both,
    how it was released and its published values side by side with their difference and whether
    the two 95% intervals overlap (the change may then be noise alone). A statistic of more than
    ``max_cells`` cells is left to the files."""
    definition = [
        {
            "name": name,
            "from": before.definition.get(name),
            "to": after.definition.get(name),
            "changed": before.definition.get(name) != after.definition.get(name),
        }
        for name in DEFINITION_FIELDS
    ]
    remaining = _keyed(before)
    added, in_both = [], []
    for key, query, statistic in _keyed(after):
        match = next((i for i, (k, _, _) in enumerate(remaining) if k == key), None)
        if match is None:
            added.append(_described(query, statistic))
            continue
        _, _, earlier = remaining.pop(match)
        method = [
            {
                "name": name,
                "from": earlier.get(name),
                "to": statistic.get(name),
                "changed": earlier.get(name) != statistic.get(name),
            }
            for name in METHOD_FIELDS
        ]
        values, note = _values(earlier, statistic, max_cells)
        in_both.append(
            {
                **_described(query, statistic),
                "changed": any(field["changed"] for field in method),
                "method": method,
                "values": values,
                "note": note,
            }
        )
    return {
        "definition": {
            "changed": any(field["changed"] for field in definition),
            "fields": definition,
        },
        "statistics": {
            "added": added,
            "removed": [_described(query, statistic) for _, query, statistic in remaining],
            "in_both": in_both,
        },
    }
