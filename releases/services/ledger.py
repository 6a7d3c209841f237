"""The budget journal and top-ups: every movement of a dataset's budget as a BudgetMovement row
(its opening total, reservations, spends, refunds and top-ups), written in the transaction of the
change it records, and requests to raise a total, which take effect only when a compliance
officer other than the requester approves them."""

import re
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from audit.chain import AuditAction, audit_record
from privacy_engine import Ledger
from privacy_engine.accounting import DELTA_PLACES, LEDGER_PLACES, ledger_rule, ledger_spends_delta
from privacy_engine.composition import release_composition
from privacy_engine.footprint import exact_text
from releases.models import (
    BudgetIncrease,
    BudgetMovement,
    Dataset,
    LedgerEntry,
)
from releases.services.errors import Conflict, ValidationFailed

# One request raises ε by at most this much: a larger raise is a new dataset's worth of budget,
# which deserves its own look rather than one click.
MAX_TOP_UP_EPSILON = Decimal(100)
MAX_REASON_LENGTH = 2000
MAX_COMMENT_LENGTH = 2000
# No budget total reaches this: larger numbers are typing mistakes (and overflow the columns).
MAX_BUDGET = Decimal("1e12")
SYSTEM_ACTOR = "system"
# ASCII digits only: Decimal would also read "1_0" as 10 and "١" (Arabic-Indic) as 1.
_NUMBER = re.compile(
    r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?i:nan|inf|infinity)"
)


def ledger_composition(*, plan, ledger: Ledger, epsilon: Decimal, delta: Decimal) -> dict:
    """The composition a release's ledger rows carry (see privacy_engine/composition.py)."""
    return release_composition(
        plan=plan, ledger=ledger, charged_epsilon=epsilon, charged_delta=delta
    ).to_dict()


def budget_reservation_record(
    *, entry: LedgerEntry, user, composition: dict[str, Any]
) -> BudgetMovement:
    """The journal's row for a reservation just made, in the submitting transaction."""
    return BudgetMovement.objects.create(
        dataset_id=entry.dataset_id,
        release_id=entry.release_id,
        kind=BudgetMovement.Kind.RESERVATION,
        actor=user.get_username(),
        at=entry.created_at,
        epsilon=entry.epsilon,
        delta=entry.delta,
        composition=composition,
    )


def budget_settlement_record(*, entry: LedgerEntry) -> BudgetMovement:
    """The journal's row for a reservation just settled (spent or returned), in the settling
    transaction; it repeats the reservation's composition, which the settlement does not
    change. A release reserved before the journal existed and settled after it may have no
    reservation row: its spend or refund is written all the same, with the amounts and the
    ledger conversion its LedgerEntry records."""
    reservation = BudgetMovement.objects.filter(
        release_id=entry.release_id, kind=BudgetMovement.Kind.RESERVATION
    ).first()
    kind = (
        BudgetMovement.Kind.SPEND
        if entry.state == LedgerEntry.State.SPENT
        else BudgetMovement.Kind.REFUND
    )
    return BudgetMovement.objects.create(
        dataset_id=entry.dataset_id,
        release_id=entry.release_id,
        kind=kind,
        actor=SYSTEM_ACTOR,
        at=entry.updated_at,
        epsilon=entry.epsilon,
        delta=entry.delta,
        composition=reservation.composition
        if reservation is not None
        else _entry_composition(entry),
    )


def _entry_composition(entry: LedgerEntry) -> dict[str, Any]:
    """What a ledger entry alone says of its release's composition: the charged amounts and
    the ledger's conversion (the release's statistics are not re-planned here)."""
    ledger_kind = Dataset.objects.values_list("ledger_kind", flat=True).get(pk=entry.dataset_id)
    return {
        "rule": "sequential",
        "definition": entry.definition_kind,
        "statistics": [],
        "ledger": ledger_rule(definition_kind=entry.definition_kind, ledger_kind=ledger_kind),
        "charged": {"epsilon": exact_text(entry.epsilon), "delta": exact_text(entry.delta)},
        "note": "reserved before the journal existed: amounts as its ledger entry records them",
    }


