"""k-ary randomized response for categorical microdata (Warner 1965; the encyclopaedia's coins).

Each record of a categorical column with a PUBLIC list of k categories (2 ≤ k ≤
:data:`MAX_RESPONSE_CATEGORIES`) independently keeps its true category with probability p' and
otherwise reports one of the other k − 1 categories, uniformly. The released file is the column of
reported categories, one per record, in the records' order.

Privacy. The probability of any reported category changes by a factor of at most
p'/q ≤ e^ε, q = (1 − p')/(k − 1), when one record's category changes: ε-DP for neighbours that
*replace* one record's category, and each person's own report is ε-local-DP on its own. The file has
one row per record, so it discloses the number of records n: under add/remove neighbours (n
private) a randomized file is no ε-DP release at all, and a caller that charges it to a
differential-privacy ledger must treat n as public. Missing values and categories outside the list
are the caller's to map to a declared category or drop (DESIGN.md rule 1), before this module.

Calibration. The ideal keep-probability is p = e^ε/(e^ε + k − 1) (ratio exactly e^ε). The
mechanism keeps with the dyadic p' = T/2³², the largest 32-bit fraction whose randomized response
OpenDP's own privacy map (``make_randomized_response(..).map(1)``) reports at no more than ε;
lowering p only lowers the likelihood ratio, so ε-DP still holds, and ``epsilon_spent`` is that
map. At ε = ln 3, k = 2, p = 3/4 is dyadic and p' = p: the encyclopaedia's two coins exactly
(P(yes | A) = 3/4, P(yes | not A) = 1/4, estimated share 2·(share of yes) − 1/2).

Exact sampling (DESIGN.md rule 2). No floating point and no seeded generator: a record keeps its
category when a uniform 32-bit integer is below T (probability exactly p'); a replacement is a
uniform 16-bit integer, rejected and redrawn unless it is below the largest multiple of k − 1 that
16 bits hold (so reducing it modulo k − 1 has no bias), then shifted past the true category.
Every step is a numpy operation over the whole column.

Where the bits come from. :func:`system_random_bytes` is ``os.urandom``, the operating system's
CSPRNG (getrandom(2) on Linux), the same kind of source OpenDP's samplers read (its ``fill_bytes``
is OpenSSL's RAND_bytes or the OS-seeded generator of Rust's ``rand``). OpenDP 0.16 was
measured first: ``make_randomized_response_bitvec(bitvector_domain(max_weight=1),
discrete_distance(), f=1)`` on an all-zero vector returns fair coins (each bit is replaced by a
fresh fair bit; its map is 0), but it draws every bit through its Bernoulli sampler, about 1 µs
per bit on this machine (64 Mbit measured: 76 s, against 0.06 s for ``os.urandom``). A million
records need ≥ 32 Mbit here (≈ 30 s through OpenDP), far beyond the target of a second or two,
so the bits come from ``os.urandom`` directly, the other source the design allows. The source is
one small function (:data:`ByteSource`), injected so tests can substitute deterministic bytes.

Estimation (post-processing of the randomized file only, never the true data). With r_j reports
of category j among n, λ_j = r_j/n: π̂_j = (λ_j − q)/(p' − q), unbiased, and the estimates add up
to 1. For a fixed table, Var(r_j) = n_j·p'(1 − p') + (n − n_j)·q(1 − q) exactly, so
Var(π̂_j) ≤ V/(n(p' − q)²) with V = max(p'(1 − p'), q(1 − q)) ≤ 1/4, whatever the data. The
95% intervals are normal approximations (the estimate is a sum of n independent reports); three
variances are offered (:data:`IntervalMethod`):

- ``"plug_in"``: λ_j(1 − λ_j)/(n(p' − q)²), the textbook formula with the observed share;
  an approximation twice over (normal shape, estimated variance), narrowest for rare categories;
- ``"quarter"``: λ(1 − λ) ≤ 1/4, conservative and data-free;
- ``"worst_case"`` (the default, to publish): V above, the largest variance the mechanism can
  have on any table of n records. It is conservative like ``"quarter"`` but never wider (for
  k = 2 it is exact: 3/16 instead of 1/4 at ε = ln 3, a 13% narrower interval); it is known
  before the run, so the published interval is the one the preview promised; and it leans on
  no estimated variance, which is itself noisy where few reports of a category are expected
  (small n, large ε). Its price is over-coverage for k > 2, where few categories come near the
  worst case: at k = 10, ε = 1 it covers 99.4% (bench/randomized_response.py), where
  ``"plug_in"`` (λ(1 − λ) = the table's own variance plus (p' − q)²·π(1 − π), a little
  above it) covers about 95% with intervals about 0.7 times as wide.

Preview (from the curator's declared size n, never the data). The variances' sum over the k
categories is the same on every table, so the mean over categories of the shares' squared errors
is exactly V̄/(n(p' − q)²), V̄ = (p'(1 − p') + (k − 1)·q(1 − q))/k. :func:`expected_share_abs_error`
is √(2/π) times its root (the normal mean absolute deviation): the expected absolute error of a
share, averaged over the categories; exact for k = 2 (V̄ = V), slightly above the average when
categories differ in size (Jensen), and well below the worst-case promise for k > 2 (at k = 10,
ε = 1, σ̄ is 0.70·σ_max). :func:`share_halfwidth` is the published interval's half-width,
z·√(V/n)/(p' − q), so the preview promises exactly the interval the release will publish.

The functions above are the plain release, for neighbours that replace one record (n public:
the Blowfish case). Everything below is the padded release, for the engine's (ε, δ)-DP with
add/remove neighbours, where n is private.

Padded release (n private). ε is split into ε_c for the count (``count_share``·ε, default
ε/10) and ε_r = ε − ε_c for the reports. Each real record gets the randomized response above at
ε_r (keep-probability p', switch-probability q, OpenDP's map ≤ ε_r). Z = max(0, s + L) dummy rows
are added, L two-sided geometric (discrete Laplace) with ratio α = e^{−1/b}: OpenDP's exact
sampler through the engine's own :class:`~privacy_engine.mechanisms.GeometricMechanism`
(sensitivity 1 at ε_c, so b ≥ 1/ε_c and α ≥ e^{−ε_c}; :func:`count_calibration` rounds α up).
Each dummy's category is exactly uniform over the k categories (16-bit draws with rejection,
like the replacement draw). Reports and dummies are shuffled by a uniform permutation: the order
of independent 64-bit keys from ``os.urandom``, all keys redrawn on any tie. The file has
N = n + Z rows; nothing else is published but the plan (k, ε, δ, ε_c, ε_r, α, s).

Privacy, verified. (1) A uniformly shuffled file is a function of its multiset (given the
multiset every arrangement is equally likely), so the output is equivalent to the category
counts h (N = |h|). (2) Let D' = D + x. Write A for the counts of D's reports, U_m for the counts
of m uniform dummies, R_x for x's report. Then P_D(h) = P(Z = m)·P(A + U_m = h) and
P_D'(h) = P(Z' = m − 1)·P(A + R_x + U_{m−1} = h), m = N − n. (3) For m ≥ 1, U_m = U_{m−1} + U_1,
so both are Σ_c P(one row = c)·P(A + U_{m−1} = h − e_c): a uniform row (1/k each) against x's
report (p' for x, q for the others). Its ratios are bounded both ways by kp' and 1/(kq), and
both are ≤ e^{ε_r}: 1 = p' + (k − 1)q with p'/q ≤ e^{ε_r} (OpenDP's map) gives
p' ≤ e^{ε_r}/(e^{ε_r} + k − 1), so kp' ≤ e^{ε_r}·k/(e^{ε_r} + k − 1) ≤ e^{ε_r}, and
q ≥ 1/(e^{ε_r} + k − 1), so 1/(kq) ≤ (e^{ε_r} + k − 1)/k ≤ e^{ε_r}; the reverse ratios kq ≤ 1 and
1/(kp') ≤ 1 since q ≤ 1/k ≤ p'. (4) For m ≥ 2 neither Z is truncated (Z = m ≥ 1, Z' = m − 1 ≥ 1),
so P(Z = m)/P(Z' = m − 1) = α^{|m − s| − |m − 1 − s|} ∈ [α, 1/α], and 1/α = e^{1/b} ≤ e^{ε_c}
(OpenDP's map of the count noise is 1/b ≤ ε_c). Every h with N ≥ n + 2 thus has
P_D(h) ≤ e^{ε_c + ε_r}·P_D'(h) and P_D'(h) ≤ e^{ε_c + ε_r}·P_D(h). (5) The rest,
B = {N ≤ n + 1}, is Z ≤ 1 under D and Z' = 0 under D': probabilities P(L ≤ 1 − s) =
α^{s−1}/(1 + α) and P(L ≤ −s) = α^s/(1 + α) (P(L ≤ −t) = α^t/(1 + α) for t ≥ 0), both ≤ δ once
α^{s−1}/(1 + α) ≤ δ. (6) For any event E, P_D(E) ≤ P_D(E ∩ Bᶜ) + P_D(B) ≤ e^ε·P_D'(E) + δ, and
the same with D and D' exchanged (P_D'(B) is the smaller of the two). So the release is
(ε_c + ε_r, α^{s−1}/(1 + α))-DP, within (ε, δ), with s the smallest integer ≥ 2 meeting δ
(:func:`padding_shift`; floating point is kept on the safe side by a 10⁻⁹ margin). The bound is
conservative twice over: the real report-vs-dummy ratio is max(kp', 1/(kq)) < e^{ε_r} (k = 2,
ε_r = 1: 1.46 and 1.86 against 2.72), and the outputs with N = n + 1, whose ratio is finite, are
charged to δ whole with N = n. A uniform shuffle and exactly uniform dummies are essential:
a dummy that is not uniform or an order that tells dummies from reports breaks step (1) or (3).

Estimation (from the file's counts r_j, N and the plan only). E[Z] = s up to the truncation,
E[(−s − L)⁺] = α^{s+1}/(1 − α²) ≤ δ·α²/(1 − α), negligible. n̂ = max(0, N − s); as
N − s − n = Z − s = max(−s, L) and n̂ − n = max(−n, −s, L), |n̂ − n| ≤ |L| and
n ∈ [N − s − h, N − s + h] ∩ [0, N] with probability
≥ P(|L| ≤ h) ≥ 95% for h = the discrete Laplace's 95% half-width (published, exact, not an
approximation). Shares: π̂_j = ((r_j − (N − n̂)/k)/n̂ − q)/(p' − q) (they add up to 1). Given n,
r_j − (N − n)/k − n(q + (p' − q)π_j) is the reports' and dummies' binomial noise, variance
≤ n·V + (N − n)·(1/k)(1 − 1/k) (V the worst-case variance above), so π_j lies within z·σ(n) of
f(n) = ((r_j − (N − n)/k)/n − q)/(p' − q), σ(n) = √(n·V + (N − n)(k − 1)/k²)/(n(p' − q)), with
probability ≈ 97.5% (z = 2.24, normal approximation); and n lies in [n₋, n₊] =
[max(1, N − s − h'), min(N, N − s + h')] with probability ≥ 97.5% (h' the 97.5% half-width).
f is monotone in n and σ decreasing on (0, N], so the union of the intervals over [n₋, n₊] lies
within [min f(n±) − z·σ(n₋), max f(n±) + z·σ(n₋)] (computed as the max of σ at both ends): the
published interval, ≥ 95% by the union bound, clipped to [0, 1]. With n̂ = 0 (a file no longer
than its padding) the shares are 1/k with intervals [0, 1]. Measured (1,000 releases of 2,000
records, ε = 1, δ = 10⁻⁶, a 70% category): n covered 94–96% (exactly P(|L| ≤ 30) = 95.3%),
shares 98% (k = 2) and 99–100% (k = 5).

Preview. The error of share j is ≈ e_j/(n(p' − q)) + L·(1/k − π_j)/n, e_j the binomial noise
above (Z ≈ s), so the mean over categories of its square is ≈ (n·V̄ + s(k − 1)/k²)/(n(p' − q))²
+ Var(L)·(k − 1)/(k·n)², Var(L) = 2α/(1 − α)², the last term at its largest (a one-category
table). :func:`padded_expected_abs_error` is √(2/π) times its root (matches simulation within
1–4%); :func:`padded_records_expected_abs_error` is E|L| = 2α/(1 − α²) ≥ E|n̂ − n|.

Choosing ε_c. The count's share trades the padding's size (s ≈ ln(1/δ)/ε_c dummies, and n̂'s
error 1/ε_c) against the reports' ε_r. By the preview the best share falls with n: about 0.15 at
n = 300, 0.1 at n = 1,000, 0.05 at 10⁴, ≤ 0.02 from 10⁵ (k = 2 and 5, ε = 0.5 to 2, δ = 10⁻⁶ or
1/n²). The default 0.1 is within 8% of the best share's error up to n = 10⁴ and within 13% up to
10⁶; a caller may instead pick the share that minimizes the preview at the curator's declared
size (public, never the data, so the choice discloses nothing). Hiding n costs the shares' accuracy
11–17% at n ≥ 10⁴ and 22–28% at n = 1,000, against the plain release at the whole ε.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import opendp.prelude as dp

from privacy_engine.definitions import MAX_EPSILON, MIN_EPSILON
from privacy_engine.errors import (
    COUNT_SHARE,
    MUST_BE_ABOVE_ZERO,
    MUST_BE_FROM_TO,
    MUST_BE_PROBABILITY,
    PADDING_TOO_LARGE,
    REPORTS_TOO_LITTLE,
    RESPONSE_CATEGORIES,
    RESPONSE_EPSILON_TOO_SMALL,
    SHARES_EXCEED_EPSILON,
    EngineValidationError,
)
from privacy_engine.mechanisms import GeometricMechanism, laplace_calibration
from privacy_engine.noise import NoiseSource
from privacy_engine.random_bits import ByteSource, random_words, system_random_bytes
from privacy_engine.schema import check_declared_size

dp.enable_features("contrib")

IntervalMethod = Literal["worst_case", "quarter", "plug_in"]
INTERVAL_METHODS: tuple[str, ...] = ("worst_case", "quarter", "plug_in")

# Beyond a thousand categories randomized response has no accuracy left to offer (at ε = 1 a
# share's standard error reaches ≈ 30/√n), and the bound keeps replacement draws within 10 bits.
MAX_RESPONSE_CATEGORIES = 1_000
# The keep-probability is T/2^THRESHOLD_BITS for a whole T.
THRESHOLD_BITS = 32
_THRESHOLD_SCALE = 1 << THRESHOLD_BITS
# Records randomized per step: bounds the temporary arrays (under 20 bytes a record) for a huge
# column without costing the vectorisation anything.
CHUNK_RECORDS = 1 << 20
# Replacements are drawn from 16 bits; a draw is accepted with probability > 98% (k ≤ 1,000), so
# with a uniform source 16 rounds leave a record unplaced with probability < 10^-27; a source that
# gets there is not uniform.
_HALFWORD = 1 << 16
_MAX_REJECTION_ROUNDS = 16


def _uniform_below(count: int, bound: int, source: ByteSource, dtype: Any) -> np.ndarray:
    """``count`` uniform integers in 0..bound − 1 (2 ≤ bound ≤ 2¹⁶) by rejection sampling on
    16-bit draws: a draw is kept when it is below the largest multiple of ``bound`` that 16 bits
    hold, so each residue is equally likely (no modulo bias); the rest are drawn again."""
    limit = (_HALFWORD // bound) * bound
    draws = random_words(count, source, "<u2")
    values = (draws % bound).astype(dtype)
    if limit == _HALFWORD:  # bound a power of two: every draw is kept
        return values
    pending = np.flatnonzero(draws >= limit)
    for _ in range(_MAX_REJECTION_ROUNDS):
        if not pending.size:
            return values
        draws = random_words(pending.size, source, "<u2")
        accepted = draws < limit
        values[pending[accepted]] = draws[accepted] % bound
        pending = pending[~accepted]
    if not pending.size:
        return values
    raise RuntimeError("the byte source is not uniform: rejection sampling did not finish")


# --- validation (messages name fields and public limits, never data values) ------------------


def _check_categories(categories: Any) -> int:
    if isinstance(categories, bool) or not isinstance(categories, Integral):
        raise EngineValidationError.single("categories", "must be a whole number")
    if not 2 <= int(categories) <= MAX_RESPONSE_CATEGORIES:
        raise EngineValidationError.single(
            "categories",
            RESPONSE_CATEGORIES,
            minimum=2,
            maximum=f"{MAX_RESPONSE_CATEGORIES:,}",
        )
    return int(categories)


def _check_epsilon(epsilon: Any) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
        raise EngineValidationError.single("epsilon", MUST_BE_ABOVE_ZERO)
    try:
        number = float(epsilon)
    except OverflowError:
        raise EngineValidationError.single("epsilon", MUST_BE_ABOVE_ZERO) from None
    if not math.isfinite(number) or number <= 0:
        raise EngineValidationError.single("epsilon", MUST_BE_ABOVE_ZERO)
    if not MIN_EPSILON <= number <= MAX_EPSILON:
        raise EngineValidationError.single(
            "epsilon", MUST_BE_FROM_TO, minimum=f"{MIN_EPSILON:g}", maximum=f"{MAX_EPSILON:g}"
        )
    return number


def _check_codes(codes: Any, categories: int, path: str) -> np.ndarray:
    """``codes`` as a one-dimensional integer array with every value in 0..k − 1."""
    try:
        column = np.asarray(codes)
    except (TypeError, ValueError, OverflowError):  # ragged or unconvertible
        column = np.zeros((0, 0))
    if column.ndim != 1:
        raise EngineValidationError.single(path, "must be a one-dimensional array of codes")
    if column.size == 0:
        return column.astype(np.int64)
    if not np.issubdtype(column.dtype, np.integer):
        raise EngineValidationError.single(
            path, "must hold whole-number category codes (map missing values first)"
        )
    if column.min() < 0 or column.max() >= categories:
        raise EngineValidationError.single(
            path, f"every code must be from 0 to {categories - 1} (the public categories)"
        )
    return column


# --- calibration ---------------------------------------------------------------------------


def truth_probability(*, categories: int, epsilon: float) -> float:
    """The ideal keep-probability of k-ary randomized response at ε: e^ε/(e^ε + k − 1), the
    largest whose likelihood ratio p/((1 − p)/(k − 1)) is at most e^ε."""
    categories = _check_categories(categories)
    epsilon = _check_epsilon(epsilon)
    return 1.0 / (1.0 + (categories - 1) * math.exp(-epsilon))


def _opendp_epsilon(categories: int, threshold: int) -> float:
    """OpenDP's privacy map of its own k-ary randomized response keeping with T/2³²."""
    measurement = dp.m.make_randomized_response(
        list(range(categories)), threshold / _THRESHOLD_SCALE, T=dp.i32
    )
    return float(measurement.map(1))


