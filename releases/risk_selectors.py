"""The risk card (privacy_engine/risk.py) of a draft, a confirmed draft and a published version,
with the table-wide totals each page may show."""

import dataclasses
from decimal import Decimal
from typing import Any

from privacy_engine import EngineValidationError, PureDP, definition_from_dict, ledger_for
from privacy_engine.accounting import IncompatibleLedger, Ledger, ledger_charge
from privacy_engine.definitions import with_default_delta
from privacy_engine.risk import RiskCard, risk_card
from privacy_engine.schema import schema_from_dict
from releases.models import Dataset, LedgerEntry, Release
from releases.selectors import budgets_from_footprints, dataset_budget, footprints_of
from releases.services.releases import missing_public_columns
from releases.translations import engine_text


def _card(
    definition, dataset: Dataset, table: tuple[Decimal, Decimal] | None, table_kind: str | None
) -> RiskCard:
    missing_public: list[str] = []
    if definition.kind == "blowfish":
        try:
            missing_public = missing_public_columns(schema_from_dict(dataset.schema), definition)
        except EngineValidationError:
            missing_public = []  # no usable schema yet: nothing to add to what is public
    return _safe_card(
        definition,
        table_epsilon=float(table[0]) if table else None,
        table_delta=float(table[1]) if table else 0.0,
        table_kind=table_kind,
        missing_public=missing_public,
    )


def _safe_card(definition, **totals) -> RiskCard:
    """The card, or, for a stored definition the engine now refuses (one saved before a limit
    existed), the card without its Blowfish section: a page never fails over its card."""
    try:
        return _in_reader_language(risk_card(definition, **totals))
    except (EngineValidationError, ValueError, OverflowError):
        card = risk_card(PureDP(epsilon=definition.epsilon), **totals)
        return dataclasses.replace(card, definition_kind=definition.kind)


def _in_reader_language(card: RiskCard) -> RiskCard:
    """The card with the engine's English (what a Blowfish policy protects and makes public) in
    the active language: the card is only ever shown on pages."""
    if card.blowfish is None:
        return card
    blowfish = dataclasses.replace(
        card.blowfish,
        protected=tuple(engine_text(line) for line in card.blowfish.protected),
        public=tuple(engine_text(line) for line in card.blowfish.public),
    )
    return dataclasses.replace(card, blowfish=blowfish)


def risk_card_for_draft(
    *, dataset: Dataset, definition: dict[str, Any], table: tuple[Decimal, Decimal] | None = None
) -> RiskCard | None:
    """The card of a release the curator is configuring under ``definition`` (None when it is
    not a valid definition yet). ``table``: every release of the table together once this one is
    added, when the caller knows it exactly (release_charge_preview's ``table_epsilon`` and
    ``table_delta``); otherwise what is spent and reserved plus this release's charge, an upper
    bound (releases on disjoint groups compose to less)."""
    try:
        parsed = definition_from_dict(with_default_delta(definition, dataset.declared_size))
    except (EngineValidationError, ValueError, TypeError, KeyError):
        return None
    ledger = (
        Ledger(kind=dataset.ledger_kind, policy=dataset.ledger_policy)
        if dataset.ledger_kind
        else ledger_for(parsed)
    )
    if table is None:
        delta = Decimal(str(getattr(parsed, "delta", 0) or 0))
        try:
            charge = ledger_charge(
                definition=parsed,
                epsilon=Decimal(str(parsed.epsilon)),
                delta=delta,
                ledger=ledger,
            )
        except IncompatibleLedger:
            return _card(parsed, dataset, None, None)
        epsilon_budget, delta_budget = dataset_budget(dataset)
        table = (
            epsilon_budget.spent + epsilon_budget.reserved + charge[0],
            delta_budget.spent + delta_budget.reserved + charge[1],
        )
    return _card(parsed, dataset, table, ledger.kind)


def risk_card_for_version(*, release: Release) -> RiskCard:
    """The card of a published version: its own guarantee, and that of every published version
    of its table together (withdrawn ones included: what they disclosed stays disclosed), as the
    table's ledger charged them. Versions not yet published are not counted: the public page
    covers what the public can have."""
    dataset = release.dataset
    entries = LedgerEntry.objects.filter(
        dataset=dataset,
        state=LedgerEntry.State.SPENT,
        release__status=Release.Status.PUBLISHED,
    ).values_list("epsilon", "delta", "footprint")
    spent = [
        footprints_of(footprint, epsilon=epsilon, delta=delta)
        for epsilon, delta, footprint in entries
    ]
    epsilon_budget, delta_budget = budgets_from_footprints(
        dataset.budget_epsilon, dataset.budget_delta, spent, []
    )
    table = (epsilon_budget.spent, delta_budget.spent) if spent else None
    try:
        definition = definition_from_dict(release.definition)
    except EngineValidationError:
        # Published before a limit the engine now enforces (e.g. θ beyond any column's range):
        # its guarantee in ε stands; the card leaves out what it cannot compute.
        card = _card(
            PureDP(epsilon=float(release.definition["epsilon"])),
            dataset,
            table,
            dataset.ledger_kind or None,
        )
        return dataclasses.replace(card, definition_kind=release.definition["kind"])
    return _card(definition, dataset, table, dataset.ledger_kind or None)
