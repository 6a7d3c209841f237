"""Scale benchmark: upload+convert and release of a survey-like table at 10⁵, 10⁶ (and 10⁷) rows.

For each size it prints, as markdown tables:

1. **Upload+convert**: ``table_convert`` (strict CSV checks, typed Parquet in batches) against
   pyarrow's own CSV-to-Parquet conversion (``pyarrow.csv.read_csv`` + ``pyarrow.parquet
   .write_table``) of the same file. Each run is a fresh child process doing only that
   conversion, so its time and its peak memory (the child's own peak RSS) never mix with
   another measurement's; the two alternate A B A B so drift hits both.
2. **Release**: one ε-DP plan (a count, two sums, a mean, a categorical and a numeric histogram)
   through ``release_stored_table`` per engine, its ``timings`` split, against plain
   pyarrow/numpy/pandas computing the same exact aggregates from the same Parquet columns (read,
   drop missing, clip, sum, value_counts, np.histogram) in the same process, alternated; and the
   peak memory of a fresh child doing one release. The plan runs twice: rows as the unit, and
   with a person key (at most one row per person, the first in file order).

Times are medians of several runs (5 at 10⁵, 3 at 10⁶, 2 at 10⁷ unless ``--runs``). Generated
files are kept under /tmp/bench-scale/ and reused.

    .venv/bin/python bench/scale.py                 # 10⁵ and 10⁶ rows
    .venv/bin/python bench/scale.py --big           # and 10⁷ rows
    .venv/bin/python bench/scale.py --engines in_process,out_of_core,distributed
    .venv/bin/python bench/scale.py --profile convert --sizes 1000000   # cProfile, top entries
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import privacy_engine as pe  # noqa: E402
from privacy_engine.columnar import number_field, stored_names, text_field  # noqa: E402
from privacy_engine.engines import DistributedEngine, EngineChoice  # noqa: E402
from releases.services.tables import table_convert  # noqa: E402

DATA = Path("/tmp/bench-scale")
GENERATE_BATCH_ROWS = 1_000_000
DEFAULT_RUNS = {10**5: 5, 10**6: 3, 10**7: 2}

REGIONS = ["North", "South", "East", "West", "Centre", "Coast", "Hills", "Islands"]
EDUCATION = ["none", "primary", "secondary", "tertiary", "doctorate"]
AGE_EDGES = [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
BOUNDS = {"age": (0.0, 100.0), "income": (0.0, 200_000.0), "hours": (0.0, 80.0)}

SCHEMA = {
    "columns": {
        "person_id": {"kind": "identifier"},
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
        "income": {"kind": "numeric", "lower": 0, "upper": 200_000},
        "hours": {"kind": "numeric", "lower": 0, "upper": 80},
        "region": {"kind": "categorical", "categories": REGIONS, "other": "other"},
    },
    "declared_size": 1_000_000,
}
PERSON_SCHEMA = {**SCHEMA, "person_key": "person_id", "max_rows_per_person": 1}
QUERIES = [
    {"kind": "count"},
    {"kind": "sum", "column": "income"},
    {"kind": "sum", "column": "hours"},
    {"kind": "mean", "column": "age"},
    {"kind": "histogram", "column": "region"},
    {"kind": "histogram", "column": "age", "bins": AGE_EDGES},
]
DEFINITION = {"kind": "pure_dp", "epsilon": 1.0}
PLANS = {"rows": SCHEMA, "person key": PERSON_SCHEMA}


# --- data ---------------------------------------------------------------------------------------


def _with_missing(values: pa.Array, generator: np.random.Generator, share: float) -> pa.Array:
    missing = pa.array(generator.random(len(values)) < share)
    return pc.if_else(missing, pa.scalar(None, values.type), values)


def _chunk(start: int, rows: int, generator: np.random.Generator) -> pa.Table:
    """Ten columns of a survey: a person id (5% of rows repeat an earlier person), numbers with
    a few missing values, categories with a few missing and unknown values."""
    ids = np.arange(start, start + rows)
    repeat = generator.random(rows) < 0.05
    ids[repeat] = generator.integers(0, start + rows, int(repeat.sum()))
    person = pc.binary_join_element_wise("P", pa.array(ids).cast(pa.string()), "")
    region_values = np.array([*REGIONS, "Unknown"])
    region_weights = np.array([0.2, 0.18, 0.15, 0.15, 0.12, 0.1, 0.05, 0.04, 0.01])
    region = region_values[generator.choice(9, rows, p=region_weights)]
    income = np.round(generator.lognormal(10.3, 0.8, rows), 2)
    return pa.table(
        {
            "person_id": person,
            "age": generator.integers(0, 100, rows),
            "sex": generator.choice(np.array(["F", "M", "X"]), rows, p=[0.49, 0.49, 0.02]),
            "region": _with_missing(pa.array(region), generator, 0.01),
            "education": generator.choice(np.array(EDUCATION), rows),
            "income": _with_missing(pa.array(income), generator, 0.02),
            "hours": _with_missing(pa.array(generator.integers(0, 90, rows)), generator, 0.03),
            "household": generator.integers(1, 9, rows),
            "score": np.round(generator.random(rows), 4),
            "smoker": generator.choice(np.array(["yes", "no"]), rows, p=[0.2, 0.8]),
        }
    )


def generated_csv(rows: int) -> Path:
    """The survey CSV of ``rows`` rows, generated once (synthetic data, not noise)."""
    path = DATA / f"survey-{rows}.csv"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    generator = np.random.default_rng(rows)
    writer = None
    try:
        for start in range(0, rows, GENERATE_BATCH_ROWS):
            chunk = _chunk(start, min(GENERATE_BATCH_ROWS, rows - start), generator)
            if writer is None:
                options = pacsv.WriteOptions(quoting_style="none")  # as most exports write it
                writer = pacsv.CSVWriter(str(partial), chunk.schema, write_options=options)
            writer.write_table(chunk)
    finally:
        if writer is not None:
            writer.close()
    partial.rename(path)
    return path


def converted_table(rows: int) -> Path:
    """The stored (columnar) table of the survey, converted once by table_convert."""
    path = DATA / f"survey-{rows}.parquet"
    if not path.exists():
        partial = path.with_suffix(".partial")
        table_convert(generated_csv(rows), partial)
        partial.rename(path)
    return path


# --- children: one measurement each, in a fresh process -----------------------------------------


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> bool:
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux ≥ 4.0), so the peak
    read afterwards is the task's, not the imports'."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def child(task: str, source: str, target: str, extra: str) -> None:
    """Run one task, print {seconds, cpu_s, start_rss, peak_rss} as JSON. Everything is
    imported before ``start_rss`` is taken and the peak is reset then, so the peak minus it is
    what the task added."""
    import gc

    gc.collect()
    if not _reset_peak():
        print("warning: peak RSS includes the imports", file=sys.stderr)
    start_rss = _status_bytes("VmRSS")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    if task == "convert":
        table_convert(source, target)
    elif task == "pyarrow":
        pq.write_table(pacsv.read_csv(source), target, compression="snappy")
    elif task == "release":
        schema_name, engine = extra.split(":")
        release(source, PLANS[schema_name], engine)
    elif task == "baseline":
        baseline(source, PLANS[extra])
    else:
        raise SystemExit(f"unknown task {task}")
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    if target and task in ("convert", "pyarrow"):
        Path(target).unlink(missing_ok=True)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_s": cpu,
                "start_rss": start_rss,
                "peak_rss": _status_bytes("VmHWM"),
            }
        )
    )


def in_child(task: str, source: Path, target: Path | None = None, extra: str = "") -> dict:
    command = [sys.executable, __file__, "--child", task, str(source), str(target or ""), extra]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"child {task} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the release and its plain baseline ---------------------------------------------------------

_CLUSTER: dict[str, object] = {}


def _engine(kind: str):
    if kind != "distributed":
        return EngineChoice(kind=kind)
    if "client" not in _CLUSTER:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True)
        _CLUSTER.update(cluster=cluster, client=Client(cluster))
    return DistributedEngine(client=_CLUSTER["client"])


def release(path: str | Path, schema: dict, engine: str) -> pe.ReleaseResult:
    return pe.release_stored_table(
        path, schema=schema, definition=DEFINITION, queries=QUERIES, engine=_engine(engine)
    )


def baseline(path: str | Path, schema: dict) -> dict:
    """The same exact aggregates, by plain pyarrow/numpy/pandas on the same stored columns:
    count; per numeric column drop missing and clip; sums, a mean, value_counts, np.histogram.
    With a person key, first keep each person's first row (in file order) and drop rows without
    a key."""
    index = {name: i for i, name in enumerate(stored_names(path))}
    numbers = {name: number_field(index[name]) for name in ("age", "income", "hours")}
    region = text_field(index["region"])
    key = schema.get("person_key")
    person = [text_field(index[key])] if key else []
    table = pq.read_table(
        str(path), columns=[*numbers.values(), region, *person], read_dictionary=[region]
    )
    if key:
        persons = pc.dictionary_encode(table.column(person[0]).combine_chunks())
        codes = persons.indices.to_numpy()
        rows = np.arange(len(codes))
        first = np.empty(len(persons.dictionary), dtype=np.int64)
        first[codes[::-1]] = rows[::-1]  # the last write wins: each person's first row
        keep = first[codes] == rows
        missing = pc.index(persons.dictionary, "").as_py()
        if missing >= 0:
            keep &= codes != missing
        table = table.filter(pa.array(keep))
    cleaned = {}
    for name, field in numbers.items():
        values = table.column(field).to_numpy()
        cleaned[name] = np.clip(values[~np.isnan(values)], *BOUNDS[name])
    return {
        "count": table.num_rows,
        "sum income": float(cleaned["income"].sum()),
        "sum hours": float(cleaned["hours"].sum()),
        "mean age": float(cleaned["age"].mean()),
        "region": table.column(region).to_pandas().value_counts(sort=False),
        "age bins": np.histogram(cleaned["age"], bins=AGE_EDGES)[0],
    }


# --- measuring ----------------------------------------------------------------------------------


def _mib(value: float) -> str:
    return f"{value / 2**20:,.0f}"


def _alternate(first: Callable[[], dict], second: Callable[[], dict], runs: int) -> tuple:
    a, b = [], []
    for _ in range(runs):
        a.append(first())
        b.append(second())
    return a, b


def _median(results: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in results)


def measure_convert(rows: int, runs: int) -> list[str]:
    source = generated_csv(rows)
    target = DATA / f"convert-{rows}.parquet"
    ours, theirs = _alternate(
        lambda: in_child("convert", source, target),
        lambda: in_child("pyarrow", source, target),
        runs,
    )
    ratios = [a["seconds"] / b["seconds"] for a, b in zip(ours, theirs, strict=True)]
    size = source.stat().st_size
    cells = []
    for label, results in (("table_convert", ours), ("pyarrow", theirs)):
        cells.append(
            f"| {rows:,} | {size / 2**20:,.0f} | {label} | {_median(results, 'seconds'):.2f} "
            f"| {_median(results, 'cpu_s'):.2f} | {_mib(_median(results, 'peak_rss'))} "
            f"| {_mib(_median(results, 'peak_rss') - _median(results, 'start_rss'))} "
            f"| {statistics.median(ratios) if label == 'table_convert' else 1.0:.2f}× |"
        )
    return cells


def _timed(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def measure_release(rows: int, runs: int, engines: list[str]) -> list[str]:
    path = converted_table(rows)
    cells = []
    for plan, schema in PLANS.items():
        base_peak = in_child("baseline", path, extra=plan)
        release(path, schema, engines[0])  # warm both: imports, OpenDP, page cache
        baseline(path, schema)
        for engine in engines:
            if engine == "distributed":
                _engine(engine)  # the cluster starts once, outside the timings
            results, bases = [], []
            for _ in range(runs):
                started = time.perf_counter()
                result = release(path, schema, engine)
                results.append({**result.timings, "total": time.perf_counter() - started})
                bases.append({"total": _timed(lambda s=schema: baseline(path, s))})
            ratios = [r["total"] / b["total"] for r, b in zip(results, bases, strict=True)]
            peak = (
                None
                if engine == "distributed"
                else in_child("release", path, extra=f"{plan}:{engine}")
            )
            peak_cells = (
                "n/a (workers) | n/a"
                if peak is None
                else f"{_mib(peak['peak_rss'])} | {_mib(peak['peak_rss'] - peak['start_rss'])}"
            )
            cells.append(
                f"| {rows:,} | {plan} | {engine} | {_median(results, 'total'):.3f} "
                f"| {_median(results, 'read_s'):.3f} | {_median(results, 'compute_s'):.3f} "
                f"| {_median(results, 'noise_s'):.3f} | {_median(bases, 'total'):.3f} "
                f"| {statistics.median(ratios):.2f}× | {peak_cells} "
                f"| {_mib(base_peak['peak_rss'] - base_peak['start_rss'])} |"
            )
    return cells


def profile(task: str, rows: int, top: int) -> None:
    profiler = cProfile.Profile()
    if task == "convert":
        source, target = generated_csv(rows), DATA / f"profile-{rows}.parquet"
        profiler.runcall(table_convert, source, target)
        target.unlink(missing_ok=True)
    else:
        path = converted_table(rows)
        release(path, PLANS[task], "in_process")
        profiler.runcall(release, path, PLANS[task], "in_process")
    print(f"\n### cProfile: {task} at {rows:,} rows (top {top} by cumulative, then by own time)\n")
    stats = pstats.Stats(profiler).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big", action="store_true", help="also 10⁷ rows")
    parser.add_argument("--sizes", help="comma-separated row counts (overrides --big)")
    parser.add_argument("--runs", type=int, help="runs per size (default 5, 3, 2 by size)")
    parser.add_argument("--engines", default="in_process,out_of_core")
    parser.add_argument("--profile", choices=["convert", *PLANS])
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    else:
        sizes = [10**5, 10**6, *([10**7] if args.big else [])]
    if args.profile:
        for rows in sizes:
            profile(args.profile, rows, args.top)
        return
    engines = args.engines.split(",")
    for rows in sizes:
        generated_csv(rows)
        converted_table(rows)
    runs_of = {rows: args.runs or DEFAULT_RUNS.get(rows, 1) for rows in sizes}
    print(f"Runs per size: {', '.join(f'{r:,}: {n}' for r, n in runs_of.items())}; medians.")
    print(
        "\n### Upload+convert (seconds, a fresh process per run; peak = the child's peak RSS in "
        "MiB, added = peak minus its RSS after imports)\n"
    )
    print("| rows | CSV MiB | converter | wall s | CPU s | peak MiB | added MiB | ratio |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for rows in sizes:
        for line in measure_convert(rows, runs_of[rows]):
            print(line, flush=True)
    print(
        "\n### Release, ε-DP: count, 2 sums, mean, categorical + numeric histogram (seconds; "
        "plain = pyarrow/numpy/pandas, same columns, same process; peak MiB of a fresh child)\n"
    )
    print(
        "| rows | unit | engine | total | read | compute | noise | plain | ratio "
        "| peak MiB | added MiB | plain added MiB |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for rows in sizes:
        for line in measure_release(rows, runs_of[rows], engines):
            print(line, flush=True)
    if "client" in _CLUSTER:
        _CLUSTER["client"].close()
        _CLUSTER["cluster"].close()


if __name__ == "__main__":
    main()
