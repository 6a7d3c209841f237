"""The engine's refusals and the table reader's errors on pages in the reader's language
(releases/refusals.py): the English they are stored and sent in is unchanged."""

import pytest
from django.urls import reverse
from django.utils import translation

from privacy_engine import (
    EngineValidationError,
    NumericColumn,
    definition_from_dict,
    plan_release,
)
from privacy_engine.policies import blowfish_refusal
from privacy_engine.schema import schema_from_dict
from privacy_engine.wording import phrase
from releases.models import Dataset, Release
from releases.refusals import refusal_errors, refusal_text
from releases.services.datasets import _stopped_reason
from releases.services.releases import TOO_MANY_NUMBERS
from releases.services.runs import NO_SIGNING_KEY, PLAN_NOT_VALID, RELEASE_WORKER_STOPPED, _times
from releases.services.signing import KEY_NOT_PEM
from releases.services.tables import TableError, table_convert
from tests.conftest import CLINIC_SCHEMA, csv_upload
from tests.languages import compiled_catalogues  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("compiled_catalogues")


def refusal(build) -> dict[str, list[str]]:
    with pytest.raises(EngineValidationError) as raised:
        build()
    return raised.value.errors


def test_a_schema_s_refusals_read_in_chinese_and_stay_english_otherwise():
    # given the refusals of bounds in the wrong order and of an unknown column's kind
    bounds = refusal(lambda: NumericColumn(lower=10, upper=1))
    kind = refusal(lambda: schema_from_dict({"columns": {"age": {"kind": "date"}}}))

    # when they are shown to a Chinese reader, and to an English one
    with translation.override("zh-hans"):
        chinese = {**refusal_errors(bounds), **refusal_errors(kind)}
    with translation.override("en"):
        english = {**refusal_errors(bounds), **refusal_errors(kind)}

    # then each message is translated, its field path kept; the English is as the engine wrote it
    assert chinese == {
        "upper": ["上界必须大于下界"],
        "columns.age.kind": ["必须是 numeric、categorical、identifier 之一"],
    }
    assert english == {
        "upper": ["upper bound must be greater than lower"],
        "columns.age.kind": ["must be one of numeric, categorical, identifier"],
    }


def test_a_definition_s_refusal_keeps_its_numbers_in_chinese():
    # given ε above the largest allowed and δ too large for the declared size
    epsilon = refusal(lambda: definition_from_dict({"kind": "pure_dp", "epsilon": 50}))
    assert epsilon == {"epsilon": ["must be from 0.0001 to 20"]}

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = refusal_text(epsilon["epsilon"][0])

    # then the bounds stay as the engine formatted them
    assert shown == "必须在 0.0001 到 20 之间"


def test_a_theta_too_small_for_an_exact_sum_reads_in_chinese_with_what_it_names():
    # given a distance-threshold policy whose θ is far below the sum's grid step
    errors = refusal(
        lambda: plan_release(
            schema={"columns": {"income": {"kind": "numeric", "lower": 0, "upper": 1e6}}},
            definition={
                "kind": "blowfish",
                "epsilon": 1,
                "policy": {"graph": "distance_threshold", "column": "income", "theta": 1e-8},
            },
            queries=[{"kind": "sum", "column": "income"}],
        )
    )
    (english,) = errors["definition.policy.theta"]

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = refusal_text(english)

    # then every number stays as the engine wrote it, in a Chinese sentence
    assert english.startswith("θ (1e-08) is too small next to the column's bounds")
    assert shown.startswith("θ（1e-08）相对于该列的边界太小，无法精确求和：最多 10,000,000,000 条")
    assert shown.endswith("请将其设为至少 200，或声明更接近 0 的边界，或选择 ε-差分隐私。")


@pytest.mark.parametrize(
    ("query", "path", "chinese"),
    [
        ({"kind": "sum", "column": "sex"}, "queries.0.column", "sum 需要数值列"),
        (
            {"kind": "histogram", "column": "age", "bins": [0, 50]},
            "queries.0.bins",
            "第一个和最后一个边界必须是该列声明的边界",
        ),
        (
            {"kind": "count", "where": {"column": "sex", "in": ["X"]}},
            "queries.0.where.in",
            "不是 sex 的类别：X",
        ),
        (
            {"kind": "kmeans", "columns": ["age"], "k": 99},
            "queries.0.k",
            "必须是 2 到 20 之间的整数，即聚类的个数",
        ),
    ],
)
def test_a_statistic_s_refusal_reads_in_chinese(query, path, chinese):
    # given a statistic the schema or its own limits refuse
    errors = refusal(
        lambda: plan_release(
            schema=CLINIC_SCHEMA, definition={"kind": "pure_dp", "epsilon": 1}, queries=[query]
        )
    )

    # when its refusal is shown in Chinese
    with translation.override("zh-hans"):
        shown = refusal_errors(errors)

    # then it names the same field, in Chinese
    assert shown == {path: [chinese]}


