"""Up to c rows per person: contributions bounded by a person key, sensitivities times c."""

import pandas as pd
import pytest

from privacy_engine import (
    EngineValidationError,
    blowfish_refusal,
    preview,
    run_queries,
    schema_from_dict,
    sensitivity,
)

PURE_DP = {"kind": "pure_dp", "epsilon": 1.0}
SCHEMA = {
    "columns": {
        "visits": {"kind": "numeric", "lower": 0, "upper": 10},
        "ward": {"kind": "categorical", "categories": ["A", "B"]},
        "patient": {"kind": "identifier"},
    },
    "person_key": "patient",
    "max_rows_per_person": 3,
}


class ZeroNoise:
    def sample(self, measurement, value):
        return value


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"kind": "count"}, 3),
        ({"kind": "histogram", "column": "ward"}, 3),
        ({"kind": "sum", "column": "visits"}, 30.0),
    ],
)
def test_sensitivities_are_multiplied_by_the_rows_one_person_may_have(query, expected):
    # when
    value = sensitivity(query=query, schema=SCHEMA, definition=PURE_DP)

    # then
    assert value == expected


def test_without_a_person_key_one_row_is_the_unit():
    # given
    schema = {key: value for key, value in SCHEMA.items() if key != "person_key"}

    # when
    value = sensitivity(query={"kind": "count"}, schema=schema, definition=PURE_DP)

    # then
    assert value == 1


def test_rows_beyond_c_per_person_and_rows_without_a_key_are_dropped():
    # given patient a has 4 rows, b has 1, and one row has no key
    frame = pd.DataFrame(
        {
            "patient": ["a", "a", "a", "a", "b", ""],
            "visits": ["1", "2", "3", "4", "5", "6"],
            "ward": ["A", "A", "B", "B", "A", "B"],
        }
    )

    # when
    result = run_queries(
        frame,
        schema=SCHEMA,
        definition=PURE_DP,
        noise=ZeroNoise(),
        queries=[
            {"kind": "count"},
            {"kind": "sum", "column": "visits"},
            {"kind": "histogram", "column": "ward"},
        ],
    )

    # then a's first three rows and b's row remain
    count, total, wards = result.statistics
    assert count.value == 4
    assert total.value == 1 + 2 + 3 + 5
    assert wards.value == {"A": 3, "B": 1}
    assert count.rule.startswith("at most 3 rows per patient kept")


def test_noise_scale_grows_with_c():
    # when
    one = preview(
        schema={**SCHEMA, "max_rows_per_person": 1},
        definition=PURE_DP,
        queries=[{"kind": "sum", "column": "visits"}],
    )[0]
    three = preview(
        schema=SCHEMA, definition=PURE_DP, queries=[{"kind": "sum", "column": "visits"}]
    )[0]

    # then
    assert three["noise_scale"] == pytest.approx(3 * one["noise_scale"])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"person_key": "visits"}, "person_key"),
        ({"max_rows_per_person": 0}, "max_rows_per_person"),
    ],
)
def test_bad_unit_of_protection_is_refused_naming_the_field(change, field):
    # when
    with pytest.raises(EngineValidationError) as caught:
        preview(schema={**SCHEMA, **change}, definition=PURE_DP, queries=[{"kind": "count"}])

    # then
    assert list(caught.value.errors) == [f"schema.{field}"]


def test_blowfish_is_refused_when_a_person_may_have_several_rows():
    # when
    with pytest.raises(EngineValidationError) as caught:
        preview(
            schema=SCHEMA,
            queries=[{"kind": "count"}],
            definition={"kind": "blowfish", "epsilon": 1, "policy": {"graph": "full_domain"}},
        )

    # then
    assert list(caught.value.errors) == ["definition.kind"]


# --- Blowfish and a person key (issue 7, point 1) -----------------------------------------

BLOWFISH_POLICIES = [
    pytest.param({"graph": "full_domain"}, id="full-domain"),
    pytest.param({"graph": "distance_threshold", "column": "visits", "theta": 2}, id="theta"),
    pytest.param({"graph": "partition", "column": "visits", "width": 5}, id="width"),
    pytest.param({"graph": "partition", "column": "ward", "groups": [["A", "B"]]}, id="groups"),
    pytest.param({"graph": "attribute", "c": 1}, id="attribute"),
]
ONE_ROW_PER_PERSON = {**SCHEMA, "max_rows_per_person": 1}


