"""The ``range_histogram`` kind and the tree maths behind it (privacy_engine/ranges.py): the
estimator is OpenDP's and is least squares, the weights give every range's exact error, the
shape chosen beats flat bins on ranges, and bad input is refused naming the field."""

import dataclasses
import itertools
import math

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest
from binomial_bounds import clopper_pearson_lower, clopper_pearson_upper
from hypothesis import given, settings
from hypothesis import strategies as st

from privacy_engine import (
    EngineValidationError,
    plan_release,
    preview,
    range_answer,
    ranges,
    run_queries,
)

SCHEMA = {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 100}}}
PURE = {"kind": "pure_dp", "epsilon": 1.0}
APPROX = {"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-6}
BLOWFISH = {"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "full_domain"}}


class NoNoise:
    def sample(self, measurement, value):
        return value


class Shifted:
    """Noise of +1 on every node: a known error to read the weights from."""

    def sample(self, measurement, value):
        return [v + 1 for v in value]


def incidence(shape: ranges.TreeShape) -> np.ndarray:
    """H: one row per node (breadth first; a forest tree after tree), 1 where the node covers
    the leaf."""
    if not shape.rooted:
        tree = shape.subtree
        blocks = [incidence(tree)] * shape.trees
        rows = np.zeros((shape.nodes, shape.leaves))
        for k, block in enumerate(blocks):
            rows[k * tree.nodes : (k + 1) * tree.nodes, k * tree.leaves : (k + 1) * tree.leaves] = (
                block
            )
        return rows
    rows = []
    for level in range(shape.levels):
        width = shape.branching ** (shape.levels - 1 - level)
        for k in range(shape.branching**level):
            row = np.zeros(shape.leaves)
            row[k * width : (k + 1) * width] = 1.0
            rows.append(row)
    return np.array(rows)


@pytest.mark.parametrize(("bins", "branching"), [(16, 2), (27, 3), (64, 4), (100, 5), (500, 8)])
def test_the_estimator_is_opendps_and_is_least_squares(bins, branching):
    # given noisy-looking integer nodes of a complete tree
    shape = ranges.complete_tree(bins, branching)
    nodes = (np.arange(shape.nodes) * 7919) % 23 - 11

    # when
    ours = ranges.consistent_estimate(nodes, shape)
    opendp_leaves = ranges.consistent_leaves(nodes, shape)
    least_squares = np.linalg.lstsq(incidence(shape), nodes, rcond=None)[0]

    # then
    np.testing.assert_allclose(ours[:bins], opendp_leaves, atol=1e-9)
    np.testing.assert_allclose(ours, least_squares, atol=1e-9)


def test_the_tree_nodes_are_opendps_b_ary_tree_of_the_bins():
    shape = ranges.complete_tree(10, 3)
    counts = list(range(1, 11))

    nodes = ranges.tree_nodes(counts, shape)

    np.testing.assert_array_equal(nodes, ranges.node_sums(np.array(counts, dtype=float), shape))
    assert nodes[0] == sum(counts)
    assert len(nodes) == shape.nodes == 1 + 3 + 9 + 27


@pytest.mark.parametrize(("first", "last"), [(0, 0), (3, 17), (0, 63), (20, 21), (5, 40)])
def test_the_weights_are_a_ranges_exact_error(first, last):
    # given any noise vector e on the nodes of a tree over true counts x
    shape = ranges.complete_tree(60, 4)
    x = np.arange(60, dtype=float) % 5
    x_padded = np.r_[x, np.zeros(shape.leaves - 60)]
    noise = np.sin(np.arange(shape.nodes) * 1.7) * 3.0
    noisy = ranges.node_sums(x_padded, shape) + noise

    last = min(last, 59)

    # when
    estimate = ranges.consistent_estimate(noisy, shape)
    weights = ranges.range_weights(shape, first, last)

    # then the range's error is Σ wᵢ·eᵢ, and its variance rᵀ(HᵀH)⁻¹r is ‖w‖²
    error = estimate[first : last + 1].sum() - x[first : last + 1].sum()
    assert error == pytest.approx(float(weights @ noise), abs=1e-9)
    h = incidence(shape)
    r = np.zeros(shape.leaves)
    r[first : last + 1] = 1.0
    assert float(weights @ weights) == pytest.approx(r @ np.linalg.solve(h.T @ h, r), rel=1e-9)


def mean_of_range_variances(shape: ranges.TreeShape) -> float:
    """‖w‖² of every range mean_range_variance averages over, one by one."""
    first, last = ranges._plastic_ranges(shape.bins, ranges.SHAPE_RANGES)
    return float(
        np.mean(
            [
                float(w @ w)
                for a, b in zip(first, last, strict=True)
                for w in [ranges.range_weights(shape, int(a), int(b))]
            ]
        )
    )


@pytest.mark.parametrize(
    "shape",
    [ranges.complete_tree(50, 3), ranges.TreeShape(bins=60, branching=4, levels=4, rooted=False)],
    ids=["tree", "forest"],
)
def test_the_mean_range_variance_is_the_mean_of_the_ranges_variances(shape):
    assert ranges.mean_range_variance(shape) == pytest.approx(
        mean_of_range_variances(shape), rel=1e-9
    )


def test_few_bins_are_flat_and_many_bins_are_a_tree_that_beats_flat_bins_on_ranges():
    # a tree pays for its depth: with a few bins flat bins win
    assert ranges.tree_shape(8, "l1").branching is None
    # with many, the tree chosen is far better over ranges (issue 9: ≤ 0.15× at 4,096 bins)
    shape = ranges.tree_shape(4096, "l1")
    flat = ranges.mean_range_variance(ranges.TreeShape(bins=4096, branching=None, levels=1))
    ratio = shape.noisy_levels**2 * ranges.mean_range_variance(shape) / flat
    assert shape.branching is not None
    assert ratio <= 0.15
    # and no other branching factor tried, with or without a root, would be better
    for branching in ranges.BRANCHING_FACTORS:
        rooted = ranges.complete_tree(4096, branching)
        for other in (rooted, dataclasses.replace(rooted, rooted=False)):
            if other.leaves <= ranges.MAX_PADDING * 4096 and other.noisy_levels >= 1:
                mse = other.noisy_levels**2 * ranges.mean_range_variance(other)
                assert mse >= ratio * flat * (1 - 1e-12)


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        (PURE, lambda levels: levels),
        (APPROX, lambda levels: math.sqrt(levels)),
        (BLOWFISH, lambda levels: 2 * levels),
    ],
    ids=["pure", "approx", "blowfish"],
)
def test_the_sensitivity_is_a_histograms_per_level(definition, expected):
    query = {"kind": "range_histogram", "column": "age", "bins": 4096}
    norm = "l2" if definition is APPROX else "l1"
    shape = ranges.tree_shape(4096, norm)

    (entry,) = preview(schema=SCHEMA, definition=definition, queries=[query])

    assert entry["sensitivity"] == pytest.approx(expected(shape.noisy_levels))
    if norm == "l1":
        # OpenDP's own map of make_b_ary_tree (one tree of the forest: a record is in one)
        assert ranges.tree_l1_map(shape, 1) == shape.noisy_levels


