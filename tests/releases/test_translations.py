"""The engine's stored English shown on public pages in the reader's language
(releases/translations.py): known clauses translated, anything else kept as stored."""

import re
import signal

import pandas as pd
import pytest
from django.utils import translation
from hypothesis import given
from hypothesis import strategies as st

from privacy_engine import CategoricalColumn, NumericColumn, run_queries
from releases.translations import (
    accounting_text,
    engine_text,
    file_label,
    part_role,
    problem_text,
    rule_text,
    statistics_translate,
)
from tests.languages import compiled_catalogues  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("compiled_catalogues")


def test_a_numeric_column_s_rule_reads_in_chinese():
    # given the rule the engine writes for a numeric column with a fill value
    rule = NumericColumn(lower=0, upper=1000, fill=5).rule()

    # when it is shown to a Chinese reader
    with translation.override("zh-hans"):
        shown = rule_text(rule)

    # then each clause is translated, its numbers kept
    assert shown == "值被截断到 [0, 1000]；缺失或非数值的值替换为 5"


def test_a_categorical_rule_with_a_person_key_and_consistency_reads_in_chinese():
    # given a rule of a histogram under a person key, made consistent with another statistic
    column = CategoricalColumn(categories=("F", "M"), other="other")
    rule = "; ".join(
        [
            "at most 3 rows per patient_id kept (first in file order); rows without a patient_id "
            "dropped",
            column.rule(),
            "made consistent with statistics 2, 3 of this release (shared totals agree)",
        ]
    )

    # when it is shown in Chinese
    with translation.override("zh-hans"):
        shown = rule_text(rule)

    # then the person rule stays one clause and every clause is translated
    assert shown == (
        "每个 patient_id 最多保留 3 行（按文件顺序取前几行）；没有 patient_id 的行被删除；"
        "声明类别之外的值计入 'other'；缺失值被删除；"
        "已与本次发布的统计量 2, 3 保持一致（共有的总数相同）"
    )


def test_a_clause_of_unknown_shape_is_kept_as_stored():
    # given a clause the translations do not know, about one column of several
    rule = "age: values clamped to [0, 100]; a tree of 3 levels over 16 bins"

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = rule_text(rule)

    # then the known clause is translated and the unknown one kept
    assert shown == "age：值被截断到 [0, 100]；a tree of 3 levels over 16 bins"


def test_in_english_every_text_is_the_stored_one():
    # given stored English
    rule = NumericColumn(lower=-5, upper=5).rule()

    # when shown in English
    with translation.override("en"):
        # then nothing changes
        assert rule_text(rule) == rule
        assert part_role("each column's counts") == "each column's counts"
        assert file_label("records of statistic 2 (CSV)") == "records of statistic 2 (CSV)"
        assert problem_text("must be at most 200 characters") == "must be at most 200 characters"


def test_labels_roles_and_problems_read_in_chinese():
    with translation.override("zh-hans"):
        assert file_label("records of statistic 2 (CSV)") == "统计量 2 的记录（CSV）"
        assert file_label("signed metadata (JSON)") == "签名元数据（JSON）"
        assert part_role("choice of pair 1 (age × sex)") == "第 1 个列对的选择（age × sex）"
        assert problem_text("must be at most 200 characters") == "最多 200 个字符"
        assert problem_text("something new") == "something new"


def test_a_clause_whose_value_is_itself_a_phrase_reads_in_chinese_throughout():
    # given the rules of a histogram whose column's bounds came from the data, with an unknown
    # clause between known ones
    column = NumericColumn(lower=0, upper=10, from_data=True)
    rule = "; ".join([column.rule(), "a clause no phrase wrote", "missing values dropped"])

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = rule_text(rule)

    # then every known clause is translated, the unknown one kept, in their order
    parts = shown.split("；")
    assert len(parts) == 5
    assert parts[3] == "a clause no phrase wrote"
    assert all(not any("a" <= c <= "z" for c in part) for i, part in enumerate(parts) if i != 3)


