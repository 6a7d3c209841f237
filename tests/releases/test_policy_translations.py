"""The engine's English about policies, budgets and the ledger (a Blowfish policy's explanation,
the composition rules and each row's words, the ledger's refusals, the budget's reasons) read in
Chinese on pages through engine_text, and unchanged in English."""

from decimal import Decimal

import pytest
from django.utils import translation

from privacy_engine.accounting import IncompatibleLedger, Ledger, ledger_charge, ledger_rule
from privacy_engine.composition import composition_rules
from privacy_engine.definitions import definition_from_dict
from privacy_engine.guidance import budget_from_questions, suggest_starting_point
from privacy_engine.translation import blowfish_explanation
from releases.ledger_views import composition_rules_text, composition_text
from releases.translations import engine_text
from tests.languages import compiled_catalogues  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("compiled_catalogues")


def in_chinese(text: str) -> str:
    with translation.override("zh-hans"):
        return engine_text(text)


def test_a_distance_threshold_policy_s_explanation_reads_in_chinese():
    # given the explanation of a distance-threshold policy with a column left without fill value
    explanation = blowfish_explanation(
        {"graph": "distance_threshold", "column": "age", "theta": 2.5}, 0.5, missing_public=["age"]
    )

    # when it is shown to a Chinese reader
    protected = [in_chinese(line) for line in explanation["protected"]]
    public = [in_chinese(line) for line in explanation["not_protected"]]

    # then each line is translated, its numbers and column kept
    assert protected == [
        "age 中相差小于 θ = 2.5 的值，在 ε = 0.5 下受保护；相差 d 的值只在 ⌈d/θ⌉·ε 下受保护，"
        "例如 d = 7.5 时为 1.5。"
    ]
    assert public == [
        "随着 ε·⌈d/θ⌉ 增大，一个人的值所在的大致范围（分辨率粗于 θ）会变得可以推断。",
        "在 Blowfish 下记录数量是公开的，因此计数按精确值发布。",
        "一个人的 age 是否缺失：缺失值在策略图中没有位置。为其声明填充值即可保护它。",
    ]


def test_a_partition_into_several_groups_reads_in_chinese_with_its_groups_as_written():
    # given a categorical partition into three groups, listed with " | " between them
    explanation = blowfish_explanation(
        {"graph": "partition", "column": "region", "groups": [["N", "S"], ["E"], ["W", "X"]]}, 1.0
    )
    protected = explanation["protected"][0]
    assert protected == (
        "Which value within its group a person has (groups: N, S | E | W, X), at ε = 1."
    )

    # when it is shown in Chinese
    shown = in_chinese(protected)

    # then the sentence is translated around the groups, which stay as written
    assert shown == "一个人在其所属组内取哪个值（分组：N, S | E | W, X），在 ε = 1 下受保护。"
    assert in_chinese(explanation["not_protected"][0]) == (
        "每个人属于哪一组（region）：算法可以精确地公布它。"
    )


def test_the_ledger_s_composition_rules_read_in_chinese_and_as_stored_in_english():
    # when the ledger page's rules are shown in each language
    with translation.override("en"):
        english = composition_rules_text()
    with translation.override("zh-hans"):
        chinese = composition_rules_text()

    # then the English is the engine's, word for word, and the Chinese has none of it
    assert english == composition_rules()
    assert chinese.startswith("一次发布中的各统计量相加（顺序组合：ε = Σ εᵢ：计入的是各统计量份额")
    assert chinese.endswith("Blowfish 发布不能计入差分隐私台账，也不能计入另一策略的台账。")
    assert "release" not in chinese


