"""The padded randomized-response release (privacy_engine/randomized_response.py), n private.

Pinned: the plan's split of ε and its shift s, the smallest s ≥ 2 with α^{s−1}/(1 + α) ≤ δ
(against hand-computed values and 60-digit decimals); how injected bytes and noise become a file
(reports, dummies, keys, and a redraw on tied keys); the estimator's arithmetic. Statistical (real
CSPRNG and OpenDP): the dummies are uniform (and exactly so over every 16-bit draw), the shuffle is
uniform on tiny inputs, the padding is s + OpenDP's discrete Laplace, the estimates' 95% intervals
cover over 1,000 releases, and the preview's errors are the observed ones. Bad input is refused
with the engine's validation error, naming the field.

Checks on random draws are calibrated to a false-alarm probability of about 10⁻⁶ each.
"""

import hashlib
import itertools
import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from binomial_bounds import clopper_pearson_lower, clopper_pearson_upper
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import privacy_engine.randomized_response as rr
from privacy_engine.errors import EngineValidationError
from privacy_engine.mechanisms import laplace_calibration
from privacy_engine.randomized_response import (
    DEFAULT_COUNT_SHARE,
    MAX_PADDING_SHIFT,
    PaddedPlan,
    RandomizedResponseMechanism,
    count_calibration,
    draw_padding,
    estimate_padded,
    keep_calibration,
    padded_counts,
    padded_expected_abs_error,
    padded_plan,
    padded_records_expected_abs_error,
    padded_release,
    padding_delta,
    secure_permutation,
    system_random_bytes,
    uniform_codes,
)

FALSE_ALARM = 1e-6
LN_2 = math.log(2)


# --- byte and noise sources for deterministic tests ---------------------------------------------


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


class SeededBytes:
    """A deterministic stand-in for the CSPRNG: SHAKE-256 of a seed and a call counter."""

    def __init__(self, seed: bytes) -> None:
        self.seed = seed
        self.calls = 0

    def __call__(self, count: int) -> bytes:
        self.calls += 1
        return hashlib.shake_256(self.seed + self.calls.to_bytes(8, "little")).digest(count)


def words(dtype: str, *values: int) -> bytes:
    return np.asarray(values, dtype=dtype).tobytes()


class ExactNoise:
    """No noise: the measurement's input back (so Z = s). Records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, list[int]]] = []

    def sample(self, measurement, value):
        self.calls.append((measurement, list(value)))
        return list(value)


class FixedNoise:
    """The padding's noisy centre is ``value`` (Z = max(0, value))."""

    def __init__(self, value: int) -> None:
        self.value = value

    def sample(self, measurement, value):
        return [self.value] * len(value)


# --- the plan -------------------------------------------------------------------------------------


def decimal_shift(alpha: Decimal, delta: Decimal) -> int:
    """The smallest s ≥ 2 with α^{s−1}/(1 + α) ≤ δ, in 60-digit decimals."""
    shift = 2
    while alpha ** (shift - 1) / (1 + alpha) > delta:
        shift += 1
    return shift


@pytest.mark.parametrize(
    ("count_epsilon", "delta", "shift"),
    [
        # α = 1/2: 2^{−(s−1)}·2/3 ≤ 10⁻⁶ first at s − 1 = 20 (2¹⁹ = 524,288 < 666,667 ≤ 2²⁰)
        (LN_2, 1e-6, 21),
        # α = 1/e: s − 1 ≥ ln(10⁶/(1 + 1/e)) = 13.50
        (1.0, 1e-6, 15),
        # α = e^{−0.1}: s − 1 ≥ 10·ln(10⁶/(1 + e^{−0.1})) = 131.7
        (0.1, 1e-6, 133),
        # α = e^{−2}: s − 1 ≥ ln(10¹⁰/(1 + e^{−2}))/2 = 11.45
        (2.0, 1e-10, 13),
        # a large δ: the floor s = 2
        (5.0, 0.5, 2),
        (1.5, 1e-3, 6),
    ],
)
def test_shift_is_the_smallest_whole_number_from_two_meeting_delta(count_epsilon, delta, shift):
    # when: ε_c = ε/2
    plan = padded_plan(3, 2 * count_epsilon, delta, count_share=0.5)

    # then
    assert plan.count_epsilon == count_epsilon
    assert plan.shift == shift
    assert plan.delta_spent <= delta
    with localcontext() as context:
        context.prec = 60
        alpha = (-1 / Decimal(plan.count_scale)).exp()  # the sampler's exact α
        assert Decimal(plan.alpha) >= alpha
        assert plan.shift == decimal_shift(alpha, Decimal(delta))