@given(st.text(max_size=300))
def test_any_stored_text_is_shown_without_an_error(text):
    # whatever English a stored release holds, the page shows something, never an error
    with translation.override("zh-hans"):
        assert isinstance(rule_text(text), str)


# A table of every kind of column a rule speaks of: a bounded number, a category list with an
# other bucket, one with a fill value (the groups of restricted statistics), a person key.
RULES_TABLE = pd.DataFrame(
    {
        "age": ["1", "50", "", "300", "20"] * 20,
        "sex": ["F", "M", "X", "", "F"] * 20,
        "region": ["north", "south", "east", "", "zz"] * 20,
        "pid": [str(i % 30) for i in range(100)],
    }
)
RULES_SCHEMA = {
    "columns": {
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other"},
        "region": {
            "kind": "categorical",
            "categories": ["north", "south", "east"],
            "fill": "north",
        },
        "pid": {"kind": "identifier"},
    },
    "declared_size": 100,
}
# Every kind of statistic but k-means and the synthetic table, in each shape its rule takes:
# flat bins, one tree and a forest; one column and several; one group and several.
RULES_QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "histogram", "column": "age", "bins": [0, 50, 100]},
    {"kind": "sum", "column": "age"},
    {"kind": "sum", "columns": ["age"]},
    {"kind": "mean", "column": "age"},
    {"kind": "quantile", "column": "age", "quantiles": [0.25, 0.5]},
    {"kind": "marginal", "columns": ["sex", "age"], "bins": {"age": [0, 50, 100]}},
    {"kind": "marginal", "columns": ["sex", "region"]},
    {"kind": "range_histogram", "column": "age", "bins": 3},
    {"kind": "range_histogram", "column": "age", "bins": 16},
    {"kind": "range_histogram", "column": "age", "bins": 300},
    {"kind": "mean", "column": "age", "where": {"column": "region", "in": ["north"]}},
    {
        "kind": "histogram",
        "column": "sex",
        "where": {"column": "region", "in": ["east", "north", "south"]},
    },
]
RANDOMIZED = {"kind": "randomized_response", "column": "sex"}
# What a rule may keep in Latin letters: the table's names and categories, and OpenDP's name.
RULES_DATA = re.compile(r"\b(?:age|sex|region|pid|F|M|other|north|south|east|OpenDP|zCDP)\b")


