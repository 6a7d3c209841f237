"""Privacy of the padded randomized-response release (privacy_engine/randomized_response.py).

Neighbours add or remove one record: D (n records) against D' = D + x. The release is
(ε, δ)-DP when P(E | D) ≤ e^ε·P(E | D') + δ and P(E | D') ≤ e^ε·P(E | D) + δ for every event E
of the output. A uniformly shuffled file is a function of its category counts (given the counts
every order is equally likely, which test_randomized_response_padded.py checks), so events are on
the counts: the total N and the number of reports of x's category.

Two checks, each with negative controls that must fail it:

- Exact: the output distribution of the analysed model (reports at p', q; Z = max(0, s + L);
  uniform dummies), computed in full for small tables, every table D of n ≤ 3 records and every x,
  gives the hockey-stick divergence δ(ε) both ways, which must be at most the plan's δ; on the
  outputs with N ≥ n + 2 the log-ratio must be at most ε. Controls: no padding (Z = 0), shift 0
  and a shift half the one the δ needs.
- Statistical audit of the code: many releases of D and D' (n = 3, k = 2, a large ε_c so the
  count's events are measurable), Clopper–Pearson lower bounds on (P(E | one) − δ)/P(E | other)
  for events on N near its low end, on N with all or none of the rows in x's category, and on the
  number of x's reports, which must not exceed e^ε; and the same draws must agree with the exact
  distribution (so the code draws the distribution the exact check verified). The batched audit
  assembles releases from the module's own parts (OpenDP's padding draw for many releases at once,
  the reports on a long column, the uniform dummies); a second audit calls ``padded_release``
  itself. The controls inject a noise source into the real path: one that returns no padding,
  and OpenDP's noise shifted so the padding is centred on 0, or on half the shift.

The batched audit draws the padding once per release and uses it for D and D' alike: each side's
releases are still independent and distributed as the mechanism's, and the four one-sided bounds
of an event are combined by a union bound, which needs no independence between sides.

Noise cannot be seeded, so each audit is calibrated to a false-alarm probability of 10⁻⁶.
"""

import itertools
import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pytest
from binomial_bounds import clopper_pearson_lower, clopper_pearson_upper

from privacy_engine.randomized_response import (
    PaddedPlan,
    RandomizedResponseMechanism,
    draw_padding,
    padded_plan,
    padded_release,
    uniform_codes,
)

pytestmark = pytest.mark.statistical

FALSE_ALARM = 1e-6
# ε = 3 split evenly: α = e^{−1.5} ≈ 0.22 makes N's low end measurable; δ = 10⁻³ gives s = 6.
AUDIT_PLAN = dict(categories=2, epsilon=3.0, delta=1e-3, count_share=0.5)
RELEASES = 250_000
CONTROL_RELEASES = 30_000
CALL_RELEASES = 3_000
X = 1  # the added record's category


# --- noise sources for the controls (OpenDP's sampler, or none) ---------------------------------


class NoPadding:
    """Broken on purpose: the padding's noisy centre is 0 (no dummy rows at all)."""

    def sample(self, measurement, value):
        return [0] * len(value)


@dataclass(frozen=True)
class ShiftedNoise:
    """Broken on purpose: OpenDP's noisy s + L moved down by ``by``, a padding centred on
    s − ``by``."""

    by: int

    def sample(self, measurement, value):
        return [v - self.by for v in measurement(value)]


def control_noise(kind: str, plan: PaddedPlan):
    if kind == "no padding":
        return NoPadding()
    if kind == "shift 0":
        return ShiftedNoise(plan.shift)
    return ShiftedNoise(plan.shift - 2)  # "shift 2", the floor, which meets only δ ≈ α/(1 + α)


def effective_shift(kind: str | None, plan: PaddedPlan) -> int | None:
    """The centre of the padding a control draws (None: no padding at all)."""
    return {None: plan.shift, "no padding": None, "shift 0": 0, "shift 2": 2}[kind]


