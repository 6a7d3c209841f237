"""The ``randomized_response`` kind: which definitions it runs under (and why not ε-DP), the
categories a record can report, the counts every engine gives it, the file's rows written from
the published reports, and its preview. The mechanism's own distribution, estimator and privacy
audit are in test_randomized_response*.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from privacy_engine import (
    EngineValidationError,
    microdata_codes,
    plan_release,
    release_stored_table,
    run_queries,
)
from privacy_engine.columnar import ColumnarWriter
from privacy_engine.engines import EngineChoice
from privacy_engine.kinds import randomized_response as kind
from privacy_engine.randomized_response import RandomizedResponseMechanism

# Yes, no, a value outside the list and a missing one: "maybe" and "" are left out by the rules.
VALUES = ["yes", "no", "maybe", "", "no", "yes", "no", "no"] * 250
SCHEMA = {
    "columns": {"smoker": {"kind": "categorical", "categories": ["yes", "no"]}},
    "declared_size": 2_000,
}
COMPLETE = {
    "columns": {
        "smoker": {"kind": "categorical", "categories": ["yes"], "other": "no", "fill": "no"}
    },
    "declared_size": 2_000,
}
RR = {"kind": "randomized_response", "column": "smoker"}
LN3 = math.log(3)
BLOWFISH = {"kind": "blowfish", "epsilon": LN3, "policy": {"graph": "full_domain"}}
# At ε = 20 a record reports another category with probability about 2·10⁻⁹: the reports are
# the exact counts, so the counts the engines hand over can be compared.
SURE = {"kind": "blowfish", "epsilon": 20, "policy": {"graph": "full_domain"}}


def test_pure_dp_is_refused_naming_the_query_and_saying_why():
    with pytest.raises(EngineValidationError) as refused:
        plan_release(
            schema=SCHEMA,
            definition={"kind": "pure_dp", "epsilon": 1},
            queries=[{"kind": "count"}, RR],
        )

    (message,) = refused.value.errors["queries.1.kind"]
    assert message.startswith("a record-level file shows how many records there are")


def test_a_person_with_several_rows_is_refused():
    schema = {
        "columns": {**SCHEMA["columns"], "person": {"kind": "identifier"}},
        "person_key": "person",
        "max_rows_per_person": 2,
        "declared_size": 2_000,
    }
    definition = {"kind": "approx_dp", "epsilon": 1, "delta": 1e-7}

    with pytest.raises(EngineValidationError) as refused:
        plan_release(schema=schema, definition=definition, queries=[RR])

    assert refused.value.errors == {"queries.0.kind": [kind.RESPONSE_PERSON_REFUSAL]}


def test_a_numeric_column_is_refused():
    schema = {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 9}}}
    with pytest.raises(EngineValidationError) as refused:
        plan_release(schema=schema, definition=BLOWFISH, queries=[{**RR, "column": "age"}])

    assert refused.value.errors == {
        "queries.0.column": ["randomized response needs a categorical column"]
    }


def test_under_blowfish_it_is_the_two_coin_procedure_at_ln_3():
    (planned,) = plan_release(schema=COMPLETE, definition=BLOWFISH, queries=[RR]).statistics

    (mechanism,) = planned.mechanisms
    assert mechanism.responses.keep_probability == 0.75
    assert mechanism.responses.switch_probability == 0.25
    assert planned.epsilon_spent == pytest.approx(LN3)
    assert planned.delta_spent == 0
    # and its preview is the mechanism's own, on the declared size
    expected = RandomizedResponseMechanism(categories=2, epsilon=LN3).expected_abs_error(2_000)
    assert planned.expected_abs_error == expected


def test_records_the_rules_leave_out_report_a_category_of_their_own():
    frame = pd.DataFrame({"smoker": VALUES})

    result = run_queries(frame, schema=SCHEMA, definition=SURE, queries=[RR])

    (statistic,) = result.statistics
    microdata = statistic.microdata
    assert microdata["categories"] == ["yes", "no", kind.NOT_LISTED]
    assert microdata["reports"] == [500, 1_000, 500]
    assert microdata["rows"] == len(VALUES)
    assert statistic.value["yes"] == pytest.approx(0.25, abs=1e-6)


def test_every_engine_hands_the_mechanism_the_same_counts(tmp_path):
    path = tmp_path / "table.parquet"
    with ColumnarWriter(path, ["smoker"]) as writer:
        for start in range(0, len(VALUES), 300):  # several row groups
            writer.write([VALUES[start : start + 300]])

    reports = {
        engine: release_stored_table(
            path,
            schema=SCHEMA,
            definition=SURE,
            queries=[RR],
            engine=EngineChoice(kind=engine),
        )
        .statistics[0]
        .microdata["reports"]
        for engine in ("in_process", "out_of_core")
    }

    assert reports == {"in_process": [500, 1_000, 500], "out_of_core": [500, 1_000, 500]}


def test_the_files_rows_are_the_reports_in_a_uniformly_random_order():
    # every report is a row
    codes, shuffled = microdata_codes([3, 0, 2])
    assert shuffled
    assert sorted(codes.tolist()) == [0, 0, 0, 2, 2]

    # and two rows come in either order equally often (binomial test, 2,000 files)
    first_is_zero = sum(int(microdata_codes([1, 1])[0][0] == 0) for _ in range(2_000))
    assert binomtest(first_is_zero, 2_000, 0.5).pvalue > 1e-6


def test_beyond_the_shuffle_bound_rows_are_grouped_by_category(monkeypatch):
    monkeypatch.setattr(kind, "MAX_SHUFFLED_ROWS", 4)

    codes, shuffled = microdata_codes([3, 2])

    assert not shuffled
    assert codes.tolist() == [0, 0, 0, 1, 1]


def test_the_rules_say_in_which_order_the_file_lists_the_reports(monkeypatch):
    # given a release of 2 records, written shuffled, and the same beyond the shuffle bound
    frame = pd.DataFrame({"smoker": ["yes", "no"]})

    def rule() -> str:
        (statistic,) = run_queries(
            frame, schema=COMPLETE, definition=BLOWFISH, queries=[RR]
        ).statistics
        return statistic.rule

    shuffled = rule()
    monkeypatch.setattr(kind, "MAX_SHUFFLED_ROWS", 1)
    grouped = rule()

    # then each says the order its file is written in
    assert "the file lists the reports in a random order" in shuffled
    assert "grouped by reported category" not in shuffled
    assert "the file lists the reports grouped by reported category" in grouped
    assert "random order" not in grouped


def test_a_file_of_no_records():
    frame = pd.DataFrame({"smoker": pd.Series([], dtype=str)})

    (statistic,) = run_queries(frame, schema=COMPLETE, definition=BLOWFISH, queries=[RR]).statistics

    assert statistic.microdata["rows"] == 0
    assert statistic.value == {"yes": 0.0, "no": 0.0}
    assert statistic.ci95 == {"yes": [0.0, 1.0], "no": [0.0, 1.0]}
    codes, _ = microdata_codes(statistic.microdata["reports"])
    assert codes.size == 0
    assert codes.dtype == np.uint8


APPROX = {"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-6}


def test_under_approximate_dp_dummy_rows_hide_the_number_of_records():
    frame = pd.DataFrame({"smoker": VALUES})

    (planned,) = plan_release(schema=SCHEMA, definition=APPROX, queries=[RR]).statistics
    (statistic,) = run_queries(frame, schema=SCHEMA, definition=APPROX, queries=[RR]).statistics

    # the plan charges OpenDP's figures for both parts, within the statistic's ε and δ
    (mechanism,) = planned.mechanisms
    assert planned.epsilon_spent == mechanism.padding.epsilon_spent <= 1.0
    assert planned.delta_spent == mechanism.padding.delta_spent <= 1e-6
    assert planned.expected_abs_error is not None
    # the file holds the records' reports and the dummies, whose number is said only as a rule
    microdata = statistic.microdata
    shift = mechanism.padding.shift
    assert microdata["rows"] >= len(VALUES)
    assert str(shift) in microdata["dummy_rows"]
    low, high = microdata["records_ci95"]
    assert low <= microdata["records"] <= high
    assert sum(microdata["reports"]) == microdata["rows"]
    assert set(statistic.value) == {"yes", "no", kind.NOT_LISTED}


def test_a_padding_of_more_than_a_hundred_thousand_rows_is_refused():
    tiny = {"kind": "approx_dp", "epsilon": 0.001, "delta": 1e-12}

    with pytest.raises(EngineValidationError) as refused:
        plan_release(schema=SCHEMA, definition=tiny, queries=[RR])

    (message,) = refused.value.errors["queries.0.kind"]
    assert "dummy rows (at most 100,000): raise ε or δ" in message