def budget_opening_record(*, dataset: Dataset, user) -> BudgetMovement:
    """The journal's first row for a dataset just created: its opening (ε, δ) total, in the
    creating transaction. The running totals start from it."""
    return BudgetMovement.objects.create(
        dataset=dataset,
        kind=BudgetMovement.Kind.OPENING,
        actor=user.get_username(),
        at=dataset.created_at,
        epsilon=dataset.budget_epsilon,
        delta=dataset.budget_delta,
        composition={"rule": "opening"},
    )


def budget_amount(
    value: Any,
    *,
    field: str,
    places: Decimal,
    allow_zero: bool,
    at_most: Decimal | None = None,
) -> Decimal:
    """``value`` (a string or number) as an exact budget amount with at most ``places``
    decimals: above 0 (or 0 when ``allow_zero``), below 10¹², and at most ``at_most`` per
    request when given. :class:`ValidationFailed` names ``field``. Dataset creation and top-ups
    both read amounts with it."""
    text = str(value).strip() if value is not None else ""
    if isinstance(value, bool) or not _NUMBER.fullmatch(text):
        raise ValidationFailed({field: [gettext("must be a number")]})
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise ValidationFailed({field: [gettext("must be a number")]}) from None
    if not amount.is_finite() or amount < 0 or (amount == 0 and not allow_zero):
        raise ValidationFailed({field: [gettext("must be a number greater than 0")]})
    if at_most is not None and amount > at_most:
        raise ValidationFailed(
            {field: [gettext("must be at most %(limit)s per request") % {"limit": at_most}]}
        )
    if amount >= MAX_BUDGET:
        raise ValidationFailed({field: [gettext("is too large")]})
    # Below 10¹² with at most 30 places fits in 42 digits: compare at a precision that never
    # rounds, so a 31st place is refused rather than silently dropped.
    with localcontext() as context:
        context.prec = 100
        exact = amount == amount.quantize(places)
    if not exact:
        decimals = -places.as_tuple().exponent
        raise ValidationFailed(
            {field: [gettext("use at most %(count)s decimal places") % {"count": decimals}]}
        )
    return amount


def budget_increase_request(
    *, dataset: Dataset, user, epsilon: Any, delta: Any = None, reason: Any
) -> BudgetIncrease:
    """A curator's request to raise ``dataset``'s total by (ε, δ), with a reason; nothing
    changes until compliance approves it. :class:`ValidationFailed` names each bad field."""
    errors: dict[str, list[str]] = {}
    amounts: dict[str, Decimal] = {}
    try:
        amounts["epsilon"] = budget_amount(
            epsilon,
            field="epsilon",
            places=LEDGER_PLACES,
            allow_zero=False,
            at_most=MAX_TOP_UP_EPSILON,
        )
    except ValidationFailed as error:
        errors.update(error.errors)
    amounts["delta"] = Decimal(0)
    if delta not in (None, ""):
        try:
            amounts["delta"] = budget_amount(
                delta, field="delta", places=DELTA_PLACES, allow_zero=True
            )
        except ValidationFailed as error:
            errors.update(error.errors)
    if amounts["delta"] and not ledger_spends_delta(dataset.ledger_kind):
        errors["delta"] = [
            gettext("no release on this dataset's ledger can be charged δ: raise ε only")
        ]
    elif amounts["delta"] and dataset.budget_delta + amounts["delta"] >= 1:
        # The bound dataset creation sets (a total δ below 1).
        errors["delta"] = [gettext("the total δ must stay below 1")]
    reason = reason.strip() if isinstance(reason, str) else ""
    if not reason:
        errors["reason"] = [gettext("Say why the budget should be raised.")]
    elif len(reason) > MAX_REASON_LENGTH:
        errors["reason"] = [
            gettext("Use at most %(count)s characters.") % {"count": MAX_REASON_LENGTH}
        ]
    if errors:
        raise ValidationFailed(errors)
    with transaction.atomic():
        increase = BudgetIncrease.objects.create(
            dataset=dataset,
            requested_by=user,
            epsilon=amounts["epsilon"],
            delta=amounts["delta"],
            reason=reason,
        )
        audit_record(
            actor=user,
            action=AuditAction.BUDGET_INCREASE_REQUESTED,
            object_type="budget_increase",
            object_id=increase.pk,
            dataset_id=dataset.pk,
            details={
                "epsilon": str(increase.epsilon),
                "delta": str(increase.delta),
                "reason": reason,
            },
        )
    return increase


