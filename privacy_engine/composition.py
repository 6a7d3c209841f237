"""How a release's statistics compose into the ε (and δ) its ledger is charged (DESIGN.md,
"Composition"), in words a ledger can show beside each of its rows and on its page.

Statistics of one release are computed on the same records, so their ε add up (sequential
composition: ε_total = Σ ε_i, which is what :attr:`ReleasePlan.epsilon_spent` sums, exactly, then
rounds up to the ledger's 12 places). Inside one statistic whose mechanism answers the cells of a
partition (a histogram's buckets, a table's cells, k-means' clusters), one person's data lies in
at most one cell when each person has one row and neighbours add or remove a record: then the
cells cost that mechanism's ε once (parallel composition), not once per cell. With up to c rows
per person, or under Blowfish (a replacement moves a record from one cell to another), a person
can be in several cells: the charge is still one ε, because the one draw's sensitivity covers
all of a person's rows or the move, and the words say that instead. The ledger may then convert
the total (accounting.py, :func:`ledger_conversion`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from privacy_engine.accounting import Ledger, ledger_conversion, ledger_rule
from privacy_engine.definitions import Blowfish, Definition
from privacy_engine.footprint import Footprint, exact_text, records_in_parallel
from privacy_engine.kinds import PlannedStatistic, kind_of
from privacy_engine.kinds.restricted import restriction_of
from privacy_engine.release import ReleasePlan, exact_sum
from privacy_engine.wording import CLAUSE_SEPARATOR, gettext_noop, phrase

# The composition's words: phrases the web layer translates for its pages
# (privacy_engine/wording.py); the ledger's rows, the API and the audit trail keep the English.
SUM_RULE = gettext_noop(
    "ε = Σ εᵢ: the charge is the exact sum of the statistics' shares rounded up to the ledger's "
    "12 decimal places (δ: up to 15 significant digits), never below it"
)
SEQUENTIAL = gettext_noop("sequential")
SEQUENTIAL_GROUPS = gettext_noop("sequential, parallel over groups")
PARALLEL_CELLS = gettext_noop("parallel over {cells} disjoint cells")
ROWS_IN_ONE_DRAW = gettext_noop("one draw whose sensitivity covers all {rows} rows of a person")
MOVING_ROWS_IN_ONE_DRAW = gettext_noop(
    "one draw whose sensitivity covers all {rows} rows of a person, each of which may move "
    "between cells"
)
MOVING_RECORD_IN_ONE_DRAW = gettext_noop(
    "one draw whose sensitivity covers a record moving between cells"
)
EXACT_FREE = gettext_noop("exact: public under this definition, so it costs no ε")
SEQUENTIAL_PARTS_EACH = gettext_noop("sequential over its {parts} noisy parts, each {each}")
SEQUENTIAL_PARTS = gettext_noop("sequential over its {parts} noisy parts")
ONE_NOISY_ANSWER = gettext_noop("one noisy answer")
GROUPS_PARALLEL = gettext_noop(
    "{column}: its groups' statistics compose in parallel, charged the largest group's "
    "ε = {epsilon} ({groups})"
)
# The ledger page's rules, one phrase a sentence (composition_sentences).
RULES_SEQUENTIAL = gettext_noop("The statistics of one release add up (sequential: {sum_rule}).")
RULES_PARALLEL = gettext_noop(
    "Inside one statistic, cells that each person's data falls in at most one of cost its ε "
    "once (parallel), when each person has one row and neighbours add or remove a record; with "
    "several rows per person, or under Blowfish (a replacement can move a record between "
    "cells), the statistic is one draw whose sensitivity covers all of a person's rows, or the "
    "move."
)
RULES_GROUPS = gettext_noop(
    "Statistics restricted to disjoint groups of a categorical column compose in parallel, "
    "within a release and across releases, on the same conditions: the budget is charged what "
    "the worst-off person loses, everyone's ε plus, per column, its largest group's."
)
# "Then " and accounting.LEDGER_RULES: a literal, so that the catalogue holds it (a test checks
# that it says LEDGER_RULES).
RULES_LEDGER = gettext_noop(
    "Then an ε-DP release on a Blowfish ledger is charged 2ε, and an (ε, δ)-DP one 2ε and "
    "(1 + e^ε)·δ (replacing a record is removing one and adding another); a Blowfish release "
    "cannot be charged to a differential-privacy ledger, nor to another policy's."
)


def _cells_words(cells: int, *, rows_per_person: int, definition: Definition | None) -> str:
    """How one draw over ``cells`` such cells composes."""
    if records_in_parallel(rows_per_person=rows_per_person, definition=definition):
        return phrase(PARALLEL_CELLS, cells=cells)
    if rows_per_person > 1:
        if isinstance(definition, Blowfish):
            return phrase(MOVING_ROWS_IN_ONE_DRAW, rows=rows_per_person)
        return phrase(ROWS_IN_ONE_DRAW, rows=rows_per_person)
    return phrase(MOVING_RECORD_IN_ONE_DRAW)


def statistic_within(
    statistic: PlannedStatistic,
    cells: int | None,
    *,
    rows_per_person: int = 1,
    definition: Definition | None = None,
) -> str:
    """How one statistic's own parts compose: ``cells`` is its kind's ``disjoint_cells`` (cells
    each record falls in at most one of); ``rows_per_person`` the schema's c and ``definition``
    the release's, which decide whether those cells compose in parallel."""
    noisy = sum(1 for m in statistic.mechanisms if m.epsilon_spent or m.delta_spent)
    if noisy == 0:
        return phrase(EXACT_FREE)
    each = None
    if cells is not None:
        each = _cells_words(cells, rows_per_person=rows_per_person, definition=definition)
    if each is not None and noisy == 1:
        return each
    if each is not None:
        return phrase(SEQUENTIAL_PARTS_EACH, parts=noisy, each=each)
    if noisy > 1:
        return phrase(SEQUENTIAL_PARTS, parts=noisy)
    return phrase(ONE_NOISY_ANSWER)