@functools.lru_cache(maxsize=4096)
def keep_calibration(categories: int, epsilon: float) -> tuple[int, float]:
    """``(T, epsilon_spent)``: the largest whole T < 2³² whose keep-probability T/2³² OpenDP's
    map reports at no more than ``epsilon`` (for replace-one neighbours), and that map. Starts one
    above ⌊p·2³²⌋ so a p that rounding put a hair under a dyadic value (3/4) still reaches it.
    Memoized (pure)."""
    categories = _check_categories(categories)
    epsilon = _check_epsilon(epsilon)
    ideal = truth_probability(categories=categories, epsilon=epsilon)
    threshold = min(math.floor(ideal * _THRESHOLD_SCALE) + 1, _THRESHOLD_SCALE - 1)
    spent = _opendp_epsilon(categories, threshold)
    while spent > epsilon:
        threshold -= 1
        spent = _opendp_epsilon(categories, threshold)
    if threshold * categories <= _THRESHOLD_SCALE:  # p' ≤ 1/k: unreachable for ε ≥ MIN_EPSILON
        raise EngineValidationError.single("epsilon", RESPONSE_EPSILON_TOO_SMALL)
    return threshold, spent


# --- the mechanism -------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ShareEstimates:
    """Estimated share of each category (in the order of the public list) from a randomized file,
    with a two-sided interval per category.

    ``shares`` are unbiased and add up to 1; they may fall outside [0, 1] (clamping is
    post-processing the caller may apply, at the cost of the bias). ``ci_low``/``ci_high`` are
    ``shares ∓ halfwidth`` clipped to [0, 1], where every true share lies."""

    shares: np.ndarray
    halfwidth: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    size: int
    interval: str
    coverage: float


