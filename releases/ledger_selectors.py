"""Reads of the budget journal: a dataset's movements with the running figures after each one,
and budget increase requests, scoped to who is asking."""

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Case, QuerySet, Value, When

from releases.models import BudgetIncrease, BudgetMovement, Dataset
from releases.selectors import Budget, dataset_list_visible

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
    total: Decimal = Decimal(0)
    spent: Decimal = Decimal(0)
    reserved: Decimal = Decimal(0)

    def apply(self, kind: str, amount: Decimal) -> Budget:
        if kind == Kind.RESERVATION:
            self.reserved += amount
        elif kind == Kind.SPEND:
            self.reserved -= amount
            self.spent += amount
        elif kind == Kind.REFUND:
            self.reserved -= amount
        elif kind in (Kind.OPENING, Kind.TOP_UP):
            self.total += amount
        return Budget(self.total, self.spent, self.reserved)


def dataset_ledger_rows(*, dataset: Dataset) -> list[LedgerRow]:
    """Every movement of the dataset's budget, oldest first, with the running ε and δ figures
    summed from these rows alone: the opening total first, then the rest.

    Rows are in id order, the order they were written: a settlement's row is always written
    after its reservation's, whichever machine's clock stamped each one. The opening row comes
    first even where migration 0011 wrote it after older rows. The figures are summed here in
    Decimal, exactly (SQLite would sum these columns as floats)."""
    epsilon, delta = _Running(), _Running()
    opening_first = Case(When(kind=Kind.OPENING, then=Value(0)), default=Value(1))
    movements = dataset.budget_movements.select_related(
        "release__series", "increase__requested_by"
    ).order_by(opening_first, "id")
    return [
        LedgerRow(
            movement=movement,
            epsilon=epsilon.apply(movement.kind, movement.epsilon),
            delta=delta.apply(movement.kind, movement.delta),
        )
        for movement in movements
    ]


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
