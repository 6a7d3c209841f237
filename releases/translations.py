"""English the pages show but the templates do not write: statistic titles, the published rules
and accounting the engine stored with each answer, chart labels, file names. The engine never
imports Django (DESIGN.md), so its English is translated here, in the web layer, at the time a
page is rendered in the reader's language; the API and the files keep the stored English.

What the engine wrote is translated by the phrase that wrote it (privacy_engine/wording.py): the
registered English template is the message id; a clause no phrase wrote is shown as stored.
"""

import re
from functools import cache

from django.utils.translation import get_language, gettext, pgettext

from privacy_engine.wording import CLAUSE_SEPARATOR, PHRASES, fill, phrase_match
from releases import selectors
from releases.apis.versions import VERSION_MESSAGE
from releases.parsing import DATE_MESSAGE, NUL_MESSAGE


def statistic_title(kind: str) -> str:
    """A statistic's heading ("Histogram", "Table", …) in the active language."""
    titles = {
        "count": gettext("Count"),
        "histogram": gettext("Histogram"),
        "sum": gettext("Sum"),
        "mean": gettext("Mean"),
        "quantile": gettext("Quantile"),
        "marginal": gettext("Table"),
        selectors.RANGE_KIND: gettext("Histogram for any range"),
        selectors.KMEANS_KIND: gettext("Clusters (k-means)"),
        "randomized_response": gettext("Randomized records"),
        selectors.SYNTHETIC_KIND: gettext("Synthetic table"),
    }
    return titles.get(kind, selectors.KIND_TITLES.get(kind, kind.capitalize()))


def file_label(label: str) -> str:
    """How a page names a release's file (selectors._file_label), in the active language."""
    names = {
        "configuration (JSON)": gettext("configuration (JSON)"),
        "signed metadata (JSON)": gettext("signed metadata (JSON)"),
        "signature of the metadata": gettext("signature of the metadata"),
    }
    if label in names:
        return names[label]
    records = re.fullmatch(r"records of statistic (\d+) \((.+)\)", label)
    if records:
        return gettext("records of statistic %(number)s (%(format)s)") % {
            "number": records[1],
            "format": records[2],
        }
    return label


# Fields whose values a phrase of its own wrote (a nested clause, a problem, how iterations were
# chosen): translated in turn. Every other field holds data (a column, a category, a number) and
# is shown as written, even when it happens to read like a phrase ("once", "2 records").
NESTED_FIELDS = frozenset(
    {
        "chosen",
        "count",
        "each",
        "iterations",
        "ledger",
        "problem",
        "problems",
        "sum_rule",
        "table",
        "trees",
        "what",
    }
)
# Longer stored texts are shown as written (the engine's clauses are far shorter).
LONGEST_TRANSLATED = 20_000


@cache
def _longest_phrase(registered: int) -> int:
    """The most clauses one phrase holds (the person rule holds a "; " of its own)."""
    return 1 + max((template.count(CLAUSE_SEPARATOR) for template in PHRASES), default=0)


def _phrase_text(text: str, depth: int) -> str | None:
    """``text`` in the active language when a registered phrase wrote it, its nested values
    translated in turn; None otherwise."""
    found = phrase_match(text)
    if found is None:
        return None
    template, values = found
    return fill(
        gettext(template),
        {
            name: engine_text(value, depth + 1) if name in NESTED_FIELDS else value
            for name, value in values.items()
        },
    )


def _clause_text(clause: str, depth: int) -> str:
    translated = _phrase_text(clause, depth)
    if translated is not None:
        return translated
    # A clause about one column of several ("age: values clamped to …", kinds/base.py:
    # columns_rule); the column's name may hold ": " of its own ("Q1: age").
    split = clause.find(": ")
    while split > 0:
        rest = _phrase_text(clause[split + 2 :], depth)
        if rest is not None:
            return pgettext("a rule about one column", "%(column)s: %(rule)s") % {
                "column": clause[:split],
                "rule": rest,
            }
        split = clause.find(": ", split + 2)
    return clause


def _clauses(text: str) -> list[str] | None:
    """``text`` split at each clause separator outside parentheses; None when its parentheses
    do not balance (a text of an older shape, or a label holding one: shown as written rather
    than cut in the wrong place)."""
    clauses, depth, start = [], 0, 0
    for position, character in enumerate(text):
        if character == "(":
            depth += 1
        elif character == ")":
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and text.startswith(CLAUSE_SEPARATOR, position):
            clauses.append(text[start:position])
            start = position + len(CLAUSE_SEPARATOR)
    clauses.append(text[start:])
    return clauses if depth == 0 else None


def _english() -> bool:
    language = get_language()
    return language is None or language.split("-")[0] == "en"


