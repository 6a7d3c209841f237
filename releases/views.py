"""Server-rendered pages: validate input, call one selector or service, render."""

import itertools
import json
import math
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext, gettext_lazy, pgettext

from accounts.roles import Role, user_has_role
from audit.chain import AuditAction
from privacy_engine import EngineValidationError, NumericColumn, format_number
from privacy_engine.kinds.range_histogram import bin_edges, range_sum
from releases import audit_translations, ledger_selectors, selectors
from releases.apis.throttles import RangeQueryThrottle
from releases.apis.versions import permanent_url, release_withdrawal
from releases.parsing import (
    audit_filters_parse,
    catalog_filters_parse,
    range_params_parse,
)
from releases.refusals import refusal_text
from releases.risk_selectors import risk_card_for_version
from releases.services.budget_audit import trail_verification
from releases.services.versions import version_citation
from releases.translations import field_problem, files_translate, statistics_translate

CATALOG_PAGE_SIZE = 10
# How the catalog page names its filters in error messages, and the definitions it offers.
CATALOG_FIELD_NAMES = {
    "q": gettext_lazy("The search"),
    "kind": gettext_lazy("The privacy definition"),
    "since": gettext_lazy("The first day"),
    "until": gettext_lazy("The last day"),
}
CATALOG_KIND_NAMES = [
    ("pure_dp", gettext_lazy("ε-differential privacy")),
    ("approx_dp", gettext_lazy("(ε, δ)-differential privacy")),
    ("blowfish", gettext_lazy("Blowfish privacy")),
]
AUDIT_PAGE_SIZE = 50
# How the version page's range tool names its fields in error messages.
RANGE_FIELD_NAMES = {"from": gettext_lazy("From"), "to": gettext_lazy("To")}


def home(request):
    latest = selectors.release_list_published()[:5]
    user = request.user
    return render(
        request,
        "home.html",
        {
            "releases": latest,
            # The one obvious next step for whoever is signed in.
            "is_curator": user.is_authenticated and user_has_role(user, Role.CURATOR),
            "is_compliance": user.is_authenticated and user_has_role(user, Role.COMPLIANCE),
            "has_datasets": user.is_authenticated
            and selectors.dataset_list_owned(user=user).exists(),
        },
    )


