"""Plain-language translations of a privacy parameter (DESIGN.md, "Formulas from the seeds").

All functions are exact closed forms; none of them touches data.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

from privacy_engine.wording import gettext_noop, phrase

# Largest x with e^x finite: beyond it a bound is no finite number.
_LOG_MAX_FLOAT = math.log(sys.float_info.max)


def _finite(value: float, message: str) -> float:
    """``value`` as a float, or :class:`ValueError` with ``message`` for a non-number, a NaN, an
    infinity or a whole number beyond any float (``math.isfinite(10**400)`` would overflow)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(message)
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(message) from None
    if not math.isfinite(number):
        raise ValueError(message)
    return number


def epsilon_to_truth_probability(epsilon: float) -> float:
    """Probability that the most revealing ε-DP mechanism answers a yes/no question about one
    person truthfully: p = e^ε / (1 + e^ε). ε = 0.1 → 0.52498; ε = 0.01 → 0.50250."""
    epsilon = _check_epsilon(epsilon)
    # 1 / (1 + e^-ε) is the same number without overflow for large ε.
    return 1.0 / (1.0 + math.exp(-epsilon))


def truth_probability_to_epsilon(probability: float) -> float:
    """Inverse of :func:`epsilon_to_truth_probability`: ε = ln(p / (1 − p)), for ½ ≤ p < 1."""
    if not 0.5 <= probability < 1.0:
        raise ValueError("the probability of a truthful answer must be in [0.5, 1)")
    return math.log(probability / (1.0 - probability))


def _check_epsilon(epsilon: float) -> float:
    number = _finite(epsilon, "epsilon must be a finite number ≥ 0")
    if number < 0:
        raise ValueError("epsilon must be a finite number ≥ 0")
    return number


def posterior_bound(*, prior: float, epsilon: float) -> float:
    """Largest posterior an attacker can reach about one person after an ε-DP release, from a prior
    q: the odds move by at most e^ε, so q → e^ε·q / (1 − q + e^ε·q). q = 10%, ε = 0.2 → 11.95%."""
    if not 0.0 <= prior <= 1.0:
        raise ValueError("prior must be in [0, 1]")
    epsilon = _check_epsilon(epsilon)
    if prior == 0:
        return 0.0  # a certainty stays one, even where e^-ε underflows to 0
    # Same number as e^ε·q / (1 − q + e^ε·q), without overflow for large ε.
    return prior / (prior + (1.0 - prior) * math.exp(-epsilon))


def group_privacy(*, group_size: int, epsilon: float, delta: float = 0.0) -> tuple[float, float]:
    """Guarantee for a group of c people: (c·ε, c·e^{(c−1)ε}·δ). Raises :class:`ValueError` when
    either number is beyond any float: such a group is not protected in any useful sense."""
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise ValueError("group size must be a whole number ≥ 1")
    epsilon = _check_epsilon(epsilon)
    if not 0.0 <= delta <= 1.0:
        raise ValueError("delta must be in [0, 1]")
    too_large = (
        f"group size × ε is beyond any finite number at ε = {epsilon:g}: such a group is not "
        "protected; choose a smaller group size or ε"
    )
    try:
        group_epsilon = group_size * epsilon if epsilon else 0.0
    except OverflowError:  # a whole number beyond any float
        raise ValueError(too_large) from None
    if not math.isfinite(group_epsilon):
        raise ValueError(too_large)
    if delta == 0:
        return group_epsilon, 0.0
    exponent = (group_size - 1) * epsilon if epsilon else 0.0
    # ln(c·e^{(c−1)ε}·δ) decides whether the δ bound is a finite number before computing it.
    log_delta = math.log(group_size) + exponent + math.log(delta)
    if log_delta > _LOG_MAX_FLOAT:
        raise ValueError(
            f"the group's δ, c·e^{{(c−1)ε}}·δ, is beyond any finite number for this group "
            f"size at ε = {epsilon:g}: choose a smaller group size or ε"
        )
    if exponent > _LOG_MAX_FLOAT or group_size > 2**53:  # a factor alone would overflow
        return group_epsilon, math.exp(log_delta)
    return group_epsilon, group_size * math.exp(exponent) * delta


def distance_threshold_epsilon(*, distance: float, theta: float, epsilon: float) -> float:
    """Under G^{L1,θ}, two values d apart are protected at ⌈d/θ⌉·ε (their shortest path in the
    secret graph has ⌈d/θ⌉ edges); equal values need no protection."""
    if theta <= 0:
        raise ValueError("theta must be greater than 0")
    if distance <= 0:
        return 0.0
    return math.ceil(distance / theta) * epsilon


