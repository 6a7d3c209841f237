"""The ``synthetic`` kind (issue 10, point 3): a synthetic table of the declared columns from noisy
1- and 2-way marginals (MST: a spanning tree of pairs chosen by the exponential mechanism), fitted
and sampled by Private-PGM (mbi). Shapes, determinism with seeded noise, marginals preserved on a
strongly correlated table at large ε, refusals, and nothing in the output measured against the
real table."""

import hashlib
import itertools
import json
import math
import os

import numpy as np
import pandas as pd
import pytest

import privacy_engine.synthetic as synthetic
from privacy_engine import EngineValidationError, plan_release, run_queries
from privacy_engine.definitions import definition_from_dict
from privacy_engine.guidance import simulated_preview
from privacy_engine.kinds import PlanContext, kind_of
from privacy_engine.schema import schema_from_dict


class HashedBytes:
    """A deterministic byte source for tests: SHA-256 of (seed, counter), block after block."""

    def __init__(self, seed: int) -> None:
        self.seed, self.counter = seed, 0

    def __call__(self, count: int) -> bytes:
        out = bytearray()
        while len(out) < count:
            self.counter += 1
            out += hashlib.sha256(f"{self.seed}:{self.counter}".encode()).digest()
        return bytes(out[:count])


N = 2000
SCHEMA = {
    "columns": {
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other", "fill": "F"},
        "job": {
            "kind": "categorical",
            "categories": ["nurse", "doctor", "clerk"],
            "other": "other",
            "fill": "clerk",
        },
        "ward": {
            "kind": "categorical",
            "categories": ["a", "b", "c", "d"],
            "other": "other",
            "fill": "a",
        },
        "age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 40},
        "name": {"kind": "identifier"},
    },
    "declared_size": N,
}
QUERY = {
    "kind": "synthetic",
    "columns": ["sex", "job", "ward", "age"],
    "bins": {"age": [0, 30, 60, 100]},
}
PURE = {"kind": "pure_dp", "epsilon": 1.0}


def correlated_frame(seed: int = 0, n: int = N) -> pd.DataFrame:
    """job follows sex, ward follows job, age follows ward, each with 5% exceptions."""
    rng = np.random.default_rng(seed)
    sex = rng.integers(0, 2, n)
    flip = rng.random((3, n)) < 0.05
    job = np.where(flip[0], rng.integers(0, 3, n), sex)  # F→nurse, M→doctor
    ward = np.where(flip[1], rng.integers(0, 4, n), job)
    age_bin = np.where(flip[2], rng.integers(0, 3, n), np.minimum(ward, 2))
    age = np.asarray([15, 45, 80])[age_bin] + rng.uniform(-10, 10, n)
    return pd.DataFrame(
        {
            "sex": np.asarray(["F", "M"])[sex],
            "job": np.asarray(["nurse", "doctor", "clerk"])[job],
            "ward": np.asarray(["a", "b", "c", "d"])[ward],
            "age": [f"{v:.2f}" for v in age],
            "name": [f"person {i}" for i in range(n)],
        }
    )