@pytest.mark.parametrize("epsilon", [0.001, 0.3, 1.0, LN_2, 3.0, 20.0])
@pytest.mark.parametrize("delta", [1e-30, 1e-12, 1e-6, 0.01, 0.4])
def test_shift_is_the_smallest_meeting_delta_on_a_grid(epsilon, delta):
    # when
    plan = padded_plan(2, epsilon, delta)

    # then
    with localcontext() as context:
        context.prec = 60
        alpha = Decimal(plan.alpha)
        assert alpha ** (plan.shift - 1) / (1 + alpha) <= Decimal(delta)
        if plan.shift > 2:
            assert alpha ** (plan.shift - 2) / (1 + alpha) > Decimal(delta) * Decimal("0.999")


def test_plan_splits_epsilon_a_tenth_for_the_count_by_default():
    # when
    plan = padded_plan(5, 1.0, 1e-6)

    # then
    assert DEFAULT_COUNT_SHARE == 0.1
    assert (plan.categories, plan.epsilon, plan.delta) == (5, 1.0, 1e-6)
    assert plan.count_epsilon == pytest.approx(0.1, rel=1e-15)
    assert plan.report_epsilon == pytest.approx(0.9, rel=1e-15)
    assert plan.count_epsilon + plan.report_epsilon <= plan.epsilon
    assert plan.epsilon_spent <= plan.epsilon
    assert plan.delta_spent <= plan.delta
    # α is the count noise's ratio e^{−1/b}, b the engine's geometric scale at ε_c
    scale = laplace_calibration("integer", 1, plan.count_epsilon)[0]
    assert plan.count_scale == scale
    assert plan.alpha == pytest.approx(math.exp(-1 / scale), rel=1e-15)
    assert plan.alpha >= math.exp(-1 / scale)
    # the reports' p' is the plain mechanism's at ε_r
    threshold = keep_calibration(5, plan.report_epsilon)[0]
    assert plan.keep_probability == threshold / 2**32
    assert plan.keep_probability + 4 * plan.switch_probability == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("epsilon", [0.0001, 0.1, 1 / 3, 0.7, 1.1, 7.3, 20.0])
@pytest.mark.parametrize("count_share", [1e-3, 0.1, 0.3, 0.9])
def test_the_shares_never_add_up_to_more_than_epsilon(epsilon, count_share):
    # given: ε_r must stay at least the engine's smallest ε
    if epsilon * (1 - count_share) < 0.0001:
        with pytest.raises(EngineValidationError) as caught:
            padded_plan(2, epsilon, 1e-6, count_share)
        assert list(caught.value.errors) == ["epsilon"]
        return

    # when
    plan = padded_plan(2, epsilon, 1e-6, count_share)

    # then
    assert plan.count_epsilon + plan.report_epsilon <= epsilon
    assert plan.epsilon_spent <= epsilon


def test_plans_are_values():
    # then
    assert padded_plan(3, 1.0, 1e-6) == padded_plan(3, 1.0, 1e-6)
    assert padded_plan(3, 1.0, 1e-6) != padded_plan(3, 1.0, 1e-7)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (dict(shift=5), "shift"),  # α^4/(1 + α) > δ
        (dict(shift=1), "shift"),
        (dict(shift=2.0), "shift"),
        (dict(shift=MAX_PADDING_SHIFT + 1), "shift"),
        (dict(alpha=0.5), "alpha"),  # below the sampler's α
        (dict(alpha=1.0), "alpha"),
        (dict(report_epsilon=0.95), "epsilon"),  # the shares exceed ε
        (dict(count_epsilon=0.0), "count_epsilon"),
        (dict(delta=0.0), "delta"),
        (dict(epsilon=math.nan), "epsilon"),
        (dict(categories=1), "categories"),
    ],
)
def test_a_hand_built_plan_without_the_guarantee_is_refused(change, field):
    # given
    fields = padded_plan(2, 1.0, 1e-6).__dict__ | change
    fields.pop("report_mechanism", None)

    # when / then
    with pytest.raises(EngineValidationError) as caught:
        PaddedPlan(**fields)
    assert list(caught.value.errors) == [field]


