"""Which ledger a release opens and what it is charged on each ledger (DESIGN.md, "Composition").

A dataset's ledger is differential privacy (ε-DP and (ε, δ)-DP add up) or one Blowfish policy. On a
Blowfish ledger an ε-DP release costs 2ε and an (ε, δ)-DP one (2ε, (1 + e^ε)·δ): a replacement
is a removal plus an addition. Blowfish never goes on a DP ledger, and two policies never mix.
"""

from decimal import Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy_engine import (
    ApproxDP,
    AttributeGraph,
    Blowfish,
    CategoricalPartition,
    DistanceThreshold,
    FullDomain,
    IncompatibleLedger,
    Ledger,
    PureDP,
    RangePartition,
    definition_from_dict,
    ledger_charge,
    ledger_for,
)

EPSILON = Decimal("0.5")
DELTA = Decimal("0.000001")
POLICY = DistanceThreshold(columns=("age",), theta=5.0)
BLOWFISH = Blowfish(epsilon=0.5, policy=POLICY)
DP_LEDGER = Ledger(kind="differential_privacy")
BLOWFISH_LEDGER = Ledger(
    kind="blowfish", policy={"graph": "distance_threshold", "column": "age", "theta": 5.0}
)


def charge(definition, ledger, epsilon=EPSILON, delta=Decimal(0)):
    return ledger_charge(definition=definition, epsilon=epsilon, delta=delta, ledger=ledger)


# --- the ledger a first release opens -----------------------------------------------------------


@pytest.mark.parametrize(
    "definition",
    [PureDP(epsilon=0.5), ApproxDP(epsilon=0.5, delta=1e-6)],
    ids=["pure_dp", "approx_dp"],
)
def test_a_first_dp_release_opens_a_differential_privacy_ledger(definition):
    # when
    ledger = ledger_for(definition)

    # then
    assert ledger == Ledger(kind="differential_privacy", policy=None)
    assert ledger.describe() == "differential privacy"


def test_a_first_blowfish_release_opens_a_ledger_for_its_policy():
    # when
    ledger = ledger_for(BLOWFISH)

    # then
    assert ledger == BLOWFISH_LEDGER
    assert ledger.describe() == (
        'the Blowfish policy {"column": "age", "graph": "distance_threshold", "theta": 5.0}'
    )


@pytest.mark.parametrize(
    ("policy", "stored"),
    [
        (FullDomain(), {"graph": "full_domain"}),
        (
            RangePartition(column="age", width=10.0),
            {"graph": "partition", "column": "age", "width": 10.0},
        ),
        (
            CategoricalPartition(column="sex", groups=(("F",), ("M", "X"))),
            {"graph": "partition", "column": "sex", "groups": [["F"], ["M", "X"]]},
        ),
        (
            DistanceThreshold(columns=("age", "income"), theta=5.0),
            {"graph": "distance_threshold", "columns": ["age", "income"], "theta": 5.0},
        ),
        (AttributeGraph(c=2), {"graph": "attribute", "c": 2}),
    ],
    ids=["full-domain", "range-partition", "categorical-partition", "l1-threshold", "attribute"],
)
def test_blowfish_ledger_stores_the_policy_as_json(policy, stored):
    # when
    ledger = ledger_for(Blowfish(epsilon=1.0, policy=policy))

    # then
    assert ledger == Ledger(kind="blowfish", policy=stored)


# --- a differential-privacy ledger --------------------------------------------------------------


def test_dp_ledger_charges_a_pure_dp_release_its_epsilon():
    # when
    charged = charge(PureDP(epsilon=0.5), DP_LEDGER)

    # then
    assert charged == (Decimal("0.5"), Decimal(0))


def test_dp_ledger_charges_an_approx_dp_release_its_epsilon_and_delta():
    # when
    charged = charge(ApproxDP(epsilon=0.5, delta=1e-6), DP_LEDGER, delta=DELTA)

    # then
    assert charged == (Decimal("0.5"), Decimal("0.000001"))


def test_dp_ledger_refuses_a_blowfish_release_and_says_why():
    # when
    with pytest.raises(IncompatibleLedger) as refused:
        charge(BLOWFISH, DP_LEDGER)

    # then
    assert str(refused.value) == (
        "This dataset's budget is accounted under differential privacy; a Blowfish release "
        "protects less (only neighbours along its policy's graph) and cannot be charged to it."
    )


# --- a Blowfish ledger --------------------------------------------------------------------------


def test_blowfish_ledger_charges_a_release_under_its_policy_epsilon():
    # when
    charged = charge(BLOWFISH, BLOWFISH_LEDGER)

    # then
    assert charged == (Decimal("0.5"), Decimal(0))


