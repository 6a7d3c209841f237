"""Privacy definitions beyond ε-DP: Blowfish policies and (ε, δ)-DP (DESIGN.md, "Formulas from the
seeds" and "HTTP API contract": definition kinds).

The article's numbers are pinned through the facade ``sensitivity(query=..., schema=...,
definition=...)`` with the API's JSON shapes; the δ rules, the ε split and the side-by-side ε-DP
preview through ``plan_release`` / ``preview``; malformed definitions must name the bad field.
"""

import math
from decimal import Decimal
from fractions import Fraction

import pandas as pd
import pytest

from privacy_engine import (
    Blowfish,
    DistanceThreshold,
    EngineValidationError,
    NumericColumn,
    Schema,
    Sum,
    plan_release,
    preview,
    run_queries,
    sensitivity,
)

# The article's data has no missing values: declaring a fill makes that a public fact, so the
# policies' own sensitivities apply (without it, missing-to-present is covered; tested below).
SCHEMA = {
    "columns": {
        "age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 0},
        "income": {"kind": "numeric", "lower": 0, "upper": 1000, "fill": 0},
        "sex": {"kind": "categorical", "categories": ["F", "M", "X"]},
        "name": {"kind": "identifier"},
    },
    "declared_size": 100,
}
PURE_DP = {"kind": "pure_dp", "epsilon": 1.0}
SUM_AGE = {"kind": "sum", "column": "age"}
SUM_INCOME = {"kind": "sum", "column": "income"}
SUM_AGE_AND_INCOME = {"kind": "sum", "columns": ["age", "income"]}
COUNT = {"kind": "count"}
HISTOGRAM_SEX = {"kind": "histogram", "column": "sex"}


def blowfish(policy: dict, epsilon: float = 1.0) -> dict:
    return {"kind": "blowfish", "epsilon": epsilon, "policy": policy}


FULL_DOMAIN = blowfish({"graph": "full_domain"})
AGE_THETA_5 = blowfish({"graph": "distance_threshold", "column": "age", "theta": 5})
AGE_DECADES = blowfish({"graph": "partition", "column": "age", "width": 10})


def with_size(declared_size: int | None) -> dict:
    schema = {"columns": SCHEMA["columns"]}
    if declared_size is not None:
        schema["declared_size"] = declared_size
    return schema


def errors_of(**plan_arguments) -> dict[str, list[str]]:
    with pytest.raises(EngineValidationError) as caught:
        plan_release(**plan_arguments)
    return caught.value.errors


# --- the article's sensitivities through the facade ----------------------------------------

ARTICLE_CASES = [
    pytest.param(SUM_AGE, PURE_DP, 100, id="epsilon-dp-sum-of-age"),
    pytest.param(SUM_AGE, FULL_DOMAIN, 100, id="blowfish-full-domain-sum-of-age"),
    pytest.param(SUM_AGE, AGE_THETA_5, 5, id="blowfish-distance-threshold-5-sum-of-age"),
    pytest.param(SUM_AGE, AGE_DECADES, 10, id="blowfish-decades-sum-of-age"),
    pytest.param(
        SUM_AGE_AND_INCOME,
        blowfish({"graph": "attribute", "c": 1}),
        1000,
        id="attribute-c1-takes-the-largest-range",
    ),
    pytest.param(
        SUM_AGE_AND_INCOME,
        blowfish({"graph": "attribute", "c": 2}),
        1100,
        id="attribute-c2-adds-the-two-largest-ranges",
    ),
    pytest.param(SUM_AGE_AND_INCOME, FULL_DOMAIN, 1100, id="full-domain-adds-every-range"),
    pytest.param(
        SUM_AGE_AND_INCOME,
        blowfish({"graph": "distance_threshold", "columns": ["age", "income"], "theta": 5}),
        # θ, plus one step of income's grid (2⁻⁹, exact_sums.py): moving age by a hair and
        # income by almost θ can move each rounded sum one step beyond its share of θ.
        5 + 2**-9,
        id="l1-distance-threshold-over-both-columns",
    ),
    pytest.param(
        SUM_AGE_AND_INCOME,
        AGE_THETA_5,
        1005,
        id="threshold-on-age-leaves-income-unconstrained",
    ),
    pytest.param(
        SUM_INCOME, AGE_THETA_5, 1000, id="sum-of-an-unconstrained-column-under-a-threshold"
    ),
    pytest.param(
        SUM_INCOME, AGE_DECADES, 1000, id="sum-of-an-unconstrained-column-under-a-partition"
    ),
    pytest.param(
        SUM_AGE,
        blowfish({"graph": "partition", "column": "age", "width": 250}),
        100,
        id="partition-wider-than-the-range-is-the-full-range",
    ),
    pytest.param(HISTOGRAM_SEX, FULL_DOMAIN, 2, id="blowfish-histogram"),
    pytest.param(HISTOGRAM_SEX, AGE_THETA_5, 2, id="blowfish-histogram-any-policy"),
    pytest.param(COUNT, FULL_DOMAIN, 0, id="blowfish-count-is-public"),
    pytest.param(COUNT, AGE_DECADES, 0, id="blowfish-count-is-public-any-policy"),
]