class RandomizedResponseMechanism:
    """k-ary randomized response on a column of category codes 0..k − 1 (k public).

    ``epsilon`` is this statistic's own ε; the guarantee is for neighbours that replace one
    record's category, and the released file discloses the number of records. ``random_bytes``
    is the bit source (default the OS CSPRNG; tests inject deterministic bytes).
    """

    name = "randomized_response"
    delta_spent = 0.0
    neighbours = "replace one record's category (the number of records is disclosed)"

    def __init__(
        self,
        *,
        categories: int,
        epsilon: float,
        random_bytes: ByteSource | None = None,
    ) -> None:
        self.categories = _check_categories(categories)
        self.epsilon = _check_epsilon(epsilon)
        self.random_bytes: ByteSource = random_bytes or system_random_bytes
        self.keep_threshold, self.epsilon_spent = keep_calibration(self.categories, self.epsilon)
        self.output_dtype = np.dtype(np.uint8 if self.categories <= 256 else np.uint16)

    # Published parameters (Kerckhoffs: everything but the random bits).

    @property
    def keep_fraction(self) -> Fraction:
        """p' exactly: T/2³²."""
        return Fraction(self.keep_threshold, _THRESHOLD_SCALE)

    @property
    def switch_fraction(self) -> Fraction:
        """q exactly: the probability of reporting one given other category, (1 − p')/(k − 1)."""
        return (1 - self.keep_fraction) / (self.categories - 1)

    @property
    def keep_probability(self) -> float:
        """p' as a float (exact: a 32-bit fraction)."""
        return self.keep_threshold / _THRESHOLD_SCALE

    @property
    def switch_probability(self) -> float:
        return float(self.switch_fraction)

    @property
    def _gap(self) -> float:
        """p' − q = (k·p' − 1)/(k − 1) > 0."""
        return float(self.keep_fraction - self.switch_fraction)

    @property
    def worst_case_variance(self) -> float:
        """V = max(p'(1 − p'), q(1 − q)): the largest variance of one record's report of a
        category, so Var(π̂_j) ≤ V/(n(p' − q)²) on any table of n records."""
        keep, switch = self.keep_fraction, self.switch_fraction
        return float(max(keep * (1 - keep), switch * (1 - switch)))

    @property
    def average_variance(self) -> float:
        """V̄ = (p'(1 − p') + (k − 1)·q(1 − q))/k: summed over the categories, the reports'
        variances are n·p'(1 − p') + n(k − 1)·q(1 − q) on every table of n records (each record
        is once its own category and k − 1 times another), so the mean over categories of
        Var(π̂_j) is V̄/(n(p' − q)²) exactly, with no knowledge of the data."""
        keep, switch = self.keep_fraction, self.switch_fraction
        k = self.categories
        return float((keep * (1 - keep) + (k - 1) * switch * (1 - switch)) / k)

    # Drawing.

    def release(self, codes: np.ndarray | list[int]) -> np.ndarray:
        """The randomized column: same length, dtype uint8 (k ≤ 256) or uint16."""
        column = _check_codes(codes, self.categories, "codes")
        randomized = np.empty(column.size, dtype=self.output_dtype)
        for start in range(0, column.size, CHUNK_RECORDS):
            chunk = column[start : start + CHUNK_RECORDS]
            randomized[start : start + chunk.size] = self._randomize(chunk)
        return randomized

    def _randomize(self, true_codes: np.ndarray) -> np.ndarray:
        """One chunk: 4 bytes a record decide keep or switch (in record order), then, for k > 2,
        2 bytes a record (and redraws) pick the category reported on a switch. Every record gets
        a replacement drawn, kept or not, so the column is processed element-wise, with no
        gathers or scatters on the switched records."""
        true = true_codes.astype(self.output_dtype)
        keep = random_words(true.size, self.random_bytes, "<u4") < np.uint32(self.keep_threshold)
        if self.categories == 2:
            return np.where(keep, true, true ^ 1)
        offsets = self._offsets(true.size)
        # Offsets 0..k − 2 name the other categories in order, skipping the true one.
        return np.where(keep, true, offsets + (offsets >= true))

    def _offsets(self, count: int) -> np.ndarray:
        """``count`` uniform integers in 0..k − 2 (see :func:`_uniform_below`)."""
        return _uniform_below(count, self.categories - 1, self.random_bytes, self.output_dtype)

    # Estimating (post-processing of the randomized file).

    def estimate(
        self,
        randomized_codes: np.ndarray | list[int],
        *,
        interval: IntervalMethod = "worst_case",
        coverage: float = 0.95,
    ) -> ShareEstimates:
        """Unbiased shares and intervals from a randomized column (see the module docstring)."""
        column = _check_codes(randomized_codes, self.categories, "randomized_codes")
        return self.estimate_from_counts(
            np.bincount(column, minlength=self.categories), interval=interval, coverage=coverage
        )

    def estimate_from_counts(
        self,
        counts: np.ndarray | list[int],
        *,
        interval: IntervalMethod = "worst_case",
        coverage: float = 0.95,
    ) -> ShareEstimates:
        """The same from the number of reports of each category (in the public list's order)."""
        try:
            observed = np.asarray(counts)
        except (TypeError, ValueError, OverflowError):
            observed = np.zeros(0)
        if (
            observed.shape != (self.categories,)
            or not np.issubdtype(observed.dtype, np.integer)
            or observed.min() < 0
        ):
            raise EngineValidationError.single(
                "counts", f"must be {self.categories} whole numbers ≥ 0, one per category"
            )
        size = int(observed.sum())
        if size < 1:
            raise EngineValidationError.single("counts", "a randomized file of no records")
        z = _normal_quantile(coverage)
        observed_shares = observed / size
        shares = (observed_shares - self.switch_probability) / self._gap
        if interval == "plug_in":
            variance = observed_shares * (1.0 - observed_shares)
        elif interval == "quarter":
            variance = np.full(self.categories, 0.25)
        elif interval == "worst_case":
            variance = np.full(self.categories, self.worst_case_variance)
        else:
            raise EngineValidationError.single(
                "interval", f"must be one of {', '.join(INTERVAL_METHODS)}"
            )
        halfwidth = z * np.sqrt(variance / size) / self._gap
        return ShareEstimates(
            shares=shares,
            halfwidth=halfwidth,
            ci_low=np.clip(shares - halfwidth, 0.0, 1.0),
            ci_high=np.clip(shares + halfwidth, 0.0, 1.0),
            size=size,
            interval=interval,
            coverage=coverage,
        )

    # Accuracy before running (from a public, declared size).

    def standard_error(self, size: int) -> float:
        """σ_max = √(V/n)/(p' − q): the largest standard error of an estimated share on n
        records, whatever the table."""
        size = check_declared_size(size)
        return math.sqrt(self.worst_case_variance / size) / self._gap

    def root_mean_square_error(self, size: int) -> float:
        """σ̄ = √(V̄/n)/(p' − q): the root of the mean over the k categories of the shares'
        squared errors, the same on every table of n records (see :attr:`average_variance`)."""
        size = check_declared_size(size)
        return math.sqrt(self.average_variance / size) / self._gap

    def expected_abs_error(self, size: int) -> float:
        """E|π̂_j − π_j| ≈ √(2/π)·σ̄ on n records, averaged over the categories (normal
        approximation; exact for k = 2, a slight overestimate when categories differ in size)."""
        return math.sqrt(2.0 / math.pi) * self.root_mean_square_error(size)

    def worst_case_abs_error(self, size: int) -> float:
        """E|π̂_j − π_j| ≈ √(2/π)·σ_max: the most any one share's expected error can be."""
        return math.sqrt(2.0 / math.pi) * self.standard_error(size)

    def halfwidth(self, size: int, coverage: float = 0.95) -> float:
        """The published (``"worst_case"``) interval's half-width on n records."""
        return _normal_quantile(coverage) * self.standard_error(size)