def test_a_hand_built_plan_with_more_padding_than_needed_is_accepted():
    # given
    plan = padded_plan(2, 1.0, 1e-6)

    # when
    padded = PaddedPlan(**{**plan.__dict__, "shift": 300, "alpha": 0.95})

    # then
    assert padded.delta_spent < plan.delta


def test_a_count_share_too_small_for_the_delta_is_refused_not_padded_with_millions():
    # when / then: ε_c = 10⁻⁶ would need s ≈ 1.4·10⁷ at δ = 10⁻⁶
    with pytest.raises(EngineValidationError) as caught:
        padded_plan(2, 1.0, 1e-6, count_share=1e-6)
    assert list(caught.value.errors) == ["epsilon"]
    with pytest.raises(EngineValidationError):
        padded_plan(2, 1.0, 1e-6, count_share=1e-300)


# --- how bytes and noise become a file ----------------------------------------------------------


def small_plan() -> PaddedPlan:
    """ε = 20, δ = 1/2: ε_c = 10, α ≈ 4.5·10⁻⁵, s = 2."""
    plan = padded_plan(2, 20.0, 0.5, count_share=0.5)
    assert plan.shift == 2
    return plan


def test_a_release_is_reports_then_dummies_then_keys_in_that_order_of_bytes():
    # given: k = 2, two records (0, 1) kept; s = 2 dummies (16-bit draws 0 and 1: categories
    # 0, 1); four 64-bit keys whose order is rows 1, 3, 0, 2
    plan = small_plan()
    keep = keep_calibration(2, plan.report_epsilon)[0] - 1
    source = ScriptedBytes(
        words("<u4", keep, keep) + words("<u2", 0, 1) + words("<u8", 30, 10, 40, 20)
    )

    # when
    released = padded_release(np.array([0, 1]), plan, random_bytes=source, noise=ExactNoise())

    # then: rows (0, 1, 0, 1) taken in the keys' order
    assert released.tolist() == [1, 1, 0, 0]
    assert released.dtype == np.uint8
    assert source.requests == [8, 4, 32]


def test_the_padding_is_opendps_geometric_at_the_count_epsilon_on_the_shift():
    # given
    plan = padded_plan(3, 1.0, 1e-6)
    noise = ExactNoise()

    # when
    padding = draw_padding(plan, 5, noise)

    # then: one vector of 5 copies of s through the engine's geometric measurement at ε_c
    assert padding.tolist() == [plan.shift] * 5
    measurement, value = noise.calls[0]
    assert value == [plan.shift] * 5
    assert measurement.map(1) <= plan.count_epsilon
    assert len(noise.calls) == 1


@pytest.mark.parametrize(("centre", "rows"), [(-7, 3), (0, 3), (1, 4), (50, 53)])
def test_the_padding_is_the_noisy_centre_truncated_at_zero(centre, rows):
    # given
    plan = padded_plan(3, 1.0, 1e-6)

    # when
    released = padded_release([0, 1, 2], plan, noise=FixedNoise(centre))

    # then
    assert released.size == rows


def test_with_exact_noise_the_file_has_n_plus_s_rows_and_the_input_is_untouched():
    # given
    plan = padded_plan(4, 1.0, 1e-6)
    codes = np.array([3, 0, 2, 2, 1] * 20)
    kept = codes.copy()

    # when
    first = padded_release(codes, plan, random_bytes=SeededBytes(b"a"), noise=ExactNoise())
    again = padded_release(codes, plan, random_bytes=SeededBytes(b"a"), noise=ExactNoise())

    # then
    assert first.size == codes.size + plan.shift
    assert np.array_equal(first, again)
    assert np.array_equal(codes, kept)
    assert set(first.tolist()) <= {0, 1, 2, 3}


