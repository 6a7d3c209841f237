"""Reads: querysets scoped to who is asking, and derived figures such as budgets."""

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.urls import reverse

from accounts.roles import Role, user_has_role
from audit.models import AuditEvent, EventRepeats
from organisations.services import DEFAULT_ORGANISATION_SLUG, organisation_of
from privacy_engine import PublishedRanges
from privacy_engine.accounting import ledger_used
from privacy_engine.footprint import Footprint
from privacy_engine.guidance import RELEASES_FACTOR
from releases.models import (
    MICRODATA_PREFIX,
    Dataset,
    LedgerEntry,
    LedgerKind,
    NoisyAnswer,
    Release,
    ReleaseFile,
)

# The statistic kind whose page shows a range tool instead of a row per bin.
RANGE_KIND = "range_histogram"
# The largest statistic position the database holds (a PositiveIntegerField).
POSITION_MAX = 2**31 - 1
# Headings of the statistics on a release page, where a kind's name would not read well.
KIND_TITLES = {
    RANGE_KIND: "Histogram for any range",
    "marginal": "Table",
    "randomized_response": "Randomized records",
    "synthetic": "Synthetic table",
}


def decimal_text(amount: Decimal) -> str:
    """An exact amount as text without trailing zeros ("0.5", not "0.500000000000")."""
    return format(amount.normalize(), "f") if amount else "0"


@dataclass(frozen=True)
class Budget:
    total: Decimal
    spent: Decimal
    reserved: Decimal

    @property
    def remaining(self) -> Decimal:
        return self.total - self.spent - self.reserved

    def as_dict(self) -> dict[str, str]:
        """Exact decimal strings without trailing zeros ("0.5", not "0.500000000000")."""
        names = ("total", "spent", "reserved", "remaining")
        return {name: decimal_text(getattr(self, name)) for name in names}


def footprints_of(footprint: dict | None, *, epsilon: Decimal, delta: Decimal) -> tuple:
    """The (ε, δ) footprints (privacy_engine/footprint.py) a ledger entry or a journal row
    records; one written before footprints existed spends its (ε, δ) on everyone."""
    data = footprint or {}
    return (
        Footprint.from_dict(data.get("epsilon"), default=epsilon),
        Footprint.from_dict(data.get("delta"), default=delta),
    )


def budgets_from_footprints(
    total_epsilon: Decimal, total_delta: Decimal, spent: list[tuple], reserved: list[tuple]
) -> tuple[Budget, Budget]:
    """ε and δ budgets from the footprints of spent and of reserved releases: spent is what the
    spent releases use together, reserved what the reserved ones add to that (a release on
    groups already paid for adds less than its own charge, footprint.py)."""
    budgets = []
    for total, index, delta in ((total_epsilon, 0, False), (total_delta, 1, True)):
        used_spent = ledger_used([f[index] for f in spent], delta=delta)
        used = ledger_used([f[index] for f in [*spent, *reserved]], delta=delta)
        budgets.append(Budget(total, used_spent, used - used_spent))
    return budgets[0], budgets[1]


def dataset_budget(dataset: Dataset, extra: tuple | None = None) -> tuple[Budget, Budget]:
    """The ε and δ budgets of a dataset, from its ledger, with ``extra`` (a release's (ε, δ)
    footprints) counted as reserved when given: what the budget would be after it."""
    entries = dataset.ledger.filter(
        state__in=[LedgerEntry.State.SPENT, LedgerEntry.State.RESERVED]
    ).values_list("state", "epsilon", "delta", "footprint")
    spent, reserved = [], []
    for state, epsilon, delta, footprint in entries:
        footprints = footprints_of(footprint, epsilon=epsilon, delta=delta)
        (spent if state == LedgerEntry.State.SPENT else reserved).append(footprints)
    if extra is not None:
        reserved.append(extra)
    return budgets_from_footprints(dataset.budget_epsilon, dataset.budget_delta, spent, reserved)


def dataset_list_visible(*, user) -> QuerySet[Dataset]:
    """Curators see their own datasets; compliance sees every dataset's metadata in its own
    organisation. Nobody sees another organisation's."""
    organisation = organisation_of(user)
    if organisation is None:
        return Dataset.objects.none()
    if user_has_role(user, Role.COMPLIANCE):
        return Dataset.objects.filter(organisation=organisation)
    return Dataset.objects.filter(owner=user, organisation=organisation)


def dataset_list_owned(*, user) -> QuerySet[Dataset]:
    organisation = organisation_of(user)
    if organisation is None:
        return Dataset.objects.none()
    return Dataset.objects.filter(owner=user, organisation=organisation)