@pytest.mark.parametrize(("query", "definition", "expected"), ARTICLE_CASES)
def test_facade_sensitivity_pins_the_articles_numbers(query, definition, expected):
    # when
    value = sensitivity(query=query, schema=SCHEMA, definition=definition)

    # then
    assert value == expected


def test_facade_accepts_typed_blowfish_objects():
    # given
    schema = Schema(columns={"age": NumericColumn(lower=0, upper=100, fill=0.0)})
    definition = Blowfish(epsilon=1.0, policy=DistanceThreshold(columns=("age",), theta=5.0))

    # when
    value = sensitivity(query=Sum(column="age"), schema=schema, definition=definition)

    # then
    assert value == 5


def test_blowfish_full_domain_sum_covers_a_missing_value_becoming_the_upper_bound():
    # given age in [10, 100], missing ages dropped: replacing a record whose age is missing by
    # one aged 100 is an edge of the full-domain graph and moves the sum by 100
    schema = {"columns": {"age": {"kind": "numeric", "lower": 10, "upper": 100}}}

    # when
    value = sensitivity(query=SUM_AGE, schema=schema, definition=FULL_DOMAIN)

    # then
    assert value == 100


def test_facade_accepts_approx_dp_without_delta_like_the_api():
    # when
    value = sensitivity(
        query=SUM_AGE, schema=SCHEMA, definition={"kind": "approx_dp", "epsilon": 1.0}
    )

    # then
    assert value == 100


def test_facade_refuses_a_policy_naming_an_unknown_column():
    # given
    definition = blowfish({"graph": "distance_threshold", "column": "agee", "theta": 5})

    # when
    with pytest.raises(EngineValidationError) as caught:
        sensitivity(query=SUM_AGE, schema=SCHEMA, definition=definition)

    # then
    assert set(caught.value.errors) == {"policy.column"}


# --- previews: L2 for the Gaussian, ε-DP side by side for Blowfish ------------------------