def test_output_is_uint16_beyond_256_categories():
    # given
    plan = padded_plan(300, 5.0, 1e-6)

    # when
    released = padded_release([299, 0], plan)

    # then
    assert released.dtype == np.uint16
    assert released.max() < 300


def test_an_empty_table_gives_only_dummies():
    # when
    released = padded_release(np.array([], dtype=np.int64), small_plan(), noise=ExactNoise())

    # then
    assert released.size == 2


def test_a_tie_among_the_shuffle_keys_redraws_every_key():
    # given: keys (5, 5, 1) tie; the redraw (2, 0, 1) orders rows 1, 2, 0
    source = ScriptedBytes(words("<u8", 5, 5, 1) + words("<u8", 2, 0, 1))

    # when
    order = secure_permutation(3, source)

    # then
    assert order.tolist() == [1, 2, 0]
    assert source.requests == [24, 24]


def test_a_source_whose_keys_always_tie_is_reported_not_looped_on():
    # when / then
    with pytest.raises(RuntimeError, match="not uniform"):
        secure_permutation(2, lambda count: bytes(count))


@pytest.mark.parametrize("count", [0, 1])
def test_a_permutation_of_nothing_or_one_row_is_trivial(count):
    # then
    assert secure_permutation(count).tolist() == list(range(count))


def test_dummy_draws_beyond_the_last_multiple_of_k_are_redrawn():
    # given: k = 3, 2¹⁶ = 3·21,845 + 1, so 65,535 is rejected; then 4 → 1
    source = ScriptedBytes(words("<u2", 65_535, 5) + words("<u2", 4))

    # when
    codes = uniform_codes(2, 3, source)

    # then
    assert codes.tolist() == [1, 2]
    assert source.requests == [4, 2]