@pytest.mark.parametrize(
    ("definition", "queries", "person_key"),
    [
        ({"kind": "pure_dp", "epsilon": 1.0}, RULES_QUERIES, False),
        ({"kind": "approx_dp", "epsilon": 1.0, "delta": 1e-6}, [*RULES_QUERIES, RANDOMIZED], False),
        (
            {"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "full_domain"}},
            [*[q for q in RULES_QUERIES if "where" not in q], RANDOMIZED],
            False,
        ),
        ({"kind": "pure_dp", "epsilon": 1.0}, RULES_QUERIES, True),
    ],
    ids=["pure_dp", "approx_dp", "blowfish", "person_key"],
)
def test_every_kind_s_published_rules_and_accounting_read_in_chinese(
    definition, queries, person_key
):
    # given every kind of statistic (k-means and the synthetic table aside) released on a table
    schema = (
        {**RULES_SCHEMA, "person_key": "pid", "max_rows_per_person": 2}
        if person_key
        else RULES_SCHEMA
    )
    released = run_queries(RULES_TABLE, schema=schema, definition=definition, queries=queries)
    statistics = [statistic.to_dict() for statistic in released.statistics]

    # when their page shows them in Chinese
    with translation.override("zh-hans"):
        statistics_translate(statistics)

    # then nothing of their rules, accounting notes and parts' roles is left in English
    for statistic in statistics:
        shown = " ".join(
            [
                statistic["rule_text"],
                statistic["accounting_text"],
                *(part["role_text"] for part in statistic.get("parts") or []),
            ]
        )
        assert re.findall(r"[A-Za-z]{2,}", RULES_DATA.sub(" ", shown)) == [], statistic["rule"]


def test_a_range_histogram_s_tree_reads_in_chinese_inside_its_clause():
    # given the rule of a range histogram over a forest of trees
    rule = (
        "7 7-ary trees of 3 levels over 343 bins (padded with empty bins), noise on every node, "
        "made consistent by least squares (OpenDP); a range's answer is the sum of its bins, "
        "clamped at 0, with an interval covering at least 95% from the exact distribution of its "
        "error"
    )

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = rule_text(rule)

    # then the trees, a phrase inside the clause's phrase, are translated with it
    assert shown == (
        "7 棵 3 层的 7 叉树，覆盖 343 个分箱（以空分箱补足），每个节点都加噪声，"
        "并用最小二乘法使其一致（OpenDP）；"
        "一个范围的答案是其各分箱之和，截断为不小于 0，"
        "其区间由其误差的精确分布得出，覆盖概率至少为 95%"
    )


def test_a_restricted_statistic_s_groups_and_their_column_s_rules_read_in_chinese():
    # given the rule of a count restricted to three groups of region
    rule = (
        "only records whose region is 'east', 'north' or 'south'; region: values outside the "
        "declared categories dropped; region: missing values replaced by 'north'"
    )

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = rule_text(rule)

    # then the groups are named in Chinese, and each clause of the column's rules is its own
    assert shown == (
        "仅限 region 为 'east', 'north' 或 'south' 的记录；region：声明类别之外的值被删除；"
        "region：缺失值替换为 'north'"
    )


def test_the_gaussian_accounting_note_reads_in_chinese_and_an_unknown_one_as_stored():
    # given the Gaussian mechanism's note, and a note of another shape after it
    notes = (
        "zCDP (ρ = Δ₂²/2σ²) converted to (ε, δ) by OpenDP's privacy profile; a note of a later "
        "mechanism"
    )

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = accounting_text(notes)

    # then the known note is translated and the other kept
    assert (
        shown == "zCDP（ρ = Δ₂²/2σ²）经 OpenDP 的隐私曲线换算为 (ε, δ)；a note of a later mechanism"
    )


def test_a_value_that_reads_like_a_phrase_is_shown_as_written():
    # given refusals naming a column and a category whose names read like phrases
    from privacy_engine.schema import OUTSIDE_COUNTED
    from privacy_engine.wording import phrase

    counted = phrase(OUTSIDE_COUNTED, value="not used")

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = engine_text(counted)

    # then the sentence is translated and the data kept as the curator wrote it
    assert shown.startswith("声明类别之外的值计入")
    assert shown.endswith("not used")


def test_clauses_inside_parentheses_are_not_cut_apart():
    # given a rule of an older shape: a column's clauses inside parentheses
    rule = (
        "only records whose region is north (region: values outside the declared categories "
        "counted as 'other'; missing values dropped); missing values dropped"
    )

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = rule_text(rule)

    # then the parenthesised part is kept whole (as stored), the clause after it translated
    assert shown == (
        "only records whose region is north (region: values outside the declared categories "
        "counted as 'other'; missing values dropped)；缺失值被删除"
    )


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_long_text_of_template_fragments_is_shown_at_once(language):
    # given 20,000 characters of fragments of the engine's phrases, the shape that made a
    # backtracking matcher take minutes (a Blowfish line over 95 long category labels)
    fragments = "1 records (2 distinct points, each for about 3), at ε = 1; " * 400
    text = fragments[:19_990]

    # when shown, with a hang turned into a failure after 10 s
    def hung(signum, frame):
        raise TimeoutError("engine_text took more than 10 s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        with translation.override(language):
            shown = rule_text(text)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)

    # then it is shown (what no phrase wrote, as written)
    assert "distinct points" in shown or "个不同的点" in shown


def test_a_column_whose_name_holds_a_colon_keeps_its_rules_translated():
    # given a column rule led by a name with ": " of its own
    rule = "Q1: age: values clamped to [0, 100]"

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = rule_text(rule)

    # then the name is kept whole and the clause translated
    assert shown == "Q1: age：值被截断到 [0, 100]"