# --- the exact output distribution --------------------------------------------------------------


def padding_pmf(plan: PaddedPlan, shift: int | None, most: int) -> np.ndarray:
    """P(Z = m), m = 0..most, Z = max(0, shift + L) (all mass at 0 for no padding)."""
    pmf = np.zeros(most + 1)
    if shift is None:
        pmf[0] = 1.0
        return pmf
    alpha = math.exp(-1.0 / plan.count_scale)  # the sampler's own α
    pmf[0] = alpha**shift / (1 + alpha)  # P(L ≤ −shift), shift ≥ 0
    m = np.arange(1, most + 1)
    pmf[1:] = (1 - alpha) / (1 + alpha) * alpha ** np.abs(m - shift)
    return pmf


def _add_row(distribution: np.ndarray, row: np.ndarray) -> np.ndarray:
    """The counts' distribution after one more independent row with P(category c) = row[c]."""
    result = np.zeros_like(distribution)
    for category, probability in enumerate(row):
        source = [slice(None)] * distribution.ndim
        target = [slice(None)] * distribution.ndim
        source[category], target[category] = slice(0, -1), slice(1, None)
        result[tuple(target)] += probability * distribution[tuple(source)]
    return result


def exact_counts(codes: list[int], plan: PaddedPlan, shift: int | None, most: int) -> np.ndarray:
    """P(counts = h) over h ∈ {0..len(codes) + most}^k: the analysed model of the release."""
    k, size = plan.categories, len(codes) + most + 1
    keep, switch = plan.keep_probability, plan.switch_probability
    distribution = np.zeros((size,) * k)
    distribution[(0,) * k] = 1.0
    for code in codes:
        row = np.full(k, switch)
        row[code] = keep
        distribution = _add_row(distribution, row)
    pmf = padding_pmf(plan, shift, most)
    total = pmf[0] * distribution
    uniform = np.full(k, 1.0 / k)
    for extra in range(1, most + 1):
        distribution = _add_row(distribution, uniform)
        total += pmf[extra] * distribution
    return total


def totals_grid(plan: PaddedPlan, size: int) -> np.ndarray:
    return np.indices((size,) * plan.categories).sum(axis=0)


@dataclass(frozen=True)
class ExactPrivacy:
    delta: float  # the larger hockey-stick divergence at e^ε, either way (plus the cut tail)
    pure_log_ratio: float  # the largest |log P_D(h)/P_D'(h)| over outputs with N ≥ n + 2


def exact_privacy(
    codes: list[int], added: int, plan: PaddedPlan, shift: int | None, most: int
) -> ExactPrivacy:
    with_one = exact_counts(codes, plan, shift, most)
    with_two = exact_counts([*codes, added], plan, shift, most - 1)  # the same grid as D's
    # the tail beyond ``most`` dummy rows, charged whole to δ
    cut = max(0.0, 1.0 - with_one.sum()) + max(0.0, 1.0 - with_two.sum())
    bound = math.exp(plan.epsilon)
    delta = max(
        np.maximum(with_one - bound * with_two, 0).sum(),
        np.maximum(with_two - bound * with_one, 0).sum(),
    )
    totals = totals_grid(plan, with_one.shape[0])
    both = (totals >= len(codes) + 2) & (with_one > 1e-300) & (with_two > 1e-300)
    if not both.any():
        return ExactPrivacy(float(delta + cut), math.inf)
    ratios = np.abs(np.log(with_one[both]) - np.log(with_two[both]))
    return ExactPrivacy(float(delta + cut), float(ratios.max()))


def all_neighbours(categories: int, sizes: tuple[int, ...]):
    """Every table D (as a sorted list of codes: order never matters) and every added x."""
    for size in sizes:
        for table in itertools.combinations_with_replacement(range(categories), size):
            for added in range(categories):
                yield list(table), added


