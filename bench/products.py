"""Tabular products benchmark (issue 9, point 6), so far the quantile: time and accuracy.

For 10⁵ and 10⁶ rows of an income-like column (lognormal, clamped to [0, 200,000], stored in the
columnar layout), and the quartiles and median at several ε:

- time: median of ``--runs`` releases of the ``quantile`` kind (in-process engine: read the
  column, rank counts over 1,001 candidates, three noisy choices), against the same quantiles
  computed without privacy from the same Parquet column (read, clamp, ``np.quantile``) in the
  same process; the ratio of the two;
- accuracy: the median over ``--draws`` releases of the rank error |rank(released) − α·n| / n,
  beside OpenDP's own ``make_private_quantile`` (the nearest peer: same candidates, same α, its
  scale calibrated by OpenDP to the same ε per quantile, on the raw vector) and its time.

    .venv/bin/python bench/products.py [--runs 5] [--draws 30]
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import opendp.prelude as dp
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import privacy_engine as pe
from privacy_engine.columnar import ColumnarWriter, number_field, stored_names
from privacy_engine.kinds.quantile import CANDIDATES, candidates_of
from privacy_engine.schema import NumericColumn

dp.enable_features("contrib")

LOWER, UPPER = 0.0, 200_000.0
QUANTILES = [0.25, 0.5, 0.75]
EPSILONS = [0.01, 0.1, 1.0]
SCHEMA = {"columns": {"income": {"kind": "numeric", "lower": LOWER, "upper": UPPER}}}


def stored_table(rows: int, folder: Path) -> tuple[Path, np.ndarray]:
    generator = np.random.default_rng(rows)
    values = np.round(generator.lognormal(10.3, 0.8, rows), 2)
    path = folder / f"income-{rows}.parquet"
    with ColumnarWriter(path, ["income"]) as writer:
        writer.write([pc.cast(pa.array(values), pa.string())])
    return path, np.clip(values, LOWER, UPPER)


def release(path: Path, epsilon: float) -> dict:
    result = pe.release_stored_table(
        path,
        schema=SCHEMA,
        definition={"kind": "pure_dp", "epsilon": epsilon},
        queries=[{"kind": "quantile", "column": "income", "quantiles": QUANTILES}],
    )
    return result.statistics[0].value


def without_privacy(path: Path) -> list[float]:
    field = number_field(stored_names(path).index("income"))
    values = pq.read_table(str(path), columns=[field]).column(field).to_numpy()
    values = np.clip(values[~np.isnan(values)], LOWER, UPPER)
    return list(np.quantile(values, QUANTILES))


def opendp_quantile(alpha: float, epsilon: float):
    """OpenDP's make_private_quantile on the same candidates, its scale found by OpenDP's own
    binary search so that one record costs ``epsilon``."""
    column = NumericColumn(lower=LOWER, upper=UPPER)
    candidates = list(candidates_of(column))
    space = (
        dp.vector_domain(dp.atom_domain(bounds=(LOWER, UPPER), nan=False)),
        dp.symmetric_distance(),
    )

    def build(scale: float):
        return dp.m.make_private_quantile(
            *space, dp.max_divergence(), candidates=candidates, alpha=alpha, scale=scale
        )

    return dp.binary_search_chain(build, d_in=1, d_out=epsilon)


def rank_error(values: np.ndarray, released: float, alpha: float) -> float:
    """|rank(released) − α·n| / n, with the rank of a value the number of values below it."""
    rank = np.searchsorted(values, released, side="left")
    return abs(rank - alpha * len(values)) / len(values)


def median_seconds(function, *arguments, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function(*arguments)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--draws", type=int, default=30)
    parser.add_argument("--sizes", default="100000,1000000")
    args = parser.parse_args()
    print(
        f"Quantiles {QUANTILES} of a lognormal income column on [0, 200,000], {CANDIDATES:,} "
        f"candidates; times are medians of {args.runs} runs, errors medians of {args.draws} draws"
    )
    print()
    print(
        "| rows | ε | ours s | no privacy s | ratio | ours rank error | OpenDP rank error | "
        "OpenDP s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for rows in [int(size) for size in args.sizes.split(",")]:
            path, values = stored_table(rows, Path(folder))
            ordered = np.sort(values)
            without_privacy(path)  # warm: imports, page cache
            for epsilon in EPSILONS:
                release(path, epsilon)
                ours = median_seconds(release, path, epsilon, runs=args.runs)
                plain = median_seconds(without_privacy, path, runs=args.runs)
                our_errors, their_errors, their_times = [], [], []
                share = epsilon / len(QUANTILES)
                theirs = {alpha: opendp_quantile(alpha, share) for alpha in QUANTILES}
                raw = values.tolist()
                for _ in range(args.draws):
                    published = release(path, epsilon)
                    our_errors.append(
                        statistics.mean(
                            rank_error(ordered, published[f"{a:g}"], a) for a in QUANTILES
                        )
                    )
                    started = time.perf_counter()
                    answers = {alpha: theirs[alpha](raw) for alpha in QUANTILES}
                    their_times.append(time.perf_counter() - started)
                    their_errors.append(
                        statistics.mean(rank_error(ordered, answers[a], a) for a in QUANTILES)
                    )
                our_error = statistics.median(our_errors)
                their_error = statistics.median(their_errors)
                print(
                    f"| {rows:,} | {epsilon:g} | {ours:.3f} | {plain:.3f} | {ours / plain:.1f}× | "
                    f"{our_error:.4%} | {their_error:.4%} | {statistics.median(their_times):.3f} |"
                )


if __name__ == "__main__":
    main()