def test_a_person_of_c_rows_moves_every_level_c_times():
    schema = {**SCHEMA, "person_key": "id", "max_rows_per_person": 3}
    schema["columns"] = {**SCHEMA["columns"], "id": {"kind": "identifier"}}
    query = {"kind": "range_histogram", "column": "age", "bins": 4096}

    (entry,) = preview(schema=schema, definition=PURE, queries=[query])

    assert entry["sensitivity"] == 3 * ranges.tree_shape(4096, "l1").noisy_levels


@pytest.mark.parametrize("definition", [PURE, APPROX, BLOWFISH], ids=["pure", "approx", "bf"])
def test_without_noise_every_range_is_exact(definition):
    # given ages 0..99, 7 records each
    frame = pd.DataFrame({"age": [str(a) for a in range(100) for _ in range(7)]})
    query = {"kind": "range_histogram", "column": "age", "bins": 1000}

    # when
    result = run_queries(
        frame, schema=SCHEMA, definition=definition, queries=[query], noise=NoNoise()
    )
    statistic = result.statistics[0].to_dict()

    # then
    assert statistic["tree"]["bins"] == 1000
    answer = range_answer(statistic, 20, 40)
    assert (answer["from"], answer["to"], answer["bins"]) == (20.0, 40.0, 200)
    assert answer["value"] == pytest.approx(7 * 20)
    low, high = answer["ci95"]
    assert low < 7 * 20 < high
    assert range_answer(statistic, -50, 500)["value"] == pytest.approx(700)


