"""A release's composition as the ledger shows it: sequential across statistics (their exact ε
add up to what the ledger rounds up), parallel across the disjoint cells of a histogram, a table
or k-means' clusters only when a person's data is in at most one cell, and the ledger's
conversion (2ε for an ε-DP release on a Blowfish ledger)."""

from decimal import Decimal

import pytest

from privacy_engine import Ledger, ledger_charge, ledger_for, plan_release
from privacy_engine.accounting import LEDGER_RULES, ledger_conversion
from privacy_engine.composition import composition_rules, release_composition
from privacy_engine.kinds import kind_named
from privacy_engine.schema import schema_from_dict

SCHEMA = {
    "columns": {
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
        "sex": {"kind": "categorical", "categories": ["F", "M"]},
        "region": {"kind": "categorical", "categories": ["north", "south", "east"]},
    },
    "declared_size": 1000,
}
QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "marginal", "columns": ["sex", "region"]},
    {"kind": "mean", "column": "age", "weight": 2},
]


def planned_query(spec: dict):
    plan = plan_release(
        schema=SCHEMA, definition={"kind": "pure_dp", "epsilon": 1.0}, queries=[spec]
    )
    return plan.statistics[0].query


def composed(
    definition: dict, queries: list, ledger: Ledger | None = None, schema: dict = SCHEMA
) -> dict:
    plan = plan_release(schema=schema, definition=definition, queries=queries)
    ledger = ledger or ledger_for(plan.definition)
    epsilon, delta = ledger_charge(
        definition=plan.definition,
        epsilon=plan.epsilon_spent,
        delta=plan.delta_spent,
        ledger=ledger,
    )
    return release_composition(
        plan=plan, ledger=ledger, charged_epsilon=epsilon, charged_delta=delta
    ).to_dict()


def test_histogram_and_table_cells_are_disjoint_and_a_count_is_not_a_partition():
    # given
    schema = schema_from_dict(SCHEMA)

    # when / then: a histogram of F and M (no other bucket declared), a table of 2 × 3 cells
    assert kind_named("histogram").disjoint_cells(planned_query(QUERIES[1]), schema) == 2
    assert kind_named("marginal").disjoint_cells(planned_query(QUERIES[2]), schema) == 6
    assert kind_named("count").disjoint_cells(planned_query(QUERIES[0]), schema) is None


def test_statistics_compose_sequentially_and_a_histogram_in_parallel():
    # when
    composition = composed({"kind": "pure_dp", "epsilon": 1.0}, QUERIES)

    # then
    assert composition["rule"] == "sequential"
    assert [s["kind"] for s in composition["statistics"]] == [
        "count",
        "histogram",
        "marginal",
        "mean",
    ]
    assert [
        Decimal(s["epsilon"]).quantize(Decimal("1e-12")) for s in composition["statistics"]
    ] == [Decimal("0.2"), Decimal("0.2"), Decimal("0.2"), Decimal("0.4")]
    assert composition["statistics"][0]["within"] == "one noisy answer"
    assert composition["statistics"][1]["within"] == "parallel over 2 disjoint cells"
    assert composition["statistics"][2]["within"] == "parallel over 6 disjoint cells"
    assert composition["statistics"][3]["within"] == "sequential over its 2 noisy parts"
    assert composition["epsilon"] == "1"
    assert composition["charged"] == {"epsilon": "1", "delta": "0"}
    assert composition["ledger"] == "differential-privacy ledger: charged as composed"
    total = sum(Decimal(s["epsilon"]) for s in composition["statistics"])
    assert total <= Decimal(composition["epsilon"]) < total + Decimal("1e-12")


def test_a_pure_dp_release_on_a_blowfish_ledger_is_charged_twice_its_epsilon():
    # given
    ledger = Ledger(kind="blowfish", policy={"graph": "full_domain"})

    # when
    composition = composed(
        {"kind": "pure_dp", "epsilon": 0.3}, [{"kind": "histogram", "column": "sex"}], ledger
    )

    # then
    assert composition["epsilon"] == "0.3"
    assert composition["charged"] == {"epsilon": "0.6", "delta": "0"}
    assert composition["ledger"] == "ε-DP on a Blowfish ledger: charged 2ε"


def test_a_count_public_under_blowfish_costs_nothing():
    # when
    composition = composed(
        {"kind": "blowfish", "epsilon": 0.5, "policy": {"graph": "full_domain"}},
        [{"kind": "count"}, {"kind": "histogram", "column": "region"}],
    )

    # then
    count, histogram = composition["statistics"]
    assert count["epsilon"] == "0"
    assert count["within"] == "exact: public under this definition, so it costs no ε"
    assert Decimal(histogram["epsilon"]).quantize(Decimal("1e-12")) == Decimal("0.5")
    # A replacement moves a record from one cell to another: no parallel claim.
    assert histogram["within"] == "one draw whose sensitivity covers a record moving between cells"
    assert "disjoint_cells" not in histogram