def test_a_blowfish_refusal_names_the_person_key_in_chinese():
    # given a schema grouped by a person key
    schema = {
        **CLINIC_SCHEMA,
        "columns": {**CLINIC_SCHEMA["columns"], "name": {"kind": "identifier"}},
    }
    refused = blowfish_refusal({**schema, "person_key": "name"})

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = refusal_text(refused)

    # then the key is named in a Chinese sentence
    assert shown.startswith("当各行按个人键（name）分组时，无法使用 Blowfish")
    assert refused.startswith("Blowfish is not available when rows are grouped by a person key")


def test_a_table_reader_s_error_is_translated_with_its_nested_problem(tmp_path):
    # given a CSV whose second column's name holds a control character
    source = tmp_path / "bad.csv"
    source.write_bytes(b"a,b\x07\n1,2\n")
    with pytest.raises(TableError) as raised:
        table_convert(source, tmp_path / "table.parquet", max_columns=10)
    assert str(raised.value) == "The name of column 2 holds control or invisible characters."

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = refusal_text(str(raised.value))

    # then the sentence and the problem inside it are both translated
    assert shown == "第 2 列的名称含有控制字符或不可见字符。"


@pytest.mark.parametrize(
    ("times", "chinese"),
    [
        (1, "转换此表格的工作进程在完成前停止了一次（被终止或内存不足）；不会再次尝试。"),
        (3, "转换此表格的工作进程在完成前停止了 3 次（被终止或内存不足）；不会再次尝试。"),
    ],
)
def test_a_stopped_conversion_s_reason_reads_in_chinese(times, chinese):
    # given the reason stored when the worker converting a table stopped too often
    reason = _stopped_reason(times)

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = refusal_text(reason)

    # then the whole reason, its "; " included, is one translated sentence
    assert shown == chinese


def test_the_upload_page_shows_an_unreadable_table_s_error_in_chinese(client, curator):
    # given a curator reading the pages in Chinese
    client.force_login(curator)

    # when they upload a table with a blank line inside it
    response = client.post(
        reverse("dataset-upload"),
        {
            "name": "Blank",
            "file": csv_upload(b"a,b\n1,2\n\n3,4\n", name="blank.csv"),
            "budget_epsilon": "1",
        },
        HTTP_ACCEPT_LANGUAGE="zh-Hans",
    )

    # then the page says in Chinese which row is blank, and nothing is created
    page = response.content.decode()
    assert response.status_code == 200
    assert "第 3 行是空行：请删除表格中间的空行（文件末尾的空行会被忽略）。" in page
    assert "is blank: remove blank lines" not in page
    assert not Dataset.objects.filter(name="Blank").exists()


RANGES_ON_A_CATEGORY = {
    "policy_graph": "partition_width",
    "policy_column": "sex",
    "policy_width": "10",
}
THETA_ZERO = {"policy_graph": "distance_threshold", "policy_column": "age", "policy_theta": "0"}


@pytest.mark.parametrize(
    ("policy", "language", "field", "message"),
    [
        (RANGES_ON_A_CATEGORY, "zh-Hans", "policy_column", "必须是数值列"),
        (RANGES_ON_A_CATEGORY, "en", "policy_column", "must be a numeric column"),
        (THETA_ZERO, "zh-Hans", "policy_theta", "必须是大于 0 的数字"),
        (THETA_ZERO, "en", "policy_theta", "must be a number greater than 0"),
    ],
)
def test_the_privacy_step_shows_the_engine_s_refusal_in_the_reader_s_language(
    client, curator, clinic, policy, language, field, message
):
    # given a curator choosing a Blowfish policy the engine refuses (ranges of a categorical
    # column, a θ of 0)
    client.force_login(curator)

    # when they save the privacy step, reading the pages in one language
    response = client.post(
        reverse("wizard-start", kwargs={"dataset_pk": clinic.pk}),
        {"title": "Clinic 2026", "epsilon": "1", "definition_kind": "blowfish", **policy},
        HTTP_ACCEPT_LANGUAGE=language,
    )

    # then the engine's refusal is next to the field, in that language
    assert response.status_code == 200
    assert response.context["form"].errors[field] == [message]
    assert message in response.content.decode()
    assert not Release.objects.exists()