EXACT_CASES = [
    pytest.param(dict(categories=2, epsilon=3.0, delta=1e-2, count_share=0.5), 40, id="k2-audit"),
    pytest.param(dict(categories=3, epsilon=2.0, delta=1e-3, count_share=0.5), 40, id="k3-eps2"),
    pytest.param(dict(categories=2, epsilon=1.0, delta=1e-6, count_share=0.1), 320, id="k2-eps1"),
    pytest.param(dict(categories=4, epsilon=6.0, delta=1e-4, count_share=0.5), 14, id="k4-eps6"),
]


@pytest.mark.parametrize(("arguments", "most"), EXACT_CASES)
def test_exact_output_distribution_meets_epsilon_and_delta_on_every_small_table(arguments, most):
    # given
    plan = padded_plan(**arguments)
    sizes = (0, 1, 3) if plan.categories <= 3 and plan.shift < 50 else (0, 1)

    # when
    results = [
        exact_privacy(table, added, plan, plan.shift, most)
        for table, added in all_neighbours(plan.categories, sizes)
    ]

    # then: within δ (and in fact the analysis' own δ), and pure ε away from N ≤ n + 1
    worst_delta = max(result.delta for result in results)
    worst_ratio = max(result.pure_log_ratio for result in results)
    assert worst_delta <= plan.delta_spent <= plan.delta, (worst_delta, plan)
    assert worst_ratio <= plan.count_epsilon + plan.report_epsilon + 1e-9, (worst_ratio, plan)
    # and it is 1/b + ln max(kp', 1/(kq)), reached on files of x's category only or of none
    k, keep, switch = plan.categories, plan.keep_probability, plan.switch_probability
    predicted = 1.0 / plan.count_scale + math.log(max(k * keep, 1.0 / (k * switch)))
    assert worst_ratio == pytest.approx(predicted, abs=1e-7)


@pytest.mark.parametrize("kind", ["no padding", "shift 0", "shift 2"])
def test_exact_check_catches_too_little_padding(kind):
    # given
    plan = padded_plan(**AUDIT_PLAN)

    # when
    result = exact_privacy([0, 0, 0], X, plan, effective_shift(kind, plan), 40)

    # then
    assert result.delta > plan.delta, result


def test_exact_model_of_the_audit_plan():
    # given: the numbers quoted by the audits below
    plan = padded_plan(**AUDIT_PLAN)

    # then
    assert plan.shift == 6
    assert plan.delta_spent == pytest.approx(math.exp(-7.5) / (1 + math.exp(-1.5)), rel=1e-9)


# --- the statistical audit ------------------------------------------------------------------------

Event = Callable[[np.ndarray], np.ndarray]


def audit_events(plan: PaddedPlan, records: int) -> dict[str, tuple[Event, bool]]:
    """Events on a release's counts (shape (..., k)) for D of ``records`` records, each with
    whether it lies within N ≥ n + 2, where the analysis proves the pure ratio e^ε (no δ)."""
    s = plan.shift

    def total(counts):
        return counts.sum(axis=-1)

    events: dict[str, tuple[Event, bool]] = {}
    for extra in range(0, s + 5):
        rows, pure = records + extra, extra >= 2
        events[f"N = n+{extra}"] = (lambda c, rows=rows: total(c) == rows), pure
        events[f"N = n+{extra}, no {X}"] = (
            (lambda c, rows=rows: (total(c) == rows) & (c[..., X] == 0)),
            pure,
        )
        events[f"N = n+{extra}, all {X}"] = (
            (lambda c, rows=rows: (total(c) == rows) & (c[..., X] == rows)),
            pure,
        )
    for at_most in (1, 2, 3):
        events[f"N ≤ n+{at_most}"] = (lambda c, m=at_most: total(c) <= records + m), False
    events["N ≥ n+2"] = (lambda c: total(c) >= records + 2), True
    for reports in range(0, 7):
        events[f"{X} reports = {reports}"] = (lambda c, r=reports: c[..., X] == r), False
        events[f"{X} reports ≥ {reports + 1}"] = (lambda c, r=reports: c[..., X] > r), False
    return events


