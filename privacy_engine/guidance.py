"""Guidance that needs no data: a starting ε from a short questionnaire, and previews drawn on a
simulated table with the declared shape (never the real data)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from privacy_engine.definitions import default_delta
from privacy_engine.queries import Count, Histogram, Mean, Query, Sum, bin_labels
from privacy_engine.release import plan_release, release_statistic
from privacy_engine.schema import CategoricalColumn, NumericColumn, Schema
from privacy_engine.translation import epsilon_to_truth_probability

HARM_EPSILON = {"low": 2.0, "moderate": 1.0, "severe": 0.25}
RELEASES_FACTOR = {"once": 1.0, "few": 0.5, "regularly": 0.25}


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
        f"{harm.capitalize()} harm suggests a total of about ε = {base:g} for this table: "
        f"a truthful answer about one person at most {epsilon_to_truth_probability(base):.3f} "
        "likely.",
        {
            "once": "One release can use all of it.",
            "few": "A few releases planned: this one takes half, leaving room for the others.",
            "regularly": "Regular releases planned: this one takes a quarter, so later ones "
            "remain possible.",
        }[releases],
        f"For (ε, δ)-DP, δ = {delta:g}: min(10⁻⁶, 1/n²) on the declared size.",
    )
    return StartingPoint(epsilon=epsilon, delta=delta, reasons=reasons)


def _simulated_answer(query: Query, schema: Schema, n: int) -> Any:
    """The answer on a table of n records spread evenly over the declared shape: categories in
    turn, numbers evenly between the bounds (so each sum is n times the middle of the range)."""
    if isinstance(query, Count):
        return n
    if isinstance(query, Histogram):
        column = schema.column(query.column)
        if isinstance(column, CategoricalColumn):
            counts = dict(zip(column.categories, _even(n, len(column.categories)), strict=True))
            return {cell: counts.get(cell, 0) for cell in column.buckets}
        assert isinstance(column, NumericColumn)
        assert query.bins is not None
        widths = [b - a for a, b in zip(query.bins[:-1], query.bins[1:], strict=True)]
        total = sum(widths)
        counts = [round(n * w / total) for w in widths]
        return dict(zip(bin_labels(query.bins), counts, strict=True))
    names = query.summed_columns if isinstance(query, Sum) else (query.column,)
    middles = {}
    for name in names:
        column = schema.column(name)
        assert isinstance(column, NumericColumn)
        middles[name] = (column.lower + column.upper) / 2
    if isinstance(query, Mean):
        return middles[query.column]
    if isinstance(query, Sum) and query.columns:
        return {name: n * middle for name, middle in middles.items()}
    return n * next(iter(middles.values()))


def _mechanism_input(query: Query, schema: Schema, n: int, simulated: Any) -> Any:
    """The simulated answer in the shape the statistic's mechanisms take (see
    :func:`privacy_engine.release.release_statistic`)."""
    if isinstance(query, Histogram):
        return list(simulated.values())
    if isinstance(query, Sum) and query.columns:
        return [simulated[name] for name in query.columns]
    if isinstance(query, Mean):
        return n * simulated, n
    return simulated


def _even(n: int, parts: int) -> list[int]:
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


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
    declared size."""
    plan = plan_release(schema=schema, definition=definition, queries=queries)
    n = plan.schema.declared_size
    if n is None:
        return None
    entries = []
    for planned in plan.statistics:
        query = planned.query
        simulated = _simulated_answer(query, plan.schema, n)
        result = release_statistic(
            planned, _mechanism_input(query, plan.schema, n, simulated), plan.schema
        )
        entries.append(
            {
                "kind": query.kind,
                "column": query.column,
                "simulated": simulated,
                "noisy": result.value,
                "ci95": result.ci95,
            }
        )
    return entries
