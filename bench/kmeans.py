"""Private k-means (issue 10, points 1 and 6): the article's Figure 2, diffprivlib beside it, and
time.

Figure 2: about 2,500 generated RGB points (a mixture of skin-like and background colour blobs,
intensities 0–255, as in the 1% sample of UCI's skin segmentation data the article used), k = 4,
10 iterations, ε from 0.1 to 1. For each definition, the median over ``--runs`` releases of the
ratio of the private centroids' objective (Equation 1 on the points) to that of non-private
Lloyd's algorithm from the same public start after the same 10 iterations (the engine's own
kmeans with no noise). Definitions: ε-DP, Blowfish G^{attr,1} and G^{L1,θ} over (r, g, b) for
θ ∈ {256, 128, 64, 32}, all with the engine's sensitivities (a record may change cluster:
q_hist 2 and q_sum 2·Σ h_j under every policy). Beside them:

- diffprivlib's ``KMeans`` at the same ε and bounds (its own start and iteration count, 2 to 7
  chosen from ε and n), divided by the same denominator;
- the engine's ε-DP with diffprivlib's iteration count (the same computation budget);
- the article's analysis, NOT PRIVATE: the engine's code with q_sum calibrated to θ (or to the
  largest range under G^{attr,1}), as if no record ever changed cluster. Shown only to explain
  the article's figure; the privacy audit catches this calibration.

Automatic iterations (issue 10, point 6): the engine's ε-DP kmeans without ``iterations`` (its
count chosen from ε, k, the columns and the declared size by Su et al.'s rule, as diffprivlib
chooses its own) against diffprivlib's ``KMeans`` at the same ε, on Figure 2's 2,500 points and
on 25,000 points of the same colours (declared sizes equal to the true ones), the median over
``--automatic-runs`` runs of each one's objective over the same denominator as Figure 2's.

Time: 10⁵ and 10⁶ rows stored in the columnar layout, the median of ``--time-runs`` whole releases
(k = 4, 10 iterations, ε = 1) on the in-process and out-of-core engines, against the same
computation without privacy in the same run (read the same Parquet columns, clamp, 10 Lloyd
iterations in numpy from the same start), and diffprivlib's fit on the same points in memory.

The plot (log y, as the article's) is written to docs/kmeans-figure2.svg, and to
docs/kmeans-figure2.png when Chromium is installed to render it.

    .venv/bin/python bench/kmeans.py [--runs 50] [--automatic-runs 15] [--time-runs 3]
                                     [--no-figure] [--no-automatic] [--no-time] [--no-plot]
"""

import argparse
import contextlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import privacy_engine as pe
from privacy_engine.columnar import ColumnarWriter, number_field, stored_names
from privacy_engine.definitions import AttributeGraph, Blowfish, DistanceThreshold
from privacy_engine.engines import InProcessEngine, OutOfCoreEngine
from privacy_engine.exact_sums import float_up
from privacy_engine.kinds import kmeans as km

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = ["r", "g", "b"]
SCHEMA = {
    "columns": {c: {"kind": "numeric", "lower": 0, "upper": 255} for c in COLUMNS},
    "declared_size": 2500,
}
K = 4
ITERATIONS = 10
EPSILONS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
THETAS = [256, 128, 64, 32]
# Colour blobs (mean RGB, spread, share): skin tones, and background colours of face images.
BLOBS = [
    ((210, 160, 130), (25, 22, 22), 0.14),
    ((150, 100, 75), (22, 18, 18), 0.07),
    ((45, 40, 35), (20, 18, 18), 0.22),
    ((170, 170, 170), (30, 30, 30), 0.22),
    ((80, 110, 160), (25, 25, 30), 0.20),
    ((100, 140, 80), (25, 25, 25), 0.15),
]


def rgb_points(rows: int, seed: int) -> np.ndarray:
    """Generated RGB intensities (benchmark data: numpy's generator is fine for data, never for
    noise)."""
    generator = np.random.default_rng(seed)
    counts = generator.multinomial(rows, [share for _, _, share in BLOBS])
    points = np.concatenate(
        [
            generator.normal(mean, spread, (count, 3))
            for (mean, spread, _), count in zip(BLOBS, counts, strict=True)
        ]
    )
    return np.clip(np.round(points), 0, 255)[generator.permutation(rows)]