def catalog_list(request):
    filters, problems = catalog_filters_parse(request.GET, "q")
    errors = [field_problem(CATALOG_FIELD_NAMES[name], texts) for name, texts in problems.items()]
    page = Paginator(selectors.release_list_published(**filters), CATALOG_PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    # The filters as the page's links keep them (only the valid ones).
    kept = {
        name: str(filters[key])
        for name, key in (("q", "search"), ("kind", "kind"), ("since", "since"), ("until", "until"))
        if filters[key]
    }
    return render(
        request,
        "catalog/list.html",
        {
            "page": page,
            "search": filters["search"] or "",
            "filters": kept,
            "filtered": bool(kept),
            "query_string": urlencode(kept),
            "kinds": CATALOG_KIND_NAMES,
            "errors": errors,
        },
    )


def plotly_text(text: str) -> str:
    """``text`` as Plotly shows it literally. Plotly reads a subset of HTML in titles, tick labels
    and hover text (``<a href>``, ``<span style>``, ``<br>``…) and decodes entities into plain
    characters, so with ``&``, ``<`` and ``>`` as entities no markup from a curator's names
    reaches the chart."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def chart_axis(kind: str) -> str:
    """The value axis of a statistic's chart, in the active language."""
    axes = {
        "histogram": gettext("published count"),
        "marginal": gettext("published count"),
        "quantile": gettext("published value"),
        "randomized_response": gettext("estimated share of the records"),
    }
    return axes.get(kind, gettext("published sum"))


def chart_title(stat: dict, *, lower: bool = False) -> str:
    """A chart's title: the statistic's kind and columns, escaped for Plotly."""
    title = stat["title"].lower() if lower else stat["title"]
    return plotly_text(gettext("%(title)s of %(label)s") % {"title": title, "label": stat["label"]})


# Error bars are drawn for at most this many bins of a range histogram (more would hide the bars).
RANGE_ERROR_BARS = 200
# A range histogram's chart draws at most this many bars: beyond, each bar sums neighbouring
# bins (a page of 65,536 bars would weigh megabytes and show nothing more).
RANGE_CHART_BARS = 512


def range_bar_bins(bins: int) -> int:
    """How many neighbouring bins one bar of a range histogram's chart sums."""
    return math.ceil(bins / RANGE_CHART_BARS)


def _range_chart(index: int, stat: dict) -> dict:
    """A range histogram's bins as bars on the column's own axis, each as wide as its bins: one
    bin per bar, or beyond RANGE_CHART_BARS the sum of neighbouring bins; a bar is a range, so
    it is clamped at 0 and summed like any range's answer (post-processing of the published
    bins)."""
    tree = stat["tree"]
    edges = bin_edges(NumericColumn(lower=tree["lower"], upper=tree["upper"]), tree["bins"])
    values = [stat["value"][cell] for cell in stat["cells"]]
    per_bar = range_bar_bins(len(values))
    starts = range(0, len(values), per_bar)
    bar_edges = [edges[i] for i in starts] + [edges[-1]]
    chart = {
        "id": f"chart-{index}",
        "numeric": True,
        "title": chart_title(stat),
        "axis": gettext("published count")
        if per_bar == 1
        else gettext("published count per %(bins)s bins") % {"bins": per_bar},
        "x_axis": plotly_text(stat["label"]),
        "x": [(a + b) / 2 for a, b in itertools.pairwise(bar_edges)],
        "width": [b - a for a, b in itertools.pairwise(bar_edges)],
        "values": [max(0.0, range_sum(values[i : i + per_bar])) for i in starts],
        "minus": [],
        "plus": [],
    }
    if len(values) <= RANGE_ERROR_BARS:
        intervals = [selectors.cell_interval(stat, cell) for cell in stat["cells"]]
        shown = chart["values"]
        chart["minus"] = [max(0.0, v - low) for v, (low, _) in zip(shown, intervals, strict=True)]
        chart["plus"] = [high - v for v, (_, high) in zip(shown, intervals, strict=True)]
    return chart


def _table_chart(index: int, stat: dict) -> dict:
    """A 2-way table's cells as a heatmap (rows: the first column's buckets), totals left out:
    the page's table lists them."""
    rows: list[str] = []
    columns: list[str] = []
    cells: dict[tuple[str, str], float] = {}
    for label in stat["cells"]:
        row, column = json.loads(label)
        if row is None or column is None:
            continue
        rows += [row] if row not in rows else []
        columns += [column] if column not in columns else []
        cells[row, column] = stat["value"][label]
    first, second = stat["columns"]
    return {
        "id": f"chart-{index}",
        "heatmap": True,
        "title": chart_title(stat),
        "x_axis": plotly_text(second),
        "y_axis": plotly_text(first),
        "x": [plotly_text(c) for c in columns],
        "y": [plotly_text(r) for r in rows],
        "z": [[cells[r, c] for c in columns] for r in rows],
    }


# A cluster's marker is at most this wide (px); the largest cluster gets it, the others an area
# in proportion to their size, at least CLUSTER_MARKER_MIN wide so an empty one still shows.
CLUSTER_MARKER_MAX = 48
CLUSTER_MARKER_MIN = 8


def _clusters_chart(index: int, stat: dict) -> dict:
    """k-means' centroids: with two or more columns, a scatter of the first two coordinates,
    each marker's area in proportion to its cluster's published size, with the coordinates'
    95% intervals as error bars; with one column, a dot per cluster on the column's axis. The
    hover text lists every coordinate and the size, each with its interval."""
    columns = list(stat["columns"])
    rows = stat["cluster_rows"]
    largest = max((row["size"] for row in rows), default=0)
    diameters = [
        max(
            CLUSTER_MARKER_MIN,
            CLUSTER_MARKER_MAX * math.sqrt(row["size"] / largest) if largest > 0 else 0,
        )
        for row in rows
    ]

    def axis(position: int) -> dict:
        coordinates = [row["coordinates"][position] for row in rows]
        return {
            "values": [c["value"] for c in coordinates],
            "minus": [c["value"] - c["low"] for c in coordinates],
            "plus": [c["high"] - c["value"] for c in coordinates],
        }

    def hover(row: dict) -> str:
        lines = [
            gettext("cluster %(number)s") % {"number": row["cluster"]},
            gettext("size %(size)s (95%%: %(low)s – %(high)s)")
            % {
                "size": f"{row['size']:,}",
                "low": f"{row['size_low']:,}",
                "high": f"{row['size_high']:,}",
            },
            *(
                plotly_text(c["column"])
                + f" {c['value']:.4g} (95%: {c['low']:.4g} – {c['high']:.4g})"
                for c in row["coordinates"]
            ),
        ]
        return "<br>".join(lines)

    chart = {
        "id": f"chart-{index}",
        "clusters": True,
        "title": chart_title(stat),
        "names": [gettext("cluster %(number)s") % {"number": row["cluster"]} for row in rows],
        # The number beside each marker.
        "markers": [str(row["cluster"]) for row in rows],
        "sizes": [row["size"] for row in rows],
        "marker_sizes": [round(d, 2) for d in diameters],
        "hover": [hover(row) for row in rows],
        "x_axis": plotly_text(columns[0]),
        "x": axis(0),
    }
    if len(columns) > 1:
        chart["y_axis"] = plotly_text(columns[1])
        chart["y"] = axis(1)
    return chart


def _shares(counts: list[int | float]) -> list[float]:
    """Counts as shares of their total, negatives (noise) counted as 0."""
    positive = [max(0.0, float(c)) for c in counts]
    total = sum(positive)
    return [c / total if total else 0.0 for c in positive]


def _synthetic_chart(index: int, stat: dict) -> dict:
    """A synthetic table: for each column, the share of each bucket in the published noisy
    marginal beside its share of the generated rows (a menu picks the column)."""
    microdata = stat["microdata"]
    columns = microdata["columns"]
    one_way = microdata["marginals"][: len(columns)]
    generated = microdata.get("generated_counts") or [[] for _ in columns]
    return {
        "id": f"chart-{index}",
        "synthetic": True,
        # Plotly's legend, axis and hover templates (%{x}, %{y:.1%} are Plotly's, not Python's).
        "text": {
            "published": gettext("published counts"),
            "generated": gettext("synthetic rows"),
            "share": gettext("share"),
            "published_hover": gettext("%{x}: %{y:.1%} of the published counts"),
            "generated_hover": gettext("%{x}: %{y:.1%} of the synthetic rows"),
        },
        "columns": [
            {
                "name": plotly_text(name),
                "labels": [plotly_text(b) for b in buckets],
                "published": _shares(marginal["counts"]),
                "generated": _shares(made) if made else [],
            }
            for name, buckets, marginal, made in zip(
                columns, microdata["buckets"], one_way, generated, strict=True
            )
        ],
    }


def _chart_data(statistics: list[dict]) -> list[dict]:
    """Histogram bars with asymmetric 95% error bars, tables as heatmaps and k-means' centroids
    as a scatter, for the page's Plotly script. Every text from curator input (category and
    column names) is escaped by :func:`plotly_text`."""
    charts = []
    for index, stat in enumerate(statistics):
        if stat["kind"] == selectors.RANGE_KIND:
            charts.append(_range_chart(index, stat))
        elif stat["kind"] == "marginal":
            charts.append(_table_chart(index, stat))
        elif stat["kind"] == selectors.KMEANS_KIND:
            charts.append(_clusters_chart(index, stat))
        elif stat["kind"] == selectors.SYNTHETIC_KIND:
            charts.append(_synthetic_chart(index, stat))
        elif isinstance(stat["value"], dict):
            labels = list(stat["value"])
            values = [stat["value"][label] for label in labels]
            intervals = [selectors.cell_interval(stat, label) for label in labels]
            charts.append(
                {
                    "id": f"chart-{index}",
                    "title": chart_title(stat, lower=True),
                    "axis": chart_axis(stat["kind"]),
                    "labels": [plotly_text(label) for label in labels],
                    "values": values,
                    # No bar for a statistic without intervals (a quantile's accuracy is in ranks).
                    "minus": [
                        0 if low is None else v - low
                        for v, (low, _) in zip(values, intervals, strict=True)
                    ],
                    "plus": [
                        0 if high is None else high - v
                        for v, (_, high) in zip(values, intervals, strict=True)
                    ],
                }
            )
    return charts


def catalog_version(request, slug: str, version: int):
    release = selectors.release_get_published(slug=slug, version=version)
    if release is None:
        raise Http404("No published release with this name and version.")
    position, bounds, errors = _range_request(request.GET)
    throttle = RangeQueryThrottle()
    if position is not None and not throttle.allow_request(request, None):
        # The reader's own address asked too many ranges: a short page, before any work.
        wait = math.ceil(throttle.wait())
        response = render(
            request,
            "catalog/range_refused.html",
            {"release": release, "wait": wait},
            status=429,
        )
        response["Retry-After"] = str(wait)
        return response
    statistics = selectors.release_statistics(release=release)
    statistics_translate(statistics)
    ranges = [i for i, stat in enumerate(statistics) if stat["kind"] == selectors.RANGE_KIND]
    if position is not None and position not in ranges:
        errors = [
            gettext("Statistic %(number)s is not a histogram for any range.") % {"number": position}
        ]
    for index, stat in enumerate(statistics):
        is_range = index in ranges
        has_chart = stat["cell_rows"] is not None or is_range or stat["kind"] == "synthetic"
        stat["chart_id"] = f"chart-{index}" if has_chart else None
        if is_range:
            bins = stat["tree"]["bins"]
            stat["bar_bins"] = range_bar_bins(bins)
            stat["bins_text"] = f"{bins:,}"
            # The last bar sums what is left when the bars do not divide the bins evenly.
            stat["last_bar_bins"] = bins % stat["bar_bins"]
            asked = index == position
            stat["range"] = _range_tool(
                release, index, stat, bounds if asked else None, errors if asked else []
            )
    files = selectors.release_file_links(release=release)
    files_translate(files)
    for index, stat in enumerate(statistics):
        if stat.get("microdata"):
            stat["record_files"] = [f for f in files if f["position"] == index]
            stat["rows_text"] = f"{stat['microdata']['rows']:,}"
    other_versions = selectors.release_list_published().filter(series=release.series)
    url = permanent_url(release, request)
    return render(
        request,
        "catalog/version.html",
        {
            "release": release,
            "statistics": statistics,
            "files": files,
            "charts": _chart_data(statistics),
            "versions": other_versions,
            "withdrawal": release_withdrawal(release),
            "permanent_url": url,
            "citation": version_citation(release=release, url=url),
            "risk": risk_card_for_version(release=release),
            # Errors of a range request that no range tool on the page asked.
            "range_errors": errors if position not in ranges else [],
        },
    )


def catalog_version_cache_key(request, slug: str, version: int) -> list:
    """What the version page will answer (public_cache): the version, and the range asked as
    parsed, so spellings of one request, and garbage it treats alike, share one cached page."""
    position, bounds, errors = _range_request(request.GET)
    return [slug, version, position, bounds, errors]


def _range_request(params) -> tuple[int | None, tuple[float, float] | None, list[str]]:
    """The range a reader asked for on the page (``statistic``, ``from``, ``to``), if any: the
    statistic's position (None when none or not a number), the range, and the errors."""
    if "statistic" not in params:
        return None, None, []
    text = params.get("statistic", "")
    position = int(text) if text.isascii() and text.isdigit() and len(text) <= 4 else None
    bounds, errors = range_params_parse(params)
    messages = [field_problem(RANGE_FIELD_NAMES[field], m) for field, m in errors.items()]
    if position is None:
        messages.insert(0, gettext("Statistic must be a statistic's number."))
    return position, bounds, messages


def _range_tool(release, index: int, stat: dict, bounds, errors: list[str]) -> dict:
    """The range form of one range histogram: the values asked for, or its whole domain, and
    the answer or the errors when the reader asked this statistic."""
    tree = stat["tree"]
    tool = {"from": tree["lower"], "to": tree["upper"], "answer": None, "errors": errors}
    if bounds is not None and not errors:
        tool["from"], tool["to"] = bounds
        try:
            answer = selectors.release_range_answer(
                release=release, position=index, low=bounds[0], high=bounds[1]
            )
            tool["answer"] = answer and {
                **answer,
                "from_text": format_number(answer["from"]),
                "to_text": format_number(answer["to"]),
                "bins_text": f"{answer['bins']:,}",
            }
        except EngineValidationError as error:
            tool["errors"] = [
                pgettext("an error about one field", "%(field)s: %(problem)s.")
                % {"field": field.capitalize(), "problem": " ".join(map(refusal_text, m))}
                for field, m in error.errors.items()
            ]
    return tool


@login_required
def audit_page(request):
    if not user_has_role(request.user, Role.COMPLIANCE):
        raise PermissionDenied("The audit trail is for compliance staff.")
    params = request.GET
    filters, field_errors = audit_filters_parse(params)
    errors = [
        audit_translations.filter_problem_text(field, message)
        for field, messages in field_errors.items()
        for message in messages
    ]
    events = selectors.audit_event_list(user=request.user, **filters)
    page = Paginator(events, AUDIT_PAGE_SIZE).get_page(params.get("page"))
    # Each event's action and object named in the reader's language (their codes in English).
    action_names = audit_translations.audit_action_names()
    object_names = audit_translations.audit_object_names()
    page.object_list = list(page.object_list)
    for event in page.object_list:
        event.action_name = action_names.get(event.action, event.action)
        event.object_name = object_names.get(event.object_type, event.object_type)
    datasets = [
        {
            "dataset": d,
            "epsilon": selectors.dataset_budget(d)[0],
            "ledger": audit_translations.ledger_kind_name(d.ledger_kind),
        }
        for d in selectors.dataset_list_for_compliance(user=request.user)
    ]
    chain = trail_verification(datasets=selectors.dataset_ids_for_compliance(user=request.user))
    query = params.copy()
    query.pop("page", None)
    return render(
        request,
        "audit/events.html",
        {
            "page": page,
            "chain": {
                **chain,
                "problem_text": audit_translations.chain_problem_text(chain["problem"]),
            },
            "datasets": datasets,
            "pending_increases": ledger_selectors.budget_increase_list(
                user=request.user, status="pending"
            ),
            "actions": [(code, action_names.get(code, code)) for code in AuditAction.values],
            "filters": params,
            "errors": errors,
            "query": query.urlencode(),
            "export_query": f"?{query.urlencode()}" if query.urlencode() else "",
        },
    )
