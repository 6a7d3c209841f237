"""The engine's stored English shown on public pages in the reader's language
(releases/translations.py): known clauses translated, anything else kept as stored."""

import pytest
from django.utils import translation
from hypothesis import given
from hypothesis import strategies as st

from privacy_engine import CategoricalColumn, NumericColumn
from releases.translations import file_label, part_role, problem_text, rule_text
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