def test_kmeans_iterations_compose_sequentially_over_disjoint_clusters():
    # when
    composition = composed(
        {"kind": "pure_dp", "epsilon": 1.0},
        [{"kind": "kmeans", "columns": ["age"], "k": 3, "iterations": 2}],
    )

    # then
    (kmeans,) = composition["statistics"]
    assert kmeans["disjoint_cells"] == 3
    assert kmeans["within"] == (
        "sequential over its 4 noisy parts, each parallel over 3 disjoint cells"
    )


def test_delta_shares_keep_their_significant_digits():
    # when
    composition = composed(
        {"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-14},
        [{"kind": "count"}, {"kind": "sum", "column": "age"}],
    )

    # then: each share exact (5·10⁻¹⁵ as a float is a hair below it), the total rounded up
    shares = [Decimal(s["delta"]) for s in composition["statistics"]]
    assert shares == [Decimal(float("5e-15"))] * 2
    assert composition["delta"] == "0.00000000000001"
    assert sum(shares) <= Decimal(composition["delta"])


PERSON_SCHEMA = {
    **SCHEMA,
    "columns": {**SCHEMA["columns"], "name": {"kind": "identifier"}},
    "person_key": "name",
    "max_rows_per_person": 3,
}


@pytest.mark.parametrize(
    "query",
    [
        {"kind": "histogram", "column": "sex"},
        {"kind": "marginal", "columns": ["sex", "region"]},
        {"kind": "kmeans", "columns": ["age"], "k": 3, "iterations": 1},
    ],
)
def test_no_parallel_claim_when_a_person_may_have_several_rows(query):
    # when: up to 3 rows per person, which may fall in 3 different cells
    composition = composed({"kind": "pure_dp", "epsilon": 1.0}, [query], schema=PERSON_SCHEMA)

    # then
    (share,) = composition["statistics"]
    assert "parallel" not in share["within"]
    assert "disjoint" not in share["within"]
    assert "one draw whose sensitivity covers all 3 rows of a person" in share["within"]
    assert "disjoint_cells" not in share


def test_an_exact_part_is_not_counted_as_a_noisy_part():
    # given: under Blowfish a filled column's count is public, so a mean's count part is exact
    schema = {
        **SCHEMA,
        "columns": {**SCHEMA["columns"], "age": {**SCHEMA["columns"]["age"], "fill": 0}},
    }

    # when
    composition = composed(
        {"kind": "blowfish", "epsilon": 0.5, "policy": {"graph": "full_domain"}},
        [{"kind": "mean", "column": "age"}],
        schema=schema,
    )

    # then
    assert composition["statistics"][0]["within"] == "one noisy answer"


@pytest.mark.parametrize(
    ("definition", "queries"),
    [
        ({"kind": "pure_dp", "epsilon": 0.7}, [{"kind": "count"}, *QUERIES[1:3]]),
        ({"kind": "pure_dp", "epsilon": 0.1}, QUERIES),
        ({"kind": "pure_dp", "epsilon": 1 / 3}, QUERIES[:3]),
        ({"kind": "approx_dp", "epsilon": 0.9, "delta": 1e-7}, QUERIES),
        (
            {"kind": "blowfish", "epsilon": 0.35, "policy": {"graph": "full_domain"}},
            [*QUERIES, {"kind": "kmeans", "columns": ["age"], "k": 2, "iterations": 3}],
        ),
        ({"kind": "pure_dp", "epsilon": 0.3}, [{"kind": "count"}] * 7),
    ],
)
def test_the_charge_is_the_exact_sum_of_the_shares_rounded_up(definition, queries):
    # when
    composition = composed(definition, queries)

    # then: Σ shares ≤ charge < Σ shares + 10⁻¹² (δ: never below Σ shares)
    epsilon = sum(Decimal(s["epsilon"]) for s in composition["statistics"])
    assert epsilon <= Decimal(composition["epsilon"]) < epsilon + Decimal("1e-12")
    delta = sum(Decimal(s.get("delta", "0")) for s in composition["statistics"])
    assert delta <= Decimal(composition["delta"])
    assert "exact sum" in composition["sum_rule"]


def test_the_page_rules_and_the_rows_share_their_words():
    # given
    rules = composition_rules()
    blowfish_row = composed(
        {"kind": "pure_dp", "epsilon": 0.3},
        [{"kind": "histogram", "column": "sex"}],
        Ledger(kind="blowfish", policy={"graph": "full_domain"}),
    )

    # then: no blanket parallel claim, and the conversion in accounting's words
    assert "each person has one row" in rules
    assert "under Blowfish" in rules
    assert LEDGER_RULES in rules
    assert blowfish_row["ledger"] == ledger_conversion(
        definition_kind="pure_dp", ledger_kind="blowfish"
    )