def test_approx_dp_preview_of_a_two_column_sum_uses_the_l2_sensitivity():
    # when
    [entry] = preview(
        schema=SCHEMA,
        definition={"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-6},
        queries=[SUM_AGE_AND_INCOME],
    )

    # then
    assert entry["mechanism"] == "gaussian"
    assert entry["columns"] == ["age", "income"]
    # √(100² + 1000²) rounded up, never down: the smallest float whose square covers it
    assert Fraction(entry["sensitivity"]) ** 2 >= 100**2 + 1000**2
    assert Fraction(math.nextafter(entry["sensitivity"], 0)) ** 2 < 100**2 + 1000**2
    assert entry["sensitivity"] == pytest.approx(math.sqrt(100**2 + 1000**2), rel=1e-15)
    assert entry["epsilon"] == 1.0
    assert entry["delta"] == 1e-6


def test_approx_dp_preview_uses_gaussian_noise_for_every_statistic():
    # when
    entries = preview(
        schema=SCHEMA,
        definition={"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-6},
        queries=[COUNT, HISTOGRAM_SEX, SUM_AGE, {"kind": "mean", "column": "age"}],
    )

    # then
    assert [e["mechanism"] for e in entries] == [
        "gaussian",
        "gaussian",
        "gaussian",
        "gaussian+gaussian",
    ]
    assert [e["epsilon"] for e in entries] == [0.25, 0.25, 0.25, 0.25]
    assert [e["delta"] for e in entries] == [2.5e-7, 2.5e-7, 2.5e-7, 2.5e-7]
    assert [e["sensitivity"] for e in entries] == [1, 1, 100, 100]


def test_blowfish_preview_carries_the_pure_dp_comparison_at_the_same_epsilon():
    # given
    queries = [COUNT, SUM_AGE, HISTOGRAM_SEX]
    baseline = preview(schema=SCHEMA, definition=PURE_DP, queries=queries)

    # when
    entries = preview(schema=SCHEMA, definition=AGE_THETA_5, queries=queries)

    # then
    assert [e["pure_dp"] for e in entries] == [
        {
            "expected_abs_error": b["expected_abs_error"],
            "ci95_halfwidth": b["ci95_halfwidth"],
            "sensitivity": b["sensitivity"],
        }
        for b in baseline
    ]
    assert [e["pure_dp"]["sensitivity"] for e in entries] == [1, 100, 1]
    assert [e["sensitivity"] for e in entries] == [0, 5, 2]


def test_blowfish_threshold_sum_is_more_accurate_than_the_pure_dp_one():
    # when
    [count, total] = preview(schema=SCHEMA, definition=AGE_THETA_5, queries=[COUNT, SUM_AGE])

    # then: Laplace scale 5/1 under Blowfish (the count is free) vs 100/0.5 under ε-DP
    assert total["expected_abs_error"] == 5.0
    assert total["pure_dp"]["expected_abs_error"] == 200.0
    assert total["expected_abs_error"] < total["pure_dp"]["expected_abs_error"]
    assert count["expected_abs_error"] == 0.0
    assert count["pure_dp"]["expected_abs_error"] > 0.0


def test_pure_dp_and_approx_dp_previews_carry_no_comparison():
    # when
    entries = [
        *preview(schema=SCHEMA, definition=PURE_DP, queries=[SUM_AGE]),
        *preview(schema=SCHEMA, definition={"kind": "approx_dp", "epsilon": 1}, queries=[SUM_AGE]),
    ]

    # then
    assert ["pure_dp" in e for e in entries] == [False, False]


# --- the count under Blowfish is exact and free ---------------------------------------------


def test_blowfish_count_is_published_exactly_at_no_cost():
    # given
    frame = pd.DataFrame(
        {
            "age": [34, 51, 29, 120, None, 8, 77],
            "income": [10, 20, 30, 40, 50, 60, 70],
            "sex": ["F", "M", "M", "F", "X", "F", "M"],
            "name": list("ABCDEFG"),
        }
    )

    # when
    result = run_queries(frame, schema=SCHEMA, definition=FULL_DOMAIN, queries=[COUNT])

    # then
    [count] = result.statistics
    assert count.value == 7
    assert count.mechanism.startswith("none")
    assert (count.epsilon, count.delta, count.sensitivity, count.noise_scale) == (0, 0, 0, 0)
    assert count.ci95 == [7, 7]
    assert result.epsilon_spent == Decimal(0)


def test_blowfish_splits_the_whole_epsilon_among_the_statistics_that_need_noise():
    # when
    plan = plan_release(
        schema=SCHEMA,
        definition=AGE_THETA_5,
        queries=[COUNT, SUM_AGE, {**HISTOGRAM_SEX, "weight": 3}],
    )

    # then
    assert [s.epsilon for s in plan.statistics] == [0.0, 0.25, 0.75]
    assert [s.mechanism for s in plan.statistics] == [
        "none (public under the definition)",
        "laplace",
        "geometric",
    ]
    assert plan.epsilon_spent == Decimal(1)
    assert plan.delta_spent == Decimal(0)


def test_blowfish_release_of_only_counts_spends_nothing():
    # when
    plan = plan_release(schema=SCHEMA, definition=FULL_DOMAIN, queries=[COUNT, COUNT])

    # then
    assert [s.epsilon for s in plan.statistics] == [0.0, 0.0]
    assert plan.epsilon_spent == Decimal(0)


def test_pure_dp_count_still_costs_its_share():
    # when
    plan = plan_release(schema=SCHEMA, definition=PURE_DP, queries=[COUNT, SUM_AGE])

    # then
    assert [s.epsilon for s in plan.statistics] == [0.5, 0.5]
    assert plan.epsilon_spent == Decimal(1)


# --- δ rules -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared_size", "expected_delta"),
    [(100, 1e-6), (1000, 1e-6), (10_000, 1e-8), (None, 1e-6)],
    ids=["n=100", "n=1000", "n=10000", "no-declared-size"],
)
def test_approx_dp_without_delta_defaults_to_the_smaller_of_1e_6_and_1_over_n_squared(
    declared_size, expected_delta
):
    # when
    plan = plan_release(
        schema=with_size(declared_size),
        definition={"kind": "approx_dp", "epsilon": 1.0},
        queries=[SUM_AGE],
    )

    # then
    assert plan.definition.delta == expected_delta
    assert plan.definition.to_dict() == {
        "kind": "approx_dp",
        "epsilon": 1.0,
        "delta": expected_delta,
    }
    assert plan.warnings == ()


def test_delta_above_1_over_n_squared_is_allowed_with_a_warning():
    # when: n = 100, 1/n² = 10⁻⁴ < δ = 5·10⁻⁴ ≤ 1/(10n) = 10⁻³
    plan = plan_release(
        schema=with_size(100),
        definition={"kind": "approx_dp", "epsilon": 1.0, "delta": 5e-4},
        queries=[SUM_AGE],
    )

    # then
    assert plan.warnings == (
        "δ = 0.0005 is above 1/n² = 0.0001 for about 100 records: a mechanism that simply "
        "publishes each record with probability δ satisfies (0, δ)-DP, and would expose about "
        "0.05 records.",
    )
    assert plan.delta_spent == Decimal("0.0005")


def test_delta_of_exactly_1_over_n_squared_has_no_warning():
    # when
    plan = plan_release(
        schema=with_size(100),
        definition={"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-4},
        queries=[SUM_AGE],
    )

    # then
    assert plan.warnings == ()


def test_delta_of_exactly_1_over_10n_is_the_largest_accepted():
    # when
    plan = plan_release(
        schema=with_size(100),
        definition={"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-3},
        queries=[SUM_AGE],
    )

    # then
    assert plan.definition.delta == 1e-3
    assert len(plan.warnings) == 1


def test_delta_above_1_over_10n_is_refused_naming_definition_delta():
    # when
    errors = errors_of(
        schema=with_size(100),
        definition={"kind": "approx_dp", "epsilon": 1.0, "delta": 2e-3},
        queries=[SUM_AGE],
    )

    # then
    assert errors == {
        "definition.delta": [
            "must be at most 1/(10·n) = 0.001 for about 100 records: publishing each record "
            "with probability δ is (0, δ)-DP, so a larger δ lets a mechanism leak whole records"
        ]
    }


def test_without_declared_size_delta_above_1e_6_is_refused():
    # when
    errors = errors_of(
        schema=with_size(None),
        definition={"kind": "approx_dp", "epsilon": 1.0, "delta": 2e-6},
        queries=[SUM_AGE],
    )

    # then
    assert errors == {
        "definition.delta": [
            "must be at most 1e-06 unless the table's approximate size is declared"
        ]
    }


def test_without_declared_size_delta_of_1e_6_is_accepted():
    # when
    plan = plan_release(
        schema=with_size(None),
        definition={"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-6},
        queries=[SUM_AGE],
    )

    # then
    assert plan.definition.delta == 1e-6
    assert plan.warnings == ()


def test_allowed_large_delta_with_a_small_epsilon_still_plans_a_gaussian():
    # given n = 5, so δ = 0.02 = 1/(10n) is allowed; ε = 0.0003 is within the ε range
    schema = with_size(5)

    # when
    plan = plan_release(
        schema=schema,
        definition={"kind": "approx_dp", "epsilon": 0.0003, "delta": 0.02},
        queries=[COUNT],
    )

    # then
    [count] = plan.statistics
    assert count.mechanism == "gaussian"
    assert plan.epsilon_spent <= Decimal("0.0003")
    assert plan.delta_spent <= Decimal("0.02")


# --- malformed definitions name the field ---------------------------------------------------

MALFORMED = [
    pytest.param(
        blowfish({"graph": "distance_threshold", "column": "age", "theta": 0}),
        "definition.policy.theta",
        id="theta-zero",
    ),
    pytest.param(
        blowfish({"graph": "distance_threshold", "column": "age", "theta": -5}),
        "definition.policy.theta",
        id="theta-negative",
    ),
    pytest.param(
        blowfish({"graph": "distance_threshold", "column": "age"}),
        "definition.policy.theta",
        id="theta-missing",
    ),
    pytest.param(
        blowfish({"graph": "distance_threshold", "column": "agee", "theta": 5}),
        "definition.policy.column",
        id="threshold-unknown-column",
    ),
    pytest.param(
        blowfish({"graph": "distance_threshold", "column": "sex", "theta": 5}),
        "definition.policy.column",
        id="threshold-on-a-categorical-column",
    ),
    pytest.param(
        blowfish({"graph": "distance_threshold", "columns": ["age", "agee"], "theta": 5}),
        "definition.policy.columns",
        id="threshold-columns-with-an-unknown-one",
    ),
    pytest.param(
        blowfish({"graph": "partition", "column": "agee", "width": 10}),
        "definition.policy.column",
        id="partition-unknown-column",
    ),
    pytest.param(
        blowfish({"graph": "partition", "column": "sex", "width": 10}),
        "definition.policy.column",
        id="width-on-a-categorical-column",
    ),
    pytest.param(
        blowfish({"graph": "partition", "column": "age", "groups": [["F"], ["M", "X"]]}),
        "definition.policy.column",
        id="groups-on-a-numeric-column",
    ),
    pytest.param(
        blowfish({"graph": "partition", "column": "sex", "groups": [["F"], ["M"]]}),
        "definition.policy.groups",
        id="groups-missing-a-category",
    ),
    pytest.param(
        blowfish({"graph": "partition", "column": "sex", "groups": [["F", "M"], ["M", "X"]]}),
        "definition.policy.groups",
        id="groups-repeating-a-category",
    ),
    pytest.param(
        blowfish({"graph": "partition", "column": "sex", "groups": [["F"], ["M", "X", "Z"]]}),
        "definition.policy.groups",
        id="groups-with-an-undeclared-category",
    ),
    pytest.param(
        blowfish({"graph": "partition", "column": "sex", "groups": []}),
        "definition.policy.groups",
        id="groups-empty",
    ),
    pytest.param(
        blowfish({"graph": "partition", "column": "age", "width": 0}),
        "definition.policy.width",
        id="width-zero",
    ),
    pytest.param(blowfish({"graph": "attribute", "c": 0}), "definition.policy.c", id="c-zero"),
    pytest.param(blowfish({"graph": "attribute", "c": 1.5}), "definition.policy.c", id="c-half"),
    pytest.param(blowfish({"graph": "star"}), "definition.policy.graph", id="unknown-graph"),
    pytest.param(blowfish({}), "definition.policy.graph", id="no-graph"),
    pytest.param({"kind": "blowfish", "epsilon": 1.0}, "definition.policy", id="no-policy-object"),
    pytest.param(
        {"kind": "approx_dp", "epsilon": 1.0, "delta": 1}, "definition.delta", id="delta-one"
    ),
    pytest.param(
        {"kind": "approx_dp", "epsilon": 1.0, "delta": 1.5},
        "definition.delta",
        id="delta-above-one",
    ),
    pytest.param(
        {"kind": "approx_dp", "epsilon": 1.0, "delta": 0}, "definition.delta", id="delta-zero"
    ),
    pytest.param(
        {"kind": "approx_dp", "epsilon": 1.0, "delta": "1e-6"},
        "definition.delta",
        id="delta-a-string",
    ),
    pytest.param(
        blowfish({"graph": "full_domain"}, epsilon=0), "definition.epsilon", id="blowfish-eps-0"
    ),
]


@pytest.mark.parametrize(("definition", "field"), MALFORMED)
def test_malformed_definition_is_refused_naming_the_field(definition, field):
    # when
    errors = errors_of(schema=SCHEMA, definition=definition, queries=[SUM_AGE])

    # then
    assert list(errors) == [field]
    assert len(errors[field]) == 1


def test_partition_error_lists_the_declared_categories():
    # when
    errors = errors_of(
        schema=SCHEMA,
        definition=blowfish({"graph": "partition", "column": "sex", "groups": [["F"], ["M"]]}),
        queries=[SUM_AGE],
    )

    # then
    assert errors == {
        "definition.policy.groups": [
            "the groups must contain every declared category (F, M, X) exactly once"
        ]
    }


@pytest.mark.parametrize(
    "policy",
    [
        {"graph": "partition", "column": "age", "width": 10},
        {"graph": "partition", "column": "sex", "groups": [["F"], ["M", "X"]]},
        {"graph": "partition", "column": "sex", "groups": [["X", "M", "F"]]},
        {"graph": "distance_threshold", "columns": ["age", "income"], "theta": 5},
        {"graph": "attribute"},
        {"graph": "full_domain"},
    ],
    ids=[
        "numeric-width",
        "categorical-groups",
        "one-group",
        "threshold-over-columns",
        "attribute-default-c",
        "full-domain",
    ],
)
def test_well_formed_policies_are_accepted_and_round_trip(policy):
    # when
    plan = plan_release(schema=SCHEMA, definition=blowfish(policy), queries=[SUM_AGE])

    # then
    expected = {"c": 1, **policy} if policy["graph"] == "attribute" else policy
    assert plan.definition.to_dict() == {"kind": "blowfish", "epsilon": 1.0, "policy": expected}


def test_malformed_definition_and_query_are_reported_together():
    # when
    errors = errors_of(
        schema=SCHEMA,
        definition=blowfish({"graph": "attribute", "c": 0}),
        queries=[{"kind": "sum", "column": "agee"}],
    )

    # then
    assert sorted(errors) == ["definition.policy.c", "queries.0.column"]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({"graph": "distance_threshold", "column": "age", "theta": 5}, 5.0),
        ({"graph": "partition", "column": "age", "width": 10}, 10.0),
    ],
)
def test_without_a_fill_the_policy_still_applies_and_the_release_says_missingness_is_public(
    policy, expected
):
    # given age whose missing values are dropped: a missing value has no edge in the policy's
    # graph (Definition 6), so only present ages are the policy's secrets
    schema = {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 100}}}
    frame = pd.DataFrame({"age": ["30", "", "70"]})

    # when
    value = sensitivity(query=SUM_AGE, schema=schema, definition=blowfish(policy))
    result = run_queries(frame, schema=schema, definition=blowfish(policy), queries=[SUM_AGE])

    # then
    assert value == expected
    assert "whether age is missing is not protected" in result.statistics[0].rule


def test_a_declared_fill_removes_the_missingness_disclosure():
    # given
    schema = {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 0}}}
    definition = blowfish({"graph": "distance_threshold", "column": "age", "theta": 5})

    # when
    result = run_queries(
        pd.DataFrame({"age": ["30", ""]}), schema=schema, definition=definition, queries=[SUM_AGE]
    )

    # then
    assert "missing is not protected" not in result.statistics[0].rule