def _normal_quantile(coverage: float) -> float:
    if isinstance(coverage, bool) or not isinstance(coverage, float | int):
        raise EngineValidationError.single("coverage", MUST_BE_PROBABILITY)
    if not 0.0 < coverage < 1.0:
        raise EngineValidationError.single("coverage", MUST_BE_PROBABILITY)
    return NormalDist().inv_cdf(0.5 + coverage / 2.0)


# --- functional facade ------------------------------------------------------------------------


def randomize(
    codes: np.ndarray | list[int],
    *,
    categories: int,
    epsilon: float,
    random_bytes: ByteSource | None = None,
) -> np.ndarray:
    """Randomized response on a column of codes 0..k − 1 at ε (replace-one neighbours)."""
    mechanism = RandomizedResponseMechanism(
        categories=categories, epsilon=epsilon, random_bytes=random_bytes
    )
    return mechanism.release(codes)


def estimate_shares(
    randomized_codes: np.ndarray | list[int],
    *,
    categories: int,
    epsilon: float,
    interval: IntervalMethod = "worst_case",
    coverage: float = 0.95,
) -> ShareEstimates:
    """Estimated share of each category from a file randomized at (k, ε): post-processing."""
    mechanism = RandomizedResponseMechanism(categories=categories, epsilon=epsilon)
    return mechanism.estimate(randomized_codes, interval=interval, coverage=coverage)