def dataset_ids_for_compliance(*, user) -> set[int]:
    """Ids of the datasets whose budgets ``user``'s verification covers: those of its
    organisation, and those its organisation's events name (a dataset deleted behind the
    trail's back is still named)."""
    named = (
        audit_event_list(user=user)
        .filter(dataset_id__isnull=False)
        .order_by()
        .values_list("dataset_id", flat=True)
        .distinct()
    )
    return set(dataset_list_visible(user=user).values_list("pk", flat=True)) | set(named)


def dataset_organisation_slug(dataset_id: int) -> str:
    """The slug of the dataset's organisation ("" for no such dataset): its events'."""
    slug = (
        Dataset.objects.filter(pk=dataset_id).values_list("organisation__slug", flat=True).first()
    )
    return slug or ""


def release_list_owned(*, user) -> QuerySet[Release]:
    """The user's releases on datasets they own in their organisation (an account moved to
    another organisation leaves its releases behind)."""
    return Release.objects.filter(
        created_by=user, dataset__in=dataset_list_owned(user=user)
    ).select_related("series", "dataset")


def release_list_published(
    *,
    search: str | None = None,
    kind: str | None = None,
    since: date | None = None,
    until: date | None = None,
) -> QuerySet[Release]:
    """Published versions, newest first; ``search`` matches a title or a statistic's column
    name, ``kind`` the definition, ``since`` and ``until`` the
    publication day in UTC (inclusive)."""
    releases = (
        Release.objects.filter(status=Release.Status.PUBLISHED)
        # A withdrawn version is still listed (marked withdrawn): its withdrawal comes along.
        .select_related("series", "withdrawal")
        .prefetch_related("files")
        .order_by("-published_at", "-id")
    )
    if search:
        releases = releases.filter(Q(title__icontains=search) | Q(columns_text__icontains=search))
    if kind:
        releases = releases.filter(definition__kind=kind)
    if since:
        releases = releases.filter(published_at__gte=datetime.combine(since, time.min, UTC))
    if until and until < date.max:  # the last day there is has no day after it to compare with
        releases = releases.filter(
            published_at__lt=datetime.combine(until + timedelta(days=1), time.min, UTC)
        )
    return releases


def release_get_published(*, slug: str, version: int) -> Release | None:
    return release_list_published().filter(series__slug=slug, version=version).first()


def audit_event_list(
    *,
    user,
    dataset: int | None = None,
    actor: str | None = None,
    action: str | None = None,
    since=None,
    until=None,
) -> QuerySet[AuditEvent]:
    # How many identical actions each event also stands for (anonymous downloads within a
    # window: releases/services/downloads.py); 0 for most.
    repeats = EventRepeats.objects.filter(event_id=OuterRef("pk")).values("count")[:1]
    events = AuditEvent.objects.order_by("-id").annotate(
        repeats=Coalesce(Subquery(repeats), Value(0))
    )
    # Only the user's organisation's events; the default organisation's also holds those from
    # before organisations and those that belong to none.
    organisation = organisation_of(user)
    if organisation is None:
        return events.none()
    if organisation.slug == DEFAULT_ORGANISATION_SLUG:
        events = events.filter(organisation__in=[organisation.slug, ""])
    else:
        events = events.filter(organisation=organisation.slug)
    if dataset is not None:
        events = events.filter(dataset_id=dataset)
    if actor:
        events = events.filter(actor=actor)
    if action:
        events = events.filter(action=action)
    if since is not None:
        events = events.filter(at__gte=since)
    if until is not None:
        events = events.filter(at__lte=until)
    return events


def dataset_privacy_report(*, dataset: Dataset) -> list[dict[str, Any]]:
    """Every submitted release of ``dataset``, oldest first, with what compliance files about
    it: its definition, what the ledger charged, its dates, its withdrawal, and the audit
    trail's head its signed metadata anchored at publication (read from the metadata file)."""
    releases = (
        Release.objects.filter(dataset=dataset)
        .exclude(status__in=[Release.Status.DRAFT, Release.Status.CLOSED])
        .select_related("series", "withdrawal", "ledger_entry")
        .order_by("submitted_at", "id")
    )
    rows = []
    for release in releases:
        entry = getattr(release, "ledger_entry", None)
        rows.append(
            {
                "release": release,
                "definition": release.definition,
                "ledger_state": entry.state if entry is not None else "",
                "anchor": _metadata_audit_head(release),
                "withdrawal": getattr(release, "withdrawal", None),
            }
        )
    return rows


