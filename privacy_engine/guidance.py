"""Guidance that needs no data: a starting ε from a short questionnaire, and previews drawn on a
simulated table with the declared shape (never the real data)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal
from typing import Any

from privacy_engine.definitions import default_delta
from privacy_engine.kinds import kind_of
from privacy_engine.queries import Query
from privacy_engine.release import plan_release, release_statistic
from privacy_engine.schema import NumericColumn, Schema
from privacy_engine.translation import epsilon_to_truth_probability
from privacy_engine.wording import gettext_noop, phrase

HARM_EPSILON = {"low": 2.0, "moderate": 1.0, "severe": 0.25}
RELEASES_FACTOR = {"once": 1.0, "few": 0.5, "regularly": 0.25}
# How a simulated preview names the value it gives every record of a numeric column.
TYPICAL_BASIS = "declared typical value"
MIDPOINT_BASIS = "midpoint of the bounds"
# Statistics that simulate whole releases (k-means) per preview: each takes
# up to seconds, and a preview is one web request.
MAX_SIMULATED_RELEASES = 3


# The reasons given with a starting point and a budget (privacy_engine/wording.py: phrases the
# web layer translates; a dataset keeps its budget's reasons in English, as said at upload).
# One phrase per answer, so that a translation words each as a whole.
HARM_SUGGESTS = {
    "low": gettext_noop(
        "Low harm suggests a total of about ε = {epsilon} for this table: a truthful answer "
        "about one person at most {probability} likely."
    ),
    "moderate": gettext_noop(
        "Moderate harm suggests a total of about ε = {epsilon} for this table: a truthful "
        "answer about one person at most {probability} likely."
    ),
    "severe": gettext_noop(
        "Severe harm suggests a total of about ε = {epsilon} for this table: a truthful answer "
        "about one person at most {probability} likely."
    ),
}
RELEASES_SUGGEST = {
    "once": gettext_noop("One release can use all of it."),
    "few": gettext_noop(
        "A few releases planned: this one takes half, leaving room for the others."
    ),
    "regularly": gettext_noop(
        "Regular releases planned: this one takes a quarter, so later ones remain possible."
    ),
}
DELTA_SUGGESTED = gettext_noop("For (ε, δ)-DP, δ = {delta}: min(10⁻⁶, 1/n²) on the declared size.")
HARM_TOTAL = {
    "low": gettext_noop(
        "Low harm: a total of ε = {epsilon} for all releases of this table together, so a "
        "truthful answer about one person is at most {probability} likely (50% is a coin flip)."
    ),
    "moderate": gettext_noop(
        "Moderate harm: a total of ε = {epsilon} for all releases of this table together, so a "
        "truthful answer about one person is at most {probability} likely (50% is a coin flip)."
    ),
    "severe": gettext_noop(
        "Severe harm: a total of ε = {epsilon} for all releases of this table together, so a "
        "truthful answer about one person is at most {probability} likely (50% is a coin flip)."
    ),
}
RELEASES_SHARE = {
    "once": gettext_noop("Released once: that one release may use the whole budget."),
    "few": gettext_noop(
        "Released a few times: each release takes half by default (ε = {epsilon}), leaving "
        "room for the next."
    ),
    "regularly": gettext_noop(
        "Released regularly: each release takes a quarter by default (ε = {epsilon}), so "
        "later ones remain possible."
    ),
}
DELTA_TOTAL_ONE = gettext_noop(
    "δ, used only by (ε, δ)-DP releases: {delta} in total, min(10⁻⁶, 1/n²) for each of "
    "{count} release on the declared size."
)
DELTA_TOTAL = gettext_noop(
    "δ, used only by (ε, δ)-DP releases: {delta} in total, min(10⁻⁶, 1/n²) for each of "
    "{count} releases on the declared size."
)


@dataclass(frozen=True)
class StartingPoint:
    epsilon: float
    delta: float
    reasons: tuple[str, ...]


def suggest_starting_point(*, harm: str, releases: str, declared_size: int | None) -> StartingPoint:
    """A default ε (and δ for (ε, δ)-DP) with its reasoning, for the curator to accept or change.

    ``harm``: how harmful disclosing one person's data would be (low, moderate, severe);
    ``releases``: how many releases of this table are planned (once, few, regularly). A declared
    size outside 1 to ``MAX_ROWS`` raises :class:`EngineValidationError` naming it.
    """
    if harm not in HARM_EPSILON:
        raise ValueError(f"harm must be one of {', '.join(HARM_EPSILON)}")
    if releases not in RELEASES_FACTOR:
        raise ValueError(f"releases must be one of {', '.join(RELEASES_FACTOR)}")
    base = HARM_EPSILON[harm]
    epsilon = base * RELEASES_FACTOR[releases]
    delta = default_delta(declared_size)
    reasons = (
        phrase(
            HARM_SUGGESTS[harm],
            epsilon=f"{base:g}",
            probability=f"{epsilon_to_truth_probability(base):.3f}",
        ),
        phrase(RELEASES_SUGGEST[releases]),
        phrase(DELTA_SUGGESTED, delta=f"{delta:g}"),
    )
    return StartingPoint(epsilon=epsilon, delta=delta, reasons=reasons)


@dataclass(frozen=True)
class BudgetSuggestion:
    """A table's total budget from the two starting-point questions, and the share of it one
    release takes by default. ``total_delta`` leaves room for each planned release's default
    δ, written with at most three significant digits (rounded up, so the planned releases
    fit; the excess is below 1% of δ, itself far below 1/n)."""

    total_epsilon: float
    total_delta: Decimal
    release_epsilon: float
    reasons: tuple[str, ...]


# How many releases each answer plans for: one release takes 1/RELEASES_PLANNED of the total.
RELEASES_PLANNED = {answer: round(1 / factor) for answer, factor in RELEASES_FACTOR.items()}


def budget_from_questions(
    *, harm: str, releases: str, declared_size: int | None
) -> BudgetSuggestion:
    """The total ε (and δ) budget for a table from how harmful a disclosure would be and how
    often it will be released, with the reasons in plain words. ε is the whole table's, for all
    its releases together; δ is what the planned (ε, δ)-DP releases may use at the default
    min(10⁻⁶, 1/n²) each on the declared size."""
    point = suggest_starting_point(harm=harm, releases=releases, declared_size=declared_size)
    planned = RELEASES_PLANNED[releases]
    total_delta = _round_up(Decimal(repr(point.delta)) * planned, digits=3)
    total = HARM_EPSILON[harm]
    reasons = (
        phrase(
            HARM_TOTAL[harm],
            epsilon=f"{total:g}",
            probability=f"{epsilon_to_truth_probability(total):.1%}",
        ),
        phrase(RELEASES_SHARE[releases], epsilon=f"{point.epsilon:g}"),
        phrase(
            DELTA_TOTAL if planned > 1 else DELTA_TOTAL_ONE,
            delta=format(total_delta, "f"),
            count=planned,
        ),
    )
    return BudgetSuggestion(
        total_epsilon=total,
        total_delta=total_delta,
        release_epsilon=point.epsilon,
        reasons=reasons,
    )


def _round_up(value: Decimal, *, digits: int) -> Decimal:
    exponent = value.adjusted() - digits + 1
    return value.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_UP).normalize()


def simulated_preview(
    *,
    schema: Schema | Mapping[str, Any],
    definition: Any,
    queries: Sequence[Query | Mapping[str, Any]],
) -> list[dict[str, Any]] | None:
    """Each statistic on a simulated table of the declared size, before and after the noise the
    definition would add (drawn by the real mechanisms). Reads no data and spends no budget; the
    simulated table only has the declared shape, and is never built: its answers are computed
    from the shape, so the cost does not grow with the declared size. ``None`` without a
    declared size.

    Sums and means simulate every record of a numeric column with one value: the column's
    public ``typical`` value when declared, else the midpoint of its bounds. Their entries say
    which under ``typical_values``: a list of ``{column, value, basis}``, ``basis`` being
    TYPICAL_BASIS or MIDPOINT_BASIS, so a page can label a midpoint as such.

    A kind's :meth:`~privacy_engine.kinds.QueryKind.simulated_facts` are added to its entry:
    k-means, whose rounds need a table, simulates whole releases on a public table of the
    declared shape and adds ``objective_ratio`` (kinds/kmeans.py), a synthetic table its
    ``synthetic_error`` (synthetic.py), for at most
    MAX_SIMULATED_RELEASES different statistics (identical ones share theirs)."""
    plan = plan_release(schema=schema, definition=definition, queries=queries)
    n = plan.schema.declared_size
    if n is None:
        return None
    entries = []
    facts: dict[tuple, dict[str, Any]] = {}
    for planned in plan.statistics:
        query = planned.query
        kind = kind_of(query)
        simulation = kind.simulated(query, plan.schema, n)
        entry = {"kind": query.kind, "column": query.column, "simulated": None, "noisy": None}
        if getattr(query, "columns", ()):
            entry["columns"] = list(query.columns)
        if getattr(query, "where", None) is not None:
            entry["where"] = query.where.to_dict()
        entry["ci95"] = None
        if typical_columns := kind.simulated_typical_columns(query):
            entry["typical_values"] = [
                _typical_value(name, plan.schema) for name in typical_columns
            ]
        if simulation is not None:
            shown, mechanism_input = simulation
            result = release_statistic(planned, mechanism_input, plan.schema)
            entry.update(simulated=shown, noisy=result.value, ci95=result.ci95)
        if kind.simulates_releases:
            # Whole simulated releases (k-means: about 0.3–4 s each):
            # identical statistics share one, and a preview simulates at most
            # MAX_SIMULATED_RELEASES of them.
            key = (query, planned.epsilon, planned.delta)
            if key not in facts and len(facts) < MAX_SIMULATED_RELEASES:
                facts[key] = kind.simulated_facts(planned, plan.schema, n)
            entry.update(facts.get(key, {}))
        else:
            entry.update(kind.simulated_facts(planned, plan.schema, n))
        entries.append(entry)
    return entries


def _typical_value(name: str, schema: Schema) -> dict[str, Any]:
    """The value a simulated table gives every record of a numeric column, and its basis."""
    column = schema.column(name)
    assert isinstance(column, NumericColumn)
    return {
        "column": name,
        "value": column.simulated_value,
        "basis": TYPICAL_BASIS if column.typical is not None else MIDPOINT_BASIS,
    }
