"""Randomized response (privacy_engine/randomized_response.py): speed, bit source and accuracy.

Speed: the median of ``--runs`` runs of randomizing a column of 10⁵ and 10⁶ category codes
(k = 2 and k = 10, ε = 1) against writing the same column as a CSV file (pandas ``to_csv`` to a
temporary file) in the same run; the target is at most 2×. Beside them OpenDP's own
``make_randomized_response``, which takes one record per call: it is timed on ``--opendp-records``
records and extrapolated to the column's size (marked "~").

Bit source: fair coins from OpenDP's ``make_randomized_response_bitvec`` (f = 1 on an all-zero
bit vector, privacy map 0), timed on ``--bitvec-mbit`` Mbit and extrapolated to 64 Mbit, against
``os.urandom`` on 64 Mbit: the reason the engine reads its bits from ``os.urandom``.

Accuracy: the mean absolute error of the estimated shares, over ``--releases`` releases of one
fixed table of ``--accuracy-records`` records, for ours and for OpenDP's mechanism at the same ε
and k (both estimated with the unbiased (λ − q)/(p − q) from their own keep-probability p), beside
the preview's promise and ours over ``--many-releases`` more releases (cheap for ours, so the
comparison with the preview is sharp), with the coverage of our published 95% intervals.

    .venv/bin/python bench/randomized_response.py [--runs 5] [--releases 100]
"""

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import opendp.prelude as dp
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from privacy_engine.randomized_response import (
    RandomizedResponseMechanism,
    expected_share_abs_error,
)

dp.enable_features("contrib")

EPSILON = 1.0


def column(records: int, categories: int) -> np.ndarray:
    """Synthetic codes with Zipf-like shares (benchmark data, not noise)."""
    generator = np.random.default_rng(categories)
    weights = 1.0 / np.arange(1, categories + 1)
    return generator.choice(categories, size=records, p=weights / weights.sum()).astype(np.int64)