def test_a_ledger_row_s_composition_reads_in_chinese():
    # given a row's composition as the engine stored it
    composition = {
        "rule": "sequential, parallel over groups",
        "statistics": [
            {"kind": "histogram", "within": "parallel over 4 disjoint cells"},
            {
                "kind": "kmeans",
                "within": "sequential over its 3 noisy parts, each one draw whose sensitivity "
                "covers all 2 rows of a person",
            },
            {"kind": "count", "within": "one noisy answer"},
        ],
        "sum_rule": "ε = Σ εᵢ: the charge is the exact sum of the statistics' shares rounded up "
        "to the ledger's 12 decimal places (δ: up to 15 significant digits), never below it",
        "ledger": ledger_rule(definition_kind="pure_dp", ledger_kind="blowfish"),
        "groups": "sex: its groups' statistics compose in parallel, charged the largest group's "
        "ε = 0.5 (F, M); region: its groups' statistics compose in parallel, charged the largest "
        "group's ε = 0.25 (N)",
    }

    # when the ledger page shows it in Chinese
    with translation.override("zh-hans"):
        shown = composition_text(composition)

    # then each of the engine's texts is translated, and the stored composition is unchanged
    assert shown["rule"] == "顺序组合，各组之间并行组合"
    assert [share["within"] for share in shown["statistics"]] == [
        "在 4 个互不相交的单元格上并行组合",
        "在其 3 个加噪部分上顺序组合，每部分一次抽取，其敏感度涵盖一个人的全部 2 行",
        "一个加噪答案",
    ]
    assert shown["ledger"] == "Blowfish 台账上的 ε-差分隐私发布：计 2ε"
    assert shown["groups"] == (
        "sex：各组的统计量并行组合，按最大一组的 ε = 0.5 计入（F, M）；"
        "region：各组的统计量并行组合，按最大一组的 ε = 0.25 计入（N）"
    )
    assert shown["sum_rule"].startswith("ε = Σ εᵢ：计入的是各统计量份额的精确和")
    assert composition["rule"] == "sequential, parallel over groups"


def refusal(definition: dict, ledger: Ledger) -> str:
    parsed = definition_from_dict(definition)
    with pytest.raises(IncompatibleLedger) as refused:
        ledger_charge(definition=parsed, epsilon=Decimal(1), delta=Decimal(0), ledger=ledger)
    return str(refused.value)


def test_the_ledger_s_refusals_read_in_chinese_and_stay_english_where_stored():
    # given the engine's two refusals of a Blowfish release
    policy = {"graph": "partition", "column": "age", "width": 5}
    on_dp = refusal(
        {"kind": "blowfish", "epsilon": 1, "policy": policy}, Ledger("differential_privacy")
    )
    on_other = refusal(
        {"kind": "blowfish", "epsilon": 1, "policy": {"graph": "full_domain"}},
        Ledger("blowfish", policy=policy),
    )

    # when shown in each language
    with translation.override("en"):
        assert engine_text(on_dp) == on_dp
        assert engine_text(on_other) == on_other

    # then in Chinese each is translated, the ledger's policy named as stored
    assert in_chinese(on_dp) == (
        "此数据集的预算按差分隐私核算；Blowfish 发布的保护更弱（只保护沿其策略图相邻的数据集），"
        "不能计入此预算。"
    )
    assert in_chinese(on_other) == (
        '此数据集的预算按 Blowfish 策略 {"column": "age", "graph": "partition", "width": 5} 核算；'
        "采用另一 Blowfish 策略的发布不能计入其中，因为两种保证无法组合为一个。"
    )


def test_the_budget_s_reasons_read_in_chinese():
    # given the reasons of a budget set from the two questions, and of a starting point
    reasons = budget_from_questions(harm="severe", releases="few", declared_size=300).reasons
    starting = suggest_starting_point(harm="low", releases="once", declared_size=300).reasons

    # when shown in Chinese
    shown = [in_chinese(reason) for reason in [*reasons, *starting]]

    # then each is translated, with its numbers
    assert shown == [
        "危害程度严重：此表所有发布合计的总预算为 ε = 0.25，因此关于某个人的真实回答的可能性至多为 "
        "56.2%（50% 相当于抛硬币）。",
        "发布几次：每次发布默认使用一半（ε = 0.125），为下一次留出余地。",
        "δ 仅用于 (ε, δ)-差分隐私发布：总计 0.000002，按声明的规模，"
        "2 次发布每次取 min(10⁻⁶, 1/n²)。",
        "危害程度低，建议此表的总预算约为 ε = 2：关于某个人的真实回答的可能性至多为 0.881。",
        "一次发布可以用掉全部预算。",
        "对于 (ε, δ)-差分隐私，δ = 1e-06：按声明的规模取 min(10⁻⁶, 1/n²)。",
    ]
    # and in English each is the stored reason
    with translation.override("en"):
        assert [engine_text(reason) for reason in reasons] == list(reasons)
