"""Budgets recomputed from the audit trail and compared with the tables: a direct edit of a
dataset's total, ledger kind or upload, of a ledger entry or its footprint, or of the budget
journal shows up as a named mismatch, since the trail (keyed, permanent, anchored:
audit/chain.py) recorded every budget movement as it happened.

From the trail, per dataset: the upload (opening total, SHA-256), approved top-ups, and per
release the (ε, δ) reserved (with the ledger and, where recorded, the hash of the release's
footprint) and whether it was then spent or returned. From the tables: the dataset's total,
ledger kind and SHA-256; each LedgerEntry's amounts, state and footprint (whose own charge must
be the entry's); and each journal (BudgetMovement) row, matched to the event of the same kind and
release or top-up. Every difference is named with both values; an event whose details cannot be
read is named too (it can only have been forged: the application writes them).
"""

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from audit.chain import AuditAction, anchor_problem, audit_chain_verify
from audit.models import AuditEvent
from privacy_engine.accounting import ledger_used
from releases.models import BudgetMovement, Dataset, LedgerEntry
from releases.selectors import footprints_of

_BUDGET_ACTIONS = (
    AuditAction.DATASET_UPLOADED,
    AuditAction.BUDGET_INCREASE_APPROVED,
    AuditAction.BUDGET_RESERVED,
    AuditAction.BUDGET_SPENT,
    AuditAction.BUDGET_RETURNED,
)
_JOURNAL_KIND = {
    AuditAction.BUDGET_RESERVED: BudgetMovement.Kind.RESERVATION,
    AuditAction.BUDGET_SPENT: BudgetMovement.Kind.SPEND,
    AuditAction.BUDGET_RETURNED: BudgetMovement.Kind.REFUND,
    AuditAction.BUDGET_INCREASE_APPROVED: BudgetMovement.Kind.TOP_UP,
    AuditAction.DATASET_UPLOADED: BudgetMovement.Kind.OPENING,
}
# Mismatches named per verification: a database edited wholesale would otherwise make the
# answer as large as the database.
MAX_MISMATCHES = 200


@dataclass(frozen=True)
class BudgetMismatch:
    """One figure the tables and the trail disagree on."""

    dataset: int | None
    what: str
    table: str
    trail: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "what": self.what,
            "table": self.table,
            "trail": self.trail,
        }


