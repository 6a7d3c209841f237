"""A plain-language risk card: what a guarantee means for one person, in numbers a
non-expert can read (issue 13). Pure closed forms from translation.py; reads no data.

The card has one view for the release alone and one for all releases of the table together
(the ledger's total, which the caller supplies): the coin-flip view (the probability p that the
most revealing answer about one person is truthful), the worst posterior from a 10% and a 50%
prior, the same for a family of three (group privacy), the failure probability δ under
(ε, δ)-DP, and under Blowfish the protection between two values and what becomes public.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from privacy_engine.definitions import (
    ApproxDP,
    AttributeGraph,
    Blowfish,
    CategoricalPartition,
    Definition,
    DistanceThreshold,
    RangePartition,
    definition_from_dict,
)
from privacy_engine.translation import (
    blowfish_explanation,
    epsilon_to_truth_probability,
    group_privacy,
    posterior_bound,
)

FAMILY_SIZE = 3
PRIORS = (0.10, 0.50)
# Distances, in multiples of θ, at which the card shows a distance-threshold policy's protection:
# between whole multiples, where the secret graph's path length (edges join values less than θ
# apart) and the calibrated mechanism's protection agree on ⌈d/θ⌉·ε.
THETA_MULTIPLES = (0.5, 1.5, 2.5, 4.5, 9.5)


@dataclass(frozen=True)
class Posterior:
    """An attacker ``prior`` sure of a fact about one person is afterwards at most ``posterior``
    sure (both probabilities in [0, 1])."""

    prior: float
    posterior: float


@dataclass(frozen=True)
class Exposure:
    """What a guarantee of (ε, δ) leaves an attacker: the coin-flip view and the posteriors.
    Under (ε, δ)-DP both hold except with probability δ."""

    epsilon: float
    delta: float
    truth_probability: float
    posteriors: tuple[Posterior, ...]

    @property
    def delta_one_in(self) -> float | None:
        """δ as "one chance in N": N = 1/δ, or None when δ is 0."""
        return 1.0 / self.delta if self.delta > 0 else None


@dataclass(frozen=True)
class GuaranteeRisk:
    """One person's exposure under a guarantee, and a family's (``family`` is None when the
    group's bound is beyond any number: the family is not protected in any useful sense)."""

    person: Exposure
    family_size: int
    family: Exposure | None


@dataclass(frozen=True)
class ValueProtection:
    """Under Blowfish, how well two values are protected from each other: ``relation`` is
    "any" (any two records), "distance" (values ``distance`` apart), "same_part" or
    "other_part" (of a partition), or "attributes" (records differing in ``distance``
    attributes). ``epsilon`` None: not protected at all."""

    relation: str
    distance: float | None
    epsilon: float | None
    truth_probability: float | None


@dataclass(frozen=True)
class BlowfishRisk:
    protections: tuple[ValueProtection, ...]
    protected: tuple[str, ...]
    public: tuple[str, ...]
    theta: float | None = None


@dataclass(frozen=True)
class RiskCard:
    """``release``: the guarantee of this release alone under its own definition; ``table``: of
    every release of the table together, as the table's ledger accounts them (None when there is
    no total to show, e.g. the release cannot be charged to the table's ledger)."""

    definition_kind: str
    release: GuaranteeRisk
    table: GuaranteeRisk | None
    table_kind: str | None
    blowfish: BlowfishRisk | None


def exposure(*, epsilon: float, delta: float = 0.0, priors: Sequence[float] = PRIORS) -> Exposure:
    """The coin-flip view and worst posteriors of an (ε, δ) guarantee for one unit."""
    return Exposure(
        epsilon=float(epsilon),
        delta=float(delta),
        truth_probability=epsilon_to_truth_probability(epsilon),
        posteriors=tuple(
            Posterior(prior=prior, posterior=posterior_bound(prior=prior, epsilon=epsilon))
            for prior in priors
        ),
    )


def guarantee_risk(
    *, epsilon: float, delta: float = 0.0, family_size: int = FAMILY_SIZE
) -> GuaranteeRisk:
    """One person's exposure and a group of ``family_size``'s: (c·ε, c·e^{(c−1)ε}·δ)."""
    try:
        group_epsilon, group_delta = group_privacy(
            group_size=family_size, epsilon=epsilon, delta=delta
        )
    except ValueError:
        family = None
    else:
        # A group δ of 1 or more is no guarantee at all.
        family = exposure(epsilon=group_epsilon, delta=group_delta) if group_delta < 1 else None
    return GuaranteeRisk(
        person=exposure(epsilon=epsilon, delta=delta), family_size=family_size, family=family
    )


def risk_card(
    definition: Definition | Mapping[str, Any],
    *,
    table_epsilon: float | None = None,
    table_delta: float = 0.0,
    table_kind: str | None = None,
    missing_public: Sequence[str] = (),
    family_size: int = FAMILY_SIZE,
) -> RiskCard:
    """The risk card of a release under ``definition`` (its total ε for the release), and, when
    ``table_epsilon`` is given, of all releases of its table together: (Σε, Σδ) as the table's
    ledger charges them, ``table_kind`` naming that ledger ("differential_privacy" or
    "blowfish"). ``missing_public`` names a Blowfish policy's columns whose missing values are
    dropped rather than filled (blowfish_explanation)."""
    if isinstance(definition, Mapping):
        definition = definition_from_dict(definition)
    delta = definition.delta if isinstance(definition, ApproxDP) else 0.0
    table = None
    if table_epsilon is not None:
        table = guarantee_risk(epsilon=table_epsilon, delta=table_delta, family_size=family_size)
    return RiskCard(
        definition_kind=definition.kind,
        release=guarantee_risk(epsilon=definition.epsilon, delta=delta, family_size=family_size),
        table=table,
        table_kind=table_kind if table is not None else None,
        blowfish=(
            blowfish_risk(definition, missing_public=missing_public)
            if isinstance(definition, Blowfish)
            else None
        ),
    )


def blowfish_risk(definition: Blowfish, *, missing_public: Sequence[str] = ()) -> BlowfishRisk:
    """How well a Blowfish policy protects two values from each other, and what it makes public.
    Two values d apart under G^{d,θ} are protected at ⌈d/θ⌉·ε (their shortest path in the
    secret graph); values in different parts of a partition not at all."""
    policy = definition.policy
    epsilon = definition.epsilon
    explanation = blowfish_explanation(policy.to_dict(), epsilon, missing_public=missing_public)
    theta = None
    if isinstance(policy, DistanceThreshold):
        theta = policy.theta
        protections = tuple(
            _protection("distance", multiple * theta, math.ceil(multiple) * epsilon)
            for multiple in THETA_MULTIPLES
        )
    elif isinstance(policy, RangePartition | CategoricalPartition):
        protections = (
            _protection("same_part", None, epsilon),
            ValueProtection("other_part", None, None, None),
        )
    elif isinstance(policy, AttributeGraph):
        protections = tuple(
            _protection("attributes", k, math.ceil(k / policy.c) * epsilon)
            for k in dict.fromkeys((1, policy.c, 2 * policy.c))
        )
    else:
        protections = (_protection("any", None, epsilon),)
    return BlowfishRisk(
        protections=protections,
        protected=tuple(explanation["protected"]),
        public=tuple(explanation["not_protected"]),
        theta=theta,
    )


def _protection(relation: str, distance: float | None, epsilon: float) -> ValueProtection:
    return ValueProtection(relation, distance, epsilon, epsilon_to_truth_probability(epsilon))