def expected_share_abs_error(*, declared_size: int, categories: int, epsilon: float) -> float:
    """The preview: expected absolute error of an estimated share (averaged over the k
    categories), from the curator's declared size n (public), k and ε, before anything is
    drawn. Normal approximation; see the module docstring."""
    mechanism = RandomizedResponseMechanism(categories=categories, epsilon=epsilon)
    return mechanism.expected_abs_error(declared_size)


def share_halfwidth(
    *, declared_size: int, categories: int, epsilon: float, coverage: float = 0.95
) -> float:
    """The preview: half-width of each share's published interval on the declared size."""
    mechanism = RandomizedResponseMechanism(categories=categories, epsilon=epsilon)
    return mechanism.halfwidth(declared_size, coverage)


# --- the padded release (add/remove neighbours: the number of records stays private) ----------

DEFAULT_COUNT_SHARE = 0.1
"""The count's share of ε by default (ε_c = ε/10; see the module docstring)."""
# The most dummy rows a plan may centre its padding on: past it ε_c is too small for the δ (the
# file would be mostly dummies, and a release would hold several hundred megabytes of them).
MAX_PADDING_SHIFT = 10**7
# A shuffle key is 64 bits; any tie redraws every key, which happens with probability below
# N²/2⁶⁵ (3·10⁻⁸ for a million rows), so 16 rounds fail only for a source that is not uniform.
_SHUFFLE_ROUNDS = 16
# α^{s−1}/(1 + α) is evaluated in floating point: the shift is the first whose value is below
# δ·(1 − 10⁻⁹), a margin far above the rounding of the power and the division; α itself is
# rounded up a few units in the last place so it is never below the sampler's exact α.
_DELTA_MARGIN = 1e-9
_ALPHA_ULPS = 4