def _metadata_audit_head(release: Release) -> str | None:
    """The ``audit_head`` a published version's signed metadata carries, or None."""
    record = release.files.filter(format=ReleaseFile.Format.METADATA).first()
    if record is None:
        return None
    try:
        with record.file.open("rb") as file:
            head = json.loads(file.read(1 << 20)).get("audit_head")
    except (OSError, ValueError, AttributeError):
        return None
    return head if isinstance(head, str) else None


def release_file_links(*, release: Release) -> list[dict]:
    """A published release's files with their download paths (the view checks publication)."""
    return [
        {
            "format": f.format,
            "label": _file_label(f.format),
            "position": _file_position(f.format),
            "sha256": f.sha256,
            "size": f.size,
            "url": reverse(
                "api-catalog-file",
                kwargs={
                    "slug": release.series.slug,
                    "version": release.version,
                    "file_format": f.format,
                },
            ),
        }
        for f in release.files.all()
    ]


def _file_label(file_format: str) -> str:
    """How a page names a file: CSV, JSON, Parquet, or the records of statistic N (as CSV,
    JSON or Parquet)."""
    if file_format.startswith(MICRODATA_PREFIX):
        position, _, extension = file_format.removeprefix(MICRODATA_PREFIX).partition(".")
        return f"records of statistic {int(position) + 1} ({_file_label(extension)})"
    if file_format in (
        ReleaseFile.Format.CONFIGURATION,
        ReleaseFile.Format.METADATA,
        ReleaseFile.Format.SIGNATURE,
    ):
        return str(ReleaseFile.Format(file_format).label)
    return "Parquet" if file_format == "parquet" else file_format.upper()


def _file_position(file_format: str) -> int | None:
    """The position of the statistic whose records a file holds; None for the release's own."""
    if not file_format.startswith(MICRODATA_PREFIX):
        return None
    return int(file_format.removeprefix(MICRODATA_PREFIX).partition(".")[0])


def cell_interval(statistic: dict, cell: str) -> tuple[Any, Any]:
    """A cell's published 95% interval, or (None, None) for a statistic that publishes its
    accuracy otherwise (a quantile's, in ranks, is in its rule)."""
    intervals = statistic.get("ci95")
    if not isinstance(intervals, dict):
        return None, None
    low, high = intervals[cell]
    return low, high


def _in_published_order(statistic: dict) -> dict:
    """A stored statistic with its cells in the published order: the database may have reordered
    the keys of ``value`` and ``ci95`` (PostgreSQL's jsonb does), ``cells`` keeps the order. A
    statistic of rows (k-means' centroids) gets each row's keys back in the published order:
    ``cluster``, ``size``, then its ``columns``."""
    if isinstance(statistic.get("value"), list):
        order = ["cluster", "size", *(statistic.get("columns") or [])]

        def ordered(row: Any) -> Any:
            if not isinstance(row, dict):
                return row
            return {
                **{key: row[key] for key in order if key in row},
                **{key: value for key, value in row.items() if key not in order},
            }

        return {
            **statistic,
            "value": [ordered(row) for row in statistic["value"]],
            "ci95": (
                [ordered(row) for row in statistic["ci95"]]
                if isinstance(statistic.get("ci95"), list)
                else statistic.get("ci95")
            ),
        }
    cells = statistic.get("cells")
    if not cells or not isinstance(statistic.get("value"), dict):
        return statistic
    return {
        **statistic,
        "value": {cell: statistic["value"][cell] for cell in cells},
        "ci95": (
            {cell: statistic["ci95"][cell] for cell in cells}
            if isinstance(statistic.get("ci95"), dict)
            else statistic.get("ci95")
        ),
    }


def release_answer_statistics(*, release: Release) -> list[dict]:
    """The stored noisy statistics of a release, in query order, cells in published order."""
    return [_in_published_order(a.statistic) for a in release.answers.order_by("position")]


def catalog_statistics(*, release: Release, max_inline_bins: int) -> list[dict]:
    """A published version's statistics as the version API shows them. A range histogram of
    more than ``max_inline_bins`` bins leaves its per-bin values to the release's files (tens of
    thousands of bins would make a response of megabytes): its ``value``, ``ci95`` and ``cells``
    are left out and ``values_in_files`` says so. Every range histogram names its ``range_url``,
    which answers any range."""
    statistics = release_answer_statistics(release=release)
    for position, stat in enumerate(statistics):
        if stat["kind"] != RANGE_KIND:
            continue
        stat["range_url"] = reverse(
            "api-catalog-range",
            kwargs={
                "slug": release.series.slug,
                "version": release.version,
                "position": position,
            },
        )
        stat["values_in_files"] = stat["tree"]["bins"] > max_inline_bins
        if stat["values_in_files"]:
            stat["value"] = stat["ci95"] = None
            stat.pop("cells", None)
    return statistics


