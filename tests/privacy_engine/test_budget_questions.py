"""The table's budget from the two starting-point questions (privacy_engine/guidance.py)."""

from decimal import Decimal

import pytest

from privacy_engine.definitions import default_delta
from privacy_engine.guidance import budget_from_questions


@pytest.mark.parametrize(
    ("harm", "releases", "total", "each"),
    [
        ("low", "once", 2.0, 2.0),
        ("moderate", "few", 1.0, 0.5),
        ("severe", "regularly", 0.25, 0.0625),
    ],
)
def test_harm_sets_the_total_and_frequency_each_release_share(harm, releases, total, each):
    suggestion = budget_from_questions(harm=harm, releases=releases, declared_size=28_000)

    assert suggestion.total_epsilon == total
    assert suggestion.release_epsilon == each


@pytest.mark.parametrize(("releases", "planned"), [("once", 1), ("few", 2), ("regularly", 4)])
def test_the_delta_budget_fits_every_planned_release_at_its_default_delta(releases, planned):
    suggestion = budget_from_questions(harm="moderate", releases=releases, declared_size=28_000)

    per_release = Decimal(repr(default_delta(28_000)))  # 1/28000² ≈ 1.2755e-9
    assert suggestion.total_delta >= planned * per_release
    # Three significant digits, rounded up by less than 1%.
    assert suggestion.total_delta < planned * per_release * Decimal("1.01")
    assert len(suggestion.total_delta.as_tuple().digits) <= 3


def test_the_reasons_say_what_each_answer_did():
    reasons = budget_from_questions(harm="severe", releases="few", declared_size=None).reasons

    assert reasons[0].startswith("Severe harm: a total of ε = 0.25 for all releases")
    assert "56.2% likely" in reasons[0]  # e^0.25/(1 + e^0.25)
    assert "each release takes half by default (ε = 0.125)" in reasons[1]
    assert "for each of 2 releases" in reasons[2]


def test_an_unknown_answer_is_refused():
    with pytest.raises(ValueError, match="harm must be one of low, moderate, severe"):
        budget_from_questions(harm="catastrophic", releases="once", declared_size=None)