def test_blowfish_ledger_accepts_the_same_policy_written_with_an_integer_theta():
    # given the API's JSON with theta 5 rather than 5.0
    definition = definition_from_dict(
        {
            "kind": "blowfish",
            "epsilon": 0.5,
            "policy": {"graph": "distance_threshold", "columns": ["age"], "theta": 5},
        }
    )

    # when
    charged = charge(definition, BLOWFISH_LEDGER)

    # then
    assert charged == (Decimal("0.5"), Decimal(0))


@pytest.mark.parametrize(
    "policy",
    [
        DistanceThreshold(columns=("age",), theta=10.0),
        DistanceThreshold(columns=("income",), theta=5.0),
        RangePartition(column="age", width=5.0),
        FullDomain(),
        AttributeGraph(c=1),
    ],
    ids=["other-theta", "other-column", "partition", "full-domain", "attribute"],
)
def test_blowfish_ledger_refuses_another_policy_and_says_why(policy):
    # when
    with pytest.raises(IncompatibleLedger) as refused:
        charge(Blowfish(epsilon=0.5, policy=policy), BLOWFISH_LEDGER)

    # then
    assert str(refused.value) == (
        "This dataset's budget is accounted under the Blowfish policy "
        '{"column": "age", "graph": "distance_threshold", "theta": 5.0}; a release under a '
        "different Blowfish policy cannot be added to it, because the two guarantees do not "
        "compose into one."
    )


def test_blowfish_ledger_charges_a_pure_dp_release_twice_its_epsilon():
    # when
    charged = charge(PureDP(epsilon=0.5), BLOWFISH_LEDGER)

    # then
    assert charged == (Decimal("1.0"), Decimal(0))


def test_blowfish_ledger_charges_twice_the_epsilon_exactly_at_twelve_places():
    # when
    charged = charge(PureDP(epsilon=0.3), BLOWFISH_LEDGER, epsilon=Decimal("0.123456789012"))

    # then
    assert charged == (Decimal("0.246913578024"), Decimal(0))


def test_blowfish_ledger_charges_an_approx_dp_release_2_epsilon_and_1_plus_e_to_epsilon_delta():
    # given (1 + e^0.5)·10⁻⁶ = 2.6487212707001281…·10⁻⁶
    with localcontext() as context:
        context.prec = 60
        exact_delta = (1 + EPSILON.exp()) * DELTA

    # when
    charged = charge(ApproxDP(epsilon=0.5, delta=1e-6), BLOWFISH_LEDGER, delta=DELTA)

    # then δ is recorded to 15 significant digits, rounded up
    assert charged == (Decimal("1.0"), Decimal("0.00000264872127070013"))
    assert Decimal(0) < charged[1] - exact_delta < Decimal("1e-20")


def test_approx_dp_delta_on_a_blowfish_ledger_is_rounded_up_never_down():
    # given δ whose (1 + e^ε)·δ has more than 15 significant digits
    epsilon, delta = Decimal("1"), Decimal("0.000000000001")

    # when
    _, charged_delta = charge(ApproxDP(epsilon=1.0, delta=1e-12), BLOWFISH_LEDGER, epsilon, delta)

    # then: (1 + e)·10⁻¹² = 3.71828182845904523…·10⁻¹² rounds up at its 15th digit
    assert charged_delta == Decimal("3.71828182845905E-12")


def test_blowfish_ledger_accepts_the_same_partition_listed_in_another_order():
    # given
    ledger = ledger_for(
        Blowfish(epsilon=0.5, policy=CategoricalPartition("sex", (("F",), ("M", "X"))))
    )
    same_graph = Blowfish(epsilon=0.5, policy=CategoricalPartition("sex", (("X", "M"), ("F",))))

    # when
    charged = charge(same_graph, ledger)

    # then
    assert charged == (Decimal("0.5"), Decimal(0))


@settings(max_examples=400, deadline=None)
@given(
    epsilon=st.integers(min_value=1, max_value=20_000).map(lambda k: Decimal(k) / 1000),
    delta=st.sampled_from([Decimal("1e-12"), Decimal("0.000001"), Decimal("0.01"), Decimal("0.2")]),
)
def test_a_dp_release_on_a_blowfish_ledger_is_never_charged_less_than_its_remove_add_cost(
    epsilon, delta
):
    # given (found by review: δ ≥ 0.01 raised InvalidOperation, a 500 at submission, and the
    # float e^ε could round the charge down)
    ledger = BLOWFISH_LEDGER

    # when
    charged_epsilon, charged_delta = ledger_charge(
        definition=ApproxDP(epsilon=float(epsilon), delta=float(delta)),
        epsilon=epsilon,
        delta=delta,
        ledger=ledger,
    )

    # then (1 + e^ε)·δ, computed here to 80 digits, is covered
    with localcontext() as context:
        context.prec = 80
        needed = (1 + epsilon.exp()) * delta
    assert charged_delta >= needed
    assert charged_epsilon >= 2 * epsilon