# What a Blowfish policy protects and makes public (blowfish_explanation), as phrases the web
# layer translates (privacy_engine/wording.py). Numbers are formatted with :g before they fill in.
ALWAYS_PUBLIC = gettext_noop(
    "The number of records is public under Blowfish, so counts are published exactly."
)
MISSING_PUBLIC = gettext_noop(
    "Whether a person's {columns} is missing: a missing value has no place in the policy's "
    "graph. Declare a fill value for it to protect it."
)
WHOLE_RECORD = gettext_noop(
    "Any one person's whole record, at ε = {epsilon}: an attacker cannot tell it from any "
    "other possible record."
)
WITHIN_GROUP = gettext_noop(
    "Which value within its group a person has (groups: {groups}), at ε = {epsilon}."
)
# Between two groups of the list: not the clause separator, so that the sentence stays one phrase
# (a group's own values are listed with ", ").
BETWEEN_GROUPS = " | "
WHICH_GROUP = gettext_noop(
    "Which group each person is in ({column}): an algorithm may publish it exactly."
)
EXACT_IN_RANGE = gettext_noop(
    "A person's exact {column} within its range of width {width}, at ε = {epsilon}."
)
WHICH_RANGE = gettext_noop("Which range of {column} each person is in.")
CLOSE_VALUES = gettext_noop(
    "Values of {columns} closer than θ = {theta} apart, at ε = {epsilon}; values d apart only "
    "at ⌈d/θ⌉·ε, e.g. {example} for d = {distance}."
)
ROUGH_REGION = gettext_noop(
    "The rough region of a person's value (at a resolution coarser than θ) becomes learnable "
    "as ε·⌈d/θ⌉ grows."
)
SOME_ATTRIBUTES = gettext_noop(
    "Changes to any {count} attribute(s) of one record, at ε = {epsilon}."
)
MORE_ATTRIBUTES = gettext_noop(
    "Changes to more attributes at once are protected only at a multiple of ε."
)


def blowfish_explanation(
    policy: dict, epsilon: float, *, missing_public: Sequence[str] = ()
) -> dict[str, list[str]]:
    """What an attacker can and cannot learn under a Blowfish policy, in plain words.

    ``missing_public`` names the policy's columns whose missing values are dropped rather than
    filled: whether their value is missing is not one of the policy's secrets."""
    explanation = _blowfish_explanation(policy, epsilon)
    if missing_public:
        explanation["not_protected"].append(
            phrase(MISSING_PUBLIC, columns=", ".join(missing_public))
        )
    return explanation


def _within_groups(groups: list[list[str]], epsilon: float) -> str:
    listed = BETWEEN_GROUPS.join(", ".join(group) for group in groups)
    return phrase(WITHIN_GROUP, groups=listed, epsilon=f"{epsilon:g}")


def _blowfish_explanation(policy: dict, epsilon: float) -> dict[str, list[str]]:
    graph = policy.get("graph")
    always = phrase(ALWAYS_PUBLIC)
    if graph == "full_domain":
        return {
            "protected": [phrase(WHOLE_RECORD, epsilon=f"{epsilon:g}")],
            "not_protected": [always],
        }
    if graph == "partition" and "groups" in policy:
        return {
            "protected": [_within_groups(policy["groups"], epsilon)],
            "not_protected": [phrase(WHICH_GROUP, column=policy["column"]), always],
        }
    if graph == "partition":
        return {
            "protected": [
                phrase(
                    EXACT_IN_RANGE,
                    column=policy["column"],
                    width=f"{policy['width']:g}",
                    epsilon=f"{epsilon:g}",
                )
            ],
            "not_protected": [phrase(WHICH_RANGE, column=policy["column"]), always],
        }
    if graph == "distance_threshold":
        columns = policy.get("columns") or [policy.get("column")]
        theta = policy["theta"]
        example = distance_threshold_epsilon(distance=3 * theta, theta=theta, epsilon=epsilon)
        return {
            "protected": [
                phrase(
                    CLOSE_VALUES,
                    columns=", ".join(columns),
                    theta=f"{theta:g}",
                    epsilon=f"{epsilon:g}",
                    example=f"{example:g}",
                    distance=f"{3 * theta:g}",
                )
            ],
            "not_protected": [phrase(ROUGH_REGION), always],
        }
    if graph == "attribute":
        return {
            "protected": [
                phrase(SOME_ATTRIBUTES, count=policy.get("c", 1), epsilon=f"{epsilon:g}")
            ],
            "not_protected": [phrase(MORE_ATTRIBUTES), always],
        }
    raise ValueError("unknown policy graph")
