"""k-ary randomized response (privacy_engine/randomized_response.py).

Pinned: the encyclopaedia's two-coin procedure at ε = ln 3 (P(yes | A) = 3/4, P(yes | not A) = 1/4,
estimate 2·(share of yes) − 1/2), exactly; the calibration of the dyadic keep-probability; how
injected bytes become reports (threshold, replacement, rejection). Statistical (real CSPRNG): the
reports' distribution matches p' and q, the estimator is unbiased and its intervals cover, the
preview's expected error is the one observed. Bad inputs are refused with the engine's
validation error.

Checks on random draws are calibrated to a false-alarm probability of about 10⁻⁶ each.
"""

import hashlib
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from binomial_bounds import clopper_pearson_lower, clopper_pearson_upper
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import privacy_engine.randomized_response as rr
from privacy_engine.errors import EngineValidationError
from privacy_engine.randomized_response import (
    MAX_RESPONSE_CATEGORIES,
    RandomizedResponseMechanism,
    estimate_shares,
    expected_share_abs_error,
    keep_calibration,
    randomize,
    share_halfwidth,
    system_random_bytes,
    truth_probability,
)

LN_3 = math.log(3)
FALSE_ALARM = 1e-6
Z_LIMIT = float(stats.norm.isf(FALSE_ALARM / 2))
YES, NO = 1, 0


# --- byte sources for deterministic tests -------------------------------------------------------


