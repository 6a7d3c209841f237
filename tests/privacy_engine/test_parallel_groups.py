"""Statistics restricted to disjoint groups of a partition column (issue 11, point 1): the query
field, its checks, the parallel split and charge (footprint.py), and a statistical audit of a
release of two group counts charged ε once, with its negative control."""

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from binomial_bounds import batched_draws, worst_ratio_lower_bound
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy_engine import EngineValidationError, plan_release
from privacy_engine.accounting import Ledger, ledger_used
from privacy_engine.aggregates import Within, finish, partials
from privacy_engine.columnar import typed_from_frame
from privacy_engine.composition import release_composition
from privacy_engine.footprint import Footprint, split_parallel
from privacy_engine.release import aggregates_for

SCHEMA = {
    "columns": {
        "region": {"kind": "categorical", "categories": ["north", "south", "east"]},
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "X"},
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
    },
    "declared_size": 3000,
}
PURE = {"kind": "pure_dp", "epsilon": 1.0}


def where(*groups: str, column: str = "region") -> dict:
    return {"column": column, "in": list(groups)}


def test_disjoint_groups_each_get_the_whole_epsilon_and_cost_it_once():
    plan = plan_release(
        schema=SCHEMA,
        definition=PURE,
        queries=[
            {"kind": "mean", "column": "age", "where": where("north")},
            {"kind": "mean", "column": "age", "where": where("south", "east")},
        ],
    )
    assert [s.epsilon for s in plan.statistics] == [1.0, 1.0]
    assert plan.epsilon_spent == Decimal("1.000000000000")


def test_groups_of_one_column_that_overlap_add_up_where_they_overlap():
    # north is read by the first two: it carries their sum, the release's ε; shares stay
    # proportional to the weights, so east's statistic gets what the others get
    plan = plan_release(
        schema=SCHEMA,
        definition=PURE,
        queries=[
            {"kind": "count", "where": where("north")},
            {"kind": "count", "where": where("north", "south")},
            {"kind": "count", "where": where("east")},
        ],
    )
    assert [s.epsilon for s in plan.statistics] == [0.5, 0.5, 0.5]
    assert plan.epsilon_spent == Decimal("1.000000000000")


def test_groups_of_two_columns_and_everyone_add_up_for_the_worst_person():
    # a person can be in north and in F: worst = everyone + north's + F's
    plan = plan_release(
        schema=SCHEMA,
        definition=PURE,
        queries=[
            {"kind": "count"},
            {"kind": "count", "where": where("north")},
            {"kind": "count", "where": where("south")},
            {"kind": "count", "where": where("F", column="sex")},
            {"kind": "count", "where": where("M", "X", column="sex")},
        ],
    )
    assert [s.epsilon for s in plan.statistics] == pytest.approx([1 / 3] * 5)
    epsilon, _ = plan.footprints()
    assert epsilon.charge() <= Decimal(1)
    assert plan.epsilon_spent == Decimal("1.000000000000")


def test_without_restrictions_the_charge_is_the_plain_sum():
    plan = plan_release(
        schema=SCHEMA, definition=PURE, queries=[{"kind": "count"}, {"kind": "count"}]
    )
    assert [s.epsilon for s in plan.statistics] == [0.5, 0.5]
    assert plan.footprints()[0].parallel is False


def test_several_rows_per_person_make_groups_sequential():
    # one person's rows can be in north and in south
    schema = {
        **SCHEMA,
        "columns": {**SCHEMA["columns"], "person": {"kind": "identifier"}},
        "person_key": "person",
        "max_rows_per_person": 2,
    }
    plan = plan_release(
        schema=schema,
        definition=PURE,
        queries=[
            {"kind": "count", "where": where("north")},
            {"kind": "count", "where": where("south")},
        ],
    )
    assert [s.epsilon for s in plan.statistics] == [0.5, 0.5]
    assert plan.footprints()[0].parallel is False
    assert plan.epsilon_spent == Decimal("1.000000000000")


