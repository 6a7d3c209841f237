"""The engine's English as registered phrases (privacy_engine/wording.py): what it writes can be
matched back to the phrase that wrote it and its values, whatever the values."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from privacy_engine.kinds.range_histogram import FOREST, TREE_BINS
from privacy_engine.kinds.restricted import ONE_GROUP, SOME_GROUPS, Where
from privacy_engine.schema import (
    CLAMPED,
    MISSING_FILLED,
    OUTSIDE_COUNTED,
    PERSON_RULE,
    CategoricalColumn,
)
from privacy_engine.wording import CLAUSE_SEPARATOR, phrase, phrase_match


def test_a_phrase_written_is_matched_back_with_its_values():
    text = phrase(CLAMPED, lower="-5", upper="1.5e+06")
    assert text == "values clamped to [-5, 1.5e+06]"
    assert phrase_match(text) == (CLAMPED, {"lower": "-5", "upper": "1.5e+06"})


def test_a_phrase_holding_a_clause_separator_of_its_own_is_matched_whole():
    text = phrase(PERSON_RULE, rows=3, key="patient_id")
    assert phrase_match(text) == (PERSON_RULE, {"rows": "3", "key": "patient_id"})


def test_a_value_never_swallows_the_clauses_after_it():
    # given a categorical rule: two clauses, the first ending in a value
    text = CategoricalColumn(categories=("F", "M"), other="x", fill="F").rule()

    # then the whole is no one phrase, and each clause is its own
    assert phrase_match(text) is None
    first, second = text.split(CLAUSE_SEPARATOR)
    assert phrase_match(first) == (OUTSIDE_COUNTED, {"value": "'x'"})
    assert phrase_match(second) == (MISSING_FILLED, {"value": "'F'"})


def test_an_unregistered_template_is_refused():
    with pytest.raises(AssertionError, match="not a registered phrase"):
        phrase("something {x} unregistered", x=1)


@given(st.text(max_size=40).filter(lambda v: "; " not in v and v))
def test_any_value_is_matched_back(value):
    # given a phrase filled with any value (without the clause separator)
    text = phrase(MISSING_FILLED, value=value)

    # then it is matched back to that phrase and that value
    assert phrase_match(text) == (MISSING_FILLED, {"value": value})


def test_a_phrase_whose_value_is_another_phrase_is_matched_back_with_it():
    # given a range histogram's structure clause, whose trees are a phrase of their own
    trees = phrase(FOREST, trees=7, branching=7, levels=3)
    text = phrase(TREE_BINS, trees=trees, bins="343")

    # then the clause and, inside it, its trees are matched back to their phrases
    assert phrase_match(text) == (TREE_BINS, {"trees": "7 7-ary trees of 3 levels", "bins": "343"})
    assert phrase_match(trees) == (FOREST, {"trees": "7", "branching": "7", "levels": "3"})


@pytest.mark.parametrize(
    ("groups", "found"),
    [
        (("north",), (ONE_GROUP, {"column": "region", "group": "'north'"})),
        (
            ("east", "north", "south"),
            (SOME_GROUPS, {"column": "region", "groups": "'east', 'north'", "last": "'south'"}),
        ),
    ],
)
def test_the_groups_of_a_restricted_statistic_are_matched_back(groups, found):
    # given the clause that says which records a restricted statistic reads
    text = Where(column="region", groups=groups).rule()

    # then it is matched back to its phrase, each group quoted
    assert phrase_match(text) == found
