"""What a person can lose, at worst, to statistics that each read everyone or only some groups
of a partition column (kinds/restricted.py): sequential composition across statistics that can
read one person's record, parallel composition across groups that cannot both hold it.

A *footprint* holds an amount (ε, or δ) for everyone and, per partition column, per group. A
person is in at most one group of each column (each person has one row), so the worst person
loses ``everyone + Σ over columns of the largest group's amount``: the columns' groups combine
freely (a person can be in any group of each), and within one column only the person's own group
counts. Footprints add up across the statistics of a release and across releases: a dataset's
budget is charged the worst person's total, so a release restricted to the south after one
restricted to the north costs nothing more than the larger of the two.

Parallel composition needs each person's data in one group: with several rows per person (one
person's rows can be in several groups), or under Blowfish (a replacement moves a record from one
group to another), every amount counts for everyone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, Inexact, localcontext
from typing import Any

from privacy_engine.definitions import Blowfish, Definition

# A restriction as the footprint sees it: (partition column, its groups), or None for everyone.
Restriction = tuple[str, tuple[str, ...]] | None
# Sums of floats' exact values are exact with this many digits (see release.exact_sum).
_EXACT_DIGITS = 2200


def records_in_parallel(*, rows_per_person: int, definition: Definition | None) -> bool:
    """Whether records in disjoint groups (or cells) compose in parallel: only when a person has
    one row and neighbours add or remove a record (not under Blowfish, whose replacement can
    move a record from one group or cell to another)."""
    return rows_per_person == 1 and not isinstance(definition, Blowfish)


@dataclass(frozen=True)
class Footprint:
    """Exact amounts (Decimal) for everyone and per group of each partition column."""

    everyone: Decimal = Decimal(0)
    groups: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)

    @classmethod
    def of(cls, amounts: Sequence[Decimal], restrictions: Sequence[Restriction]) -> Footprint:
        """The footprint of statistics spending ``amounts``, each for everyone or only for its
        restriction's groups."""
        everyone = Decimal(0)
        groups: dict[str, dict[str, Decimal]] = {}
        with localcontext() as context:
            context.prec = _EXACT_DIGITS
            context.traps[Inexact] = True
            for amount, restriction in zip(amounts, restrictions, strict=True):
                if not amount:
                    continue
                if restriction is None:
                    everyone += amount
                    continue
                column, names = restriction
                per_group = groups.setdefault(column, {})
                for name in names:
                    per_group[name] = per_group.get(name, Decimal(0)) + amount
        return cls(everyone=everyone, groups=groups)

    def charge(self) -> Decimal:
        """What the worst person loses: everyone's amount plus each column's largest group's,
        exactly (callers round it up for the ledger)."""
        with localcontext() as context:
            context.prec = _EXACT_DIGITS
            context.traps[Inexact] = True
            return self.everyone + sum(
                (max(per_group.values(), default=Decimal(0)) for per_group in self.groups.values()),
                Decimal(0),
            )

    def plus(self, other: Footprint) -> Footprint:
        with localcontext() as context:
            context.prec = _EXACT_DIGITS
            context.traps[Inexact] = True
            groups = {column: dict(per_group) for column, per_group in self.groups.items()}
            for column, per_group in other.groups.items():
                mine = groups.setdefault(column, {})
                for name, amount in per_group.items():
                    mine[name] = mine.get(name, Decimal(0)) + amount
            return Footprint(everyone=self.everyone + other.everyone, groups=groups)

    def minus(self, other: Footprint) -> Footprint:
        """This footprint without ``other``, an earlier term of its sum (a refund)."""
        negated = Footprint(
            everyone=-other.everyone,
            groups={
                column: {name: -amount for name, amount in per_group.items()}
                for column, per_group in other.groups.items()
            },
        )
        return self.plus(negated)

    @property
    def parallel(self) -> bool:
        """Whether any amount is spent on groups only."""
        return any(self.groups.values())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"everyone": exact_text(self.everyone)}
        if self.parallel:
            out["groups"] = {
                column: {name: exact_text(amount) for name, amount in per_group.items()}
                for column, per_group in self.groups.items()
            }
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, *, default: Decimal) -> Footprint:
        """A footprint as :meth:`to_dict` wrote it; None (written before footprints existed)
        stands for ``default`` spent on everyone."""
        if data is None:
            return cls(everyone=default)
        return cls(
            everyone=Decimal(data.get("everyone", "0")),
            groups={
                column: {name: Decimal(amount) for name, amount in per_group.items()}
                for column, per_group in (data.get("groups") or {}).items()
            },
        )


def exact_text(amount: Decimal) -> str:
    """``amount`` written out in full: no digit dropped (normalize would round to 28 digits)."""
    if not amount:
        return "0"
    with localcontext() as context:
        context.prec = _EXACT_DIGITS
        return format(amount.normalize(), "f")


def split_parallel(
    total: float, weights: Sequence[float], restrictions: Sequence[Restriction]
) -> list[float]:
    """Shares of ``total`` proportional to ``weights`` whose footprint's exact charge never
    exceeds ``total`` (nor its shortest decimal form): statistics restricted to disjoint groups
    each get the share they would get alone, since a person is in one group only.

    ``weights`` of zero (public statistics) get zero."""
    footprint = Footprint.of([Decimal(w) for w in weights], restrictions)
    scale = total / float(footprint.charge())
    shares = [scale * w if w else 0.0 for w in weights]
    with localcontext() as context:
        context.prec = _EXACT_DIGITS
        cap = min(Decimal(total), Decimal(repr(total)))

        def charge(values: list[float]) -> Decimal:
            return Footprint.of([Decimal(v) for v in values], restrictions).charge()

        # Floats round either way: nudge every share down one unit in its last place until the
        # exact charge fits (a few rounds at most).
        while charge(shares) > cap:
            shares = [math.nextafter(s, 0.0) if s else s for s in shares]
    return shares