def release_statistics(*, release: Release) -> list[dict]:
    """A published release's statistics in query order, with a display label and, for values
    with cells (histograms, vectors of sums, k-means' centroids), rows built for templates."""
    statistics = release_answer_statistics(release=release)
    for stat in statistics:
        stat["label"] = stat["column"] or ", ".join(stat.get("columns") or [])
        stat["title"] = KIND_TITLES.get(stat["kind"], stat["kind"].capitalize())
        if stat["kind"] == RANGE_KIND:
            # Thousands of bins: the page shows a chart and a range tool, the files every bin.
            stat["cell_rows"] = None
            continue
        if stat["kind"] == KMEANS_KIND:
            _cluster_rows(stat)
            continue
        if stat["kind"] == SYNTHETIC_KIND:
            _synthetic_rows(stat)
            continue
        # Rows built here, not looked up in a template: a category named like a dict method
        # ("items", "keys") would otherwise shadow it.
        stat["cell_rows"] = (
            [
                {
                    "label": label,
                    "value": value,
                    "low": cell_interval(stat, label)[0],
                    "high": cell_interval(stat, label)[1],
                }
                for label, value in stat["value"].items()
            ]
            if isinstance(stat["value"], dict)
            else None
        )
    return statistics


# The statistic kind whose value is a list of centroids, one row each.
KMEANS_KIND = "kmeans"
# The statistic kind whose rows are in its files; the page compares their buckets' counts with
# the published marginals.
SYNTHETIC_KIND = "synthetic"


def _synthetic_rows(stat: dict) -> None:
    """A synthetic table for templates: ``synthetic_rows``, one per column and bucket with its
    published noisy count and the number of generated rows in it; ``preserved``, the marginals
    kept, as text; ``cell_rows`` None (the rows are in the files)."""
    microdata = stat["microdata"]
    columns = microdata["columns"]
    one_way = microdata["marginals"][: len(columns)]
    generated = microdata.get("generated_counts") or [[None] * len(b) for b in microdata["buckets"]]
    stat["cell_rows"] = None
    stat["synthetic_rows"] = [
        {"column": name, "bucket": bucket, "published": published, "generated": made}
        for name, buckets, marginal, made_counts in zip(
            columns, microdata["buckets"], one_way, generated, strict=True
        )
        for bucket, published, made in zip(buckets, marginal["counts"], made_counts, strict=True)
    ]
    stat["preserved"] = ", ".join(
        " × ".join(m["columns"]) for m in microdata["marginals"][len(microdata["columns"]) :]
    )


def _cluster_rows(stat: dict) -> None:
    """k-means' centroids for templates: ``cluster_rows``, one per centroid with its size and a
    coordinate per column, each with its 95% interval; ``cell_rows``, the same numbers one per
    line ("cluster 1: size", "cluster 1: r", …) for pages that list cells; and ``clusters``,
    what was clustered (columns, k, iterations)."""
    columns = list(stat.get("columns") or [])
    stat["title"] = "Clusters (k-means)"
    rows = []
    for row, interval in zip(stat["value"], stat["ci95"], strict=True):
        size_low, size_high = interval["size"]
        rows.append(
            {
                "cluster": row["cluster"],
                "size": row["size"],
                "size_low": size_low,
                "size_high": size_high,
                "coordinates": [
                    {
                        "column": name,
                        "value": row[name],
                        "low": interval[name][0],
                        "high": interval[name][1],
                    }
                    for name in columns
                ],
            }
        )
    stat["cluster_rows"] = rows
    stat["cell_rows"] = [
        cell
        for row in rows
        for cell in [
            {
                "label": f"cluster {row['cluster']}: size",
                "value": row["size"],
                "low": row["size_low"],
                "high": row["size_high"],
            },
            *(
                {
                    "label": f"cluster {row['cluster']}: {c['column']}",
                    "value": c["value"],
                    "low": c["low"],
                    "high": c["high"],
                }
                for c in row["coordinates"]
            ),
        ]
    ]
    # The iterations the release ran, read from its parts: the count the plan resolved when the
    # query left it automatic, not the query's (absent) field.
    iterations = max((part.get("iteration", 0) for part in stat.get("parts") or []), default=0)
    stat["clusters"] = {
        "columns": columns,
        "columns_text": (
            columns[0]
            if len(columns) == 1
            else ", ".join(columns[:-1]) + " and " + columns[-1]
            if columns
            else ""
        ),
        "k": len(rows),
        "iterations": iterations or None,
    }


