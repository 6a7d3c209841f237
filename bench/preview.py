"""Preview benchmark: latency of the wizard's preview, chart included, as a table.

The preview page (releases/curator_views.py, ``wizard_preview``) shows the preview its draft
stored when saved (``plan_release(...).preview()``), the error-against-ε chart
(``accuracy_curve`` over a 25-point ε grid) and the draft on a simulated table
(``simulated_preview``). One "view" here is those three engine calls (the stored preview
recomputed too, as saving the draft does, though the page only reads it), for 1, 10 and 100
statistics under ε-DP, (ε, δ)-DP and Blowfish:

- cold: one view with the calibration caches emptied, as for a draft whose ε, weights or
  statistics this process has not planned before (its calibrations: searched or computed anew);
- warm: median of ``--runs`` views with the caches filled, as for the same draft viewed again;
- plan: median of ``plan_release`` alone on the same draft, the baseline in the same process;
- unmemo: one view with the shortcuts switched off, the baseline of the old path: every
  Gaussian calibration found by OpenDP's binary search over σ (before ρ was solved directly),
  every calibration searched afresh, the whole release re-planned at every ε of the chart, ε
  split by re-summing all shares after each nudge (measurements stay built on first use, so the
  code before this change was slower still). Only for drafts of at most ``--unmemo-max``
  statistics: at 100 Gaussian statistics it takes minutes.

    .venv/bin/python bench/preview.py [--runs 7] [--unmemo-max 10]
"""

import argparse
import dataclasses
import math
import statistics
import sys
import time
from contextlib import contextmanager
from decimal import Decimal, localcontext
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import privacy_engine as pe
from privacy_engine import accuracy, mechanisms, release
from privacy_engine.definitions import MAX_EPSILON, MIN_EPSILON
from privacy_engine.guidance import simulated_preview