def composition_sentences() -> list[str]:
    """The sentences of :func:`composition_rules`, each written by one phrase, so that a page
    can show each in its reader's language."""
    return [
        phrase(RULES_SEQUENTIAL, sum_rule=phrase(SUM_RULE)),
        phrase(RULES_PARALLEL),
        phrase(RULES_GROUPS),
        phrase(RULES_LEDGER),
    ]


def composition_rules() -> str:
    """The ledger page's statement of how releases are charged: the same rules, in the same
    words, as each row's composition."""
    return " ".join(composition_sentences())


@dataclass(frozen=True)
class StatisticShare:
    """One statistic's part of a release's ε: ``epsilon`` and ``delta`` are the exact sums of
    its mechanisms' own privacy maps (each float's exact value, unrounded), so the shares of a
    release add up exactly to the sum the ledger rounds up: Σ shares ≤ charge < Σ shares +
    10⁻¹² for ε. ``disjoint_cells`` is set only when the cells compose in parallel."""

    position: int
    kind: str
    column: str | None
    epsilon: Decimal
    delta: Decimal
    within: str
    disjoint_cells: int | None
    where: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "position": self.position,
            "kind": self.kind,
            "epsilon": exact_text(self.epsilon),
            "within": self.within,
        }
        if self.column is not None:
            out["column"] = self.column
        if self.delta:
            out["delta"] = exact_text(self.delta)
        if self.disjoint_cells is not None:
            out["disjoint_cells"] = self.disjoint_cells
        if self.where is not None:
            out["where"] = self.where
        return out