class SeededNoise:
    """Deterministic noise for tests: −2..2 on every cell from a seeded generator; the selection
    gets the exact scores back (the mechanisms' convention for "no noise": the best pair wins)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def sample(self, measurement, value):
        noise = self.rng.integers(-2, 3, len(value))
        return [int(v) + int(d) for v, d in zip(value, noise, strict=True)]


class Constant:
    """Noise that ignores the data: every cell gets 7, the first candidate pair is chosen."""

    def sample(self, measurement, value):
        if "LInfDistance" in str(measurement.input_metric):  # the selection's scores
            return 0
        return [7] * len(value)


def release(frame, query=QUERY, definition=PURE, noise=None, schema=SCHEMA):
    return run_queries(frame, schema=schema, definition=definition, queries=[query], noise=noise)


def bucket(values: pd.Series, edges=(0, 30, 60, 100)) -> pd.Series:
    return pd.cut(values.astype(float), list(edges), right=False, include_lowest=True).astype(str)


def tvds(generated: pd.DataFrame, real: pd.DataFrame, columns) -> tuple[list, list]:
    left = generated.assign(age=bucket(generated["age"]))
    right = real.assign(age=bucket(real["age"]))
    return synthetic.marginal_errors(
        {c: left[c].tolist() for c in columns}, {c: right[c].tolist() for c in columns}, columns
    )


@pytest.fixture(scope="module")
def correlated_release():
    """One release at large ε on the correlated table (a fit takes seconds: shared)."""
    frame = correlated_frame()
    return frame, release(frame, definition={"kind": "pure_dp", "epsilon": 20.0})


def test_the_table_has_the_columns_buckets_and_a_spanning_tree(correlated_release):
    _, result = correlated_release
    (statistic,) = result.statistics
    data = statistic.microdata
    table = synthetic.synthetic_frame(data)

    assert statistic.kind == "synthetic"
    assert list(table.columns) == ["sex", "job", "ward", "age"]
    assert len(table) == statistic.value == data["rows"]
    assert abs(data["rows"] - N) < 50  # n̂ from the noisy marginals at ε = 20
    assert set(table["sex"]) <= {"F", "M", "other"}
    assert set(table["job"]) <= {"nurse", "doctor", "clerk", "other"}
    assert table["age"].between(0, 100).all()
    # every 1-way marginal, then d − 1 pairs that connect the four columns
    ones = [m["columns"] for m in data["marginals"][:4]]
    twos = [m["columns"] for m in data["marginals"][4:]]
    assert ones == [["sex"], ["job"], ["ward"], ["age"]]
    assert len(twos) == 3
    linked = {"sex"}
    for _ in range(3):
        linked |= {c for pair in twos if set(pair) & linked for c in pair}
    assert linked == {"sex", "job", "ward", "age"}
    # the noisy counts the table was fitted to are published, one list per bucket, labelled
    assert data["buckets"][3] == ["[0, 30)", "[30, 60)", "[60, 100]"]
    assert [len(m["counts"]) for m in data["marginals"][:4]] == [3, 4, 5, 3]
    sizes = dict(zip(data["columns"], map(len, data["buckets"]), strict=True))
    for marginal in data["marginals"][4:]:
        first, second = marginal["columns"]
        assert len(marginal["counts"]) == sizes[first]
        assert {len(row) for row in marginal["counts"]} == {sizes[second]}
    # the stored statistic holds no rows: they are generated at publication
    assert "records" not in data
    assert len(json.dumps(statistic.to_dict())) < 5_000
    assert result.epsilon_spent == statistic.epsilon == 20
    assert statistic.ci95 is None


COLUMNS = ["sex", "job", "ward", "age"]
# What the noisy marginals and the fit may be off by at ε = 20, beyond the sampling of the rows:
# the noise alone moves each cell by about one count in 2,000.
FIT_ALLOWANCE = 0.02
# The chance that rows drawn from the right distribution are judged far from it, per marginal.
FAILURE = 1e-6


def sampling_bound(real: pd.DataFrame, columns: list[str], n: int) -> float:
    """The total variation distance between ``n`` rows drawn from ``real``'s own distribution
    and ``real``, on the marginal over ``columns``, exceeds this with probability at most
    FAILURE: its expectation (each cell's E|p̂ − p| ≤ √(p(1 − p)/n), by Jensen) plus McDiarmid's
    deviation (one of the n rows moves the distance by at most 1/n)."""
    shares = real.assign(age=bucket(real["age"]))[columns].value_counts(normalize=True)
    expected = 0.5 * float(np.sqrt(shares * (1 - shares) / n).sum())
    return expected + math.sqrt(math.log(1 / FAILURE) / (2 * n))


def far_marginals(table: pd.DataFrame, real: pd.DataFrame) -> dict[tuple[str, ...], float]:
    """Each 1-way and 2-way marginal of the synthetic ``table`` farther from ``real``'s than the
    fit and the sampling of its rows allow, with its distance."""
    one, two = tvds(table, real, COLUMNS)
    marginals = [(c,) for c in COLUMNS] + list(itertools.combinations(COLUMNS, 2))
    return {
        columns: distance
        for columns, distance in zip(marginals, one + two, strict=True)
        if distance > FIT_ALLOWANCE + sampling_bound(real, list(columns), len(table))
    }


def test_large_epsilon_preserves_the_correlated_pairs(correlated_release):
    frame, result = correlated_release
    data = result.statistics[0].microdata
    table = synthetic.synthetic_frame(data)

    # the chain sex–job–ward–age is what the tree finds
    assert sorted(sorted(m["columns"]) for m in data["marginals"][4:]) == [
        ["age", "ward"],
        ["job", "sex"],
        ["job", "ward"],
    ]
    # every column and pair is as close as rows drawn from the real table itself would be
    # (the bound is about 0.1 here; a table that ignores the pairs is 0.41 to 0.51 off)
    assert far_marginals(table, frame) == {}


def test_a_table_that_ignores_the_data_is_far_on_the_kept_pairs():
    # given the same release with noise that ignores the data (the negative control)
    frame = correlated_frame()
    result = release(frame, definition={"kind": "pure_dp", "epsilon": 20.0}, noise=Constant())
    table = synthetic.synthetic_frame(result.statistics[0].microdata)

    # then the check finds it far on the columns it gets wrong and on every pair the chain links
    # (sex, half F and half M, happens to come out of equal counts about right)
    far = far_marginals(table, frame)
    assert {("job",), ("ward",), ("sex", "job"), ("job", "ward"), ("ward", "age")} <= set(far)


def test_columns_drawn_given_the_same_column_stay_independent_given_it():
    """A star: ``a`` and ``b`` each follow ``h`` (and are independent given it). Sampled records
    keep that; mbi's default rounding would make a and b comonotone within each value of h."""
    rng = np.random.default_rng(5)
    n = 3000
    h = rng.integers(0, 3, n)
    a = np.where(rng.random(n) < 0.6, h, rng.integers(0, 3, n))
    b = np.where(rng.random(n) < 0.6, h, rng.integers(0, 3, n))
    names = {"h": h, "a": a, "b": b}
    frame = pd.DataFrame({k: np.asarray(["x", "y", "z"])[v] for k, v in names.items()})
    column = {"kind": "categorical", "categories": ["x", "y", "z"], "other": "o", "fill": "x"}
    schema = {"columns": {k: column for k in names}}
    query = {"kind": "synthetic", "columns": ["h", "a", "b"]}
    result = release(frame, query, {"kind": "pure_dp", "epsilon": 20.0}, schema=schema)
    data = result.statistics[0].microdata
    assert sorted(sorted(m["columns"]) for m in data["marginals"][3:]) == [["a", "h"], ["b", "h"]]
    table = synthetic.synthetic_frame(data)
    _, two = synthetic.marginal_errors(
        {c: table[c].tolist() for c in names}, {c: frame[c].tolist() for c in names}, list(names)
    )
    assert max(two) < 0.04  # (a, b), never measured, included


def test_independent_noise_would_not_keep_them(correlated_release):
    """The baseline the bench compares with: sampling each column from its own marginal loses
    what the pairs keep (so the previous test is not trivially passed)."""
    frame, _ = correlated_release
    rng = np.random.default_rng(1)
    independent = frame.apply(lambda column: rng.permutation(column.to_numpy()))
    _, two = tvds(independent, frame, ["sex", "job", "ward", "age"])
    assert max(two) > 0.3


def test_the_same_noise_and_bits_give_the_same_table_and_fresh_bits_another():
    frame = correlated_frame(seed=3, n=300)
    query = {"kind": "synthetic", "columns": ["sex", "job", "ward"]}
    first = release(frame, query, noise=SeededNoise(7)).statistics[0]
    second = release(frame, query, noise=SeededNoise(7)).statistics[0]
    other_noise = release(frame, query, noise=SeededNoise(8)).statistics[0]

    assert first.to_dict() == second.to_dict()
    assert other_noise.microdata["marginals"] != first.microdata["marginals"]
    rows = synthetic.synthetic_frame(first.microdata, HashedBytes(1))
    assert rows.equals(synthetic.synthetic_frame(second.microdata, HashedBytes(1)))
    assert not rows.equals(synthetic.synthetic_frame(first.microdata, HashedBytes(2)))


def test_the_rows_come_from_the_operating_system_by_default(monkeypatch):
    """No bits injected: the rows read ``os.urandom`` (DESIGN.md rule 2), never numpy.random."""
    calls = []

    def counted(count: int) -> bytes:
        calls.append(count)
        return os.urandom(count)

    monkeypatch.setattr(synthetic, "system_random_bytes", counted)
    frame = correlated_frame(seed=3, n=300)
    query = {"kind": "synthetic", "columns": ["sex", "age"], "bins": {"age": [0, 50, 100]}}
    data = release(frame, query).statistics[0].microdata
    synthetic.synthetic_table(data)
    # a code per row and column (4 bytes) and a value within its bin per row (8 bytes)
    assert sum(calls) == data["rows"] * (4 + 4 + 8)


def test_the_output_is_a_function_of_the_noisy_answers_only():
    """Two different real tables with the same noisy answers publish the same thing: nothing
    published is measured against the real table."""
    query = {"kind": "synthetic", "columns": ["sex", "job", "ward"]}
    one = release(correlated_frame(seed=1, n=200), query, noise=Constant()).statistics[0]
    two = release(correlated_frame(seed=2, n=500), query, noise=Constant()).statistics[0]

    assert one.to_dict() == two.to_dict()
    text = json.dumps(one.to_dict()).lower()
    for word in ("tvd", "error", "distance", "accuracy"):
        assert f'"{word}' not in text


def test_the_plan_splits_epsilon_and_calibrates_per_definition():
    schema = schema_from_dict(SCHEMA)
    query = kind_of_query(QUERY)
    kind = kind_of(query)

    def plan(definition):
        context = PlanContext(schema, definition_from_dict(definition), None)
        return kind.plan(query, definition["epsilon"], definition.get("delta", 0.0), context)

    pure = plan(PURE)
    oneway, *selectors, pairs = pure.mechanisms
    assert (oneway.sensitivity, pairs.sensitivity) == (4, 3)  # L1: d and d − 1 cells
    assert [s.sensitivity for s in selectors] == [1, 1, 1]
    assert math.isclose(oneway.scale, 4 / 0.3, rel_tol=1e-9)
    assert math.isclose(pairs.scale, 3 / 0.6, rel_tol=1e-9)
    assert math.isclose(selectors[0].scale, 2 * 1 / (0.1 / 3), rel_tol=1e-9)
    assert pure.epsilon_spent <= 1.0
    assert math.isclose(pure.epsilon_spent, 1.0, rel_tol=1e-9)

    blowfish = plan({"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "full_domain"}})
    oneway, *selectors, pairs = blowfish.mechanisms
    assert (oneway.sensitivity, pairs.sensitivity) == (8, 6)  # a replacement: 2 cells per table
    assert [s.sensitivity for s in selectors] == [2, 2, 2]

    approx = plan({"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-6})
    oneway, *selectors, pairs = approx.mechanisms
    assert oneway.name == pairs.name == "gaussian"
    assert oneway.sensitivity == 2
    assert math.isclose(pairs.sensitivity, math.sqrt(3))  # L2
    assert approx.delta_spent <= 1e-6
    assert approx.epsilon_spent <= 1.0


def kind_of_query(spec):
    from privacy_engine.queries import query_from_dict

    return query_from_dict(spec, schema_from_dict(SCHEMA))


def test_two_columns_need_no_selection():
    query = kind_of_query({"kind": "synthetic", "columns": ["sex", "job"]})
    context = PlanContext(schema_from_dict(SCHEMA), definition_from_dict(PURE), None)
    planned = kind_of(query).plan(query, 1.0, 0.0, context)
    assert [m.name for m in planned.mechanisms] == ["geometric", "geometric"]
    assert math.isclose(planned.mechanisms[0].scale, 2 / (1.0 * 0.3 / 0.9), rel_tol=1e-9)


def test_the_preview_needs_no_data_and_states_its_simulated_error():
    (entry,) = plan_release(schema=SCHEMA, definition=PURE, queries=[QUERY]).preview()
    assert entry["kind"] == "synthetic"
    assert entry["columns"] == QUERY["columns"]
    assert entry["mechanism"] == "geometric+exponential"
    assert entry["expected_abs_error"] > 0
    assert "2-way" in entry["note"]

    (simulated,) = simulated_preview(schema=SCHEMA, definition=PURE, queries=[QUERY])
    facts = simulated["synthetic_error"]
    assert 0 <= facts["one_way_tvd_mean"] <= facts["two_way_tvd_max"] < 0.2
    assert "never the real data" in facts["simulated_table"]


@pytest.mark.parametrize(
    ("query", "path", "words"),
    [
        ({"kind": "synthetic", "columns": ["sex"]}, "columns", "2 to 10"),
        ({"kind": "synthetic", "columns": ["sex", "sex"]}, "columns", "different"),
        (
            {"kind": "synthetic", "columns": ["sex", "age"], "bins": {"age": [5, 50, 100]}},
            "bins.age",
            "declared bounds",
        ),
        (
            {"kind": "synthetic", "columns": ["sex", "job"], "bins": {"sex": [0, 1]}},
            "bins.sex",
            "categorical",
        ),
        ({"kind": "synthetic", "columns": ["sex", "name"]}, "columns", "neither"),
        ({"kind": "synthetic", "columns": ["sex", "region"]}, "columns", "leave records out"),
        (
            {"kind": "synthetic", "columns": ["sex", "score"], "bins": {"score": [0, 1]}},
            "columns",
            "leave records out",
        ),
        (
            {
                "kind": "synthetic",
                "columns": ["sex", "age"],
                "bins": {"age": list(range(0, 101))},
            },
            "bins.age",
            "at most 50",
        ),
    ],
)
def test_refusals_name_the_field(query, path, words):
    schema = {
        "columns": {
            **SCHEMA["columns"],
            "region": {"kind": "categorical", "categories": ["north", "south"]},  # no other
            "score": {"kind": "numeric", "lower": 0, "upper": 1},  # no fill
        }
    }
    with pytest.raises(EngineValidationError) as caught:
        plan_release(schema=schema, definition=PURE, queries=[query])
    messages = caught.value.errors[f"queries.0.{path}"]
    assert words in " ".join(messages)


def test_too_many_columns_are_refused():
    columns = {
        f"c{i}": {"kind": "categorical", "categories": ["x", "y"], "other": "o", "fill": "x"}
        for i in range(11)
    }
    with pytest.raises(EngineValidationError) as caught:
        plan_release(
            schema={"columns": columns},
            definition=PURE,
            queries=[{"kind": "synthetic", "columns": list(columns)}],
        )
    assert "queries.0.columns" in caught.value.errors


def test_the_spec_reads_back():
    query = kind_of_query(QUERY)
    from privacy_engine.queries import query_to_dict

    assert query_to_dict(query) == QUERY
    assert query.column is None
    assert query.bins == (None, None, None, (0.0, 30.0, 60.0, 100.0))


def test_scores_are_the_rounded_l1_error_of_the_independent_model():
    oneway = [np.asarray([10, 10]), np.asarray([10, 10])]
    # independent prediction: 5 per cell; the true table puts everything on the diagonal
    assert synthetic.scores(oneway, [[10, 0, 0, 10]], [0]) == [20]
    assert synthetic.scores(oneway, [[5, 5, 5, 5]], [0]) == [0]
    # negative noisy counts count as 0; no positive count: uniform
    assert np.allclose(
        synthetic.independent_prediction([np.asarray([-3, 4]), np.asarray([-1, -1])], 0, 1),
        [0, 0, 0.5, 0.5],
    )


def test_integer_weights_add_up_to_the_scale_and_keep_zero_shares_at_zero():
    weights = synthetic.integer_weights(
        np.asarray([[0.5, 0.25, 0.25], [1.0, 0.0, -0.5], [0, 0, 0]])
    )

    assert weights.sum(axis=1).tolist() == [2**32] * 3
    assert weights[0].tolist() == [2**31, 2**30, 2**30]
    assert weights[1].tolist() == [2**32, 0, 0]  # a negative share is clipped to nothing
    assert sorted(weights[2].tolist()) == [1431655765, 1431655765, 1431655766]  # no mass: uniform


def test_draw_codes_locates_each_word_in_its_parents_row_exactly():
    """Word w given parent v is code k when Σ_{<k} weights[v] ≤ w < Σ_{≤k} weights[v]: the
    boundaries on both sides, in both rows (the rows are laid end to end in one search)."""
    weights = np.asarray([[2**31, 0, 2**31], [1, 2**32 - 2, 1]], dtype=np.int64)
    words = [0, 2**31 - 1, 2**31, 2**32 - 1, 0, 1, 2**32 - 2, 2**32 - 1]
    given = np.asarray([0, 0, 0, 0, 1, 1, 1, 1])
    source = iter([np.asarray(words, dtype="<u4").tobytes()])

    codes = synthetic.draw_codes(weights, given, len(words), lambda count: next(source))

    assert codes.tolist() == [0, 0, 2, 2, 0, 1, 1, 2]


def test_numeric_values_stay_inside_their_bins_even_at_the_extreme_bits():
    codes = np.asarray([[0, 0], [0, 1], [0, 2], [0, 0], [0, 2]])
    extremes = [0, 0, 0, 2**64 - 1, 2**64 - 1]
    source = iter([np.asarray(extremes, dtype="<u8").tobytes()])

    edges = [None, [0, 30, 60, 100]]
    sex, age = synthetic.decode(edges, codes, lambda count: next(source))

    assert sex is None  # a categorical column's rows are its codes
    assert age[:3].tolist() == [0.0, 30.0, 60.0]
    assert 29.99 < age[3] < 30.0  # [0, 30): never 30
    assert 99.99 < age[4] <= 100.0


def test_the_tree_models_pairs_are_those_of_its_full_joint_distribution():
    """A pair's closed form (conditionals multiplied along the tree's path, Bayes against an
    edge's direction) against the full joint table summed out, on a tree with a branch."""
    rng = np.random.default_rng(11)
    sizes = (2, 3, 4, 2, 3)
    pairs = [(0, 1), (1, 2), (1, 3), (3, 4)]
    order = tuple(synthetic.tree_order(5, pairs))

    def conditional(rows: int, columns: int) -> np.ndarray:
        table = rng.random((rows, columns))
        return table / table.sum(axis=1, keepdims=True)

    root = conditional(1, sizes[0])[0]
    conditionals = {child: conditional(sizes[parent], sizes[child]) for parent, child in order[1:]}
    model = synthetic.TreeModel(sizes=sizes, order=order, root=root, conditionals=conditionals)

    joint = np.zeros(sizes)
    for cell in itertools.product(*map(range, sizes)):
        probability = root[cell[0]]
        for parent, child in order[1:]:
            probability *= conditionals[child][cell[parent], cell[child]]
        joint[cell] = probability
    for i, j in itertools.permutations(range(5), 2):
        others = tuple(k for k in range(5) if k not in (i, j))
        expected = joint.sum(axis=others)
        expected = expected if i < j else expected.T
        np.testing.assert_allclose(model.pair(i, j), expected, atol=1e-12)
    for i in range(5):
        expected = joint.sum(axis=tuple(k for k in range(5) if k != i))
        np.testing.assert_allclose(model.marginal(i), expected, atol=1e-12)


def test_a_numeric_column_without_edges_gets_ten_equal_bins_of_its_declared_bounds():
    frame = correlated_frame(seed=3, n=300)
    query = {"kind": "synthetic", "columns": ["sex", "age"]}
    data = release(frame, query).statistics[0].microdata

    assert data["edges"] == [None, [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]]
    assert data["buckets"][1][0] == "[0, 10)"
    assert data["buckets"][1][-1] == "[90, 100]"
    assert synthetic.synthetic_frame(data)["age"].between(0, 100).all()


@pytest.fixture(scope="module")
def sharp_chain():
    """Noisy marginals of a chain a → b → c of 50 buckets each with sharp conditionals, at 10⁶
    records, each cell's noise of standard deviation 20; the pair (c, b) stored against the
    tree's direction. Returns the measurements and the true pair tables."""
    rng = np.random.default_rng(1)
    n, std, size = 10**6, 20.0, 50
    a = rng.dirichlet(np.ones(size))
    ab = a[:, None] * rng.dirichlet(np.full(size, 0.3), size=size)
    bc = ab.sum(axis=0)[:, None] * rng.dirichlet(np.full(size, 0.3), size=size)
    ones = [a, ab.sum(axis=0), bc.sum(axis=0)]
    noisy = lambda p: np.round(n * p.ravel() + rng.normal(0, std, p.size)).astype(np.int64)  # noqa: E731
    measurements = synthetic.Measurements(
        columns=("a", "b", "c"),
        sizes=(size, size, size),
        oneway=tuple(noisy(p) for p in ones),
        pairs=((0, 1), (2, 1)),
        pair_cells=(noisy(ab), noisy(bc.T)),
        oneway_std=std,
        pair_std=std,
    )
    return measurements, ab, bc


def tvd(p, q) -> float:
    return 0.5 * float(np.abs(np.ravel(p) - np.ravel(q)).sum())


def test_the_fit_reaches_the_noise_floor_on_large_sharp_tables(sharp_chain):
    """Private-PGM's mirror descent from nothing stayed 0.4 away here after 500 iterations; the
    closed-form start and the fit from it are as close as the noisy tables themselves."""
    measurements, ab, bc = sharp_chain
    floor = tvd(np.clip(measurements.pair_cells[0], 0, None) / 1e6, ab)  # the noise's own error

    start = synthetic.consistent_tree(measurements)
    fitted = synthetic.fit(measurements)

    for model in (start, fitted):
        assert tvd(model.pair(0, 1), ab) < 1.2 * floor
        assert tvd(model.pair(1, 2), bc) < 1.2 * floor
    # the preview's model (the start) is the release's to within a rounding
    assert tvd(start.pair(0, 2), fitted.pair(0, 2)) < 0.002
    # control: independent columns fail the same bound by far
    independent = np.outer(fitted.marginal(0), fitted.marginal(1))
    assert tvd(independent, ab) > 10 * floor


def test_a_record_moves_a_score_by_at_most_one_whatever_the_prediction():
    """Scores are whole numbers against a rounded prediction: one added record moves one cell
    by one and the score by at most one, exactly (no float sum to round across a boundary)."""
    rng = np.random.default_rng(4)
    for _ in range(300):
        oneway = [rng.integers(-5, 40, 3), rng.integers(-5, 40, 4)]  # fractional predictions
        table = rng.integers(0, 30, 12)
        neighbour = table.copy()
        neighbour[rng.integers(0, 12)] += 1

        before, after = (synthetic.scores(oneway, [t], [0])[0] for t in (table, neighbour))

        assert isinstance(before, int)
        assert abs(after - before) <= 1


def test_integer_weights_refuse_probabilities_that_are_not_finite():
    with pytest.raises(ValueError, match="finite"):
        synthetic.integer_weights(np.asarray([[0.5, np.inf]]))
    with pytest.raises(ValueError, match="finite"):
        synthetic.integer_weights(np.asarray([[np.nan, 0.5]]))


def test_default_edges_stay_ten_bins_when_rounding_would_merge_them():
    column = schema_from_dict(
        {"columns": {"t": {"kind": "numeric", "lower": 1e12, "upper": 1e12 + 100}}}
    ).column("t")

    edges = synthetic.default_edges(column)

    assert len(edges) == 11
    assert edges[0] == 1e12
    assert edges[-1] == 1e12 + 100
    assert all(a < b for a, b in itertools.pairwise(edges))
