"""Synthetic microdata (issue 10, point 3): the actual error of every 1- and 2-way marginal of
generated tables against the table they were generated from, side by side with the alternatives,
and time.

The table is generated here (public, never real data): ``--rows`` records of six columns linked
as a small Bayesian network (sex → job → ward → length of stay, age → job, age → smoker), age a
numeric column cut into five bins. For each ε, the median over ``--runs`` releases of the total
variation distance (TVD, ½·Σ|p − q| over a marginal's cells, 0 to 1) of each marginal of the
generated table from the true one, averaged over the 6 one-way and the 15 two-way marginals (and
the worst two-way), for:

- ``engine MST``: the ``synthetic`` kind (privacy_engine/synthetic.py): noisy 1-way marginals,
  a spanning tree of pairs chosen by the exponential mechanism, the chosen pairs measured, fitted
  by Private-PGM (mbi), rows drawn by the engine's ancestral sampler on ``os.urandom`` bits;
- ``independent``: all ε on the 1-way marginals (the ``histogram`` kind, equal weights), each
  column sampled on its own from its noisy marginal (negatives set to 0);
- ``OpenDP MST`` and ``OpenDP AIM``: ``opendp.extras.mbi`` (``opendp[mbi]``) on the same rows,
  keys declared for every column (age as its bin label), pure ε-DP at the same ε, one record per
  person, sampled with ``synthesize(method="sample")`` (independent records, as the engine's);
  ``--opendp-runs`` each (about a minute per release here), only when ``opendp.extras.mbi`` and
  ``mbi`` import;
- ``OpenDP MST*``: the same with OpenDP's default ``synthesize()`` (``method="round"``). mbi
  1.1.0's rounding gives each column, within a group of its parent's value, values increasing
  with the row's position, so two columns sampled given the same parent come out comonotone:
  pairs outside the tree get a large spurious dependence (the engine draws records independently).

The bench measures error against the real table; a release never does (that would leak).

    .venv/bin/python bench/synthetic.py [--rows 10000] [--runs 5]
        [--opendp-runs 3] [--epsilons 0.5 1 4] [--timing-rows 100000 1000000]

Then the time of a release (aggregates, noise, the fit and the rows) on 10⁵ and 10⁶ records,
against the same computation without noise in the same process.
"""

import argparse
import contextlib
import io
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd

import privacy_engine.synthetic as synthetic
from privacy_engine import run_queries

AGE_EDGES = [0, 20, 35, 50, 65, 100]
AGE_LABELS = ["[0, 20)", "[20, 35)", "[35, 50)", "[50, 65)", "[65, 100]"]
CATEGORIES = {
    "sex": ["F", "M"],
    "job": ["nurse", "doctor", "clerk", "porter"],
    "ward": ["surgery", "medicine", "children", "maternity", "psychiatry"],
    "stay": ["short", "medium", "long"],
    "smoker": ["no", "yes"],
}
COLUMNS = ["sex", "age", "job", "ward", "stay", "smoker"]


def schema(rows: int) -> dict:
    columns = {
        name: {"kind": "categorical", "categories": cats, "other": "other", "fill": cats[0]}
        for name, cats in CATEGORIES.items()
    }
    columns["age"] = {"kind": "numeric", "lower": 0, "upper": 100, "fill": 40}
    return {"columns": columns, "declared_size": rows}