def engine_text(text: str | None, depth: int = 0) -> str:
    """English the engine wrote (privacy_engine/wording.py: a phrase, or clauses joined by
    "; "), in the active language: each run of clauses a registered phrase wrote is translated
    with its values; any other clause is shown as stored. In English, the text as stored."""
    if not text:
        return ""
    if _english() or depth > 3 or len(text) > LONGEST_TRANSLATED:
        return text
    clauses = _clauses(text)
    if clauses is None:
        return text
    if len(clauses) == 1:
        return _clause_text(text, depth)
    longest = _longest_phrase(len(PHRASES))
    shown: list[str] = []
    start = 0
    while start < len(clauses):
        for end in range(min(len(clauses), start + longest), start + 1, -1):
            translated = _phrase_text(CLAUSE_SEPARATOR.join(clauses[start:end]), depth)
            if translated is not None:
                shown.append(translated)
                start = end
                break
        else:
            shown.append(_clause_text(clauses[start], depth))
            start += 1
    separator = pgettext("between the clauses of a rule", "; ")
    return separator.join(shown)


def rule_text(rule: str | None) -> str:
    """A statistic's published rules (clauses joined by "; ") in the active language."""
    return engine_text(rule)


def part_role(role: str) -> str:
    """A part of a statistic (a mean's sum and count, k-means' counts and sums, a synthetic
    table's measurements: phrases of privacy_engine/synthetic.py) named in the active
    language. "sum" and "count" are no phrases: a phrase's value (a column named "count") would
    then read as one."""
    roles = {
        "sum": gettext("sum"),
        "count": gettext("count"),
    }
    if role in roles:
        return roles[role]
    return engine_text(role)


def accounting_text(accounting: str | None) -> str:
    """A statistic's accounting notes (phrases joined by "; ", e.g. the Gaussian mechanism's in
    privacy_engine/mechanisms.py) in the active language; an unknown one as stored."""
    return engine_text(accounting)


def statistics_translate(statistics: list[dict]) -> None:
    """Give each statistic of a public page its texts in the active language: ``title``,
    ``rule_text``, ``accounting_text`` and each part's ``role_text``; k-means' cell labels."""
    for stat in statistics:
        stat["title"] = statistic_title(stat["kind"])
        stat["rule_text"] = rule_text(stat.get("rule"))
        stat["accounting_text"] = accounting_text(stat.get("accounting"))
        for part in stat.get("parts") or []:
            part["role_text"] = part_role(str(part.get("role", "")))
        if stat["kind"] == selectors.KMEANS_KIND:
            for cell in stat.get("cell_rows") or []:
                cell["label"] = _cluster_label(cell["label"])
        microdata = stat.get("microdata")
        if isinstance(microdata, dict) and microdata.get("guarantee"):
            # A synthetic table's guarantee, which the version page states under its rules (a
            # copy: the stored microdata keeps its English).
            stat["microdata"] = {**microdata, "guarantee": engine_text(microdata["guarantee"])}


def _cluster_label(label: str) -> str:
    match = re.fullmatch(r"cluster (?P<number>\d+): (?P<what>.+)", label)
    if not match:
        return label
    what = gettext("size") if match["what"] == "size" else match["what"]
    return gettext("cluster %(number)s: %(what)s") % {"number": match["number"], "what": what}


def files_translate(files: list[dict]) -> None:
    for file in files:
        file["label"] = file_label(file["label"])


def problem_text(problem: str) -> str:
    """What is wrong with a query parameter (releases/parsing.py writes it for the API and the
    pages alike) in the active language; an unknown message as written."""
    known = {
        VERSION_MESSAGE: gettext("must be a version number (a whole number from 1)"),
        DATE_MESSAGE: gettext("must be a date, e.g. 2026-11-25"),
        NUL_MESSAGE: gettext("must not contain a NUL character"),
        "must be a finite number, e.g. 20": gettext("must be a finite number, e.g. 20"),
        "must be above from": gettext("must be above from"),
    }
    if problem in known:
        return known[problem]
    longest = re.fullmatch(r"must be at most (?P<count>[\d,]+) characters", problem)
    if longest:
        return gettext("must be at most %(count)s characters") % {"count": longest["count"]}
    choices = re.fullmatch(r"must be one of: (?P<choices>.+)", problem)
    if choices:
        return gettext("must be one of: %(choices)s") % {"choices": choices["choices"]}
    return problem


def field_problem(field: str, problems: list[str]) -> str:
    """One error line of a page: the field's name, then what is wrong with it."""
    return gettext("%(field)s %(problem)s.") % {
        "field": field,
        "problem": " ".join(problem_text(problem) for problem in problems),
    }