def test_blowfish_refuses_a_restriction_naming_the_field():
    blowfish = {"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "full_domain"}}
    with pytest.raises(EngineValidationError) as error:
        plan_release(
            schema=SCHEMA,
            definition=blowfish,
            queries=[{"kind": "count"}, {"kind": "count", "where": where("north")}],
        )
    assert list(error.value.errors) == ["queries.1.where"]
    assert "Blowfish" in error.value.errors["queries.1.where"][0]


@pytest.mark.parametrize(
    ("spec", "path", "words"),
    [
        ("north", "queries.0.where", "must be an object"),
        ({"in": ["north"]}, "queries.0.where.column", "categorical column"),
        ({"column": "nope", "in": ["north"]}, "queries.0.where.column", "no such column"),
        ({"column": "age", "in": ["1"]}, "queries.0.where.column", "categorical column"),
        ({"column": "region", "in": []}, "queries.0.where.in", "one or more"),
        ({"column": "region", "in": "north"}, "queries.0.where.in", "one or more"),
        ({"column": "region", "in": [1]}, "queries.0.where.in", "one or more"),
        ({"column": "region", "in": ["north", "north"]}, "queries.0.where.in", "once"),
        ({"column": "region", "in": ["west"]}, "queries.0.where.in", "not a category"),
        (
            {"column": "region", "in": ["north"], "not_in": ["south"]},
            "queries.0.where.not_in",
            "not a field",
        ),
    ],
)
def test_bad_restrictions_are_refused_naming_the_field(spec, path, words):
    with pytest.raises(EngineValidationError) as error:
        plan_release(schema=SCHEMA, definition=PURE, queries=[{"kind": "count", "where": spec}])
    assert list(error.value.errors) == [path]
    assert words in error.value.errors[path][0]


def test_the_other_bucket_is_a_group():
    plan = plan_release(
        schema=SCHEMA,
        definition=PURE,
        queries=[{"kind": "histogram", "column": "region", "where": where("X", column="sex")}],
    )
    assert plan.preview()[0]["where"] == {"column": "sex", "in": ["X"]}


def test_composition_says_which_groups_composed_in_parallel():
    plan = plan_release(
        schema=SCHEMA,
        definition=PURE,
        queries=[
            {"kind": "count", "where": where("north")},
            {"kind": "count", "where": where("south")},
        ],
    )
    composition = release_composition(
        plan=plan,
        ledger=Ledger("differential_privacy"),
        charged_epsilon=plan.epsilon_spent,
        charged_delta=plan.delta_spent,
    ).to_dict()
    assert composition["rule"] == "sequential, parallel over groups"
    assert "region: its groups' statistics compose in parallel" in composition["groups"]
    assert composition["statistics"][0]["where"] == where("north")
    assert set(composition["footprint"]["epsilon"]["groups"]["region"]) == {"north", "south"}


def test_a_blowfish_ledger_charges_a_restricted_release_for_everyone():
    # 2ε on a Blowfish ledger: the release's converted charge, added up sequentially
    plan = plan_release(
        schema=SCHEMA, definition=PURE, queries=[{"kind": "count", "where": where("north")}]
    )
    composition = release_composition(
        plan=plan,
        ledger=Ledger("blowfish", {"graph": "full_domain"}),
        charged_epsilon=Decimal(2),
        charged_delta=Decimal(0),
    ).to_dict()
    assert composition["footprint"]["epsilon"] == {"everyone": "2"}
    # and the words still say how the groups composed before the ledger's conversion
    assert composition["rule"] == "sequential, parallel over groups"
    assert composition["ledger"] == "ε-DP on a Blowfish ledger: charged 2ε"


def test_footprints_across_releases_charge_the_worst_group():
    north = Footprint.of([Decimal("0.6")], [("region", ("north",))])
    south = Footprint.of([Decimal("0.6")], [("region", ("south",))])
    everyone = Footprint(everyone=Decimal("0.3"))
    assert ledger_used([north, south]) == Decimal("0.6")
    assert ledger_used([north, south, everyone]) == Decimal("0.9")
    assert ledger_used([north, north]) == Decimal("1.2")
    assert north.plus(south).minus(south) == Footprint(
        groups={"region": {"north": Decimal("0.6"), "south": Decimal(0)}}
    )


restriction = st.one_of(
    st.none(),
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.lists(st.sampled_from(["g1", "g2", "g3"]), min_size=1, max_size=3, unique=True).map(
            tuple
        ),
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    total=st.floats(min_value=1e-3, max_value=1e3),
    parts=st.lists(
        st.tuples(st.floats(min_value=1e-3, max_value=1e3), restriction), min_size=1, max_size=8
    ),
)
def test_a_parallel_split_never_charges_more_than_the_total(total, parts):
    weights = [w for w, _ in parts]
    restrictions = [r for _, r in parts]
    shares = split_parallel(total, weights, restrictions)
    charge = Footprint.of([Decimal(s) for s in shares], restrictions).charge()
    assert charge <= Decimal(repr(total))
    assert charge <= Decimal(total)
    # and spends nearly all of it
    assert float(charge) == pytest.approx(total, rel=1e-12)


# --- statistical audit ----------------------------------------------------------------------

DRAWS = 40_000
CONTROL_DRAWS = 10_000
FALSE_ALARM = 1e-6
D2 = ["north"] * 5 + ["south"] * 4 + ["east"] * 3
D1 = [*D2, "north"]  # one more person, in north
TWO_GROUPS = [
    {"kind": "count", "where": where("north")},
    {"kind": "count", "where": where("south", "east")},
]


def exact_counts(plan, regions: list[str]) -> list[int]:
    """Each statistic's exact count on the table, by the engine's own restricted aggregates."""
    frame = pd.DataFrame({"region": regions, "sex": "F", "age": "1"})
    table = typed_from_frame(frame, numbers=set(), labels={"region"})
    out = []
    for planned in plan.statistics:
        (request,) = aggregates_for(planned, plan.schema)
        (state,) = partials([request], table)
        out.append(finish(request, state))
    return out


def audit_two_groups(draws: int) -> tuple[float, Decimal]:
    """The worst ratio's lower bound for "both noisy counts exceed their count on D2", between
    D1 and D2, for a release whose two group counts are charged ε once; and that charge."""
    plan = plan_release(schema=SCHEMA, definition=PURE, queries=TWO_GROUPS)
    base = exact_counts(plan, D2)
    hits = []
    for regions in (D1, D2):
        counts = exact_counts(plan, regions)
        noisy = np.column_stack(
            [
                batched_draws(planned.mechanisms[0].release, [count], draws)[:, 0]
                for planned, count in zip(plan.statistics, counts, strict=True)
            ]
        )
        hits.append(int(np.all(noisy >= np.asarray(base) + 1, axis=1).sum()))
    return worst_ratio_lower_bound(tuple(hits), draws, FALSE_ALARM), plan.epsilon_spent


@pytest.mark.statistical
def test_two_group_counts_charged_once_stay_within_their_charge():
    ratio, charge = audit_two_groups(DRAWS)
    assert charge == Decimal("1.000000000000")
    assert ratio <= np.exp(float(charge))


@pytest.mark.statistical
def test_a_restriction_that_does_not_restrict_is_caught(monkeypatch):
    # given a broken restriction: every record counts in every group, so the added north
    # person moves both counts while the ledger still charges ε once
    monkeypatch.setattr(Within, "rows", lambda self, table: np.ones(table.row_count, bool))
    ratio, charge = audit_two_groups(CONTROL_DRAWS)
    assert ratio > np.exp(float(charge))


def test_a_release_names_at_most_a_thousand_groups_in_all():
    schema = {
        "columns": {"r": {"kind": "categorical", "categories": [f"c{i}" for i in range(2000)]}}
    }
    queries = [
        {"kind": "count", "where": {"column": "r", "in": [f"c{i}" for i in range(j, j + 600)]}}
        for j in (0, 600)
    ]
    with pytest.raises(EngineValidationError) as error:
        plan_release(schema=schema, definition=PURE, queries=queries)
    assert error.value.errors == {
        "queries": ["restrictions name at most 1,000 groups per release in all"]
    }
    with pytest.raises(EngineValidationError) as error:
        plan_release(
            schema=schema,
            definition=PURE,
            queries=[{"kind": "count", "where": {"column": "r", "in": ["c1"] * 1001}}],
        )
    assert "at most 1,000" in error.value.errors["queries.0.where.in"][0]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    spec=st.one_of(
        json_values,
        st.fixed_dictionaries(
            {
                "column": st.sampled_from(["region", "sex", "age", "nope"]) | json_values,
                "in": st.lists(st.sampled_from(["north", "south", "X", "F", ""]), max_size=4)
                | json_values,
            }
        ),
    )
)
def test_any_restriction_is_planned_or_refused_naming_where(spec):
    errors: dict = {}
    try:
        plan = plan_release(
            schema=SCHEMA, definition=PURE, queries=[{"kind": "count", "where": spec}]
        )
    except EngineValidationError as error:
        errors = error.errors
    if errors:
        assert all(path.startswith("queries.0.where") for path in errors), errors
    else:
        assert plan.epsilon_spent == Decimal("1.000000000000")