def footprint_digest(footprint: dict | None) -> str:
    """The SHA-256 of a ledger entry's footprint as the trail records it."""
    text = json.dumps(footprint, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class _Unreadable(ValueError):
    pass


def _amount(value: Any) -> Decimal:
    """An amount an event recorded; :class:`_Unreadable` unless a finite decimal."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _Unreadable
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise _Unreadable from None
    if not amount.is_finite() or abs(amount.adjusted()) > 40:
        raise _Unreadable
    return amount


def _id(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Unreadable
    return value


def _text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, Decimal):
        return format(value.normalize(), "f") if value else "0"
    return str(value)


@dataclass
class _TrailRelease:
    epsilon: Decimal
    delta: Decimal
    ledger: Any
    footprint: str | None
    state: str = LedgerEntry.State.RESERVED


@dataclass
class _TrailDataset:
    epsilon: Decimal = Decimal(0)
    delta: Decimal = Decimal(0)
    sha256: Any = None
    opened: bool = False
    releases: dict[int, _TrailRelease] = field(default_factory=dict)
    # (journal kind, release or top-up id) → [(ε, δ), …]
    journal: dict[tuple[str, int | None], list[tuple[Decimal, Decimal]]] = field(
        default_factory=lambda: defaultdict(list)
    )


def _apply(dataset: _TrailDataset, action: str, object_id: str, details: dict) -> None:
    """One budget event, read into ``dataset``; :class:`_Unreadable` for details the
    application never writes."""
    epsilon_key, delta_key = (
        ("budget_epsilon", "budget_delta")
        if action == AuditAction.DATASET_UPLOADED
        else ("epsilon", "delta")
    )
    epsilon, delta = _amount(details.get(epsilon_key)), _amount(details.get(delta_key, "0"))
    key: int | None = None
    if action == AuditAction.DATASET_UPLOADED:
        dataset.epsilon, dataset.delta, dataset.opened = epsilon, delta, True
        dataset.sha256 = details.get("sha256")
    elif action == AuditAction.BUDGET_INCREASE_APPROVED:
        dataset.epsilon += epsilon
        dataset.delta += delta
        key = int(object_id) if object_id.isdigit() else None
    else:
        key = _id(details.get("release"))
        if action == AuditAction.BUDGET_RESERVED:
            dataset.releases[key] = _TrailRelease(
                epsilon, delta, details.get("ledger"), details.get("footprint_sha256")
            )
        elif key in dataset.releases:
            dataset.releases[key].state = (
                LedgerEntry.State.SPENT
                if action == AuditAction.BUDGET_SPENT
                else LedgerEntry.State.RETURNED
            )
    dataset.journal[(_JOURNAL_KIND[action], key)].append((epsilon, delta))


def _trail(found: list[BudgetMismatch]) -> dict[int, _TrailDataset]:
    datasets: dict[int, _TrailDataset] = defaultdict(_TrailDataset)
    events = AuditEvent.objects.filter(action__in=_BUDGET_ACTIONS).order_by("id")
    for pk, action, object_id, dataset_id, details in events.values_list(
        "pk", "action", "object_id", "dataset_id", "details"
    ):
        try:
            if dataset_id is None or not isinstance(details, dict):
                raise _Unreadable
            _apply(datasets[dataset_id], action, object_id, details)
        except _Unreadable:
            found.append(BudgetMismatch(dataset_id, f"event {pk}", "-", "unreadable details"))
    return datasets


def _journal_key(kind: str, release_id: int | None, increase_id: int | None) -> tuple:
    if kind == BudgetMovement.Kind.TOP_UP:
        return kind, increase_id
    if kind == BudgetMovement.Kind.OPENING:
        return kind, None
    return kind, release_id


def _compare_journal(dataset: Dataset, recorded: _TrailDataset, differ) -> None:
    table: dict[tuple, list[tuple[Decimal, Decimal]]] = defaultdict(list)
    rows = BudgetMovement.objects.filter(dataset=dataset).order_by("id")
    for kind, release_id, increase_id, epsilon, delta in rows.values_list(
        "kind", "release_id", "increase_id", "epsilon", "delta"
    ):
        table[_journal_key(kind, release_id, increase_id)].append((epsilon, delta))
    for key in sorted(set(table) | set(recorded.journal), key=str):
        kind, of = key
        what = f"journal {kind}" + (f" of {of}" if of is not None else "")
        mine, theirs = table.get(key, []), recorded.journal.get(key, [])
        if len(mine) != len(theirs):
            differ(dataset.pk, f"{what}: rows", len(mine), len(theirs))
            continue
        for (epsilon, delta), (trail_epsilon, trail_delta) in zip(mine, theirs, strict=True):
            differ(dataset.pk, f"{what}: ε", epsilon, trail_epsilon)
            differ(dataset.pk, f"{what}: δ", delta, trail_delta)


def _compare_entries(dataset: Dataset, recorded: _TrailDataset, differ) -> None:
    entries = {e.release_id: e for e in LedgerEntry.objects.filter(dataset=dataset)}
    for release_id in sorted(set(entries) | set(recorded.releases)):
        entry, event = entries.get(release_id), recorded.releases.get(release_id)
        what = f"release {release_id}"
        if entry is None or event is None:
            differ(
                dataset.pk,
                f"{what}: ledger entry",
                "present" if entry else "missing",
                "reserved" if event else "never reserved",
            )
            continue
        differ(dataset.pk, f"{what}: ε", entry.epsilon, event.epsilon)
        differ(dataset.pk, f"{what}: δ", entry.delta, event.delta)
        differ(dataset.pk, f"{what}: state", entry.state, event.state)
        if event.footprint is not None:
            differ(
                dataset.pk, f"{what}: footprint", footprint_digest(entry.footprint), event.footprint
            )
        # Whether its hash was recorded or not (entries reserved before footprints were), a
        # footprint must charge on its own what the trail says the release reserved.
        epsilon, delta = footprints_of(entry.footprint, epsilon=entry.epsilon, delta=entry.delta)
        try:
            charges = ledger_used([epsilon]), ledger_used([delta], delta=True)
        except (ArithmeticError, ValueError, TypeError):
            charges = None, None
        differ(dataset.pk, f"{what}: footprint's charge ε", charges[0], event.epsilon)
        differ(dataset.pk, f"{what}: footprint's charge δ", charges[1], event.delta)


def budget_mismatches(datasets: Iterable[int] | None = None) -> list[BudgetMismatch]:
    """Every dataset's budget figures that differ between the tables and the trail (at most
    MAX_MISMATCHES of them); with ``datasets`` (ids), only those datasets' (an organisation's:
    another's many mismatches cannot crowd out its own)."""
    shown = None if datasets is None else set(datasets)
    found: list[BudgetMismatch] = []
    trail = _trail(found)
    if shown is not None:
        found = [mismatch for mismatch in found if mismatch.dataset in shown]
        trail = {pk: recorded for pk, recorded in trail.items() if pk in shown}

    def differ(dataset: int, what: str, table: Any, recorded: Any) -> None:
        if table != recorded:
            found.append(BudgetMismatch(dataset, what, _text(table), _text(recorded)))

    tables = Dataset.objects.order_by("id")
    if shown is not None:
        tables = tables.filter(pk__in=shown)
    for dataset in tables:
        recorded = trail.get(dataset.pk)
        if recorded is None or not recorded.opened:
            found.append(BudgetMismatch(dataset.pk, "dataset", "present", "never uploaded"))
            continue
        differ(dataset.pk, "total ε", dataset.budget_epsilon, recorded.epsilon)
        differ(dataset.pk, "total δ", dataset.budget_delta, recorded.delta)
        differ(dataset.pk, "upload's SHA-256", dataset.sha256 or None, recorded.sha256)
        ledgers = {event.ledger for event in recorded.releases.values()} - {None}
        if ledgers:
            differ(dataset.pk, "ledger", dataset.ledger_kind, ", ".join(sorted(map(str, ledgers))))
        _compare_entries(dataset, recorded, differ)
        _compare_journal(dataset, recorded, differ)
        if len(found) >= MAX_MISMATCHES:
            break
    present = set(tables.values_list("pk", flat=True))
    for dataset_id in sorted(set(trail) - present):
        if trail[dataset_id].opened:
            found.append(BudgetMismatch(dataset_id, "dataset", "missing", "uploaded"))
    return found[:MAX_MISMATCHES]


def trail_verification(
    *, anchors: list[dict[str, Any]] = (), datasets: Iterable[int] | None = None
) -> dict[str, Any]:
    """The audit trail's chain checked, every dataset's budget recomputed from it, and each of
    ``anchors`` (heads kept outside the database) checked against it: ``valid`` only when all
    hold. With ``datasets`` (ids: an organisation's), only their budgets' mismatches are named;
    the chain is one for the whole installation."""
    chain = audit_chain_verify()
    mismatches = [m.to_dict() for m in budget_mismatches(datasets)]
    anchored = [problem for anchor in anchors if (problem := anchor_problem(anchor))]
    return {
        "valid": chain.valid and not mismatches and not anchored,
        "events": chain.events,
        "first_broken_event": chain.first_broken_event,
        "problem": chain.problem,
        "budget_mismatches": mismatches,
        "anchor_problems": anchored,
    }