@dataclass(frozen=True)
class Audit:
    """The largest lower confidence bound on (P(E | one) − δ)/P(E | other), either way, over all
    events; the largest on P(E | one)/P(E | other) over the events within N ≥ n + 2."""

    worst_event: str
    ratio_lower_bound: float
    worst_pure_event: str
    pure_ratio_lower_bound: float
    allowed: float
    misfit: str = ""  # an event whose frequencies disagree with the exact distribution

    @property
    def violation(self) -> bool:
        return max(self.ratio_lower_bound, self.pure_ratio_lower_bound) > self.allowed


def audit(
    events: dict[str, tuple[Event, bool]],
    with_d: np.ndarray,
    with_neighbour: np.ndarray,
    plan: PaddedPlan,
    exact: tuple[np.ndarray, np.ndarray] | None = None,
) -> Audit:
    """``with_d``/``with_neighbour``: counts of equally many releases, one row each. With
    ``exact`` (the distributions of D and D' on one grid), also checks every event's frequency
    under each input against its exact probability (two-sided, in the false-alarm budget)."""
    draws = with_d.shape[0]
    miss = FALSE_ALARM / (len(events) * (8 if exact is not None else 4))
    grid = None
    if exact is not None:
        grid = np.moveaxis(np.indices(exact[0].shape), 0, -1)
    worst = {True: ("", 0.0), False: ("", 0.0)}
    misfit = ""
    for name, (event, pure) in events.items():
        hits = (int(event(with_d).sum()), int(event(with_neighbour).sum()))
        for more, less in ((hits[0], hits[1]), (hits[1], hits[0])):
            high = clopper_pearson_upper(less, draws, miss)
            low = clopper_pearson_lower(more, draws, miss)
            for kind, bound in ((False, (low - plan.delta) / high), (True, low / high)):
                if (pure or not kind) and bound > worst[kind][1]:
                    worst[kind] = (name, bound)
        if grid is not None:
            for observed, distribution in zip(hits, exact, strict=True):
                probability = float(distribution[event(grid)].sum())
                low = clopper_pearson_lower(observed, draws, miss)
                high = clopper_pearson_upper(observed, draws, miss)
                if not low <= probability <= high:
                    misfit = f"{name}: {observed}/{draws} against {probability:.6g}"
    return Audit(*worst[False], *worst[True], math.exp(plan.epsilon), misfit)


def batched_padding(plan: PaddedPlan, releases: int, noise=None) -> np.ndarray:
    """Z for ``releases`` releases: the module's draw (OpenDP's sampler) in chunks on threads."""
    chunk = 25_000
    sizes = [min(chunk, releases - start) for start in range(0, releases, chunk)]
    with ThreadPoolExecutor(min(2, os.cpu_count() or 1)) as pool:
        parts = pool.map(lambda size: draw_padding(plan, size, noise), sizes)
        return np.concatenate(list(parts))


def batched_counts(codes: list[int], plan: PaddedPlan, padding: np.ndarray) -> np.ndarray:
    """Category counts of ``padding.size`` releases of ``codes``, the i-th with padding[i] dummy
    rows: the reports of one long column (records are randomized independently) and the module's
    uniform dummies, counted per release (the shuffle does not change counts)."""
    releases, k = padding.size, plan.categories
    counts = np.zeros((releases, k), dtype=np.int64)
    if codes:
        mechanism = RandomizedResponseMechanism(categories=k, epsilon=plan.report_epsilon)
        reports = mechanism.release(np.tile(codes, releases)).reshape(releases, len(codes))
        for category in range(k):
            counts[:, category] += (reports == category).sum(axis=1)
    dummies = uniform_codes(int(padding.sum()), k).astype(np.int64)
    owner = np.repeat(np.arange(releases), padding)
    counts += np.bincount(owner * k + dummies, minlength=releases * k).reshape(releases, k)
    return counts


