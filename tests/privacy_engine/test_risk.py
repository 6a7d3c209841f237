"""The risk card's numbers (privacy_engine/risk.py), pinned to the closed forms of DESIGN.md."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from privacy_engine.risk import guarantee_risk, risk_card


def test_the_coin_flip_view_and_posteriors_follow_the_article():
    card = risk_card({"kind": "pure_dp", "epsilon": 0.1})

    person = card.release.person
    assert person.truth_probability == pytest.approx(math.exp(0.1) / (1 + math.exp(0.1)))
    assert round(person.truth_probability, 5) == 0.52498
    assert [p.prior for p in person.posteriors] == [0.1, 0.5]
    # From 50% the worst posterior is the coin-flip probability itself.
    assert person.posteriors[1].posterior == pytest.approx(person.truth_probability)
    assert person.delta == 0
    assert person.delta_one_in is None


def test_a_ten_percent_prior_at_epsilon_point_two_reaches_at_most_eleven_point_nine_five():
    person = risk_card({"kind": "pure_dp", "epsilon": 0.2}).release.person

    assert round(person.posteriors[0].posterior, 4) == 0.1195


def test_a_family_of_three_is_protected_at_three_epsilon_and_its_delta_grows():
    card = risk_card({"kind": "approx_dp", "epsilon": 0.5, "delta": 1e-9})

    family = card.release.family
    assert card.release.family_size == 3
    assert family.epsilon == pytest.approx(1.5)
    assert family.delta == pytest.approx(3 * math.exp(2 * 0.5) * 1e-9)
    assert family.truth_probability == pytest.approx(math.exp(1.5) / (1 + math.exp(1.5)))
    assert card.release.person.delta_one_in == pytest.approx(1e9)


def test_a_family_beyond_any_useful_bound_is_said_to_be_unprotected():
    # c·e^{(c−1)ε}·δ ≥ 1: the group's δ promises nothing.
    assert guarantee_risk(epsilon=10.0, delta=1e-6).family is None
    assert guarantee_risk(epsilon=1e308).family is None


def test_the_table_view_uses_the_totals_given():
    card = risk_card(
        {"kind": "pure_dp", "epsilon": 0.5},
        table_epsilon=1.25,
        table_delta=0.0,
        table_kind="differential_privacy",
    )

    assert card.table.person.epsilon == 1.25
    assert card.table.family.epsilon == pytest.approx(3.75)
    assert card.table_kind == "differential_privacy"
    assert risk_card({"kind": "pure_dp", "epsilon": 0.5}).table is None


def test_distance_threshold_protection_grows_with_the_ceiling_of_distance_over_theta():
    card = risk_card(
        {
            "kind": "blowfish",
            "epsilon": 0.5,
            "policy": {"graph": "distance_threshold", "column": "age", "theta": 5},
        }
    )

    by_distance = {p.distance: p.epsilon for p in card.blowfish.protections}
    assert by_distance == {2.5: 0.5, 7.5: 1.0, 12.5: 1.5, 22.5: 2.5, 47.5: 5.0}
    assert card.blowfish.theta == 5
    assert any("number of records is public" in line for line in card.blowfish.public)


def test_values_in_different_parts_of_a_partition_are_not_protected():
    card = risk_card(
        {
            "kind": "blowfish",
            "epsilon": 1.0,
            "policy": {"graph": "partition", "column": "sex", "groups": [["F"], ["M"]]},
        }
    )

    relations = {p.relation: p.epsilon for p in card.blowfish.protections}
    assert relations == {"same_part": 1.0, "other_part": None}
    assert any("Which group each person is in" in line for line in card.blowfish.public)


def test_attribute_graph_protects_c_attributes_at_epsilon_and_more_at_multiples():
    card = risk_card({"kind": "blowfish", "epsilon": 0.4, "policy": {"graph": "attribute", "c": 2}})

    assert {p.distance: p.epsilon for p in card.blowfish.protections} == {
        1: 0.4,
        2: 0.4,
        4: 0.8,
    }


def test_missing_values_left_public_are_listed():
    card = risk_card(
        {
            "kind": "blowfish",
            "epsilon": 1.0,
            "policy": {"graph": "distance_threshold", "column": "age", "theta": 5},
        },
        missing_public=["age"],
    )

    assert any("Whether a person's age is missing" in line for line in card.blowfish.public)


@given(
    epsilon=st.floats(min_value=0, max_value=50),
    delta=st.floats(min_value=0, max_value=1e-3),
)
def test_every_bound_is_a_probability_and_a_group_is_never_better_protected(epsilon, delta):
    risk = guarantee_risk(epsilon=epsilon, delta=delta)

    person = risk.person
    assert 0.5 <= person.truth_probability <= 1
    for posterior in person.posteriors:
        assert posterior.prior <= posterior.posterior <= 1
    if risk.family is not None:
        assert risk.family.truth_probability >= person.truth_probability
        assert risk.family.delta >= person.delta


@pytest.mark.parametrize(
    "policy",
    [
        {"graph": "distance_threshold", "column": "age", "theta": 1e308},
        {"graph": "partition", "column": "age", "width": 3e15},
    ],
)
def test_a_policy_distance_beyond_any_column_range_is_refused_naming_it(policy):
    from privacy_engine import EngineValidationError, definition_from_dict

    with pytest.raises(EngineValidationError) as refused:
        definition_from_dict({"kind": "blowfish", "epsilon": 1, "policy": policy})

    field = "theta" if "theta" in policy else "width"
    assert any(path.endswith(field) for path in refused.value.errors)
