"""Which budget a release is charged to, and how much (DESIGN.md, "Composition").

A dataset's ledger is either *differential privacy* (ε-DP and (ε, δ)-DP releases add up to
(Σε, Σδ)) or *one Blowfish policy* (its releases add up to Σε). It is fixed by the first submitted
release. An ε-DP release on a Blowfish ledger is charged 2ε, and an (ε, δ)-DP one (2ε, (1 + e^ε)·δ):
replacing a record is removing one and adding another. Blowfish releases cannot be charged to a
differential-privacy ledger (their neighbours are weaker), and two Blowfish policies are not mixed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext
from typing import Any

from privacy_engine.definitions import ApproxDP, Blowfish, Definition, PureDP
from privacy_engine.footprint import Footprint
from privacy_engine.wording import gettext_noop, phrase

DIFFERENTIAL_PRIVACY = "differential_privacy"
BLOWFISH = "blowfish"
# Budget amounts are Decimals with this many places, rounded up so the ledger never under-charges.
LEDGER_PLACES = Decimal("1e-12")
# δ is recorded as published: a float carries about 16 significant digits, so an exact sum of
# δ shares rounded *up* to 15 significant digits gives back the δ the curator chose (1e-14 stays
# 1e-14, three shares of 0.0005 give 0.0005) and never under-charges. DELTA_PLACES (the ledger's
# decimal places) holds every δ from MIN_DELTA (1e-30) up.
DELTA_SIGNIFICANT_DIGITS = 15
DELTA_PLACES = Decimal("1e-30")


# The ledger's words (privacy_engine/wording.py: phrases the web layer translates for its pages;
# the ledger's rows, the API and the audit trail keep the English).
DIFFERENTIAL_PRIVACY_LEDGER = gettext_noop("differential privacy")
BLOWFISH_LEDGER = gettext_noop("the Blowfish policy {policy}")
PURE_ON_BLOWFISH = gettext_noop("ε-DP on a Blowfish ledger: charged 2ε")
APPROX_ON_BLOWFISH = gettext_noop("(ε, δ)-DP on a Blowfish ledger: charged 2ε and (1 + e^ε)·δ")
BLOWFISH_AS_COMPOSED = gettext_noop(
    "Blowfish release on its own policy's ledger: charged as composed"
)
DIFFERENTIAL_PRIVACY_AS_COMPOSED = gettext_noop("differential-privacy ledger: charged as composed")
BLOWFISH_ON_DIFFERENTIAL_PRIVACY = gettext_noop(
    "This dataset's budget is accounted under differential privacy; a Blowfish release "
    "protects less (only neighbours along its policy's graph) and cannot be charged to it."
)
OTHER_POLICY = gettext_noop(
    "This dataset's budget is accounted under {ledger}; a release under a different Blowfish "
    "policy cannot be added to it, because the two guarantees do not compose into one."
)


class IncompatibleLedger(ValueError):
    """The release's guarantee cannot be accounted on this dataset's ledger; the message says
    why in plain words."""


@dataclass(frozen=True)
class Ledger:
    kind: str
    policy: dict[str, Any] | None = None

    def describe(self) -> str:
        if self.kind == DIFFERENTIAL_PRIVACY:
            return phrase(DIFFERENTIAL_PRIVACY_LEDGER)
        return phrase(BLOWFISH_LEDGER, policy=json.dumps(self.policy, sort_keys=True))


def canonical_policy(policy: dict[str, Any] | None) -> dict[str, Any] | None:
    """A policy with its groups, group members and distance columns in a fixed order, so the
    same policy written differently is recognised as the same; numbers as floats."""
    if policy is None:
        return None
    out = dict(policy)
    if "groups" in out:
        out["groups"] = sorted(sorted(group) for group in out["groups"])
    if "columns" in out:
        columns = sorted(out.pop("columns"))
        if len(columns) == 1:
            out["column"] = columns[0]
        else:
            out["columns"] = columns
    for key in ("theta", "width"):
        if key in out:
            out[key] = float(out[key])
    return out


def ledger_for(definition: Definition) -> Ledger:
    """The ledger a dataset gets when this definition's release is its first submission."""
    if isinstance(definition, Blowfish):
        return Ledger(kind=BLOWFISH, policy=canonical_policy(definition.policy.to_dict()))
    return Ledger(kind=DIFFERENTIAL_PRIVACY)


def _ceil(value: Decimal) -> Decimal:
    return value if value == 0 else value.quantize(LEDGER_PLACES, rounding=ROUND_CEILING)