def test_a_failed_upload_s_page_gets_its_reason_in_chinese(client, curator, clinic):
    # given an upload whose conversion failed, its reason stored in English
    Dataset.objects.filter(pk=clinic.pk).update(
        status=Dataset.Status.FAILED, failure_reason="The file has a header but no rows."
    )
    client.force_login(curator)

    # when its page is read in Chinese, and in English
    chinese = client.get(
        reverse("dataset-detail", kwargs={"pk": clinic.pk}), HTTP_ACCEPT_LANGUAGE="zh-Hans"
    )
    english = client.get(
        reverse("dataset-detail", kwargs={"pk": clinic.pk}), HTTP_ACCEPT_LANGUAGE="en"
    )

    # then the page shows the reason in the reader's language; the stored one is unchanged
    assert "此次上传无法使用：该文件有表头，但没有数据行。" in chinese.content.decode()
    assert "This upload could not be used: The file has a header but no rows." in (
        english.content.decode()
    )
    assert Dataset.objects.get(pk=clinic.pk).failure_reason == "The file has a header but no rows."


def test_a_release_s_failure_reason_reads_in_chinese_with_the_engine_s_problems():
    # given the reason stored when the plan no longer fits the table at run time
    problems = EngineValidationError(
        {
            "queries.0.column": ["no such column in the schema"],
            "definition.epsilon": ["must be a number greater than 0"],
        }
    )
    reason = phrase(PLAN_NOT_VALID, problems=problems)

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = refusal_text(reason)

    # then the sentence and each field's problem are translated, the field paths kept
    assert shown == (
        "发布计划无效：queries.0.column：结构中没有这一列；definition.epsilon：必须是大于 0 的数字"
    )


def test_a_release_stopped_too_often_reads_in_chinese():
    # given the reason stored when a release's worker stopped twice
    reason = phrase(RELEASE_WORKER_STOPPED, count=_times(2))

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = refusal_text(reason)

    # then it is one Chinese sentence
    assert shown == (
        "计算此次发布的工作进程在完成前停止了两次（被终止、内存不足或超过时间上限）；不会再次尝试。"
    )


def test_a_release_failed_for_its_signing_key_reads_in_chinese():
    # given the reason stored when the installation's key file is corrupt
    problem = phrase(KEY_NOT_PEM, path="/srv/keys/release-signing.pem")
    reason = phrase(NO_SIGNING_KEY, problem=problem)

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = refusal_text(reason)

    # then the key problem inside it is translated too, its path kept
    assert shown == (
        "发布需要本系统的签名密钥，而签名密钥 /srv/keys/release-signing.pem（SIGNING_KEY_PATH）"
        "不是未加密的 PEM 私钥（已损坏或被截断？）：请从备份恢复。"
    )


def test_the_ledger_page_shows_a_refused_request_in_chinese(client, curator, clinic):
    # given a curator reading the pages in Chinese
    client.force_login(curator)

    # when they ask for more budget without a number
    response = client.post(
        reverse("budget-increase-request", kwargs={"pk": clinic.pk}),
        {"epsilon": "lots", "delta": "", "reason": "More releases are planned."},
        HTTP_ACCEPT_LANGUAGE="zh-Hans",
    )

    # then the refusal next to the field is in Chinese
    assert response.status_code == 400
    assert response.context["form_errors"]["epsilon"] == ["必须是数字"]


def test_a_release_over_the_installation_s_limits_is_refused_in_chinese():
    # given the refusal of a release that would publish too many numbers
    refused = phrase(TOO_MANY_NUMBERS, cells="120,000", limit="100,000")

    # when shown in Chinese
    with translation.override("zh-hans"):
        shown = refusal_text(refused)

    # then the counts are kept in a Chinese sentence
    assert shown == (
        "这些统计量要发布 120,000 个数字；每次发布最多 100,000 个，以保持页面可读"
        "（请使用更少的分箱或类别，或拆分此次发布）"
    )