def _check_delta(delta: Any) -> float:
    # No whole number lies strictly between 0 and 1: only a float can be a δ.
    if not isinstance(delta, float) or not math.isfinite(delta) or not 0.0 < delta < 1.0:
        raise EngineValidationError.single("delta", MUST_BE_PROBABILITY)
    return float(delta)


def _check_count_share(count_share: Any) -> float:
    message = COUNT_SHARE
    if (
        not isinstance(count_share, float)
        or not math.isfinite(count_share)
        or not 0.0 < count_share < 1.0
    ):
        raise EngineValidationError.single("count_share", message)
    return float(count_share)


@functools.lru_cache(maxsize=4096)
def count_calibration(count_epsilon: float) -> tuple[float, float, float]:
    """``(scale, alpha, epsilon_spent)`` of the count's discrete Laplace noise at ε_c: the engine's
    geometric calibration (``mechanisms.laplace_calibration("integer", 1, ε_c)``, the scale
    b ≥ 1/ε_c that :class:`~privacy_engine.mechanisms.GeometricMechanism` draws with), its
    α = e^{−1/b} rounded up a few units in the last place (never below the sampler's exact α,
    so every bound computed from it is conservative), and OpenDP's map at sensitivity 1.
    Memoized (pure)."""
    scale, spent = laplace_calibration("integer", 1, count_epsilon)
    alpha = math.exp(-1.0 / scale)
    for _ in range(_ALPHA_ULPS):
        alpha = math.nextafter(alpha, 1.0)
    return scale, alpha, spent


def padding_delta(alpha: float, shift: int) -> float:
    """P(L ≤ 1 − s) = α^{s−1}/(1 + α) for the two-sided geometric L (s ≥ 1): the probability,
    under either neighbour, of the outputs the privacy argument leaves to δ."""
    return alpha ** (shift - 1) / (1.0 + alpha)


def padding_shift(alpha: float, delta: float) -> int:
    """The smallest s ≥ 2 with α^{s−1}/(1 + α) ≤ δ (with a 10⁻⁹ relative margin for rounding).
    A shift beyond :data:`MAX_PADDING_SHIFT` is refused naming ``epsilon``."""
    too_many = EngineValidationError.single(
        "epsilon", PADDING_TOO_LARGE, rows=f"{MAX_PADDING_SHIFT:,}"
    )
    if not 0.0 < alpha < 1.0:
        raise too_many
    target = delta * (1.0 - _DELTA_MARGIN)
    estimate = 1.0 + math.log(target * (1.0 + alpha)) / math.log(alpha)
    if estimate > MAX_PADDING_SHIFT + 2:
        raise too_many
    shift = max(2, math.ceil(estimate))
    while padding_delta(alpha, shift) > target:
        shift += 1
    while shift > 2 and padding_delta(alpha, shift - 1) <= target:
        shift -= 1
    if shift > MAX_PADDING_SHIFT:
        raise too_many
    return shift


def _discrete_laplace_halfwidth(alpha: float, coverage: float) -> int:
    """The smallest h ≥ 0 with P(|L| ≤ h) ≥ ``coverage``: P(|L| > h) = 2α^{h+1}/(1 + α)."""
    miss = 1.0 - coverage
    halfwidth = max(0, math.ceil(math.log(miss * (1.0 + alpha) / 2.0) / math.log(alpha)) - 1)
    while halfwidth > 0 and 2.0 * alpha**halfwidth / (1.0 + alpha) <= miss:
        halfwidth -= 1
    while 2.0 * alpha ** (halfwidth + 1) / (1.0 + alpha) > miss:
        halfwidth += 1
    return halfwidth


@dataclass(frozen=True)
class PaddedPlan:
    """The public parameters of a padded release (Kerckhoffs: everything but the random bits).

    ``count_epsilon`` (ε_c) buys the padding's discrete Laplace noise, whose ratio is
    ``alpha`` = e^{−1/b} (rounded up); ``report_epsilon`` (ε_r) is each real record's randomized
    response; ``shift`` (s) centres the padding, Z = max(0, s + L). The release is
    (ε_c + ε_r, α^{s−1}/(1 + α))-DP for add/remove neighbours, within (``epsilon``, ``delta``).
    Build it with :func:`padded_plan`; a plan built by hand is checked for the same guarantee
    (EngineValidationError naming the field at fault)."""

    categories: int
    epsilon: float
    delta: float
    count_epsilon: float
    report_epsilon: float
    alpha: float
    shift: int

    def __post_init__(self) -> None:
        _check_categories(self.categories)
        _check_epsilon(self.epsilon)
        _check_delta(self.delta)
        for name in ("count_epsilon", "report_epsilon"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise EngineValidationError.single(name, MUST_BE_ABOVE_ZERO)
        if not self.count_epsilon + self.report_epsilon <= self.epsilon:
            raise EngineValidationError.single("epsilon", SHARES_EXCEED_EPSILON)
        keep_calibration(self.categories, self.report_epsilon)  # refuses too small an ε_r
        sampler_alpha = count_calibration(self.count_epsilon)[1]
        if not sampler_alpha <= self.alpha < 1.0:
            raise EngineValidationError.single(
                "alpha", "must be the count noise's ratio e^(-1/b) (or above it), below 1"
            )
        if (
            isinstance(self.shift, bool)
            or not isinstance(self.shift, Integral)
            or not 2 <= self.shift <= MAX_PADDING_SHIFT
            or padding_delta(self.alpha, int(self.shift)) > self.delta
        ):
            raise EngineValidationError.single(
                "shift", "must be a whole number ≥ 2 with alpha^(shift − 1)/(1 + alpha) ≤ delta"
            )

    @functools.cached_property
    def report_mechanism(self) -> RandomizedResponseMechanism:
        """The randomized response the real records get (at ε_r), for its published numbers."""
        return RandomizedResponseMechanism(categories=self.categories, epsilon=self.report_epsilon)

    @property
    def count_scale(self) -> float:
        """b, the scale of the padding's discrete Laplace noise (P(L = ℓ) ∝ e^{−|ℓ|/b})."""
        return count_calibration(self.count_epsilon)[0]

    @property
    def keep_probability(self) -> float:
        """p' (exact: a 32-bit fraction)."""
        return self.report_mechanism.keep_probability

    @property
    def switch_probability(self) -> float:
        """q = (1 − p')/(k − 1)."""
        return self.report_mechanism.switch_probability

    @property
    def epsilon_spent(self) -> float:
        """OpenDP's maps of the two parts, added: at most ``epsilon``."""
        return count_calibration(self.count_epsilon)[2] + self.report_mechanism.epsilon_spent

    @property
    def delta_spent(self) -> float:
        """α^{s−1}/(1 + α): at most ``delta``."""
        return padding_delta(self.alpha, self.shift)

    def records_halfwidth(self, coverage: float = 0.95) -> int:
        """h with P(|L| ≤ h) ≥ ``coverage``: the half-width of the published interval on n."""
        _normal_quantile(coverage)  # validates coverage
        return _discrete_laplace_halfwidth(self.alpha, coverage)


def padded_plan(
    categories: int, epsilon: float, delta: float, count_share: float = DEFAULT_COUNT_SHARE
) -> PaddedPlan:
    """The plan of a padded release at (ε, δ) for add/remove neighbours: ε_c = ε·``count_share``
    for the count, ε_r = ε − ε_c for the reports, and the smallest shift s ≥ 2 with
    α^{s−1}/(1 + α) ≤ δ. Bad input raises :class:`EngineValidationError` naming ``categories``,
    ``epsilon``, ``delta`` or ``count_share``."""
    categories = _check_categories(categories)
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta)
    share = _check_count_share(count_share)
    count_epsilon = epsilon * share
    report_epsilon = epsilon - count_epsilon
    while count_epsilon + report_epsilon > epsilon:  # rounding: keep the sum within ε
        report_epsilon = math.nextafter(report_epsilon, 0.0)
    if report_epsilon < MIN_EPSILON:
        raise EngineValidationError.single(
            "epsilon", REPORTS_TOO_LITTLE, minimum=f"{MIN_EPSILON:g}"
        )
    alpha = count_calibration(count_epsilon)[1]
    return PaddedPlan(
        categories=categories,
        epsilon=epsilon,
        delta=delta,
        count_epsilon=count_epsilon,
        report_epsilon=report_epsilon,
        alpha=alpha,
        shift=padding_shift(alpha, delta),
    )