def test_a_shifted_noise_moves_a_range_by_its_weights():
    # given +1 on every node of the tree
    frame = pd.DataFrame({"age": [str(a) for a in range(100)]})
    query = {"kind": "range_histogram", "column": "age", "bins": 4096}
    result = run_queries(frame, schema=SCHEMA, definition=PURE, queries=[query], noise=Shifted())
    statistic = result.statistics[0].to_dict()
    shape = ranges.tree_shape(4096, "l1")

    # when
    answer = range_answer(statistic, 0, 50)

    # then the published answer is the true one plus Σ wᵢ
    first, last = 0, answer["bins"] - 1
    expected = 50 + ranges.range_weights(shape, first, last).sum()
    assert answer["value"] == pytest.approx(expected, abs=1e-6)


def test_a_bins_interval_is_the_noises_exact_quantile_for_flat_bins():
    # one node's geometric noise: the published half-width is its exact 95% quantile
    from privacy_engine.accuracy import geometric_halfwidth

    assert ranges.error_halfwidth(np.array([1.0]), "geometric", 3.0) == geometric_halfwidth(3.0)


def range_errors(draws: int) -> tuple[np.ndarray, np.ndarray]:
    """A tree range's weights, and |error| of its answer over ``draws`` draws of OpenDP's noise."""
    shape = ranges.complete_tree(256, 4)
    weights = ranges.range_weights(shape, 13, 200)
    noise = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l1_distance(T=dp.i64), scale=4.0
    )
    nodes = np.asarray(noise([0] * (shape.nodes * draws))).reshape(draws, shape.nodes)
    return weights, np.abs(nodes @ weights)


@pytest.mark.statistical
def test_a_ranges_interval_covers_95_percent_and_no_more():
    weights, errors = range_errors(3000)
    halfwidth = ranges.error_halfwidth(weights, "geometric", 4.0)
    missed = int((errors > halfwidth).sum())

    # then the misses are not above 5% beyond chance, and not far below it either (tight)
    assert clopper_pearson_lower(missed, len(errors), 1e-6) <= 0.05
    assert clopper_pearson_upper(missed, len(errors), 1e-6) >= 0.05
    # negative control: 0.8 of the half-width misses far more than 5%
    assert clopper_pearson_lower(int((errors > 0.8 * halfwidth).sum()), len(errors), 1e-6) > 0.05


def test_the_grid_gives_the_exact_quantile_of_a_sum_of_equal_noises():
    # the sum of 7 geometric noises of scale 3, convolved directly: its 95% quantile is 22
    alpha = math.exp(-1 / 3)
    k = np.arange(-400, 401)
    pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(k)
    total = pmf
    for _ in range(6):
        total = np.convolve(total, pmf)
    support = np.arange(len(total)) - len(total) // 2
    exact = next(h for h in range(200) if total[np.abs(support) <= h].sum() >= 0.95)

    halfwidth = ranges.error_halfwidth(np.ones(7), "geometric", 3.0)

    assert exact == 22
    assert exact <= halfwidth <= exact + 0.1
    chernoff = ranges.chernoff_halfwidth(np.ones(1), np.array([7]), "geometric", 3.0, 0.95)
    assert chernoff > halfwidth
    # the sub-Gaussian bound for the discrete Gaussian: σ‖w‖√(2 ln 40) at most
    weights, _ = range_errors(1)
    assert ranges.error_halfwidth(weights, "gaussian", 2.0) <= 2.0 * math.sqrt(
        weights @ weights * 2 * math.log(40)
    )