def definition_name(kind: str) -> str:
    """A privacy definition's name in the active language (its kind when unknown)."""
    names = {
        "pure_dp": gettext("ε-differential privacy"),
        "approx_dp": gettext("(ε, δ)-differential privacy"),
        "blowfish": gettext("Blowfish privacy"),
    }
    return names.get(kind, kind)


def _diff_field_label(name: str) -> str:
    labels = {
        "kind": pgettext("a field of a privacy definition", "kind"),
        "epsilon": pgettext("a field of a privacy definition", "epsilon"),
        "delta": pgettext("a field of a privacy definition", "delta"),
        "policy": pgettext("a field of a privacy definition", "policy"),
        "mechanism": pgettext("how a statistic was released", "mechanism"),
        "sensitivity": pgettext("how a statistic was released", "sensitivity"),
        "noise_scale": pgettext("how a statistic was released", "noise_scale"),
    }
    return labels.get(name, name)


def _diff_note(note: str) -> str:
    known = {
        "Clusters are not matched across versions: compare their centres by eye.": gettext(
            "Clusters are not matched across versions: compare their centres by eye."
        ),
        "Published in another shape in each version.": gettext(
            "Published in another shape in each version."
        ),
    }
    if note in known:
        return known[note]
    cells = re.fullmatch(r"(?P<cells>[\d,]+) cells: compare the versions' files\.", note)
    if cells:
        return gettext("%(cells)s cells: compare the versions' files.") % {"cells": cells["cells"]}
    return note


def diff_translate(diff: dict) -> None:
    """The texts of a comparison of two versions (releases/services/versions.py: version_diff)
    in the active language: field labels, statistic titles and notes."""
    for field in diff["definition"]["fields"]:
        field["label"] = _diff_field_label(field["name"])
        if field["name"] == "kind":
            for side in ("from", "to"):
                if isinstance(field[side], str):
                    field[side] = definition_name(field[side])
    statistics = diff["statistics"]
    for stat in [*statistics["added"], *statistics["removed"], *statistics["in_both"]]:
        stat["title"] = statistic_title(stat["kind"])
    for stat in statistics["in_both"]:
        for field in stat["method"]:
            field["label"] = _diff_field_label(field["name"])
        stat["note"] = _diff_note(stat.get("note") or "")


def desiderata_translate(table: dict) -> dict:
    """The desiderata table (privacy_engine.desiderata: its names, labels and texts are engine
    phrases) in the active language; a text the engine words otherwise stays as it is."""

    def word(text):
        return engine_text(text) if isinstance(text, str) else text

    return {
        **table,
        "columns": [word(name) for name in table["columns"]],
        "rows": [
            {
                **row,
                "label": word(row["label"]),
                "why": word(row["why"]),
                "values": [word(value) for value in row["values"]],
            }
            for row in table["rows"]
        ],
    }


def simulated_translate(simulated: list[dict] | None) -> list[dict] | None:
    """The simulated preview (privacy_engine.guidance.simulated_preview) with the sentences the
    page shows in the active language: k-means' objective ratio and a synthetic table's error,
    both engine phrases. Copies: the API serves the engine's English."""
    if simulated is None:
        return None
    shown = []
    for entry in simulated:
        entry = dict(entry)
        ratio = entry.get("objective_ratio")
        if isinstance(ratio, dict):
            entry["objective_ratio"] = {**ratio, "sentence": engine_text(ratio.get("sentence"))}
        error = entry.get("synthetic_error")
        if isinstance(error, dict):
            entry["synthetic_error"] = {
                **error,
                "sentence": engine_text(error.get("sentence")),
                "simulated_table": engine_text(error.get("simulated_table")),
            }
        shown.append(entry)
    return shown


def chart_kind_names() -> dict[str, str]:
    """How the preview's simulated charts name each kind of statistic in their titles: the
    kind's own word in English (``sum of age``), its name in another language."""
    return {
        "count": pgettext("statistic kind in a chart title", "count"),
        "histogram": pgettext("statistic kind in a chart title", "histogram"),
        "sum": pgettext("statistic kind in a chart title", "sum"),
        "mean": pgettext("statistic kind in a chart title", "mean"),
        "quantile": pgettext("statistic kind in a chart title", "quantile"),
        "marginal": pgettext("statistic kind in a chart title", "marginal"),
        "range_histogram": pgettext("statistic kind in a chart title", "range_histogram"),
        "kmeans": pgettext("statistic kind in a chart title", "kmeans"),
        "randomized_response": pgettext("statistic kind in a chart title", "randomized_response"),
        "synthetic": pgettext("statistic kind in a chart title", "synthetic"),
    }