TABLES = [[0, 0, 0], [X, X, X], [0, X, 0]]
# The least ratio each table's audit must see. The largest it could see: e^{ε_c} = 4.5 on N alone
# and, for D without x, e^{ε_c}/(kq) = 12.3 on "N = n + s, no x" (D all x reaches e^{ε_c}·kp' = 7.3
# on "N = n + s + 1, all x", too rare at this many draws to beat N alone).
POWER = [math.exp(AUDIT_PLAN["epsilon"] * AUDIT_PLAN["count_share"]), 3.0, 3.0]


@pytest.fixture(scope="module")
def audit_plan() -> PaddedPlan:
    return padded_plan(**AUDIT_PLAN)


@pytest.fixture(scope="module")
def audit_padding(audit_plan) -> np.ndarray:
    return batched_padding(audit_plan, RELEASES)


def exact_pair(codes: list[int], plan: PaddedPlan, shift: int | None, most: int = 40):
    return exact_counts(codes, plan, shift, most), exact_counts([*codes, X], plan, shift, most - 1)


@pytest.mark.parametrize(
    ("table", "power"), list(zip(TABLES, POWER, strict=True)), ids=["none-x", "all-x", "mixed"]
)
def test_batched_releases_pass_the_audit_and_match_the_exact_distribution(
    table, power, audit_plan, audit_padding
):
    # given
    with_d = batched_counts(table, audit_plan, audit_padding)
    with_neighbour = batched_counts([*table, X], audit_plan, audit_padding)

    # when
    result = audit(
        audit_events(audit_plan, len(table)),
        with_d,
        with_neighbour,
        audit_plan,
        exact_pair(table, audit_plan, audit_plan.shift),
    )

    # then: within e^ε, and with a ratio as large as the mechanism's to show the audit sees one
    assert not result.violation, result
    assert not result.misfit, result
    assert result.pure_ratio_lower_bound > power, result


@pytest.mark.parametrize("kind", ["no padding", "shift 0", "shift 2"])
def test_batched_audit_catches_too_little_padding(kind, audit_plan):
    # given
    padding = batched_padding(audit_plan, CONTROL_RELEASES, control_noise(kind, audit_plan))
    table = TABLES[0]

    # when
    result = audit(
        audit_events(audit_plan, len(table)),
        batched_counts(table, audit_plan, padding),
        batched_counts([*table, X], audit_plan, padding),
        audit_plan,
    )

    # then
    assert result.violation, result


def released_counts(codes: list[int], plan: PaddedPlan, releases: int, noise=None) -> np.ndarray:
    """Category counts of ``releases`` calls of ``padded_release`` itself."""
    column = np.array(codes, dtype=np.int64)
    rows = [padded_release(column, plan, noise=noise) for _ in range(releases)]
    return np.stack([np.bincount(row, minlength=plan.categories) for row in rows])


def test_padded_release_called_release_by_release_passes_the_audit(audit_plan):
    # given
    table = TABLES[2]

    # when
    result = audit(
        audit_events(audit_plan, len(table)),
        released_counts(table, audit_plan, CALL_RELEASES),
        released_counts([*table, X], audit_plan, CALL_RELEASES),
        audit_plan,
        exact_pair(table, audit_plan, audit_plan.shift),
    )

    # then
    assert not result.violation, result
    assert not result.misfit, result


@pytest.mark.parametrize("kind", ["no padding", "shift 0"])
def test_release_by_release_audit_catches_too_little_padding(kind, audit_plan):
    # given
    table, noise = TABLES[2], control_noise(kind, audit_plan)

    # when
    result = audit(
        audit_events(audit_plan, len(table)),
        released_counts(table, audit_plan, CALL_RELEASES // 4, noise),
        released_counts([*table, X], audit_plan, CALL_RELEASES // 4, noise),
        audit_plan,
    )

    # then
    assert result.violation, result
