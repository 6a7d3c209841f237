"""The English of k-means and synthetic tables (their published rules, parts and guarantee, the
preview's simulated sentences) and the wizard's desiderata table, shown in the reader's language
through the phrases that wrote them (privacy_engine/wording.py); the stored English unchanged."""

import re

import numpy as np
import pandas as pd
import pytest
from django.utils import translation

from privacy_engine import plan_release, run_queries
from privacy_engine.desiderata import desiderata_table
from privacy_engine.guidance import simulated_preview
from privacy_engine.kinds import kmeans as km
from privacy_engine.synthetic import SyntheticKind
from releases.translations import (
    desiderata_translate,
    engine_text,
    part_role,
    rule_text,
    simulated_translate,
    statistics_translate,
)
from tests.languages import compiled_catalogues  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("compiled_catalogues")

PURE = {"kind": "pure_dp", "epsilon": 1.0}
APPROX = {"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-8}
XY = {
    "columns": {
        "x": {"kind": "numeric", "lower": 0, "upper": 100},
        "y": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 5},
    },
    "declared_size": 2500,
}
WARDS = {
    "columns": {
        "sex": {"kind": "categorical", "categories": ["F", "M"], "fill": "F", "other": "X"},
        "region": {"kind": "categorical", "categories": ["N", "S"], "fill": "N", "other": "W"},
        "age": {"kind": "numeric", "lower": 0, "upper": 90, "fill": 30},
    },
    "declared_size": 400,
}
# Words a translation keeps: names (of a sequence, a rule's authors, libraries and mechanisms)
# and the columns above.
NAMES = {"Halton", "Su", "diffprivlib", "means", "Private", "PGM", "mbi", "geometric", "gaussian"}
NAMES |= {"sex", "region", "age"}


class NoNoise:
    """Hands every exact answer back; the first candidate pair is chosen."""

    def sample(self, measurement, value):
        if "LInfDistance" in str(measurement.input_metric):
            return 0
        return value


def english_words(text: str) -> list[str]:
    """The words of ``text`` that are English, names and column names set aside."""
    return [word for word in re.findall(r"[A-Za-z]{2,}", text) if word not in NAMES]


def kmeans_rule(query: dict, schema: dict = XY) -> str:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"x": rng.uniform(0, 100, 200), "y": rng.uniform(0, 100, 200)})
    result = run_queries(frame, schema=schema, definition=PURE, queries=[query], noise=NoNoise())
    return result.statistics[0].to_dict()["rule"]


def synthetic_statistic(definition: dict) -> dict:
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], 300),
            "region": rng.choice(["N", "S"], 300),
            "age": rng.uniform(0, 90, 300),
        }
    )
    query = {"kind": "synthetic", "columns": ["sex", "region", "age"]}
    result = run_queries(
        frame, schema=WARDS, definition=definition, queries=[query], noise=NoNoise()
    )
    return result.statistics[0].to_dict()


@pytest.mark.parametrize(
    "query",
    [
        {"kind": "kmeans", "columns": ["x", "y"], "k": 3, "iterations": 4},
        {"kind": "kmeans", "columns": ["x", "y"], "k": 3},
        {"kind": "kmeans", "columns": ["x"], "k": 2},
    ],
    ids=["given iterations", "chosen by the rule", "one column"],
)
def test_a_kmeans_rule_reads_in_chinese_in_every_clause(query):
    # given the rule a k-means release publishes, its iterations given or chosen automatically
    rule = kmeans_rule(query)

    # when it is shown to a Chinese reader
    with translation.override("zh-hans"):
        shown = rule_text(rule)

    # then every clause is translated, its numbers kept, and nothing is left in English
    assert shown.count("；") == rule.count("; ")
    assert "3 个初始中心" in shown or "2 个初始中心" in shown
    assert "敏感度涵盖一条记录从一个聚类移到另一个聚类的情况" in shown
    assert english_words(shown) == []


def test_a_kmeans_rule_without_a_declared_size_says_the_default_in_chinese():
    # given automatic iterations without a declared size
    schema = {"columns": XY["columns"]}
    rule = kmeans_rule({"kind": "kmeans", "columns": ["x", "y"], "k": 3}, schema)

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = rule_text(rule)

    # then the clause says the default was taken, in Chinese
    assert "5 次迭代（自动选择：未声明规模，因此取默认值 5）" in shown
    assert english_words(shown) == []


@pytest.mark.parametrize("definition", [PURE, APPROX], ids=["ε-DP", "(ε, δ)-DP"])
def test_a_synthetic_rule_guarantee_and_parts_read_in_chinese(definition):
    # given a published synthetic table of three columns
    statistic = synthetic_statistic(definition)

    # when its rule, guarantee and parts are shown in Chinese
    with translation.override("zh-hans"):
        shown = rule_text(statistic["rule"])
        guarantee = engine_text(statistic["microdata"]["guarantee"])
        roles = [part_role(part["role"]) for part in statistic["parts"]]

    # then every clause and role is translated, the columns and numbers kept
    assert "最大生成树" in shown
    assert "这些行不是真实记录" in shown
    assert english_words(shown) == []
    assert guarantee in shown
    assert ("δ = 1e-08" in guarantee) == (definition is APPROX)
    assert roles[0] == "各列的计数"
    assert roles[1] == "第 1 个列对的选择（sex × region）"
    assert roles[-1] == "所选列对的计数"


