"""Engine benchmark: speed and accuracy of a release, printed as tables.

Speed: median wall time of `run_queries` over several runs against a non-private baseline (the
same exact statistics computed with pandas, no noise) in the same process, at several table sizes.
Accuracy: empirical mean absolute error and 95% coverage of the published intervals over many
releases, against the formulas the preview promises.

    .venv/bin/python bench/engine.py [--runs 5] [--sizes 1000,10000,100000]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import privacy_engine as pe

SCHEMA = {
    "columns": {
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other"},
    },
    "declared_size": 10000,
}
QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "sum", "column": "age"},
    {"kind": "mean", "column": "age"},
]
DEFINITION = {"kind": "pure_dp", "epsilon": 1.0}


def table(rows: int) -> pd.DataFrame:
    generator = np.random.default_rng(1)  # synthetic benchmark data, not noise
    return pd.DataFrame(
        {
            "age": generator.integers(0, 100, rows).astype(str),
            "sex": generator.choice(["F", "M"], rows),
        }
    )


def baseline(frame: pd.DataFrame) -> None:
    ages = pd.to_numeric(frame["age"], errors="coerce").clip(0, 100)
    _ = (len(frame), frame["sex"].value_counts(), ages.sum(), ages.mean())


def median_seconds(function, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def speed(sizes: list[int], runs: int) -> None:
    print(f"\nSpeed: median of {runs} runs (seconds)")
    print(f"{'rows':>10} {'baseline':>10} {'release':>10} {'ratio':>8}")
    for rows in sizes:
        frame = table(rows)
        base = median_seconds(lambda f=frame: baseline(f), runs)
        private = median_seconds(
            lambda f=frame: pe.run_queries(
                f, schema=SCHEMA, definition=DEFINITION, queries=QUERIES
            ),
            runs,
        )
        print(f"{rows:>10} {base:>10.4f} {private:>10.4f} {private / base:>8.1f}")


DEFINITIONS = {
    "ε-DP": DEFINITION,
    "(ε, δ)-DP": {"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-8},
    "Blowfish θ=5": {
        "kind": "blowfish",
        "epsilon": 1.0,
        "policy": {"graph": "distance_threshold", "column": "age", "theta": 5},
    },
}


def accuracy(releases: int) -> None:
    for label, definition in DEFINITIONS.items():
        accuracy_of(label, definition, releases)


def accuracy_of(label: str, definition: dict, releases: int) -> None:
    frame = table(10000)
    truth = {
        "count": 10000,
        "sum": float(pd.to_numeric(frame["age"]).sum()),
        "mean": float(pd.to_numeric(frame["age"]).mean()),
    }
    planned = pe.preview(schema=SCHEMA, definition=definition, queries=QUERIES)
    errors = {k: [] for k in truth}
    covered = {k: 0 for k in truth}
    for _ in range(releases):
        result = pe.run_queries(frame, schema=SCHEMA, definition=definition, queries=QUERIES)
        for stat in result.statistics:
            if stat.kind in truth:
                errors[stat.kind].append(abs(stat.value - truth[stat.kind]))
                low, high = stat.ci95
                covered[stat.kind] += low <= truth[stat.kind] <= high
    print(f"\nAccuracy under {label} over {releases} releases of 10,000 rows at ε = 1")
    print(
        f"{'statistic':>10} {'promised E|err|':>16} {'measured':>10} {'ratio':>7} "
        f"{'95% coverage':>13}"
    )
    for entry in planned:
        kind = entry["kind"]
        if kind not in truth:
            continue
        measured = statistics.fmean(errors[kind])
        promised = entry["expected_abs_error"]
        if not promised:
            print(f"{kind:>10} {'exact':>16} {statistics.fmean(errors[kind]):>10.4f}")
            continue
        print(
            f"{kind:>10} {promised:>16.4f} {measured:>10.4f} {measured / promised:>7.2f} "
            f"{covered[kind] / releases:>13.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--releases", type=int, default=1000)
    args = parser.parse_args()
    speed([int(s) for s in args.sizes.split(",")], args.runs)
    accuracy(args.releases)


if __name__ == "__main__":
    main()