def frame_of(points: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({c: points[:, i].astype(int).astype(str) for i, c in enumerate(COLUMNS)})


def query(iterations: int | None = ITERATIONS) -> dict:
    """The bench's k-means; ``iterations=None`` leaves them to the engine (automatic)."""
    spec = {"kind": "kmeans", "columns": COLUMNS, "k": K}
    return spec if iterations is None else {**spec, "iterations": iterations}


def definitions(epsilon: float) -> dict[str, dict]:
    out = {"ε-DP": {"kind": "pure_dp", "epsilon": epsilon}}
    out["G^{attr,1}"] = {"kind": "blowfish", "epsilon": epsilon, "policy": {"graph": "attribute"}}
    for theta in THETAS:
        out[f"G^{{L1,{theta}}}"] = {
            "kind": "blowfish",
            "epsilon": epsilon,
            "policy": {"graph": "distance_threshold", "columns": COLUMNS, "theta": theta},
        }
    return out


class NoNoise:
    def sample(self, measurement, value):
        return value


def centroids_of(result) -> list[list[float]]:
    return [[row[c] for c in COLUMNS] for row in result.statistics[0].value]


@contextlib.contextmanager
def articles_sensitivity():
    """NOT PRIVATE: q_sum calibrated as the article does, to θ (G^{L1,θ}) or the largest range
    (G^{attr,1}), ignoring records that change cluster. For explaining Figure 2 only."""
    real = km.sum_part_sensitivity

    def theta_only(request, definition, *, norm="l1", rows_per_person=1):
        if isinstance(definition, Blowfish):
            policy = definition.policy
            if isinstance(policy, DistanceThreshold):
                return float(policy.theta)
            if isinstance(policy, AttributeGraph):
                return float_up(max(2 * request.half_range(j) for j in range(len(COLUMNS))))
        return real(request, definition, norm=norm, rows_per_person=rows_per_person)

    km.sum_part_sensitivity = theta_only
    try:
        yield
    finally:
        km.sum_part_sensitivity = real


def ratio(points, frame, definition, iterations, baseline) -> float:
    result = pe.run_queries(
        frame, schema=SCHEMA, definition=definition, queries=[query(iterations)]
    )
    return km.objective(points, centroids_of(result)) / baseline


def diffprivlib_ratio(points, epsilon, seed, baseline) -> tuple[float, int]:
    from diffprivlib.models import KMeans

    model = KMeans(
        K, epsilon=epsilon, bounds=(np.zeros(3), np.full(3, 255.0)), random_state=seed
    ).fit(points)
    return km.objective(points, model.cluster_centers_) / baseline, model.n_iter_


def figure2(runs: int) -> dict[str, list[float]]:
    points = rgb_points(2500, seed=2014)
    frame = frame_of(points)
    exact = pe.run_queries(
        frame, schema=SCHEMA, definition=definitions(1.0)["ε-DP"], queries=[query()],
        noise=NoNoise(),
    )  # fmt: skip
    baseline = km.objective(points, centroids_of(exact))
    try:
        from sklearn.cluster import KMeans

        best = KMeans(K, n_init=10, random_state=0).fit(points).inertia_
        print(
            f"Non-private Lloyd from the public start, {ITERATIONS} iterations: objective "
            f"{baseline:.4g} ({baseline / best:.3f}× scikit-learn's best of 10 k-means++ starts)"
        )
    except ImportError:
        print(f"Non-private Lloyd from the public start: objective {baseline:.4g}")
    print(
        f"Figure 2: {len(points):,} generated RGB points, k = {K}, {ITERATIONS} iterations; "
        f"objective ratio private / non-private, median of {runs} runs (1 = no loss)"
    )
    names = [*definitions(1.0), "diffprivlib", "ε-DP, dpl iters", "art. attr", "art. L1,128"]
    header = f"{'ε':>4} | " + " | ".join(f"{name:>11}" for name in names)
    print(header)
    print("-" * len(header))
    curves: dict[str, list[float]] = {name: [] for name in names}
    warnings.filterwarnings("ignore", module="diffprivlib")
    for epsilon in EPSILONS:
        row = {}
        for name, definition in definitions(epsilon).items():
            row[name] = statistics.median(
                ratio(points, frame, definition, ITERATIONS, baseline) for _ in range(runs)
            )
        peers = [diffprivlib_ratio(points, epsilon, seed, baseline) for seed in range(runs)]
        row["diffprivlib"] = statistics.median(r for r, _ in peers)
        its = peers[0][1]
        row["ε-DP, dpl iters"] = statistics.median(
            ratio(points, frame, definitions(epsilon)["ε-DP"], its, baseline) for _ in range(runs)
        )
        with articles_sensitivity():
            for name, key in (("art. attr", "G^{attr,1}"), ("art. L1,128", "G^{L1,128}")):
                row[name] = statistics.median(
                    ratio(points, frame, definitions(epsilon)[key], ITERATIONS, baseline)
                    for _ in range(runs)
                )
        for name in names:
            curves[name].append(row[name])
        print(f"{epsilon:>4.1f} | " + " | ".join(f"{row[n]:>11.3f}" for n in names))
    print(
        "dpl iters: diffprivlib's own iteration count at each ε "
        f"({peers[0][1]} at ε = 1 here); art.: the article's θ-only sensitivity, NOT PRIVATE."
    )
    print()
    dp = curves["ε-DP"]
    for name in ("G^{attr,1}", "G^{L1,128}", "art. attr", "art. L1,128"):
        gains = [a / b for a, b in zip(dp, curves[name], strict=True)]
        print(
            f"ε-DP ratio / {name} ratio: {min(gains):.2f} to {max(gains):.2f} "
            f"(median {statistics.median(gains):.2f}; above 1 means closer than ε-DP)"
        )
    print()
    return curves


# --- automatic iterations against diffprivlib -------------------------------------------------

AUTOMATIC_SIZES = [2500, 25_000]


def automatic_comparison(runs: int) -> list[dict]:
    """The engine's ε-DP k-means with automatic iterations against diffprivlib's at the same ε,
    on tables whose declared size is their true one; the same denominator for both (non-private
    Lloyd from the public start after 10 iterations), so the two ratios compare objectives."""
    warnings.filterwarnings("ignore", module="diffprivlib")
    print(
        f"Automatic iterations: the engine's ε-DP without `iterations` against diffprivlib at "
        f"the same ε (k = {K}, median of {runs} runs; the same denominator for both)"
    )
    header = (
        f"{'records':>7} | {'ε':>4} | {'engine iters':>12} | {'engine':>7} | "
        f"{'dpl iters':>9} | {'diffprivlib':>11} | {'engine / dpl':>12}"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for size in AUTOMATIC_SIZES:
        points = rgb_points(size, seed=2014 if size == 2500 else size)
        frame = frame_of(points)
        schema = {**SCHEMA, "declared_size": size}
        definition = {"kind": "pure_dp", "epsilon": 1.0}
        exact = pe.run_queries(
            frame, schema=schema, definition=definition, queries=[query()], noise=NoNoise()
        )
        baseline = km.objective(points, centroids_of(exact))
        for epsilon in EPSILONS:
            definition = {"kind": "pure_dp", "epsilon": epsilon}
            ours, used = [], set()
            for _ in range(runs):
                result = pe.run_queries(
                    frame, schema=schema, definition=definition, queries=[query(None)]
                )
                ours.append(km.objective(points, centroids_of(result)) / baseline)
                used.add(result.statistics[0].parts[-1]["iteration"])
            peers = [diffprivlib_ratio(points, epsilon, seed, baseline) for seed in range(runs)]
            row = {
                "records": size,
                "epsilon": epsilon,
                "engine_iterations": sorted(used),
                "engine": statistics.median(ours),
                "dpl_iterations": sorted({its for _, its in peers}),
                "diffprivlib": statistics.median(r for r, _ in peers),
            }
            rows.append(row)
            print(
                f"{size:>7,} | {epsilon:>4.1f} | {'/'.join(map(str, row['engine_iterations'])):>12}"
                f" | {row['engine']:>7.3f} | {'/'.join(map(str, row['dpl_iterations'])):>9} | "
                f"{row['diffprivlib']:>11.3f} | {row['engine'] / row['diffprivlib']:>12.3f}"
            )
    worse = [r for r in rows if r["engine"] > r["diffprivlib"]]
    print(
        "engine no worse than diffprivlib at every point"
        if not worse
        else "engine worse at: "
        + ", ".join(f"{r['records']:,} records, ε = {r['epsilon']:g}" for r in worse)
    )
    print()
    return rows


# --- time -------------------------------------------------------------------------------------


def stored_table(rows: int, folder: Path) -> Path:
    points = rgb_points(rows, seed=rows)
    path = folder / f"rgb-{rows}.parquet"
    with ColumnarWriter(path, COLUMNS) as writer:
        writer.write([pa.array(points[:, i].astype(int).astype(str)) for i in range(3)])
    return path


def plain_kmeans(path: Path) -> None:
    """The same computation without privacy, as fast as plain numpy does it: read the columns,
    clamp, 10 Lloyd iterations (distances column by column, sums by bincount)."""
    names = stored_names(path)
    fields = [number_field(names.index(c)) for c in COLUMNS]
    table = pq.read_table(str(path), columns=fields)
    columns = [np.clip(table.column(f).to_numpy(), 0, 255) for f in fields]
    schema = pe.schema_from_dict(SCHEMA)
    centres = np.asarray(km.initial_centroids([schema.column(c) for c in COLUMNS], K))
    for _ in range(ITERATIONS):
        best = np.full(len(columns[0]), np.inf)
        labels = np.zeros(len(columns[0]), dtype=np.int64)
        for cluster, centre in enumerate(centres):
            distance = sum((values - x) ** 2 for values, x in zip(columns, centre, strict=True))
            closer = distance < best
            labels[closer], best = cluster, np.minimum(best, distance)
        counts = np.bincount(labels, minlength=K)
        for j, values in enumerate(columns):
            sums = np.bincount(labels, weights=values, minlength=K)
            centres[:, j] = np.where(counts > 0, sums / np.maximum(counts, 1), centres[:, j])


def median_seconds(function, *arguments, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function(*arguments)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def time_table(runs: int) -> None:
    from diffprivlib.models import KMeans

    print(f"Time, k = {K}, {ITERATIONS} iterations, ε = 1 (median of {runs} runs; plain = the")
    print("same clamping and Lloyd iterations in numpy from the same Parquet columns, same run)")
    print(f"{'rows':>9} | {'engine':<12} | {'release s':>9} | {'plain s':>8} | {'ratio':>6}")
    definition = {"kind": "pure_dp", "epsilon": 1.0}
    with tempfile.TemporaryDirectory() as folder:
        for rows in (10**5, 10**6):
            path = stored_table(rows, Path(folder))
            plain = median_seconds(plain_kmeans, path, runs=runs)
            for engine in (InProcessEngine(), OutOfCoreEngine()):

                def release(engine=engine, path=path):
                    pe.release_stored_table(
                        path, schema=SCHEMA, definition=definition, queries=[query()],
                        engine=engine,
                    )  # fmt: skip

                release()  # warm caches
                ours = median_seconds(release, runs=runs)
                print(
                    f"{rows:>9,} | {engine.name:<12} | {ours:9.3f} | {plain:8.3f} | "
                    f"{ours / plain:6.2f}"
                )
            points = rgb_points(rows, seed=rows)
            warnings.filterwarnings("ignore", module="diffprivlib")

            def fit(points=points):
                KMeans(K, epsilon=1.0, bounds=(np.zeros(3), np.full(3, 255.0))).fit(points)

            peer = median_seconds(fit, runs=runs)
            iterations = KMeans(K, epsilon=1.0, bounds=(np.zeros(3), np.full(3, 255.0)))
            iterations = iterations.fit(points).n_iter_
            print(
                f"{rows:>9,} | {'diffprivlib':<12} | {peer:9.3f} | {plain:8.3f} | "
                f"{peer / plain:6.2f}   ({iterations} iterations, points in memory)"
            )
    print()


# --- plot -------------------------------------------------------------------------------------

COLOURS = {
    "ε-DP": "#d62728",
    "G^{attr,1}": "#1f77b4",
    "G^{L1,256}": "#2ca02c",
    "G^{L1,128}": "#9467bd",
    "G^{L1,64}": "#8c564b",
    "G^{L1,32}": "#e377c2",
    "diffprivlib": "#111111",
    "ε-DP, dpl iters": "#d62728",
    "art. L1,128": "#9467bd",
}
LABELS = {
    "ε-DP, dpl iters": "ε-DP, diffprivlib's iterations",
    "art. L1,128": "G L1,128, article's θ-only: NOT private",
}


def svg_plot(curves: dict[str, list[float]], path: Path) -> None:
    """A line chart of the ratios against ε, log y, written by hand (no plotting dependency)."""
    width, height, left, right, top, bottom = 980, 520, 70, 290, 40, 60
    shown = [name for name in COLOURS if name in curves]
    values = [v for name in shown for v in curves[name]]
    low = 10 ** np.floor(np.log10(min(values)))
    high = 10 ** np.ceil(np.log10(max(values)))

    def x(epsilon: float) -> float:
        return left + (epsilon - 0.1) / 0.9 * (width - left - right)

    def y(value: float) -> float:
        span = np.log10(high) - np.log10(low)
        return top + (np.log10(high) - np.log10(value)) / span * (height - top - bottom)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="13">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="24" font-size="15">k-means on {2500:,} RGB points, k = {K}, '
        f"{ITERATIONS} iterations: objective ratio private / non-private (median)</text>",
    ]
    decade = low
    while decade <= high * 1.0001:
        for step in range(1, 10):
            tick = decade * step
            if low <= tick <= high:
                stroke = "#bbb" if step == 1 else "#eee"
                parts.append(
                    f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" '
                    f'y2="{y(tick):.1f}" stroke="{stroke}"/>'
                )
                if step in (1, 2, 5):
                    parts.append(
                        f'<text x="{left - 8}" y="{y(tick) + 4:.1f}" text-anchor="end">'
                        f"{tick:g}</text>"
                    )
        decade *= 10
    for epsilon in EPSILONS:
        parts.append(
            f'<text x="{x(epsilon):.1f}" y="{height - bottom + 20}" text-anchor="middle">'
            f"{epsilon:g}</text>"
        )
    parts.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 18}" text-anchor="middle">ε</text>'
    )
    for index, name in enumerate(shown):
        dash = {
            "art. L1,128": ' stroke-dasharray="6 4"',
            "ε-DP, dpl iters": ' stroke-dasharray="2 3"',
        }
        dash = dash.get(name, "")
        points = " ".join(
            f"{x(e):.1f},{y(v):.1f}" for e, v in zip(EPSILONS, curves[name], strict=True)
        )
        colour = COLOURS[name]
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        legend_y = top + 10 + 22 * index
        label = LABELS.get(name, name.replace("G^{", "G ").replace("}", ""))
        parts.append(
            f'<line x1="{width - right + 12}" x2="{width - right + 40}" y1="{legend_y}" '
            f'y2="{legend_y}" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        parts.append(
            f'<text x="{width - right + 46}" y="{legend_y + 4}" font-size="11">{label}</text>'
        )
    parts.append("</svg>")
    path.write_text("\n".join(parts), encoding="utf-8")


def png_from_svg(svg: Path, png: Path) -> bool:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return False
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                f"--user-data-dir={profile}",
                "--hide-scrollbars",
                "--window-size=980,520",
                f"--screenshot={png}",
                svg.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    return png.exists()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--automatic-runs", type=int, default=15)
    parser.add_argument("--time-runs", type=int, default=3)
    parser.add_argument("--no-figure", action="store_true")
    parser.add_argument("--no-automatic", action="store_true")
    parser.add_argument("--no-time", action="store_true")
    parser.add_argument("--no-plot", action="store_true")
    arguments = parser.parse_args()
    curves = None if arguments.no_figure else figure2(arguments.runs)
    if not arguments.no_automatic:
        automatic_comparison(arguments.automatic_runs)
    if curves is not None and not arguments.no_plot:
        svg = ROOT / "docs" / "kmeans-figure2.svg"
        svg_plot(curves, svg)
        png = svg.with_suffix(".png")
        print(f"plot: {svg.relative_to(ROOT)}", end="")
        print(
            f" and {png.relative_to(ROOT)}" if png_from_svg(svg, png) else " (no Chromium: no PNG)"
        )
        print()
    if not arguments.no_time:
        time_table(arguments.time_runs)


if __name__ == "__main__":
    main()
