"""Reads of the budget journal: a dataset's movements with the running figures after each one,
and budget increase requests, scoped to who is asking."""

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Case, QuerySet, Value, When

from privacy_engine.footprint import Footprint
from releases.models import BudgetIncrease, BudgetMovement, Dataset
from releases.selectors import (
    Budget,
    budgets_from_footprints,
    dataset_list_visible,
    footprints_of,
)

Kind = BudgetMovement.Kind


@dataclass(frozen=True)
class LedgerRow:
    """One movement and the dataset's ε and δ budgets just after it: ``total`` is the opening
    budget plus the top-ups so far, and committed is spent plus reserved."""

    movement: BudgetMovement
    epsilon: Budget
    delta: Budget

    @property
    def epsilon_committed(self) -> Decimal:
        return self.epsilon.spent + self.epsilon.reserved


@dataclass
class _Running:
    """The journal replayed: totals, and the footprints of what is spent and what is reserved
    (privacy_engine/footprint.py), from which the figures are derived as dataset_budget
    derives them."""

    epsilon_total: Decimal = Decimal(0)
    delta_total: Decimal = Decimal(0)
    spent: tuple[Footprint, Footprint] = (Footprint(), Footprint())
    reserved: tuple[Footprint, Footprint] = (Footprint(), Footprint())

    def apply(self, movement: BudgetMovement) -> tuple[Budget, Budget]:
        footprint = footprints_of(
            (movement.composition or {}).get("footprint"),
            epsilon=movement.epsilon,
            delta=movement.delta,
        )
        if movement.kind == Kind.RESERVATION:
            self.reserved = _each(self.reserved, footprint, Footprint.plus)
        elif movement.kind in (Kind.SPEND, Kind.REFUND):
            self.reserved = _each(self.reserved, footprint, Footprint.minus)
            if movement.kind == Kind.SPEND:
                self.spent = _each(self.spent, footprint, Footprint.plus)
        elif movement.kind in (Kind.OPENING, Kind.TOP_UP):
            self.epsilon_total += movement.epsilon
            self.delta_total += movement.delta
        return budgets_from_footprints(
            self.epsilon_total, self.delta_total, [self.spent], [self.reserved]
        )


def _each(pair: tuple, other: tuple, operation) -> tuple[Footprint, Footprint]:
    return operation(pair[0], other[0]), operation(pair[1], other[1])


def dataset_ledger_rows(*, dataset: Dataset) -> list[LedgerRow]:
    """Every movement of the dataset's budget, oldest first, with the running ε and δ figures
    derived from these rows alone: the opening total first, then the rest.

    Rows are in id order, the order they were written: a settlement's row is always written
    after its reservation's, whichever machine's clock stamped each one. The opening row comes
    first even where migration 0011 wrote it after older rows. The figures are computed here in
    Decimal, exactly (SQLite would sum these columns as floats), from each row's footprint: a
    release restricted to groups already paid for uses less than its own charge."""
    running = _Running()
    opening_first = Case(When(kind=Kind.OPENING, then=Value(0)), default=Value(1))
    movements = dataset.budget_movements.select_related(
        "release__series", "increase__requested_by"
    ).order_by(opening_first, "id")
    return [LedgerRow(movement, *running.apply(movement)) for movement in movements]


def budget_increase_list(
    *, user, dataset: Dataset | None = None, status: str | None = None
) -> QuerySet[BudgetIncrease]:
    """Budget requests on the datasets ``user`` may see (compliance: all; a curator: their
    own), newest first."""
    increases = BudgetIncrease.objects.filter(
        dataset__in=dataset_list_visible(user=user)
    ).select_related("dataset", "requested_by", "decided_by")
    if dataset is not None:
        increases = increases.filter(dataset=dataset)
    if status:
        increases = increases.filter(status=status)
    return increases.order_by("-requested_at", "-id")