def _output_dtype(categories: int) -> np.dtype:
    return np.dtype(np.uint8 if categories <= 256 else np.uint16)


def uniform_codes(
    count: int, categories: int, random_bytes: ByteSource | None = None
) -> np.ndarray:
    """``count`` independent categories, each exactly uniform over 0..k − 1 (16-bit draws with
    rejection, :func:`_uniform_below`); the dummy rows. dtype uint8 (k ≤ 256) or uint16."""
    categories = _check_categories(categories)
    return _uniform_below(
        int(count), categories, random_bytes or system_random_bytes, _output_dtype(categories)
    )


def secure_permutation(count: int, random_bytes: ByteSource | None = None) -> np.ndarray:
    """A uniformly random permutation of 0..count − 1 (int64 indices): the order of ``count``
    independent uniform 64-bit keys. The keys are exchangeable and "all distinct" is a symmetric
    event, so given it every order is equally likely; a tie redraws every key (not just the tied
    ones, which would not keep that symmetry)."""
    source = random_bytes or system_random_bytes
    count = int(count)
    for _ in range(_SHUFFLE_ROUNDS):
        keys = random_words(count, source, "<u8")
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        if not np.any(ordered[1:] == ordered[:-1]):
            return order
    raise RuntimeError("the byte source is not uniform: the shuffle's keys kept colliding")


def draw_padding(
    plan: PaddedPlan, releases: int = 1, noise: NoiseSource | None = None
) -> np.ndarray:
    """The numbers of dummy rows of ``releases`` independent releases, Z = max(0, s + L): OpenDP's
    discrete Laplace sampler through the engine's :class:`GeometricMechanism` (sensitivity 1,
    ε_c), applied to s (one vector of ``releases`` copies), truncated at 0."""
    mechanism = GeometricMechanism(sensitivity=1, epsilon=plan.count_epsilon, noise=noise)
    return np.maximum(mechanism.release([plan.shift] * int(releases)), 0)


def padded_release(
    codes: np.ndarray | list[int],
    plan: PaddedPlan,
    random_bytes: ByteSource | None = None,
    noise: NoiseSource | None = None,
) -> np.ndarray:
    """The padded file: each record's randomized response at ε_r, Z = max(0, s + L) dummy rows
    uniform over the k categories, shuffled together by a uniform permutation. Category codes,
    dtype uint8 (k ≤ 256) or uint16. ``random_bytes`` feeds the reports, dummies and shuffle
    (default ``os.urandom``); ``noise`` the count's OpenDP sampler (default: the engine's)."""
    if not isinstance(plan, PaddedPlan):
        raise EngineValidationError.single("plan", "must be a PaddedPlan (see padded_plan)")
    source = random_bytes or system_random_bytes
    reports = RandomizedResponseMechanism(
        categories=plan.categories, epsilon=plan.report_epsilon, random_bytes=source
    ).release(codes)
    padding = int(draw_padding(plan, 1, noise)[0])
    rows = np.concatenate([reports, uniform_codes(padding, plan.categories, source)])
    return rows[secure_permutation(rows.size, source)]


# Estimating from a padded file (post-processing: the file's counts and the public plan).


@dataclass(frozen=True)
class PaddedEstimates:
    """Estimates from a padded file: ``records`` n̂ = max(0, N − s) and its 95% interval,
    each category's share (public list order; they add up to 1) and its 95% interval, clipped
    to [0, 1]. ``rows`` is N, the file's length. With n̂ < 1 (the file is no longer than its
    expected padding) there is nothing to estimate shares from: each share is 1/k and each
    interval [0, 1]."""

    records: int
    records_ci95: list[int]
    shares: list[float]
    shares_ci95: list[list[float]]
    rows: int