def _comment(comment: Any) -> str:
    if comment is None:
        return ""
    if not isinstance(comment, str):
        raise ValidationFailed({"comment": [gettext("must be text")]})
    comment = comment.strip()
    if len(comment) > MAX_COMMENT_LENGTH:
        raise ValidationFailed({"comment": [f"Use at most {MAX_COMMENT_LENGTH} characters."]})
    return comment


def _pending_locked(increase: BudgetIncrease, user) -> BudgetIncrease:
    """The request's row locked for a decision by ``user``; refused when ``user`` made it
    (403) or it was already decided (409)."""
    locked = BudgetIncrease.objects.select_for_update().get(pk=increase.pk)
    if locked.requested_by_id == user.pk:
        raise PermissionDenied("Nobody decides their own budget request: ask another officer.")
    if locked.status != BudgetIncrease.Status.PENDING:
        raise Conflict(f"This request was already {locked.status}; it cannot be decided again.")
    return locked


def budget_increase_approve(*, increase: BudgetIncrease, user, comment: Any = "") -> BudgetIncrease:
    """Raise the dataset's total by the request's (ε, δ), journal the top-up and audit the
    approval, in one transaction with the dataset row locked (a submission then sees either
    the old total or the new one, never a half-raised one)."""
    comment = _comment(comment)
    with transaction.atomic():
        locked = _pending_locked(increase, user)
        dataset = Dataset.objects.select_for_update().get(pk=locked.dataset_id)
        if locked.delta and not ledger_spends_delta(dataset.ledger_kind):
            raise Conflict(
                "No release on this dataset's ledger can be charged δ: reject the request and "
                "ask for ε only."
            )
        if dataset.budget_delta + locked.delta >= 1:
            raise Conflict("Approving would bring the total δ to 1 or above; reject the request.")
        now = timezone.now()
        dataset.budget_epsilon += locked.epsilon
        dataset.budget_delta += locked.delta
        dataset.save(update_fields=["budget_epsilon", "budget_delta"])
        locked.status = BudgetIncrease.Status.APPROVED
        locked.decided_by = user
        locked.decided_at = now
        locked.comment = comment
        locked.save(update_fields=["status", "decided_by", "decided_at", "comment"])
        BudgetMovement.objects.create(
            dataset=dataset,
            increase=locked,
            kind=BudgetMovement.Kind.TOP_UP,
            actor=user.get_username(),
            at=now,
            epsilon=locked.epsilon,
            delta=locked.delta,
            composition={
                "rule": "top_up",
                "requested_by": locked.requested_by.get_username(),
                "request": locked.pk,
            },
        )
        audit_record(
            actor=user,
            action=AuditAction.BUDGET_INCREASE_APPROVED,
            object_type="budget_increase",
            object_id=locked.pk,
            dataset_id=dataset.pk,
            details={
                "epsilon": str(locked.epsilon),
                "delta": str(locked.delta),
                "budget_epsilon": str(dataset.budget_epsilon),
                "budget_delta": str(dataset.budget_delta),
                "comment": comment,
            },
        )
    return locked


def budget_increase_reject(*, increase: BudgetIncrease, user, comment: Any) -> BudgetIncrease:
    """Turn the request down with a comment saying why; the total does not change."""
    comment = _comment(comment)
    if not comment:
        raise ValidationFailed({"comment": ["Say why the request is rejected."]})
    with transaction.atomic():
        locked = _pending_locked(increase, user)
        locked.status = BudgetIncrease.Status.REJECTED
        locked.decided_by = user
        locked.decided_at = timezone.now()
        locked.comment = comment
        locked.save(update_fields=["status", "decided_by", "decided_at", "comment"])
        audit_record(
            actor=user,
            action=AuditAction.BUDGET_INCREASE_REJECTED,
            object_type="budget_increase",
            object_id=locked.pk,
            dataset_id=locked.dataset_id,
            details={"epsilon": str(locked.epsilon), "comment": comment},
        )
    return locked