def test_a_synthetic_sample_of_a_larger_model_says_so_in_chinese():
    # given the clause a synthetic rule ends with when the model estimates more records than
    # the table holds
    clause = (
        "the model's estimate of the number of records is 240,000, so the table is a sample of "
        "200,000 rows from it"
    )

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = engine_text(clause)

    # then it is translated with its numbers
    assert shown == "模型估计的记录数为 240,000，因此该表是从中抽取的 200,000 行样本"


def test_the_version_page_shows_the_guarantee_in_chinese_and_keeps_the_stored_english():
    # given a synthetic statistic as the version page receives it
    statistic = synthetic_statistic(PURE)
    stored = statistic["microdata"]["guarantee"]

    # when the page's texts are made Chinese
    with translation.override("zh-hans"):
        statistics_translate([statistic])

    # then the page's copy of the guarantee is Chinese, the stored microdata untouched
    assert english_words(statistic["microdata"]["guarantee"]) == []
    assert statistic["microdata"]["guarantee"] != stored


@pytest.mark.parametrize("n", [50, 2500, 20_000])
def test_the_kmeans_preview_sentence_reads_in_chinese(n):
    # given the simulated preview of a k-means draft (at 20,000 records each simulated point
    # stands for several; on a small table Lloyd's can itself be stuck)
    schema = {"columns": XY["columns"], "declared_size": n}
    plan = plan_release(
        schema=schema,
        definition=PURE,
        queries=[{"kind": "kmeans", "columns": ["x", "y"], "k": 3, "iterations": 1}],
    )
    ratio = km.simulated_objective_ratio(plan.statistics[0], plan.schema, n, runs=3)
    simulated = [{"kind": "kmeans", "columns": ["x", "y"], "objective_ratio": ratio}]

    # when the preview page shows it in Chinese
    with translation.override("zh-hans"):
        shown = simulated_translate(simulated)

    # then the sentence is Chinese with its numbers, and the engine's copy keeps its English
    sentence = shown[0]["objective_ratio"]["sentence"]
    assert sentence.startswith(f"在一张含 {n:,} 条记录")
    assert "1 次迭代后" in sentence
    assert english_words(sentence) == []
    assert simulated[0]["objective_ratio"]["sentence"].startswith("On a simulated table of")


def test_the_synthetic_preview_sentence_reads_in_chinese():
    # given the simulated preview of a synthetic draft
    plan = plan_release(
        schema=WARDS,
        definition=PURE,
        queries=[{"kind": "synthetic", "columns": ["sex", "region", "age"]}],
        noise=NoNoise(),
    )
    facts = SyntheticKind().simulated_facts(plan.statistics[0], plan.schema, 400)
    simulated = [{"kind": "synthetic", "columns": ["sex", "region", "age"], **facts}]

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = simulated_translate(simulated)[0]["synthetic_error"]

    # then its sentence and the simulated table's description are Chinese
    assert shown["sentence"].startswith("在一张具有声明结构、有 400 条记录的模拟表上")
    assert shown["simulated_table"].startswith("400 条记录，各列相互独立")
    assert english_words(shown["sentence"] + shown["simulated_table"]) == []


def test_the_desiderata_table_reads_in_chinese():
    # given the wizard's comparison of the privacy definitions
    table = desiderata_table()

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = desiderata_translate(table)

    # then every name, label and text is Chinese (the definitions keep their names)
    texts = [
        *shown["columns"],
        *(row["label"] for row in shown["rows"]),
        *(row["why"] for row in shown["rows"]),
        *(value for row in shown["rows"] for value in row["values"] if isinstance(value, str)),
    ]
    assert shown["columns"][0] == "ε-差分隐私"
    assert [word for text in texts for word in english_words(text)] == ["Blowfish"]


def test_in_english_the_model_texts_are_the_stored_ones():
    # given the texts k-means and synthetic statistics store, and the preview's sentences
    rule = kmeans_rule({"kind": "kmeans", "columns": ["x", "y"], "k": 3})
    statistic = synthetic_statistic(APPROX)
    (kmeans_preview, synthetic_preview) = simulated_preview(
        schema=WARDS,
        definition=PURE,
        queries=[
            {"kind": "kmeans", "columns": ["age"], "k": 2, "iterations": 2},
            {"kind": "synthetic", "columns": ["sex", "region"]},
        ],
    )

    # when shown in English
    with translation.override("en"):
        # then nothing changes
        assert rule_text(rule) == rule
        assert rule_text(statistic["rule"]) == statistic["rule"]
        assert [part_role(p["role"]) for p in statistic["parts"]] == [
            p["role"] for p in statistic["parts"]
        ]
        assert simulated_translate([kmeans_preview, synthetic_preview]) == [
            kmeans_preview,
            synthetic_preview,
        ]
        assert desiderata_translate(desiderata_table()) == desiderata_table()