def padded_counts(
    reports_or_counts: np.ndarray | list[int], plan: PaddedPlan, *, counts: bool | None = None
) -> np.ndarray:
    """The number of rows of each category (int64): counted from a padded file
    (``counts=False``), or checked when given (``counts=True``: k whole numbers ≥ 0). By default
    (``counts=None``) a one-dimensional input of exactly k values is read as the counts and any
    other as a file: a caller holding a file that may have exactly k rows says ``counts=False``."""
    if counts is None:
        try:
            shape = np.shape(reports_or_counts)
        except (TypeError, ValueError):  # ragged
            shape = ()
        counts = shape == (plan.categories,)
    if not counts:
        column = _check_codes(reports_or_counts, plan.categories, "reports")
        return np.bincount(column, minlength=plan.categories).astype(np.int64)
    try:
        observed = np.asarray(reports_or_counts)
    except (TypeError, ValueError, OverflowError):
        observed = np.zeros(0)
    if (
        observed.shape != (plan.categories,)
        or not np.issubdtype(observed.dtype, np.integer)
        or observed.min() < 0
    ):
        raise EngineValidationError.single(
            "counts", f"must be {plan.categories} whole numbers ≥ 0, one per category"
        )
    return observed.astype(np.int64)


def estimate_padded(
    reports_or_counts: np.ndarray | list[int], plan: PaddedPlan, *, counts: bool | None = None
) -> PaddedEstimates:
    """n̂ and the shares, with 95% intervals (see the module docstring), from a padded file or
    from its k category counts: ``counts`` as in :func:`padded_counts` (by default k values are
    the counts, any other length a file)."""
    if not isinstance(plan, PaddedPlan):
        raise EngineValidationError.single("plan", "must be a PaddedPlan (see padded_plan)")
    observed = padded_counts(reports_or_counts, plan, counts=counts)
    k, shift, rows = plan.categories, plan.shift, int(observed.sum())
    records = max(0, rows - shift)
    halfwidth = _discrete_laplace_halfwidth(plan.alpha, 0.95)
    records_high = max(0, min(rows, rows - shift + halfwidth))
    records_ci = [min(max(0, rows - shift - halfwidth), records_high), records_high]
    # The shares' interval: n within ±h' of n̂ (97.5%), and given n the reports' and dummies'
    # binomial noise within z·σ(n) (97.5%, normal): 95% together by the union bound.
    part = (1.0 + 0.95) / 2.0
    spread = _discrete_laplace_halfwidth(plan.alpha, part)
    low_n, high_n = max(1, rows - shift - spread), min(rows, rows - shift + spread)
    if records < 1 or high_n < 1:
        return PaddedEstimates(
            records=records,
            records_ci95=records_ci,
            shares=[1.0 / k] * k,
            shares_ci95=[[0.0, 1.0] for _ in range(k)],
            rows=rows,
        )
    mechanism = plan.report_mechanism
    gap, switch = mechanism._gap, mechanism.switch_probability
    centred = (observed - rows / k) / gap  # (r_j − N/k)/(p' − q)
    offset = (1.0 / k - switch) / gap  # (1/k − q)/(p' − q) = 1/k

    def shares_at(size: int) -> np.ndarray:
        """π̂_j if n were ``size``: ((r_j − (N − n)/k)/n − q)/(p' − q)."""
        return centred / size + offset

    def spread_at(size: int) -> float:
        """σ(n): √(n·V + (N − n)·(1/k)(1 − 1/k))/(n(p' − q)), decreasing in n on (0, N]."""
        variance = size * mechanism.worst_case_variance + (rows - size) * (k - 1) / k**2
        return math.sqrt(variance) / (size * gap)

    shares = shares_at(records)
    at_low, at_high = shares_at(low_n), shares_at(high_n)
    margin = _normal_quantile(part) * max(spread_at(low_n), spread_at(high_n))
    lows = np.clip(np.minimum(at_low, at_high) - margin, 0.0, 1.0)
    highs = np.clip(np.maximum(at_low, at_high) + margin, 0.0, 1.0)
    return PaddedEstimates(
        records=records,
        records_ci95=records_ci,
        shares=[float(v) for v in shares],
        shares_ci95=[[float(lo), float(hi)] for lo, hi in zip(lows, highs, strict=True)],
        rows=rows,
    )


# The preview (from the curator's declared size n and the plan, never the data).


def padded_expected_abs_error(n: int, plan: PaddedPlan) -> float:
    """E|π̂_j − π_j| ≈ √(2/π)·σ on n records, averaged over the categories (normal
    approximation), with σ² = (n·V̄ + s·(k − 1)/k²)/(n(p' − q))² + Var(L)·(k − 1)/(k·n)²: the
    reports' variance (as :meth:`RandomizedResponseMechanism.expected_abs_error`), the
    dummies' (about s of them, each category with probability 1/k) and n̂'s error L, which
    moves share j by L·(1/k − π_j)/n (the last term at its largest, a one-category table)."""
    n = check_declared_size(n)
    if not isinstance(plan, PaddedPlan):
        raise EngineValidationError.single("plan", "must be a PaddedPlan (see padded_plan)")
    mechanism, k = plan.report_mechanism, plan.categories
    dummy_variance = (k - 1) / k**2
    reports = (n * mechanism.average_variance + plan.shift * dummy_variance) / (
        n * mechanism._gap
    ) ** 2
    count = 2.0 * plan.alpha / (1.0 - plan.alpha) ** 2 * dummy_variance / n**2
    return math.sqrt(2.0 / math.pi) * math.sqrt(reports + count)


def padded_records_expected_abs_error(plan: PaddedPlan) -> float:
    """E|n̂ − n| ≤ E|L| = 2α/(1 − α²) (n̂ − n = max(−n, −s, L), so no larger than |L|)."""
    if not isinstance(plan, PaddedPlan):
        raise EngineValidationError.single("plan", "must be a PaddedPlan (see padded_plan)")
    return 2.0 * plan.alpha / (1.0 - plan.alpha**2)


__all__ = [
    "CHUNK_RECORDS",
    "DEFAULT_COUNT_SHARE",
    "INTERVAL_METHODS",
    "MAX_PADDING_SHIFT",
    "MAX_RESPONSE_CATEGORIES",
    "THRESHOLD_BITS",
    "ByteSource",
    "IntervalMethod",
    "PaddedEstimates",
    "PaddedPlan",
    "RandomizedResponseMechanism",
    "ShareEstimates",
    "count_calibration",
    "draw_padding",
    "estimate_padded",
    "estimate_shares",
    "expected_share_abs_error",
    "keep_calibration",
    "padded_counts",
    "padded_expected_abs_error",
    "padded_plan",
    "padded_records_expected_abs_error",
    "padded_release",
    "padding_delta",
    "padding_shift",
    "randomize",
    "secure_permutation",
    "share_halfwidth",
    "system_random_bytes",
    "truth_probability",
    "uniform_codes",
]