@pytest.mark.parametrize("categories", [2, 3, 5, 7, 10, 100, 1000])
def test_every_category_takes_equally_many_accepted_16_bit_draws(categories):
    # given: every 16-bit value once; the rejected ones are redrawn as 0
    every = np.arange(1 << 16, dtype="<u2").tobytes()
    rejected = (1 << 16) - ((1 << 16) // categories) * categories
    source = ScriptedBytes(every + words("<u2", *[0] * rejected))

    # when
    codes = uniform_codes(1 << 16, categories, source)

    # then: exactly uniform over the accepted draws (the redraws all fall on category 0)
    counts = np.bincount(codes, minlength=categories)
    counts[0] -= rejected
    assert (counts == (1 << 16) // categories).all()


# --- statistical: dummies, shuffle, padding ------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("categories", [2, 3, 5, 7, 1000])
def test_dummies_are_uniform_over_the_categories(categories):
    # when
    draws = 2_000_000
    counts = np.bincount(uniform_codes(draws, categories), minlength=categories)

    # then: a chi-square test and each category's binomial bound
    assert stats.chisquare(counts).pvalue > FALSE_ALARM
    miss = FALSE_ALARM / (2 * categories)
    for hits in counts:
        low = clopper_pearson_lower(int(hits), draws, miss)
        high = clopper_pearson_upper(int(hits), draws, miss)
        assert low <= 1 / categories <= high


@pytest.mark.statistical
@pytest.mark.parametrize("size", [3, 4])
def test_the_shuffle_is_uniform_over_all_orders_of_a_tiny_file(size):
    # given
    orders = list(itertools.permutations(range(size)))
    draws = 2_000 * len(orders)
    index = {order: i for i, order in enumerate(orders)}

    # when
    seen = np.zeros(len(orders), dtype=np.int64)
    for _ in range(draws):
        seen[index[tuple(secure_permutation(size).tolist())]] += 1

    # then
    assert stats.chisquare(seen).pvalue > FALSE_ALARM


@pytest.mark.statistical
def test_a_marked_row_lands_anywhere_in_a_padded_file_with_equal_probability():
    # given: one record of category 1, kept (its draw is 0), and s = 2 dummies of category 0
    # (their 16-bit draws are 0); only the shuffle's keys come from the CSPRNG
    plan = small_plan()
    draws = 12_000

    class ZerosThenRandom:
        def __init__(self) -> None:
            self.calls = 0

        def __call__(self, count: int) -> bytes:
            self.calls += 1
            return bytes(count) if self.calls <= 2 else system_random_bytes(count)

    # when
    positions = np.zeros(3, dtype=np.int64)
    for _ in range(draws):
        released = padded_release([1], plan, random_bytes=ZerosThenRandom(), noise=ExactNoise())
        assert sorted(released.tolist()) == [0, 0, 1]
        positions[int(np.flatnonzero(released == 1)[0])] += 1

    # then
    assert stats.chisquare(positions).pvalue > FALSE_ALARM


@pytest.mark.statistical
def test_the_padding_is_the_shift_plus_a_discrete_laplace_truncated_at_zero():
    # given: α = e^{−0.5}, s = 8 at δ = 0.03
    plan = padded_plan(2, 1.0, 0.03, count_share=0.5)
    draws = 100_000

    # when
    padding = draw_padding(plan, draws)

    # then: P(Z = m) = (1 − α)/(1 + α)·α^{|m − s|} for m ≥ 1, P(Z = 0) = α^s/(1 + α)
    alpha = math.exp(-1 / plan.count_scale)
    top = plan.shift + 15
    expected = np.array(
        [alpha**plan.shift / (1 + alpha)]
        + [(1 - alpha) / (1 + alpha) * alpha ** abs(m - plan.shift) for m in range(1, top)]
    )
    expected = np.append(expected, 1 - expected.sum())  # Z ≥ top
    seen = np.bincount(np.minimum(padding, top), minlength=top + 1)
    assert stats.chisquare(seen, expected * draws).pvalue > FALSE_ALARM
    assert padding.min() >= 0


# --- the estimator ------------------------------------------------------------------------------


def test_records_are_the_rows_less_the_shift_with_the_discrete_laplace_interval():
    # given: α = e^{−0.1}: P(|L| > h) = 2α^{h+1}/(1 + α) ≤ 5% first at h = 30
    plan = padded_plan(2, 1.0, 1e-6)
    counts = np.array([1_000, 1_133])

    # when
    estimate = estimate_padded(counts, plan, counts=True)

    # then
    assert estimate.rows == 2_133
    assert estimate.records == 2_133 - plan.shift == 2_000
    assert plan.records_halfwidth() == 30
    assert estimate.records_ci95 == [1_970, 2_030]


def test_estimated_shares_follow_the_formula_and_add_up_to_one():
    # given
    plan = padded_plan(3, 2.0, 1e-6)
    counts = np.array([700, 300, 200 + plan.shift])
    rows, records = int(counts.sum()), int(counts.sum()) - plan.shift
    keep, switch = plan.keep_probability, plan.switch_probability

    # when
    estimate = estimate_padded(counts, plan, counts=True)

    # then
    expected = ((counts - (rows - records) / 3) / records - switch) / (keep - switch)
    assert estimate.shares == pytest.approx(expected.tolist(), rel=1e-12)
    assert sum(estimate.shares) == pytest.approx(1.0, abs=1e-12)
    for share, (low, high) in zip(estimate.shares, estimate.shares_ci95, strict=True):
        assert 0.0 <= low <= max(share, 0.0)
        assert min(share, 1.0) <= high <= 1.0


def test_estimates_from_a_file_equal_those_from_its_counts():
    # given
    plan = padded_plan(4, 1.0, 1e-6)
    released = padded_release(np.arange(4).repeat(50), plan)

    # when
    from_file = estimate_padded(released, plan)
    from_counts = estimate_padded(np.bincount(released, minlength=4), plan, counts=True)

    # then
    assert from_file == from_counts
    assert padded_counts(released, plan).tolist() == np.bincount(released, minlength=4).tolist()


def test_k_values_are_read_as_counts_and_any_other_length_as_a_file():
    # given: k = 3; a file of 3 rows is read as a file only when the caller says so
    plan = padded_plan(3, 1.0, 1e-6)
    counts = np.array([400, 200, 133], dtype=np.int64)
    file = np.repeat(np.arange(3, dtype=np.uint8), counts)

    # then
    assert estimate_padded(counts, plan) == estimate_padded(counts, plan, counts=True)
    assert estimate_padded(list(counts), plan) == estimate_padded(file, plan)
    assert estimate_padded(file, plan) == estimate_padded(file, plan, counts=False)
    assert padded_counts([2, 2, 0], plan).tolist() == [2, 2, 0]
    assert padded_counts([2, 2, 0], plan, counts=False).tolist() == [1, 0, 2]
    assert padded_counts([2, 2], plan).tolist() == [0, 0, 2]


@pytest.mark.parametrize("rows", [0, 1, 50, 133])
def test_a_file_no_longer_than_its_padding_gives_no_shares(rows):
    # given: s = 133
    plan = padded_plan(2, 1.0, 1e-6)

    # when
    estimate = estimate_padded([rows, 0], plan, counts=True)

    # then
    assert estimate.records == 0
    assert estimate.records_ci95 == [0, min(rows, max(0, rows - plan.shift + 30))]
    assert estimate.shares == [0.5, 0.5]
    assert estimate.shares_ci95 == [[0.0, 1.0], [0.0, 1.0]]


def test_the_shares_interval_is_wider_than_the_plain_release_at_the_same_report_epsilon():
    # given
    plan = padded_plan(2, 1.0, 1e-6)
    plain = RandomizedResponseMechanism(categories=2, epsilon=plan.report_epsilon)

    # when
    estimate = estimate_padded([1_100, 1_033], plan, counts=True)

    # then: z = 2.24 instead of 1.96, the dummies' variance and n's spread
    low, high = estimate.shares_ci95[0]
    assert high - low > 2 * plain.halfwidth(2_000)


# --- statistical: coverage over repeated releases, and the preview -------------------------------

RELEASES = 1_000
RECORDS = 2_000


def repeated_padded(categories: int, epsilon: float, shares: list[float]):
    plan = padded_plan(categories, epsilon, 1e-6)
    table = np.repeat(np.arange(categories), np.round(np.asarray(shares) * RECORDS).astype(int))
    assert table.size == RECORDS
    truth = np.bincount(table, minlength=categories) / RECORDS
    estimates = [estimate_padded(padded_release(table, plan), plan) for _ in range(RELEASES)]
    return plan, truth, estimates


@pytest.fixture(
    scope="module",
    params=[(2, 1.0, [0.3, 0.7]), (5, 1.0, [0.6, 0.2, 0.1, 0.05, 0.05])],
    ids=["k2-eps1", "k5-eps1"],
)
def padded_releases(request):
    return repeated_padded(*request.param)


def assert_covers_at_least(hits: int, trials: int, coverage: float) -> None:
    """The hits do not reject a coverage of at least ``coverage`` (one-sided, FALSE_ALARM)."""
    assert clopper_pearson_upper(hits, trials, FALSE_ALARM) >= coverage, (hits, trials)


@pytest.mark.statistical
def test_records_interval_covers_at_least_95_percent(padded_releases):
    # given
    plan, _, estimates = padded_releases
    halfwidth = plan.records_halfwidth()

    # when
    hits = sum(low <= RECORDS <= high for low, high in (e.records_ci95 for e in estimates))

    # then: and its coverage is P(|L| ≤ h) (n̂ − n = L untruncated), at least 95%
    exact = 1 - 2 * plan.alpha ** (halfwidth + 1) / (1 + plan.alpha)
    assert exact >= 0.95
    assert_covers_at_least(hits, RELEASES, 0.95)
    assert clopper_pearson_lower(hits, RELEASES, FALSE_ALARM) <= exact


@pytest.mark.statistical
def test_share_intervals_cover_at_least_95_percent(padded_releases):
    # given
    _, truth, estimates = padded_releases

    # when
    lows = np.array([[low for low, _ in e.shares_ci95] for e in estimates])
    highs = np.array([[high for _, high in e.shares_ci95] for e in estimates])
    hits = ((lows <= truth) & (truth <= highs)).sum(axis=0)

    # then: every category
    for category_hits in hits:
        assert_covers_at_least(int(category_hits), RELEASES, 0.95)


@pytest.mark.statistical
def test_estimates_are_unbiased(padded_releases):
    # given
    _, truth, estimates = padded_releases
    shares = np.array([e.shares for e in estimates])
    records = np.array([e.records for e in estimates])

    # then: within 5 standard errors of the truth
    spread = shares.std(axis=0) / math.sqrt(RELEASES)
    assert (np.abs(shares.mean(axis=0) - truth) <= 5 * spread).all()
    assert abs(records.mean() - RECORDS) <= 5 * records.std() / math.sqrt(RELEASES)


@pytest.mark.statistical
def test_preview_expected_errors_are_the_observed_ones(padded_releases):
    # given
    plan, truth, estimates = padded_releases
    shares = np.array([e.shares for e in estimates])
    records = np.array([e.records for e in estimates])

    # when
    observed_share = np.abs(shares - truth).mean()
    observed_records = np.abs(records - RECORDS).mean()

    # then: within 15% (the mean of 1,000 absolute errors is known to about 3%)
    assert observed_share == pytest.approx(padded_expected_abs_error(RECORDS, plan), rel=0.15)
    assert observed_records == pytest.approx(padded_records_expected_abs_error(plan), rel=0.15)


def test_preview_is_above_the_plain_release_and_shrinks_with_size_and_epsilon():
    # given
    plan = padded_plan(3, 1.0, 1e-6)
    plain = RandomizedResponseMechanism(categories=3, epsilon=1.0)

    # then
    for size in (100, 1_000, 100_000):
        assert padded_expected_abs_error(size, plan) > plain.expected_abs_error(size)
    assert padded_expected_abs_error(1_000, plan) > padded_expected_abs_error(10_000, plan)
    assert padded_expected_abs_error(1_000, plan) > padded_expected_abs_error(
        1_000, padded_plan(3, 2.0, 1e-6)
    )
    # E|L| = 2α/(1 − α²) ≈ 1/ε_c
    assert padded_records_expected_abs_error(plan) == pytest.approx(10.0, rel=0.01)


# --- the plain release is unchanged -------------------------------------------------------------


def test_plain_release_still_draws_its_replacements_from_16_bit_rejection_sampling():
    # given: k = 4 (k − 1 = 3): 65,535 rejected, then 4 → 1; records switch (draws at 2³² − 1)
    source = ScriptedBytes(
        words("<u4", 2**32 - 1, 2**32 - 1) + words("<u2", 65_535, 5) + words("<u2", 4)
    )

    # when
    reports = rr.randomize([0, 3], categories=4, epsilon=1.0, random_bytes=source)

    # then: offsets (1, 2) skip the true category: 0 → 2, 3 → 2
    assert reports.tolist() == [2, 2]
    assert source.requests == [8, 4, 2]


# --- bad input ----------------------------------------------------------------------------------

bad_epsilons = st.one_of(
    st.floats(max_value=0.0),
    st.floats(min_value=0.0, max_value=0.0001, exclude_min=True, exclude_max=True),
    st.floats(min_value=20.0, exclude_min=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 10**400, True, False]),
    st.none(),
    st.text(max_size=3),
)
bad_deltas = st.one_of(
    st.floats(max_value=0.0),
    st.floats(min_value=1.0),
    st.sampled_from([math.nan, math.inf, 0, 1, True, False, 10**400, "1e-6", None]),
    st.lists(st.floats(0.1, 0.2), max_size=2),
)
bad_shares = st.one_of(
    st.floats(max_value=0.0),
    st.floats(min_value=1.0),
    st.sampled_from([math.nan, math.inf, 0, 1, True, "0.1", None]),
)
bad_categories = st.one_of(
    st.integers(max_value=1),
    st.integers(min_value=1001),
    st.sampled_from([2.0, True, None, "3"]),
)


@settings(max_examples=200, deadline=None)
@given(epsilon=bad_epsilons)
def test_bad_epsilon_is_refused_naming_epsilon(epsilon):
    # when / then
    with pytest.raises(EngineValidationError) as caught:
        padded_plan(2, epsilon, 1e-6)
    assert list(caught.value.errors) == ["epsilon"]


@settings(max_examples=200, deadline=None)
@given(delta=bad_deltas)
def test_bad_delta_is_refused_naming_delta(delta):
    # when / then
    with pytest.raises(EngineValidationError) as caught:
        padded_plan(2, 1.0, delta)
    assert list(caught.value.errors) == ["delta"]


@settings(max_examples=100, deadline=None)
@given(count_share=bad_shares)
def test_bad_count_share_is_refused_naming_it(count_share):
    # when / then
    with pytest.raises(EngineValidationError) as caught:
        padded_plan(2, 1.0, 1e-6, count_share)
    assert list(caught.value.errors) == ["count_share"]


@settings(max_examples=100, deadline=None)
@given(categories=bad_categories)
def test_bad_categories_are_refused_naming_them(categories):
    # when / then
    with pytest.raises(EngineValidationError) as caught:
        padded_plan(categories, 1.0, 1e-6)
    assert list(caught.value.errors) == ["categories"]


@settings(max_examples=100, deadline=None)
@given(
    codes=st.one_of(
        st.lists(st.integers(max_value=-1), min_size=1, max_size=4),
        st.lists(st.integers(min_value=3), min_size=1, max_size=4),
        st.lists(st.floats(), min_size=1, max_size=4),
        st.lists(st.lists(st.integers(0, 2), min_size=2, max_size=2), min_size=1, max_size=3),
        st.just([[0, 1], [2]]),
    )
)
def test_bad_codes_are_refused_before_a_byte_is_drawn(codes):
    # given
    source = ScriptedBytes(b"")

    # when / then
    with pytest.raises(EngineValidationError) as caught:
        padded_release(codes, padded_plan(3, 1.0, 1e-6), random_bytes=source)
    assert list(caught.value.errors) == ["codes"]
    assert source.requests == []


@settings(max_examples=100, deadline=None)
@given(
    counts=st.one_of(
        st.lists(st.integers(0, 10), max_size=5).filter(lambda xs: len(xs) != 3),
        st.lists(st.integers(-10, -1), min_size=3, max_size=3),
        st.lists(st.floats(0, 10), min_size=3, max_size=3),
        st.just([[1, 2, 3]]),
    )
)
def test_bad_counts_are_refused(counts):
    # when / then
    with pytest.raises(EngineValidationError) as caught:
        estimate_padded(counts, padded_plan(3, 1.0, 1e-6), counts=True)
    assert list(caught.value.errors) == ["counts"]


@pytest.mark.parametrize("reports", [[0, 3], [-1], [0.5], [[0, 1]]])
def test_bad_reports_are_refused(reports):
    # when / then
    with pytest.raises(EngineValidationError) as caught:
        estimate_padded(reports, padded_plan(3, 1.0, 1e-6))
    assert list(caught.value.errors) == ["reports"]


@pytest.mark.parametrize("plan", [None, {"categories": 2}, "plan"])
def test_something_that_is_not_a_plan_is_refused(plan):
    # when / then
    for call in (
        lambda: padded_release([0], plan),
        lambda: estimate_padded([0, 1], plan, counts=True),
        lambda: padded_expected_abs_error(100, plan),
        lambda: padded_records_expected_abs_error(plan),
    ):
        with pytest.raises(EngineValidationError) as caught:
            call()
        assert list(caught.value.errors) == ["plan"]


@pytest.mark.parametrize("declared_size", [0, -5, 1.5, True, None, "100", 10**11])
def test_preview_refuses_a_bad_declared_size(declared_size):
    # when / then
    with pytest.raises(EngineValidationError) as caught:
        padded_expected_abs_error(declared_size, padded_plan(3, 1.0, 1e-6))
    assert list(caught.value.errors) == ["declared_size"]


def test_count_calibration_is_the_engines_geometric_one():
    # when
    scale, alpha, spent = count_calibration(0.25)

    # then
    assert (scale, spent) == laplace_calibration("integer", 1, 0.25)
    assert alpha >= math.exp(-1 / scale)
    assert padding_delta(alpha, 2) == pytest.approx(alpha / (1 + alpha), rel=1e-15)