class ScriptedBytes:
    """Hands out the given bytes in order and records each request's size."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0
        self.requests: list[int] = []

    def __call__(self, count: int) -> bytes:
        self.requests.append(count)
        chunk = self.data[self.position : self.position + count]
        assert len(chunk) == count, "the test scripted too few bytes"
        self.position += count
        return chunk


def words32(*values: int) -> bytes:
    return np.asarray(values, dtype="<u4").tobytes()


def words16(*values: int) -> bytes:
    return np.asarray(values, dtype="<u2").tobytes()


class SeededBytes:
    """A deterministic stand-in for the CSPRNG: SHAKE-256 of a seed and a call counter."""

    def __init__(self, seed: bytes) -> None:
        self.seed = seed
        self.calls = 0

    def __call__(self, count: int) -> bytes:
        self.calls += 1
        return hashlib.shake_256(self.seed + self.calls.to_bytes(8, "little")).digest(count)


# --- the encyclopaedia's two coins, exactly -----------------------------------------------------


def test_two_coin_case_keeps_the_truth_with_probability_three_quarters_exactly():
    # when
    mechanism = RandomizedResponseMechanism(categories=2, epsilon=LN_3)

    # then: P(yes | A) = 1/2 + 1/2·1/2 and P(yes | not A) = 1/2·1/2
    assert mechanism.keep_threshold == 3 << 30
    assert mechanism.keep_fraction == Fraction(3, 4)
    assert mechanism.switch_fraction == Fraction(1, 4)
    assert mechanism.keep_probability == 0.75
    assert mechanism.switch_probability == 0.25
    assert mechanism.epsilon_spent == LN_3


def test_two_coin_case_as_coin_throws_gives_yes_three_times_in_four_for_a_yes():
    # given: the two most significant bits of a 32-bit draw are the two coins (0 = head); every
    # pattern of the pair is equally likely, the lower bits never matter at T = 3·2³⁰
    coin_pairs = [(0, 0), (0, 1), (1, 0), (1, 1)]
    draws = [(first << 31) | (second << 30) | 0x1234567 for first, second in coin_pairs]
    mechanism = RandomizedResponseMechanism(categories=2, epsilon=LN_3)

    # when
    reports_for_yes = RandomizedResponseMechanism(
        categories=2, epsilon=LN_3, random_bytes=ScriptedBytes(words32(*draws))
    ).release(np.full(4, YES))
    reports_for_no = RandomizedResponseMechanism(
        categories=2, epsilon=LN_3, random_bytes=ScriptedBytes(words32(*draws))
    ).release(np.full(4, NO))

    # then
    assert Fraction(int((reports_for_yes == YES).sum()), 4) == Fraction(3, 4)
    assert Fraction(int((reports_for_no == YES).sum()), 4) == Fraction(1, 4)
    assert mechanism.keep_fraction == Fraction(3, 4)


@pytest.mark.parametrize(("yes", "size"), [(0, 1), (1, 1), (3, 4), (250, 1000), (7, 13), (5, 10)])
def test_two_coin_estimate_is_twice_the_share_of_yes_minus_a_half(yes, size):
    # given
    mechanism = RandomizedResponseMechanism(categories=2, epsilon=LN_3)

    # when
    estimate = mechanism.estimate_from_counts([size - yes, yes])

    # then: (1/4)(1 − p) + (3/4)p = 1/4 + p/2 reversed
    assert estimate.shares[YES] == 2 * (yes / size) - 0.5
    assert estimate.shares[NO] == 2 * ((size - yes) / size) - 0.5
    assert estimate.shares.sum() == pytest.approx(1.0, abs=1e-15)


def test_two_coin_estimate_from_a_randomized_file_counts_its_yes_answers():
    # given
    randomized = np.array([1, 1, 0, 1, 0, 0, 1, 1], dtype=np.uint8)

    # when
    estimate = estimate_shares(randomized, categories=2, epsilon=LN_3)

    # then
    assert estimate.shares[YES] == 2 * (5 / 8) - 0.5
    assert estimate.size == 8


# --- calibration --------------------------------------------------------------------------------


@pytest.mark.parametrize("categories", [2, 3, 4, 7, 10, 100, 1000])
@pytest.mark.parametrize("epsilon", [0.0001, 0.01, 0.1, 0.5, 1.0, LN_3, 2.0, 5.0, 20.0])
def test_keep_probability_is_the_largest_32_bit_fraction_within_epsilon(categories, epsilon):
    # when
    threshold, spent = keep_calibration(categories, epsilon)

    # then: the ratio p'(k − 1)/(1 − p') is at most e^ε, checked in 60-digit decimals
    with localcontext() as context:
        context.prec = 60
        ratio = Decimal(threshold * (categories - 1)) / Decimal(2**32 - threshold)
        assert ratio <= Decimal(epsilon).exp()
        next_ratio = Decimal((threshold + 1) * (categories - 1)) / Decimal(2**32 - threshold - 1)
        # one step up is beyond ε (or beyond the float rounding of OpenDP's map, 1e-12)
        assert next_ratio.ln() > Decimal(epsilon) - Decimal("1e-12")
    assert spent <= epsilon
    assert Fraction(threshold, 2**32) <= truth_probability(categories=categories, epsilon=epsilon)
    assert threshold * categories > 2**32  # p' > 1/k, so q < p'


def test_ideal_keep_probability_is_e_to_the_epsilon_over_e_to_the_epsilon_plus_k_minus_one():
    # then
    assert truth_probability(categories=2, epsilon=LN_3) == pytest.approx(0.75, rel=1e-15)
    assert truth_probability(categories=10, epsilon=1.0) == pytest.approx(
        math.e / (math.e + 9), rel=1e-15
    )


def test_mechanism_publishes_its_parameters():
    # when
    mechanism = RandomizedResponseMechanism(categories=10, epsilon=1.0)

    # then
    assert mechanism.name == "randomized_response"
    assert mechanism.delta_spent == 0.0
    assert mechanism.random_bytes is system_random_bytes
    assert mechanism.keep_fraction + 9 * mechanism.switch_fraction == 1
    assert mechanism.keep_probability == pytest.approx(math.e / (math.e + 9), abs=2**-32)
    assert mechanism.epsilon_spent <= 1.0


# --- how bytes become reports -------------------------------------------------------------------


def test_a_draw_below_the_threshold_keeps_and_one_at_it_switches():
    # given
    threshold = keep_calibration(2, 1.0)[0]
    source = ScriptedBytes(words32(threshold - 1, threshold, 0, 2**32 - 1))

    # when
    reports = randomize([0, 0, 1, 1], categories=2, epsilon=1.0, random_bytes=source)

    # then: k = 2 needs no replacement bytes
    assert reports.tolist() == [0, 1, 1, 0]
    assert source.requests == [16]


def test_replacement_names_the_other_categories_in_order_skipping_the_true_one():
    # given: every record switches; offsets 0, 1, 2 over k − 1 = 3 options
    switch = 2**32 - 1
    source = ScriptedBytes(words32(*[switch] * 6) + words16(0, 1, 2, 0, 1, 2))

    # when
    reports = randomize([0, 0, 0, 3, 3, 3], categories=4, epsilon=1.0, random_bytes=source)

    # then
    assert reports.tolist() == [1, 2, 3, 0, 1, 2]
    assert source.requests == [24, 12]


def test_replacement_draws_beyond_the_last_multiple_of_k_minus_one_are_redrawn():
    # given: k − 1 = 3, so 16-bit draws below 65,535 are kept and 65,535 itself is redrawn
    switch = 2**32 - 1
    source = ScriptedBytes(words32(switch, switch) + words16(65_535, 65_534) + words16(4))

    # when
    reports = randomize([2, 2], categories=4, epsilon=1.0, random_bytes=source)

    # then: 4 mod 3 = 1 → category 1; 65,534 mod 3 = 2 → 3 (skipping the true 2)
    assert reports.tolist() == [1, 3]
    assert source.requests == [8, 4, 2]


def test_kept_records_report_their_true_category_whatever_their_replacement_draw():
    # given
    source = ScriptedBytes(words32(0, 0, 0) + words16(0, 7, 9))

    # when
    reports = randomize([4, 0, 9], categories=10, epsilon=1.0, random_bytes=source)

    # then
    assert reports.tolist() == [4, 0, 9]


def test_a_source_that_never_gives_an_acceptable_draw_is_reported_not_looped_on():
    # given: all-ones bytes: every 16-bit draw is 65,535, beyond 65,534 = 21,845·3
    def stuck(count: int) -> bytes:
        return b"\xff" * count

    # when / then
    with pytest.raises(RuntimeError, match="not uniform"):
        randomize([0, 1], categories=4, epsilon=1.0, random_bytes=stuck)


def test_a_source_that_returns_too_few_bytes_is_reported():
    # when / then
    with pytest.raises(RuntimeError, match="byte source"):
        randomize([0, 1], categories=2, epsilon=1.0, random_bytes=lambda count: b"\x00")


def test_the_same_bytes_give_the_same_file_and_the_input_is_untouched():
    # given
    codes = np.arange(5_000) % 7
    original = codes.copy()

    # when
    first = randomize(codes, categories=7, epsilon=0.5, random_bytes=SeededBytes(b"a"))
    second = randomize(codes, categories=7, epsilon=0.5, random_bytes=SeededBytes(b"a"))
    other = randomize(codes, categories=7, epsilon=0.5, random_bytes=SeededBytes(b"b"))

    # then
    assert np.array_equal(first, second)
    assert not np.array_equal(first, other)
    assert np.array_equal(codes, original)
    assert first.shape == codes.shape
    assert first.dtype == np.uint8


def test_output_is_uint16_beyond_256_categories_and_uint8_up_to_it():
    # when
    wide = randomize([999, 0], categories=1000, epsilon=1.0, random_bytes=SeededBytes(b"w"))
    narrow = randomize([255, 0], categories=256, epsilon=1.0, random_bytes=SeededBytes(b"n"))

    # then
    assert wide.dtype == np.uint16
    assert narrow.dtype == np.uint8
    assert wide.max() < 1000


def test_an_empty_column_gives_an_empty_file():
    # when
    reports = randomize(np.array([], dtype=np.int64), categories=3, epsilon=1.0)

    # then
    assert reports.size == 0


def test_a_column_longer_than_one_chunk_is_randomized_whole(monkeypatch):
    # given
    monkeypatch.setattr(rr, "CHUNK_RECORDS", 1000)
    source = SeededBytes(b"chunks")
    codes = np.zeros(2_500, dtype=np.int64)

    # when
    reports = randomize(codes, categories=3, epsilon=1.0, random_bytes=source)

    # then: three chunks, each with its keep and replacement draws
    assert reports.shape == (2_500,)
    assert source.calls >= 6
    assert 0.4 < (reports == 0).mean() < 0.8


# --- statistical: the reports' distribution (real CSPRNG) ----------------------------------------


def assert_binomial_consistent(hits: int, trials: int, probability: float, miss: float) -> None:
    low = clopper_pearson_lower(hits, trials, miss / 2)
    high = clopper_pearson_upper(hits, trials, miss / 2)
    assert low <= probability <= high, (hits, trials, probability, low, high)


@pytest.mark.statistical
@pytest.mark.parametrize(("categories", "epsilon"), [(2, LN_3), (5, 1.0), (10, 0.5), (300, 3.0)])
def test_reports_follow_p_prime_for_the_truth_and_q_for_each_other_category(categories, epsilon):
    # given: one true category for every record of a long column
    mechanism = RandomizedResponseMechanism(categories=categories, epsilon=epsilon)
    draws, true = 1_000_000, categories // 2

    # when
    counts = np.bincount(mechanism.release(np.full(draws, true)), minlength=categories)

    # then: each category's count is binomial; all checks share the false-alarm budget
    miss = FALSE_ALARM / categories
    for category, hits in enumerate(counts):
        expected = mechanism.keep_fraction if category == true else mechanism.switch_fraction
        assert_binomial_consistent(int(hits), draws, float(expected), miss)


@pytest.mark.statistical
def test_reports_of_neighbouring_records_are_independent():
    # given: alternating true categories 0, 1; switches of records 2i and 2i + 1
    mechanism = RandomizedResponseMechanism(categories=2, epsilon=1.0)
    codes = np.tile([0, 1], 500_000)

    # when
    switched = (mechanism.release(codes) != codes).reshape(-1, 2)

    # then: P(both switch) = (1 − p')²
    both = int((switched[:, 0] & switched[:, 1]).sum())
    assert_binomial_consistent(both, switched.shape[0], (1 - mechanism.keep_probability) ** 2, 1e-6)


# --- statistical: the estimator and its intervals -----------------------------------------------

RELEASES = 2_000
RECORDS = 2_000


def repeated_estimates(categories: int, epsilon: float, shares: list[float], interval: str):
    """RELEASES independent releases of one fixed RECORDS-record table with the given shares."""
    mechanism = RandomizedResponseMechanism(categories=categories, epsilon=epsilon)
    table = np.repeat(np.arange(categories), np.round(np.asarray(shares) * RECORDS).astype(int))
    assert table.size == RECORDS
    truth = np.bincount(table, minlength=categories) / RECORDS
    estimates = [
        mechanism.estimate(mechanism.release(table), interval=interval) for _ in range(RELEASES)
    ]
    return mechanism, truth, estimates


CASES = [(2, LN_3, [0.3, 0.7]), (4, 1.0, [0.55, 0.3, 0.1, 0.05]), (10, 2.0, [0.1] * 10)]


@pytest.fixture(scope="module", params=CASES, ids=["k2-ln3", "k4-eps1", "k10-eps2"])
def worst_case_releases(request):
    return repeated_estimates(*request.param, interval="worst_case")


@pytest.mark.statistical
def test_estimated_shares_are_unbiased(worst_case_releases):
    # given
    _, truth, estimates = worst_case_releases
    shares = np.array([e.shares for e in estimates])

    # when
    z = (shares.mean(axis=0) - truth) / (shares.std(axis=0, ddof=1) / math.sqrt(RELEASES))

    # then
    assert np.all(np.abs(z) < Z_LIMIT), z
    assert np.allclose(shares.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.statistical
def test_published_intervals_cover_at_least_95_percent(worst_case_releases):
    # given
    _, truth, estimates = worst_case_releases

    # when
    covered = np.array([(e.ci_low <= truth) & (truth <= e.ci_high) for e in estimates])

    # then: each category's coverage; the worst-case variance makes it ≥ 95% up to sampling
    coverage = covered.mean(axis=0)
    assert np.all(coverage >= 0.93), coverage
    for hits in covered.sum(axis=0):
        assert clopper_pearson_upper(int(hits), RELEASES, FALSE_ALARM) >= 0.95, coverage


@pytest.mark.statistical
@pytest.mark.parametrize("interval", ["plug_in", "quarter"])
@pytest.mark.parametrize("case", CASES, ids=["k2-ln3", "k4-eps1", "k10-eps2"])
def test_other_interval_methods_cover_about_95_percent(interval, case):
    # given
    _, truth, estimates = repeated_estimates(*case, interval=interval)

    # when
    covered = np.array([(e.ci_low <= truth) & (truth <= e.ci_high) for e in estimates])

    # then
    assert np.all(covered.mean(axis=0) >= 0.93), covered.mean(axis=0)


@pytest.mark.statistical
def test_shrunk_intervals_are_caught_by_the_coverage_check():
    # given: a 0.6-wide copy of the published interval (about 76% coverage)
    _, truth, estimates = repeated_estimates(4, 1.0, [0.55, 0.3, 0.1, 0.05], "worst_case")

    # when
    covered = np.array(
        [np.abs(e.shares - truth) <= 0.6 * e.halfwidth for e in estimates], dtype=bool
    )

    # then
    assert np.all(covered.mean(axis=0) < 0.93), covered.mean(axis=0)


def test_interval_methods_order_conservative_above_plug_in():
    # given: a file whose observed shares are (0.9, 0.1)
    mechanism = RandomizedResponseMechanism(categories=2, epsilon=LN_3)

    # when
    worst = mechanism.estimate_from_counts([900, 100], interval="worst_case")
    quarter = mechanism.estimate_from_counts([900, 100], interval="quarter")
    plug_in = mechanism.estimate_from_counts([900, 100], interval="plug_in")

    # then: √(3/16)/√(1/4) = √3/2; plug-in uses 0.9·0.1
    z = stats.norm.isf(0.025)
    assert worst.halfwidth[0] == pytest.approx(z * math.sqrt(3 / 16 / 1000) / 0.5, rel=1e-12)
    assert worst.halfwidth[0] / quarter.halfwidth[0] == pytest.approx(math.sqrt(3) / 2)
    assert plug_in.halfwidth[0] == pytest.approx(z * math.sqrt(0.09 / 1000) / 0.5, rel=1e-12)
    assert np.all(worst.ci_low >= 0.0)
    assert np.all(worst.ci_high <= 1.0)


# --- the preview --------------------------------------------------------------------------------


def test_two_coin_preview_expected_error_is_the_normal_mean_absolute_deviation():
    # when
    error = expected_share_abs_error(declared_size=10_000, categories=2, epsilon=LN_3)

    # then: σ = √(3/16 / n)/(3/4 − 1/4), for a yes/no column the same for both shares
    sigma = math.sqrt(3 / 16 / 10_000) / 0.5
    assert error == pytest.approx(math.sqrt(2 / math.pi) * sigma, rel=1e-12)
    assert RandomizedResponseMechanism(categories=2, epsilon=LN_3).worst_case_abs_error(
        10_000
    ) == pytest.approx(error, rel=1e-12)
    assert share_halfwidth(declared_size=10_000, categories=2, epsilon=LN_3) == pytest.approx(
        stats.norm.isf(0.025) * sigma, rel=1e-12
    )


def test_preview_halfwidth_is_the_published_halfwidth_for_the_same_size():
    # given
    mechanism = RandomizedResponseMechanism(categories=10, epsilon=1.0)

    # when
    estimate = mechanism.estimate_from_counts(np.full(10, 100))

    # then
    assert np.allclose(
        estimate.halfwidth, share_halfwidth(declared_size=1000, categories=10, epsilon=1.0)
    )


def test_preview_error_shrinks_with_size_and_epsilon_and_grows_with_categories():
    # when
    def error(n, k, eps):
        return expected_share_abs_error(declared_size=n, categories=k, epsilon=eps)

    # then
    assert error(40_000, 4, 1.0) == pytest.approx(error(10_000, 4, 1.0) / 2, rel=1e-12)
    assert error(10_000, 4, 2.0) < error(10_000, 4, 1.0)
    assert error(10_000, 8, 1.0) > error(10_000, 4, 1.0)


@pytest.mark.statistical
def test_preview_mean_squared_error_is_the_observed_one_on_any_table(worst_case_releases):
    # given: averaged over the categories, the squared error's expectation is V̄/(n(p' − q)²)
    mechanism, truth, estimates = worst_case_releases
    squared = ((np.array([e.shares for e in estimates]) - truth) ** 2).mean(axis=1)

    # when
    expected = mechanism.root_mean_square_error(RECORDS) ** 2
    z = (squared.mean() - expected) / (squared.std(ddof=1) / math.sqrt(RELEASES))

    # then
    assert abs(z) < Z_LIMIT, z


@pytest.mark.statistical
def test_preview_expected_error_is_the_observed_one(worst_case_releases):
    # given: exact for k = 2; for unequal categories the normal mean absolute deviation of the
    # root mean square is a little above the mean of the categories' own (Jensen)
    mechanism, truth, estimates = worst_case_releases
    errors = np.abs(np.array([e.shares for e in estimates]) - truth).mean(axis=1)
    preview = mechanism.expected_abs_error(RECORDS)

    # when
    z = (errors.mean() - preview) / (errors.std(ddof=1) / math.sqrt(RELEASES))

    # then
    assert z < Z_LIMIT, z
    if mechanism.categories == 2:
        assert abs(z) < Z_LIMIT, z
    else:
        assert errors.mean() > 0.95 * preview, (errors.mean(), preview)
        assert errors.mean() < mechanism.worst_case_abs_error(RECORDS)


def test_average_variance_is_the_mean_of_the_categories_exact_variances_on_any_table():
    # given: on a table with n_j records of category j, Var(r_j) = n_j·p'(1 − p') +
    # (n − n_j)·q(1 − q)
    mechanism = RandomizedResponseMechanism(categories=5, epsilon=0.7)
    keep, switch = mechanism.keep_fraction, mechanism.switch_fraction
    tables = [[100, 0, 0, 0, 0], [20, 20, 20, 20, 20], [1, 2, 3, 4, 90]]

    for counts in tables:
        # when
        variances = [
            n_j * keep * (1 - keep) + (100 - n_j) * switch * (1 - switch) for n_j in counts
        ]

        # then
        assert float(sum(variances) / 5 / 100) == pytest.approx(
            mechanism.average_variance, rel=1e-15
        )
        assert float(max(variances) / 100) <= mechanism.worst_case_variance * (1 + 1e-15)


# --- bad inputs are refused with the engine's validation error ----------------------------------

bad_categories = st.one_of(
    st.integers(max_value=1),
    st.integers(min_value=MAX_RESPONSE_CATEGORIES + 1),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
)
bad_epsilons = st.one_of(
    st.floats(max_value=0.0),
    st.floats(min_value=0.0, max_value=0.0001, exclude_min=True, exclude_max=True),
    st.floats(min_value=20.0, exclude_min=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 10**400, True, False]),
    st.none(),
    st.text(max_size=3),
)


@settings(max_examples=200, deadline=None)
@given(categories=bad_categories)
def test_bad_number_of_categories_is_refused(categories):
    # when / then
    with pytest.raises(EngineValidationError) as caught:
        RandomizedResponseMechanism(categories=categories, epsilon=1.0)
    assert list(caught.value.errors) == ["categories"]


@settings(max_examples=200, deadline=None)
@given(epsilon=bad_epsilons)
def test_bad_epsilon_is_refused(epsilon):
    # when / then
    with pytest.raises(EngineValidationError) as caught:
        RandomizedResponseMechanism(categories=3, epsilon=epsilon)
    assert list(caught.value.errors) == ["epsilon"]


@settings(max_examples=300, deadline=None)
@given(
    categories=st.integers(min_value=2, max_value=MAX_RESPONSE_CATEGORIES),
    data=st.data(),
)
def test_codes_out_of_range_are_refused_without_naming_the_value(categories, data):
    # given: a column with at least one code outside 0..k − 1 (some beyond int64 too)
    good = st.integers(min_value=0, max_value=categories - 1)
    bad = st.one_of(st.integers(max_value=-1), st.integers(min_value=categories))
    codes = [*data.draw(st.lists(good, max_size=20)), data.draw(bad)]
    codes = data.draw(st.permutations(codes))
    source = ScriptedBytes(b"")

    # when / then
    with pytest.raises(EngineValidationError) as caught:
        randomize(codes, categories=categories, epsilon=1.0, random_bytes=source)
    assert list(caught.value.errors) == ["codes"]
    assert source.requests == []
    outside = [c for c in codes if not 0 <= c < categories]
    assert all(str(c) not in str(caught.value) for c in outside if abs(c) > categories)


@settings(max_examples=100, deadline=None)
@given(
    codes=st.one_of(
        st.lists(st.floats(), min_size=1, max_size=5),
        st.lists(st.booleans(), min_size=1, max_size=5),
        st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=1, max_size=5).filter(
            lambda xs: None in xs
        ),
        st.lists(st.lists(st.integers(0, 2), min_size=2, max_size=2), min_size=1, max_size=3),
        st.just([[0, 1], [2]]),
        st.just(np.int64(1)),
        st.lists(st.text(max_size=2), min_size=1, max_size=3),
    )
)
def test_codes_that_are_not_a_column_of_whole_numbers_are_refused(codes):
    # when / then
    with pytest.raises(EngineValidationError) as caught:
        randomize(codes, categories=3, epsilon=1.0)
    assert list(caught.value.errors) == ["codes"]


@settings(max_examples=100, deadline=None)
@given(
    counts=st.one_of(
        st.lists(st.integers(0, 10), min_size=0, max_size=5).filter(lambda xs: len(xs) != 3),
        st.lists(st.integers(-10, -1), min_size=3, max_size=3),
        st.just([0, 0, 0]),
        st.lists(st.floats(0, 10), min_size=3, max_size=3),
    )
)
def test_bad_counts_are_refused(counts):
    # given
    mechanism = RandomizedResponseMechanism(categories=3, epsilon=1.0)

    # when / then
    with pytest.raises(EngineValidationError):
        mechanism.estimate_from_counts(counts)


@pytest.mark.parametrize("declared_size", [0, -5, 1.5, True, None, "100", 10**11])
def test_preview_refuses_a_bad_declared_size(declared_size):
    # when / then
    with pytest.raises(EngineValidationError) as caught:
        expected_share_abs_error(declared_size=declared_size, categories=3, epsilon=1.0)
    assert list(caught.value.errors) == ["declared_size"]


@pytest.mark.parametrize("coverage", [0.0, 1.0, -0.5, math.nan, "0.95"])
def test_bad_coverage_or_interval_method_is_refused(coverage):
    # given
    mechanism = RandomizedResponseMechanism(categories=3, epsilon=1.0)

    # when / then
    with pytest.raises(EngineValidationError):
        mechanism.estimate_from_counts([1, 2, 3], coverage=coverage)
    with pytest.raises(EngineValidationError):
        mechanism.estimate_from_counts([1, 2, 3], interval="exact")