def median_seconds(function, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def opendp_mechanism(categories: int, epsilon: float):
    """OpenDP's k-ary randomized response with the largest keep-probability its map puts at ≤ ε
    (the ideal e^ε/(e^ε + k − 1), nudged down a float at a time if rounding puts it above)."""
    probability = 1.0 / (1.0 + (categories - 1) * math.exp(-epsilon))
    while True:
        measurement = dp.m.make_randomized_response(list(range(categories)), probability, T=dp.i32)
        if measurement.map(1) <= epsilon:
            return measurement, probability
        probability = math.nextafter(probability, 0.0)


def opendp_release(measurement, codes: np.ndarray) -> np.ndarray:
    return np.fromiter((measurement(int(c)) for c in codes), dtype=np.int64, count=codes.size)


def speed(sizes: list[int], runs: int, opendp_records: int) -> None:
    print(f"\nSpeed at ε = {EPSILON:g}: median of {runs} runs (seconds)")
    print(
        f"{'records':>9} {'k':>3} {'ours':>8} {'CSV write':>10} {'ours/CSV':>9} "
        f"{'OpenDP':>9} {'OpenDP/ours':>12}"
    )
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "column.csv")
        for records in sizes:
            for categories in (2, 10):
                codes = column(records, categories)
                frame = pd.DataFrame({"category": codes})
                ours = RandomizedResponseMechanism(categories=categories, epsilon=EPSILON)
                ours.release(codes[:1000])  # warm up
                ours_time = median_seconds(lambda m=ours, c=codes: m.release(c), runs)
                csv_time = median_seconds(lambda f=frame: f.to_csv(path, index=False), runs)
                theirs, _ = opendp_mechanism(categories, EPSILON)
                sample = codes[:opendp_records]
                per_record = (
                    median_seconds(
                        lambda m=theirs, c=sample: opendp_release(m, c), max(1, runs // 2)
                    )
                    / sample.size
                )
                opendp_time = per_record * records
                print(
                    f"{records:>9,} {categories:>3} {ours_time:>8.4f} {csv_time:>10.4f} "
                    f"{ours_time / csv_time:>9.2f} {'~' + format(opendp_time, '.1f'):>9} "
                    f"{opendp_time / ours_time:>12,.0f}"
                )
    print(f"OpenDP: one record per call, timed on {opendp_records:,} records and extrapolated (~).")


def bit_sources(bitvec_mbit: float) -> None:
    bits = int(bitvec_mbit * 2**20)
    measurement = dp.m.make_randomized_response_bitvec(
        dp.bitvector_domain(max_weight=1), dp.discrete_distance(), f=1.0
    )
    zeros = bytes(bits // 8)
    start = time.perf_counter()
    coins = np.unpackbits(np.frombuffer(measurement(zeros), dtype=np.uint8))
    opendp_time = time.perf_counter() - start
    urandom_time = median_seconds(lambda: os.urandom(8 * 2**20), 5)
    opendp_64 = opendp_time * 64 / bitvec_mbit
    print("\nUniform random bits: 64 Mbit (seconds)")
    print(f"{'source':>44} {'64 Mbit':>9} {'ns/bit':>7}")
    print(
        f"{'OpenDP randomized_response_bitvec, f = 1':>44} {'~' + format(opendp_64, '.1f'):>9} "
        f"{opendp_time / bits * 1e9:>7.1f}"
    )
    print(f"{'os.urandom':>44} {urandom_time:>9.3f} {urandom_time / 2**26 * 1e9:>7.2f}")
    print(
        f"OpenDP timed on {bitvec_mbit:g} Mbit (share of ones {coins.mean():.4f}, privacy map "
        f"{measurement.map(1):g}) and extrapolated (~)."
    )


def mean_and_error(values: list[float]) -> str:
    """``mean ± standard error`` of the mean."""
    error = statistics.stdev(values) / math.sqrt(len(values))
    return f"{statistics.fmean(values):.4f} ± {error:.4f}"


def accuracy(records: int, releases: int, many_releases: int) -> None:
    print(
        f"\nAccuracy at ε = {EPSILON:g}: mean |estimated share − true share| (± standard error) "
        f"over {releases} releases of one {records:,}-record table"
    )
    print(
        f"{'k':>3} {'preview':>8} {'ours':>17} {'OpenDP':>17} "
        f"{'ours, ' + format(many_releases, ',') + ' releases':>22} {'95% CI covers':>14} "
        f"{'ours p′':>12} {'OpenDP p':>12}"
    )
    for categories in (2, 10):
        codes = column(records, categories)
        truth = np.bincount(codes, minlength=categories) / records
        ours = RandomizedResponseMechanism(categories=categories, epsilon=EPSILON)
        theirs, probability = opendp_mechanism(categories, EPSILON)
        switch = (1.0 - probability) / (categories - 1)
        covered = []

        def ours_error(mechanism=ours, codes=codes, truth=truth, covered=covered) -> float:
            estimate = mechanism.estimate(mechanism.release(codes))
            covered.append(((estimate.ci_low <= truth) & (truth <= estimate.ci_high)).mean())
            return float(np.abs(estimate.shares - truth).mean())

        theirs_errors = []
        for _ in range(releases):
            shares = np.bincount(opendp_release(theirs, codes), minlength=categories) / records
            estimate = (shares - switch) / (probability - switch)
            theirs_errors.append(float(np.abs(estimate - truth).mean()))
        ours_errors = [ours_error() for _ in range(releases)]
        many = [ours_error() for _ in range(many_releases)]
        preview = expected_share_abs_error(
            declared_size=records, categories=categories, epsilon=EPSILON
        )
        print(
            f"{categories:>3} {preview:>8.4f} {mean_and_error(ours_errors):>17} "
            f"{mean_and_error(theirs_errors):>17} {mean_and_error(many):>22} "
            f"{statistics.fmean(covered):>14.3f} {ours.keep_probability:>12.9f} "
            f"{probability:>12.9f}"
        )
    print(
        "preview: expected_share_abs_error from the declared size, before running (category "
        "average). Coverage: the published (worst-case variance) 95% intervals, all releases."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--opendp-records", type=int, default=10_000)
    parser.add_argument("--bitvec-mbit", type=float, default=4.0)
    parser.add_argument("--accuracy-records", type=int, default=1_000)
    parser.add_argument("--releases", type=int, default=100)
    parser.add_argument("--many-releases", type=int, default=5_000)
    args = parser.parse_args()
    speed([int(s) for s in args.sizes.split(",")], args.runs, args.opendp_records)
    bit_sources(args.bitvec_mbit)
    accuracy(args.accuracy_records, args.releases, args.many_releases)


if __name__ == "__main__":
    main()