@dataclass(frozen=True)
class ReleaseComposition:
    """The rule that turns a release's statistics into its ledger charge.

    ``epsilon`` and ``delta`` are the sequential sums (the plan's: the shares' exact sum rounded
    up to the ledger's places, as ``sum_rule`` says); ``charged_epsilon`` and ``charged_delta``
    what the ledger records after ``ledger`` (its conversion, if any)."""

    definition: str
    statistics: tuple[StatisticShare, ...]
    epsilon: Decimal
    delta: Decimal
    ledger: str
    charged_epsilon: Decimal
    charged_delta: Decimal
    # What the ledger adds to the dataset's footprints (footprint.py), ε and δ.
    footprint: tuple[Footprint, Footprint] = (Footprint(), Footprint())
    # How statistics restricted to groups were charged, when any compose in parallel.
    groups: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "rule": phrase(SEQUENTIAL_GROUPS) if self.groups else phrase(SEQUENTIAL),
            "definition": self.definition,
            "statistics": [share.to_dict() for share in self.statistics],
            "sum_rule": phrase(SUM_RULE),
            "epsilon": exact_text(self.epsilon),
            "delta": exact_text(self.delta),
            "ledger": self.ledger,
            "charged": {
                "epsilon": exact_text(self.charged_epsilon),
                "delta": exact_text(self.charged_delta),
            },
            "footprint": {
                "epsilon": self.footprint[0].to_dict(),
                "delta": self.footprint[1].to_dict(),
            },
        }
        if self.groups:
            out["groups"] = self.groups
        return out


def charged_footprints(
    *, plan: ReleasePlan, ledger: Ledger, charged_epsilon: Decimal, charged_delta: Decimal
) -> tuple[Footprint, Footprint]:
    """What a release adds to its dataset's (ε, δ) footprints: the plan's exact ones, whose
    charge the ledger rounds up to (``charged_*``), where its groups compose in parallel and the
    ledger charges the release as composed; otherwise the charged amounts for everyone (a
    ledger's conversion, such as 2ε on a Blowfish ledger, applies to the release's charge, and
    its releases then add up sequentially)."""
    epsilon, delta = plan.footprints()
    converted = ledger_conversion(definition_kind=plan.definition.kind, ledger_kind=ledger.kind)
    if converted is None and (epsilon.parallel or delta.parallel):
        return epsilon, delta
    return Footprint(everyone=charged_epsilon), Footprint(everyone=charged_delta)


def _groups_words(footprint: Footprint) -> str | None:
    """How statistics restricted to groups were charged, in words, or None."""
    if not footprint.parallel:
        return None
    columns = []
    for column, per_group in footprint.groups.items():
        largest = max(per_group.values())
        worst = [name for name, amount in per_group.items() if amount == largest]
        columns.append(
            phrase(
                GROUPS_PARALLEL,
                column=column,
                epsilon=exact_text(largest),
                groups=", ".join(worst),
            )
        )
    return CLAUSE_SEPARATOR.join(columns)


def release_composition(
    *, plan: ReleasePlan, ledger: Ledger, charged_epsilon: Decimal, charged_delta: Decimal
) -> ReleaseComposition:
    """How ``plan``'s statistics compose (sequentially across statistics; in parallel across a
    partitioned statistic's cells when a person's data is in at most one) into the (ε, δ)
    charged on ``ledger``. Reads no data."""
    rows_per_person = plan.schema.rows_per_person
    parallel = records_in_parallel(rows_per_person=rows_per_person, definition=plan.definition)
    shares = []
    for position, statistic in enumerate(plan.statistics):
        cells = kind_of(statistic.query).disjoint_cells(statistic.query, plan.schema)
        within = statistic_within(
            statistic, cells, rows_per_person=rows_per_person, definition=plan.definition
        )
        shares.append(
            StatisticShare(
                position=position,
                kind=statistic.query.kind,
                column=statistic.query.column,
                epsilon=exact_sum([m.epsilon_spent for m in statistic.mechanisms]),
                delta=exact_sum([m.delta_spent for m in statistic.mechanisms]),
                within=within,
                disjoint_cells=cells if parallel else None,
                where=statistic.query.where.to_dict() if restriction_of(statistic.query) else None,
            )
        )
    footprint = charged_footprints(
        plan=plan, ledger=ledger, charged_epsilon=charged_epsilon, charged_delta=charged_delta
    )
    return ReleaseComposition(
        definition=plan.definition.kind,
        statistics=tuple(shares),
        epsilon=plan.epsilon_spent,
        delta=plan.delta_spent,
        ledger=ledger_rule(definition_kind=plan.definition.kind, ledger_kind=ledger.kind),
        charged_epsilon=charged_epsilon,
        charged_delta=charged_delta,
        footprint=footprint,
        groups=_groups_words(plan.footprints()[0]),
    )