SCHEMA = {
    "columns": {
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
        "income": {"kind": "numeric", "lower": 0, "upper": 200000},
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other"},
    },
    "declared_size": 10000,
}
# A draft of n statistics cycles through these five kinds.
KINDS = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "sum", "column": "age"},
    {"kind": "mean", "column": "income"},
    {"kind": "histogram", "column": "age", "bins": [0, 25, 50, 75, 100]},
]
DEFINITIONS = {
    "ε-DP": {"kind": "pure_dp", "epsilon": 1.0},
    "(ε, δ)-DP": {"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-8},
    "Blowfish θ=5": {
        "kind": "blowfish",
        "epsilon": 1.0,
        "policy": {"graph": "distance_threshold", "column": "age", "theta": 5},
    },
}
SIZES = (1, 10, 100)


def epsilon_grid(epsilon: float, points: int = 25) -> list[float]:
    """The preview page's chart grid (curator_views._epsilon_grid; this script stays free of
    Django): ``points`` values evenly spaced in log ε from ε/10 to 10ε."""
    low, high = max(MIN_EPSILON, epsilon / 10), min(MAX_EPSILON, epsilon * 10)
    step = (math.log(high) - math.log(low)) / (points - 1)
    return [math.exp(math.log(low) + i * step) for i in range(points)]


def queries(n: int) -> list[dict]:
    return [KINDS[i % len(KINDS)] for i in range(n)]


def view(definition: dict, draft: list[dict]) -> None:
    """The engine work of one preview page: stored preview, chart, simulated table."""
    pe.plan_release(schema=SCHEMA, definition=definition, queries=draft).preview()
    pe.accuracy_curve(
        schema=SCHEMA,
        definition=definition,
        queries=draft,
        epsilons=epsilon_grid(definition["epsilon"]),
    )
    simulated_preview(schema=SCHEMA, definition=definition, queries=draft)


MEMOIZED = (
    mechanisms.gaussian_calibration,
    mechanisms.zcdp_rho_for,
    mechanisms.laplace_calibration,
    mechanisms._gaussian_expected_abs_error,
    mechanisms._gaussian_halfwidth,
)


def clear_caches() -> None:
    for function in MEMOIZED:
        function.cache_clear()


def calibrations() -> int:
    return (
        mechanisms.gaussian_calibration.cache_info().misses
        + mechanisms.laplace_calibration.cache_info().misses
        + mechanisms.zcdp_rho_for.cache_info().misses
    )


# --- the path without memoization --------------------------------------------------------------


def split_epsilon_unmemoized(total: float, weights: list[float]) -> list[float]:
    weight_sum = math.fsum(weights)
    shares = [total * w / weight_sum for w in weights]
    with localcontext() as ctx:
        ctx.prec = 200
        cap = min(Decimal(total), Decimal(repr(total)))
        while sum(Decimal(s) for s in shares) > cap:
            largest = max(range(len(shares)), key=shares.__getitem__)
            shares[largest] = math.nextafter(shares[largest], 0.0)
    return shares


def gaussian_calibration_searched(space, sensitivity, epsilon, delta):
    """The Gaussian calibration before ρ was solved directly: OpenDP's binary search over σ, each
    step a fixed-δ map (itself a search over ε)."""

    def build(scale):
        return mechanisms.gaussian_measurement(space, scale, delta)

    log_inverse_delta = math.log(1.0 / delta)
    rho_low = (math.sqrt(log_inverse_delta + epsilon) - math.sqrt(log_inverse_delta)) ** 2
    lower = float(sensitivity) / math.sqrt(2.0 * epsilon)
    upper = float(sensitivity) / math.sqrt(2.0 * rho_low * 0.99)
    for _ in range(64):
        if build(lower).map(sensitivity)[0] > epsilon:
            break
        lower /= 2.0
    scale = float(
        mechanisms.dp.binary_search_param(
            build, d_in=sensitivity, d_out=(epsilon, delta), bounds=(lower, upper)
        )
    )
    spent_epsilon, spent_delta = build(scale).map(sensitivity)
    return scale, float(spent_epsilon), float(spent_delta)


def accuracy_curve_unmemoized(*, schema, definition, queries, epsilons) -> list[dict]:
    plan = pe.plan_release(schema=schema, definition=definition, queries=queries)
    curve = []
    for epsilon in epsilons:
        varied = dataclasses.replace(plan.definition, epsilon=float(epsilon))
        entries = pe.plan_release(
            schema=plan.schema, definition=varied, queries=[s.query for s in plan.statistics]
        )
        curve.append(
            {
                "epsilon": float(epsilon),
                "errors": [s.expected_abs_error for s in entries.statistics],
            }
        )
    return curve


@contextmanager
def without_memoization():
    with (
        mock.patch.object(mechanisms, "gaussian_calibration", gaussian_calibration_searched),
        mock.patch.object(
            mechanisms, "laplace_calibration", mechanisms.laplace_calibration.__wrapped__
        ),
        mock.patch.object(
            mechanisms, "_gaussian_expected_abs_error", accuracy.gaussian_expected_abs_error
        ),
        mock.patch.object(mechanisms, "_gaussian_halfwidth", accuracy.gaussian_halfwidth),
        mock.patch.object(release, "split_epsilon", split_epsilon_unmemoized),
        mock.patch.object(pe, "accuracy_curve", accuracy_curve_unmemoized),
    ):
        yield


# --- timing --------------------------------------------------------------------------------------


def seconds(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def median_seconds(function, runs: int) -> float:
    return statistics.median(seconds(function) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--unmemo-max", type=int, default=10)
    args = parser.parse_args()
    print(
        f"Preview latency: plan + stored preview, chart ({len(epsilon_grid(1.0))} ε values) and "
        f"simulated table; warm and plan are medians of {args.runs} runs"
    )
    header = (
        f"{'definition':<13} {'stats':>5} {'unmemo s':>9} {'cold s':>8} {'calib':>6} "
        f"{'warm ms':>8} {'plan ms':>8} {'warm/plan':>9} {'unmemo/warm':>11}"
    )
    print(header)
    print("-" * len(header))
    for label, definition in DEFINITIONS.items():
        for n in SIZES:
            draft = queries(n)
            unmemoized = None
            if n <= args.unmemo_max:
                with without_memoization():
                    unmemoized = seconds(lambda d=draft, s=definition: view(s, d))
            clear_caches()
            cold = seconds(lambda d=draft, s=definition: view(s, d))
            searched = calibrations()
            warm = median_seconds(lambda d=draft, s=definition: view(s, d), args.runs)
            plan = median_seconds(
                lambda d=draft, s=definition: pe.plan_release(
                    schema=SCHEMA, definition=s, queries=d
                ),
                args.runs,
            )
            unmemo_text = f"{unmemoized:>9.2f}" if unmemoized is not None else f"{'-':>9}"
            ratio_text = f"{unmemoized / warm:>11.0f}" if unmemoized is not None else f"{'-':>11}"
            print(
                f"{label:<13} {n:>5} {unmemo_text} {cold:>8.2f} {searched:>6} "
                f"{warm * 1e3:>8.1f} {plan * 1e3:>8.2f} {warm / plan:>9.1f} {ratio_text}",
                flush=True,
            )


if __name__ == "__main__":
    main()