def ledger_delta(value: Decimal) -> Decimal:
    """δ as the ledger records it: rounded up to 15 significant digits, then to the ledger's
    places (a no-op unless δ < 10⁻¹⁶). Never smaller than ``value``."""
    if value == 0:
        return value
    # Enough digits for any δ below 10¹² at 30 places: the default 28 would raise on δ ≥ 0.01.
    with localcontext() as context:
        context.prec = 100
        significant = Decimal(1).scaleb(value.adjusted() - DELTA_SIGNIFICANT_DIGITS + 1)
        rounded = value.quantize(significant, rounding=ROUND_CEILING)
        return rounded.quantize(DELTA_PLACES, rounding=ROUND_CEILING).normalize()


def ledger_used(footprints: Iterable[Footprint], *, delta: bool = False) -> Decimal:
    """How much of a budget releases with these footprints use together (footprint.py: the
    worst person's total), rounded up as the ledger records amounts. Footprints whose amounts
    are all for everyone add up as plain sums."""
    total = Footprint()
    for footprint in footprints:
        total = total.plus(footprint)
    charge = total.charge()
    return ledger_delta(charge) if delta else _ceil(charge)


def ledger_conversion(*, definition_kind: str, ledger_kind: str) -> str | None:
    """In words, the conversion :func:`ledger_charge` applies to a release under the definition
    named ``definition_kind`` (``pure_dp``, ``approx_dp``, ``blowfish``) on a ledger of
    ``ledger_kind``, or None when the ledger charges the release as composed. The one source of
    these words: the ledger's rows, its page and the wizard's charge all show them."""
    if ledger_kind == BLOWFISH and definition_kind == PureDP.kind:
        return phrase(PURE_ON_BLOWFISH)
    if ledger_kind == BLOWFISH and definition_kind == ApproxDP.kind:
        return phrase(APPROX_ON_BLOWFISH)
    return None


def ledger_rule(*, definition_kind: str, ledger_kind: str) -> str:
    """The conversion's words, or how a release without one is charged."""
    conversion = ledger_conversion(definition_kind=definition_kind, ledger_kind=ledger_kind)
    if conversion is not None:
        return conversion
    if definition_kind == Blowfish.kind:
        return phrase(BLOWFISH_AS_COMPOSED)
    return phrase(DIFFERENTIAL_PRIVACY_AS_COMPOSED)


LEDGER_RULES = (
    "an ε-DP release on a Blowfish ledger is charged 2ε, and an (ε, δ)-DP one 2ε and "
    "(1 + e^ε)·δ (replacing a record is removing one and adding another); a Blowfish release "
    "cannot be charged to a differential-privacy ledger, nor to another policy's"
)


def ledger_spends_delta(ledger_kind: str | None) -> bool:
    """Whether a release on a ledger of ``ledger_kind`` (empty or None: not fixed yet) can be
    charged δ, so that raising its δ budget means something. Read off :func:`ledger_charge`: a
    differential-privacy ledger charges an (ε, δ)-DP release its δ, and a Blowfish ledger
    charges one (1 + e^ε)·δ (though a Blowfish release itself spends no δ)."""
    if not ledger_kind:
        return True
    probe = ApproxDP(epsilon=1.0, delta=1e-9)
    try:
        _, delta = ledger_charge(
            definition=probe, epsilon=Decimal(1), delta=Decimal("1e-9"), ledger=Ledger(ledger_kind)
        )
    except IncompatibleLedger:
        return False
    return delta > 0


def ledger_charge(
    *, definition: Definition, epsilon: Decimal, delta: Decimal, ledger: Ledger
) -> tuple[Decimal, Decimal]:
    """The (ε, δ) to charge on ``ledger`` for a release whose mechanisms spend (ε, δ) under its
    own ``definition``. Raises :class:`IncompatibleLedger` for a mix that cannot be accounted."""
    if ledger.kind == DIFFERENTIAL_PRIVACY:
        if isinstance(definition, Blowfish):
            raise IncompatibleLedger(phrase(BLOWFISH_ON_DIFFERENTIAL_PRIVACY))
        return epsilon, delta
    if isinstance(definition, Blowfish):
        if canonical_policy(definition.policy.to_dict()) != canonical_policy(ledger.policy):
            raise IncompatibleLedger(phrase(OTHER_POLICY, ledger=ledger.describe()))
        return epsilon, Decimal(0)
    if isinstance(definition, PureDP):
        return _ceil(2 * epsilon), Decimal(0)
    if isinstance(definition, ApproxDP):
        # Remove then add: e^ε(e^ε·P + δ) + δ = e^{2ε}·P + (1 + e^ε)·δ. e^ε in 60 digits
        # (correctly rounded to nearest), plus one unit in its last place so the factor is never
        # below the true one; ledger_delta then rounds the product up.
        with localcontext() as context:
            context.prec = 60
            factor = 1 + epsilon.exp() + Decimal(1).scaleb(-55)
            charge = factor * delta
        return _ceil(2 * epsilon), ledger_delta(charge)
    raise TypeError(f"unsupported definition {definition!r}")