def test_changing_one_records_key_changes_how_many_rows_are_kept():
    # given keys a, a, b, c and the neighbour a, z, b, c: one record's key changed, which is an
    # edge of every Blowfish policy since no policy names the key column
    frame = pd.DataFrame({"patient": ["a", "a", "b", "c"], "visits": ["1"] * 4, "ward": ["A"] * 4})
    neighbour = frame.assign(patient=["a", "z", "b", "c"])

    def kept_rows(table):
        result = run_queries(
            table,
            schema=ONE_ROW_PER_PERSON,
            definition=PURE_DP,
            queries=[{"kind": "count"}],
            noise=ZeroNoise(),
        )
        return result.statistics[0].value

    # when
    counts = (kept_rows(frame), kept_rows(neighbour))

    # then the row count Blowfish would publish exactly differs between the neighbours
    assert counts == (3, 4)


@pytest.mark.parametrize("policy", BLOWFISH_POLICIES)
@pytest.mark.parametrize("rows_per_person", [1, 3])
def test_blowfish_is_refused_on_any_schema_with_a_person_key(policy, rows_per_person):
    # given
    schema = {**SCHEMA, "max_rows_per_person": rows_per_person}
    definition = {"kind": "blowfish", "epsilon": 1, "policy": policy}

    # when
    with pytest.raises(EngineValidationError) as planned:
        preview(schema=schema, definition=definition, queries=[{"kind": "count"}])
    with pytest.raises(EngineValidationError) as facade:
        sensitivity(query={"kind": "count"}, schema=schema, definition=definition)

    # then the same refusal, naming the definition's kind, says why and what to do instead
    assert list(planned.value.errors) == ["definition.kind"]
    assert list(facade.value.errors) == ["kind"]
    (message,) = planned.value.errors["definition.kind"]
    assert facade.value.errors["kind"] == [message]
    assert message == blowfish_refusal(schema)
    assert "person key (patient)" in message
    assert "changing one record's key is an edge of every policy" in message
    assert "number of rows kept depend on the data" in message
    assert "ε-differential privacy or (ε, δ)-differential privacy" in message


def test_blowfish_refusal_is_none_without_a_person_key_and_a_reason_with_one():
    # given
    without_key = {key: value for key, value in SCHEMA.items() if key != "person_key"}

    # when
    refusals = (
        blowfish_refusal(without_key),
        blowfish_refusal(ONE_ROW_PER_PERSON),
        blowfish_refusal(schema_from_dict(ONE_ROW_PER_PERSON)),
    )

    # then
    assert refusals[0] is None
    assert refusals[1] == refusals[2]
    assert refusals[1].startswith(
        "Blowfish is not available when rows are grouped by a person key (patient): "
    )


def test_blowfish_without_a_person_key_still_plans():
    # given
    schema = {key: value for key, value in SCHEMA.items() if key != "person_key"}

    # when
    (entry,) = preview(
        schema=schema,
        definition={"kind": "blowfish", "epsilon": 1, "policy": {"graph": "full_domain"}},
        queries=[{"kind": "sum", "column": "visits"}],
    )

    # then
    assert entry["sensitivity"] == 10.0


@pytest.mark.parametrize("rows_per_person", [1, 3])
@pytest.mark.parametrize(
    ("definition", "mechanisms"),
    [
        (PURE_DP, ["geometric", "laplace"]),
        ({"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-6}, ["gaussian", "gaussian"]),
    ],
    ids=["pure-dp", "approx-dp"],
)
def test_differential_privacy_with_a_person_key_still_plans_and_runs(
    rows_per_person, definition, mechanisms
):
    # given
    schema = {**SCHEMA, "max_rows_per_person": rows_per_person}
    frame = pd.DataFrame({"patient": ["a", "a", "b"], "visits": ["1", "2", "3"], "ward": ["A"] * 3})
    queries = [{"kind": "count"}, {"kind": "sum", "column": "visits"}]

    # when
    entries = preview(schema=schema, definition=definition, queries=queries)
    result = run_queries(
        frame, schema=schema, definition=definition, queries=queries, noise=ZeroNoise()
    )

    # then one person's rows are protected together: sensitivities times c
    assert [e["mechanism"] for e in entries] == mechanisms
    assert entries[1]["sensitivity"] == 10.0 * rows_per_person
    assert [s.value for s in result.statistics] == (
        [2, 1 + 3] if rows_per_person == 1 else [3, 1 + 2 + 3]
    )