@pytest.mark.parametrize(
    ("bins", "message"),
    [
        (True, "whole number"),
        ("100", "whole number"),
        (1.5, "whole number"),
        (1, "whole number"),
        (65_537, "whole number"),
        (None, "whole number"),
    ],
)
def test_bad_bins_are_refused_naming_bins(bins, message):
    with pytest.raises(EngineValidationError) as refused:
        plan_release(
            schema=SCHEMA,
            definition=PURE,
            queries=[{"kind": "range_histogram", "column": "age", "bins": bins}],
        )
    assert any(message in m for m in refused.value.errors["queries.0.bins"])


def test_a_categorical_column_is_refused_naming_the_column():
    schema = {"columns": {"sex": {"kind": "categorical", "categories": ["F", "M"]}}}
    with pytest.raises(EngineValidationError) as refused:
        plan_release(
            schema=schema,
            definition=PURE,
            queries=[{"kind": "range_histogram", "column": "sex", "bins": 10}],
        )
    assert "queries.0.column" in refused.value.errors


def published(bins: int = 64) -> dict:
    frame = pd.DataFrame({"age": [str(a) for a in range(100)]})
    query = {"kind": "range_histogram", "column": "age", "bins": bins}
    result = run_queries(frame, schema=SCHEMA, definition=PURE, queries=[query], noise=NoNoise())
    return result.statistics[0].to_dict()


@pytest.mark.parametrize(
    ("low", "high", "field"),
    [(5, 5, "to"), (9, 2, "to"), (math.nan, 3, "to"), (200, 300, "from"), (-9, -1, "from")],
)
def test_a_range_outside_or_backwards_is_refused_naming_the_field(low, high, field):
    with pytest.raises(EngineValidationError) as refused:
        range_answer(published(), low, high)
    assert field in refused.value.errors


@settings(max_examples=200, deadline=None)
@given(
    low=st.floats(allow_nan=True, allow_infinity=True),
    high=st.floats(allow_nan=True, allow_infinity=True),
)
def test_any_numbers_give_an_answer_within_the_bins_or_a_named_refusal(low, high):
    statistic = published()
    answer, refused = None, None
    try:
        answer = range_answer(statistic, low, high)
    except EngineValidationError as error:
        refused = error.errors
    if refused is not None:
        assert set(refused) <= {"from", "to"}
        return
    assert 0.0 <= answer["from"] < answer["to"] <= 100.0
    assert 1 <= answer["bins"] <= 64
    assert answer["ci95"][0] <= answer["value"] <= answer["ci95"][1]


def test_every_range_of_a_small_histogram_is_consistent_with_its_bins():
    statistic = published(16)
    cells = statistic["cells"]
    edges = [i * 100 / 16 for i in range(17)]
    for first, last in itertools.combinations_with_replacement(range(16), 2):
        answer = range_answer(statistic, edges[first], edges[last + 1])
        total = sum(statistic["value"][c] for c in cells[first : last + 1])
        assert answer["value"] == pytest.approx(max(0.0, total))
        assert answer["bins"] == last - first + 1


