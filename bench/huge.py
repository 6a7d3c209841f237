"""A table larger than memory, released out of core: 10⁸ rows generated directly as a stored
columnar table (privacy_engine/columnar.py layout), released by the out-of-core engine (DuckDB,
streamed in batches) in a fresh child process whose peak memory is measured, with and without a
person key. Prints time, the release's own timings and the child's peak memory.

    .venv/bin/python bench/huge.py [--rows 100000000] [--memory-limit-mb 1024]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from privacy_engine.columnar import METADATA_KEY, number_field, text_field  # noqa: E402

DATA = Path("/tmp/bench-huge")
NAMES = ["person_id", "age", "income", "region"]
REGIONS = np.array(["North", "South", "East", "West", "Centre", "Coast", "Hills", "Islands"])
BATCH = 2_000_000
SCHEMA = {
    "columns": {
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
        "income": {"kind": "numeric", "lower": 0, "upper": 200_000},
        "region": {"kind": "categorical", "categories": list(REGIONS), "other": "other"},
    },
    "declared_size": 100_000_000,
}
QUERIES = [
    {"kind": "count"},
    {"kind": "sum", "column": "income"},
    {"kind": "mean", "column": "age"},
    {"kind": "histogram", "column": "region"},
    {"kind": "histogram", "column": "age", "bins": [0, 20, 40, 60, 80, 100]},
]


def generate(rows: int) -> Path:
    """The stored table, written batch by batch with typed arrays (no CSV, no Python per row)."""
    path = DATA / f"huge-{rows}.parquet"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    fields = []
    for index in range(len(NAMES)):
        fields += [
            pa.field(text_field(index), pa.string(), nullable=False),
            pa.field(number_field(index), pa.float64(), nullable=False),
        ]
    metadata = {METADATA_KEY: json.dumps({"format": "1", "columns": NAMES}).encode()}
    schema = pa.schema(fields, metadata=metadata)
    # Synthetic data for a benchmark, not noise: numpy's generator is fine here.
    generator = np.random.default_rng(8)
    partial = path.with_suffix(".partial")
    with pq.ParquetWriter(str(partial), schema, compression="snappy") as writer:
        for start in range(0, rows, BATCH):
            size = min(BATCH, rows - start)
            ids = np.arange(start, start + size) % (rows // 2)
            age = generator.integers(0, 100, size).astype(float)
            income = np.round(generator.gamma(2.0, 15_000.0, size), 2)
            region = REGIONS[generator.integers(0, len(REGIONS), size)]
            person = pa.array(np.char.add("P", ids.astype(str)))
            columns = [
                (person, pa.array(np.full(size, np.nan))),
                (pa.array(age.astype(int).astype(str)), pa.array(age)),
                (pa.array(income.astype(str)), pa.array(income)),
                (pa.array(region).cast(pa.string()), pa.array(np.full(size, np.nan))),
            ]
            # pa.array may hand back a ChunkedArray for a large batch of strings.
            arrays = [
                array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
                for pair in columns
                for array in pair
            ]
            writer.write_batch(pa.record_batch(arrays, schema=schema))
    partial.rename(path)
    return path


CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from privacy_engine.engines import OutOfCoreEngine
from privacy_engine.release import release_stored_table
schema = json.loads({schema!r})
started = time.perf_counter()
result = release_stored_table(
    {path!r}, schema=schema, definition={{"kind": "pure_dp", "epsilon": 1.0}},
    queries=json.loads({queries!r}),
    engine=OutOfCoreEngine(memory_limit_bytes={limit}, spill_directory="/tmp"),
)
# VmHWM: this process's own peak (ru_maxrss can carry the parent's over fork and exec).
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(json.dumps({{"seconds": time.perf_counter() - started, "timings": result.timings,
                  "peak_kib": peak}}))
"""


def release_in_child(path: Path, schema: dict, limit: int) -> dict:
    code = CHILD.format(
        root=str(ROOT),
        schema=json.dumps(schema),
        path=str(path),
        queries=json.dumps(QUERIES),
        limit=limit,
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--memory-limit-mb", type=int, default=1024)
    args = parser.parse_args()
    started = time.perf_counter()
    path = generate(args.rows)
    generated = time.perf_counter() - started
    size_mb = path.stat().st_size / 2**20
    limit = args.memory_limit_mb << 20
    print(
        f"\n### Out of core: {args.rows:,} rows ({size_mb:,.0f} MB of Parquet, generated in "
        f"{generated:.0f} s), DuckDB memory limit {args.memory_limit_mb} MB\n"
    )
    print("| plan | total (s) | read (s) | compute (s) | noise (s) | peak memory (MiB) |")
    print("|---|---:|---:|---:|---:|---:|")
    keyed = {**SCHEMA, "person_key": "person_id", "max_rows_per_person": 1}
    for label, schema in (("rows", SCHEMA), ("person key, c = 1", keyed)):
        run = release_in_child(path, schema, limit)
        timings = run["timings"]
        peak = run["peak_kib"] / 1024
        print(
            f"| {label} | {run['seconds']:.1f} | {timings['read_s']:.1f} | "
            f"{timings['compute_s']:.1f} | {timings['noise_s']:.3f} | {peak:.0f} |"
        )


if __name__ == "__main__":
    main()