def dataset_columns_from_data(*, dataset: Dataset) -> list[str]:
    """Columns whose declared bounds or categories were taken from the data ("suggest from
    data" saved unchanged), in file order: every release using them discloses them exactly."""
    declared = (dataset.schema or {}).get("columns", {})
    return [
        column["name"]
        for column in dataset.columns
        if declared.get(column["name"], {}).get("from_data") is True
    ]


def dataset_list_for_compliance(*, user) -> QuerySet[Dataset]:
    """The datasets compliance reviews, with what flags a pair of identical uploads."""
    return (
        dataset_list_visible(user=user)
        .select_related("owner", "duplicate_of__owner")
        .prefetch_related("duplicates")
    )


def release_range_answer(
    *, release: Release, position: int, low: float, high: float
) -> dict | None:
    """The answer of a published range histogram (the release's statistic at ``position``,
    0-based) for values from ``low`` to ``high``, widened to whole bins, with its 95% interval;
    ``None`` when that statistic is not a range histogram. Post-processing of published numbers
    only. Raises :class:`EngineValidationError` naming ``from`` or ``to``."""
    if position > POSITION_MAX:  # beyond the column's range: no such statistic
        return None
    published = _published_ranges(release.series.slug, release.version, position)
    return None if published is None else published.answer(low, high)


# Range histograms kept decoded per process (a published version never changes): compact, about
# 0.5 MB each at 65,536 bins, so a client cycling statistics cannot churn out a busy one cheaply.
PUBLISHED_RANGES_KEPT = 64
_published_ranges_kept: OrderedDict[tuple[str, int, int], PublishedRanges] = OrderedDict()
_published_ranges_lock = threading.Lock()


def _published_ranges(slug: str, version: int, position: int) -> PublishedRanges | None:
    """A published version's range histogram at ``position``, decoded once per process; None
    (and nothing kept) when that statistic is missing or of another kind. The caller checked
    that the version is published; the slug's random part keeps the key unique."""
    key = (slug, version, position)
    with _published_ranges_lock:
        if key in _published_ranges_kept:
            _published_ranges_kept.move_to_end(key)
            return _published_ranges_kept[key]
    answers = NoisyAnswer.objects.filter(
        release__series__slug=slug, release__version=version, position=position
    )
    # The kind first: another kind's statistic is never decoded for a range request.
    if not answers.filter(statistic__kind=RANGE_KIND).exists():
        return None
    statistic = answers.values_list("statistic", flat=True).first()
    if statistic is None:
        return None
    published = PublishedRanges.from_statistic(statistic)
    with _published_ranges_lock:
        _published_ranges_kept[key] = published
        while len(_published_ranges_kept) > PUBLISHED_RANGES_KEPT:
            _published_ranges_kept.popitem(last=False)
    return published


def release_list_awaiting_approval(*, user) -> QuerySet[Release]:
    """Releases waiting for a compliance officer's decision, oldest submission first."""
    return (
        Release.objects.filter(
            status=Release.Status.AWAITING_APPROVAL,
            dataset__in=dataset_list_visible(user=user),
        )
        .select_related("dataset", "created_by", "series")
        .order_by("submitted_at", "id")
    )


def release_get_for_approval(*, user, pk: int) -> Release | None:
    """A submitted release a compliance officer may review (awaiting approval or decided)."""
    return (
        Release.objects.filter(dataset__in=dataset_list_visible(user=user), pk=pk)
        .exclude(status__in=[Release.Status.DRAFT, Release.Status.CLOSED])
        .select_related("dataset", "created_by", "series")
        .first()
    )


def dataset_release_epsilon_default(*, dataset: Dataset) -> Decimal | None:
    """A new release's default ε under ε-DP: the share of the total budget one release takes by
    the upload's answer to "how often" (half when unanswered), at most what remains, halved on a
    Blowfish ledger (which charges an ε-DP release 2ε); None when nothing remains."""
    budget, _ = dataset_budget(dataset)
    if budget.remaining <= 0:
        return None
    share = Decimal(repr(RELEASES_FACTOR.get(dataset.planned_releases, 0.5)))
    epsilon = min(budget.total * share, budget.remaining)
    if dataset.ledger_kind == LedgerKind.BLOWFISH:
        epsilon /= 2
    return epsilon.normalize()