def test_the_simulated_example_spreads_records_over_the_bins_up_to_100_bins():
    from privacy_engine.guidance import simulated_preview

    schema = {**SCHEMA, "declared_size": 1000}
    few, many = simulated_preview(
        schema=schema,
        definition=PURE,
        queries=[
            {"kind": "range_histogram", "column": "age", "bins": 100},
            {"kind": "range_histogram", "column": "age", "bins": 101},
        ],
    )

    assert list(few["simulated"].values()) == [10] * 100
    assert len(few["noisy"]) == 100
    assert many["simulated"] is None


FOREST = ranges.TreeShape(bins=60, branching=4, levels=4, rooted=False)


def test_a_forest_is_least_squares_tree_by_tree_and_opendps():
    nodes = (np.arange(FOREST.nodes) * 7919) % 23 - 11

    ours = ranges.consistent_estimate(nodes, FOREST)
    least_squares = np.linalg.lstsq(incidence(FOREST), nodes, rcond=None)[0]

    np.testing.assert_allclose(ours, least_squares, atol=1e-9)
    np.testing.assert_allclose(ours[:60], ranges.consistent_leaves(nodes, FOREST), atol=1e-9)
    counts = list(range(60))
    np.testing.assert_array_equal(
        ranges.tree_nodes(counts, FOREST), incidence(FOREST) @ np.r_[counts, [0] * 4]
    )
    assert FOREST.nodes == 4 * (1 + 4 + 16)
    assert ranges.tree_l1_map(FOREST, 1) == FOREST.noisy_levels == 3


@pytest.mark.parametrize(("first", "last"), [(0, 0), (3, 17), (0, 59), (15, 16), (5, 40)])
def test_a_forests_weights_are_a_ranges_exact_error(first, last):
    x = np.arange(60, dtype=float) % 5
    noise = np.sin(np.arange(FOREST.nodes) * 1.7) * 3.0
    noisy = incidence(FOREST) @ np.r_[x, [0.0] * 4] + noise

    estimate = ranges.consistent_estimate(noisy, FOREST)
    weights = ranges.range_weights(FOREST, first, last)

    error = estimate[first : last + 1].sum() - x[first : last + 1].sum()
    assert error == pytest.approx(float(weights @ noise), abs=1e-9)


def test_a_wide_noise_falls_back_to_chernoff_within_the_work_bound():
    # a small ε on 65,536 bins: the exact grid would transform millions of points per request
    shape = ranges.tree_shape(65_536, "l1")
    weights = ranges.range_weights(shape, 0, 0)
    magnitudes = np.abs(weights[weights != 0])
    distinct, repeats = np.unique(np.ceil(magnitudes * 1e12) / 1e12, return_counts=True)

    assert ranges._grid_halfwidth(distinct, repeats, "geometric", 1700.0, 0.95) is None
    assert ranges.error_halfwidth(weights, "geometric", 1700.0) == ranges.chernoff_halfwidth(
        distinct, repeats, "geometric", 1700.0, 0.95
    )
    # at ε = 1 the grid is used, and is tighter
    assert ranges._grid_halfwidth(distinct, repeats, "geometric", 3.0, 0.95) is not None


def test_bins_whose_edges_would_coincide_are_refused():
    # a range of one unit at 10¹⁵: 64 bins would have edges that are the same float
    schema = {"columns": {"x": {"kind": "numeric", "lower": 1e15 - 1, "upper": 1e15}}}
    with pytest.raises(EngineValidationError) as refused:
        plan_release(
            schema=schema,
            definition=PURE,
            queries=[{"kind": "range_histogram", "column": "x", "bins": 64}],
        )
    assert "bin edges would coincide" in refused.value.errors["queries.0.bins"][0]


def test_the_l2_sensitivity_is_rounded_up():
    query = {"kind": "range_histogram", "column": "age", "bins": 100}
    levels = ranges.tree_shape(100, "l2").noisy_levels

    (entry,) = preview(schema=SCHEMA, definition=APPROX, queries=[query])

    assert entry["sensitivity"] ** 2 >= levels
    assert entry["sensitivity"] == pytest.approx(math.sqrt(levels), rel=1e-15)