def generated_table(rows: int, seed: int = 0) -> pd.DataFrame:
    """The public test table: a small Bayesian network with strong and weak links."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(2, rows, p=[0.55, 0.45])
    age = np.clip(rng.gamma(6.0, 7.0, rows), 0, 100)
    age_bin = np.searchsorted(AGE_EDGES, age, side="right") - 1
    age_bin = np.minimum(age_bin, 4)
    job_p = np.array(
        [
            [[0.70, 0.10, 0.15, 0.05], [0.15, 0.45, 0.15, 0.25]],  # young
            [[0.45, 0.35, 0.15, 0.05], [0.10, 0.60, 0.20, 0.10]],  # older
        ]
    )
    older = (age_bin >= 2).astype(int)
    job = np.array([rng.choice(4, p=job_p[o, s]) for o, s in zip(older, sex, strict=True)])
    ward_p = np.array(
        [
            [0.15, 0.25, 0.25, 0.30, 0.05],
            [0.45, 0.35, 0.10, 0.05, 0.05],
            [0.20, 0.40, 0.10, 0.10, 0.20],
            [0.30, 0.30, 0.15, 0.15, 0.10],
        ]
    )
    ward = np.array([rng.choice(5, p=ward_p[j]) for j in job])
    stay_p = np.array(
        [[0.6, 0.3, 0.1], [0.3, 0.5, 0.2], [0.8, 0.15, 0.05], [0.5, 0.4, 0.1], [0.1, 0.3, 0.6]]
    )
    stay = np.array([rng.choice(3, p=stay_p[w]) for w in ward])
    smoker = (rng.random(rows) < np.where(age_bin <= 1, 0.35, 0.15)).astype(int)
    return pd.DataFrame(
        {
            "sex": np.asarray(CATEGORIES["sex"])[sex],
            "age": [f"{v:.1f}" for v in age],
            "job": np.asarray(CATEGORIES["job"])[job],
            "ward": np.asarray(CATEGORIES["ward"])[ward],
            "stay": np.asarray(CATEGORIES["stay"])[stay],
            "smoker": np.asarray(CATEGORIES["smoker"])[smoker],
        }
    )


def age_label(values) -> list[str]:
    bins = np.minimum(np.searchsorted(AGE_EDGES, np.asarray(values, float), side="right") - 1, 4)
    return [AGE_LABELS[b] for b in bins]


def labelled(frame: pd.DataFrame) -> dict[str, list]:
    """Every column as bucket labels (age as its bin)."""
    out = {c: frame[c].astype(str).tolist() for c in COLUMNS if c != "age"}
    out["age"] = age_label(frame["age"])
    return out


def errors(generated: dict[str, list], real: dict[str, list]) -> tuple[float, float, float]:
    one, two = synthetic.marginal_errors(generated, real, COLUMNS)
    return float(np.mean(one)), float(np.mean(two)), float(np.max(two))


class NoNoise:
    """The same computation without privacy: every mechanism hands its exact input back (the
    engine's convention for "no noise"; the tree's choice is then the best pair each time)."""

    def sample(self, measurement, value):
        return value


def engine_table(frame: pd.DataFrame, epsilon: float, rows: int, noise=None) -> pd.DataFrame:
    query = {"kind": "synthetic", "columns": COLUMNS, "bins": {"age": AGE_EDGES}}
    result = run_queries(
        frame,
        schema=schema(rows),
        definition={"kind": "pure_dp", "epsilon": epsilon},
        queries=[query],
        noise=noise,
    )
    return synthetic.synthetic_frame(result.statistics[0].microdata)


def engine_mst(frame: pd.DataFrame, epsilon: float, rows: int) -> dict[str, list]:
    return labelled(engine_table(frame, epsilon, rows))


def timing(sizes: list[int], runs: int, epsilon: float = 1.0) -> None:
    """Seconds per release (aggregates, noise, fit, rows: at most 200,000 of them) against the
    same computation without noise, in the same process (median of ``runs``)."""
    print(f"\nTime per synthetic release, ε = {epsilon:g}, median of {runs} (same process)\n")
    header = f"{'rows':>10} {'private s':>10} {'no noise s':>11} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    for rows in sizes:
        frame = generated_table(rows)
        private, exact = [], []
        for _ in range(runs):
            for noise, out in ((None, private), (NoNoise(), exact)):
                started = time.perf_counter()
                engine_table(frame, epsilon, rows, noise)
                out.append(time.perf_counter() - started)
        p, e = statistics.median(private), statistics.median(exact)
        print(f"{rows:>10,} {p:>10.2f} {e:>11.2f} {p / e:>6.2f}", flush=True)


def independent(frame: pd.DataFrame, epsilon: float, rows: int) -> dict[str, list]:
    queries = [
        {"kind": "histogram", "column": c}
        if c != "age"
        else {"kind": "histogram", "column": "age", "bins": AGE_EDGES}
        for c in COLUMNS
    ]
    result = run_queries(
        frame,
        schema=schema(rows),
        definition={"kind": "pure_dp", "epsilon": epsilon},
        queries=queries,
    )
    rng = np.random.default_rng()
    counts = [
        np.clip(np.asarray(list(s.value.values()), float), 0, None) for s in result.statistics
    ]
    total = max(1, round(float(np.mean([c.sum() for c in counts]))))
    out = {}
    for name, stat, cells in zip(COLUMNS, result.statistics, counts, strict=True):
        labels = list(stat.value)
        p = cells / cells.sum() if cells.sum() > 0 else np.full(len(cells), 1 / len(cells))
        out[name] = list(np.asarray(labels, dtype=object)[rng.choice(len(labels), total, p=p)])
    return out


def opendp_algorithm(name: str, method: str = "sample"):
    def run(frame: pd.DataFrame, epsilon: float, rows: int) -> dict[str, list]:
        import opendp.prelude as dp
        import polars as pl

        dp.enable_features("contrib")
        data = pl.DataFrame(labelled(frame))
        keys = {c: CATEGORIES[c] for c in CATEGORIES} | {"age": AGE_LABELS}
        algorithm = dp.mbi.MST() if name == "MST" else dp.mbi.AIM()
        context = dp.Context.compositor(
            data=data.lazy(),
            privacy_unit=dp.unit_of(contributions=1),
            privacy_loss=dp.loss_of(epsilon=epsilon),
            split_evenly_over=1,
        )
        # OpenDP's binary searches print nothing, but its AIM may warn: keep the table clean.
        with contextlib.redirect_stderr(io.StringIO()):
            table = (
                context.query()
                .select(*COLUMNS)
                .contingency_table(keys=keys, algorithm=algorithm)
                .release()
            )
            generated = table.synthesize(method=method)
        # OpenDP adds a null bucket per column (unknown values): shown as "null".
        return {c: ["null" if v is None else v for v in generated[c].to_list()] for c in COLUMNS}

    return run


def opendp_available() -> bool:
    try:
        import mbi  # noqa: F401
        from opendp.extras import mbi as _  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--opendp-runs", type=int, default=3)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 4.0])
    parser.add_argument("--opendp-epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--timing-rows", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--timing-runs", type=int, default=3)
    args = parser.parse_args()

    frame = generated_table(args.rows)
    real = labelled(frame)
    methods = {"engine MST": engine_mst, "independent": independent}
    runs = {"engine MST": args.runs, "independent": args.runs}
    if opendp_available():
        methods |= {
            "OpenDP MST": opendp_algorithm("MST"),
            "OpenDP AIM": opendp_algorithm("AIM"),
            "OpenDP MST*": opendp_algorithm("MST", "round"),
        }
        runs |= {"OpenDP MST": args.opendp_runs, "OpenDP AIM": args.opendp_runs}
        runs["OpenDP MST*"] = args.opendp_runs
    else:
        print("opendp[mbi] not importable: OpenDP's MST and AIM left out\n")

    print(
        f"{args.rows:,} generated rows, {len(COLUMNS)} columns; TVD of the generated table's "
        "marginals from the true ones, median over runs (lower is better); pure ε-DP\n"
    )
    header = (
        f"{'method':<13} {'ε':>5} {'runs':>4} {'1-way mean':>11} {'2-way mean':>11} "
        f"{'2-way max':>10} {'s / release':>12}"
    )
    print(header)
    print("-" * len(header))
    for epsilon in args.epsilons:
        for name, method in methods.items():
            if name.startswith("OpenDP") and epsilon not in args.opendp_epsilons:
                continue
            measured, seconds = [], []
            for _ in range(runs[name]):
                started = time.perf_counter()
                generated = method(frame, epsilon, args.rows)
                seconds.append(time.perf_counter() - started)
                measured.append(errors(generated, real))
            one, two, worst = (statistics.median(m[k] for m in measured) for k in range(3))
            print(
                f"{name:<13} {epsilon:>5g} {runs[name]:>4} {one:>11.4f} {two:>11.4f} "
                f"{worst:>10.4f} {statistics.median(seconds):>12.1f}",
                flush=True,
            )
    timing(args.timing_rows, args.timing_runs)


if __name__ == "__main__":
    main()
