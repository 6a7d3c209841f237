"""The compliance pages (the audit trail, a dataset's privacy report, the approvals) in
Simplified Chinese: their own words, the models' codes they show and the verdicts and messages
the code writes for them read in Chinese, and the English pages are the ones written before."""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from releases.audit_translations import (
    chain_problem_text,
    decision_refusal_text,
    definition_kind_name,
    filter_problem_text,
    ledger_kind_name,
    ledger_state_name,
)
from releases.models import Release
from releases.services.approvals import dataset_approval_requirement_set
from releases.services.releases import release_draft_create, release_submit
from tests.conftest import draft_body, make_user, publish_through_api
from tests.languages import compiled_catalogues  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("compiled_catalogues")

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
ENGLISH = {"HTTP_ACCEPT_LANGUAGE": "en"}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def published(curator_client, dataset, django_capture_on_commit_callbacks):
    body = draft_body(dataset.pk, epsilon=0.3)
    return publish_through_api(curator_client, django_capture_on_commit_callbacks, body)


@pytest.fixture
def officer(db):
    return make_user("officer1", "compliance")


@pytest.fixture
def awaiting(dataset, curator, officer) -> Release:
    """A release of curator1's dataset waiting for a compliance officer's approval."""
    dataset_approval_requirement_set(dataset=dataset, user=officer, required=True)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages",
        definition={"kind": "pure_dp", "epsilon": 0.4},
        queries=[{"kind": "count"}, {"kind": "mean", "column": "age"}],
    )
    release_submit(release=draft, user=curator)
    return Release.objects.get(pk=draft.pk)


def officer_client(officer) -> Client:
    client = Client()
    client.force_login(officer)
    return client


def test_the_audit_page_reads_in_chinese(published, compliance_user):
    # given a compliance officer and a trail with a published release
    client = officer_client(compliance_user)

    # when the audit page is read in Chinese
    page = client.get("/audit/", **CHINESE).content.decode()

    # then the chain's verdict, the budgets and the export read in Chinese
    assert '<html lang="zh-hans">' in page
    assert "哈希链完好：全部" in page
    assert "每个数据集的预算都与审计记录一致。" in page
    assert "下载当前锚点" in page
    assert "各数据集的隐私预算" in page
    assert "差分隐私" in page
    assert "将这些事件导出为 CSV" in page
    # and each event's action and object are named, the action's code kept beside its name
    assert "<td>发布已提交（release.submitted）</td>" in page
    assert f"<td>发布 {published.pk}</td>" in page
    assert '<option value="release.submitted">发布已提交（release.submitted）</option>' in page
    assert "Hash chain intact" not in page
    assert "Privacy budget per dataset" not in page


def test_the_audit_page_in_english_is_the_one_written_before(published, compliance_user):
    # given a compliance officer
    client = officer_client(compliance_user)

    # when the audit page is read in English
    page = client.get("/audit/", **ENGLISH).content.decode()

    # then its sentences are byte for byte what the page wrote before
    assert '<p class="ok">Hash chain intact: all ' in page
    assert "events verify.</p>" in page
    assert '<p class="ok">Every dataset\'s budget matches the trail.</p>' in page
    assert (
        "<p><small>Keep the trail's head outside the database: "
        f'<a href="{reverse("api-audit-anchor")}" download="audit-anchor.json">download the '
        "current anchor</a>, and check it later with <code>manage.py verify_audit --anchor "
        "FILE</code>.</small></p>"
    ) in page
    assert "<td>Differential privacy</td>" in page
    assert "</a> (every page, oldest first)</p>" in page
    assert "<td>release.submitted</td>" in page
    assert f"<td>release {published.pk}</td>" in page
    assert '<option value="release.submitted">release.submitted</option>' in page


def test_a_broken_trail_reads_in_chinese(compliance_user, monkeypatch):
    # given a trail whose chain is broken and whose budget tables differ from it
    broken = {
        "valid": False,
        "events": 12,
        "first_broken_event": 7,
        "problem": "its content does not match its hash",
        "budget_mismatches": [
            {"dataset": 3, "what": "release 5: state", "table": "spent", "trail": "reserved"}
        ],
        "anchor_problems": [],
    }
    monkeypatch.setattr("releases.views.trail_verification", lambda **kwargs: broken)
    client = officer_client(compliance_user)

    # when the audit page is read in Chinese and in English
    chinese = client.get("/audit/", **CHINESE).content.decode()
    english = client.get("/audit/", **ENGLISH).content.decode()

    # then the verdicts read in Chinese, the figures as the check found them
    assert "哈希链在事件 #7 处断开（共 12 个事件）：它的内容与其哈希值不匹配。" in chinese
    assert "数据集 3，release 5: state：预算表中为 spent，审计记录中为 reserved" in chinese
    assert (
        "Hash chain broken at event #7 (12 events): its content does not match its hash. "
        "That event or one before it was altered or removed."
    ) in english
    assert (
        "<li>dataset 3, release 5: state: the tables hold spent, the trail recorded reserved</li>"
    ) in english


def test_the_audit_page_s_filter_errors_read_in_chinese(compliance_user):
    # given a compliance officer
    client = officer_client(compliance_user)

    # when the filters are wrong, read in Chinese and in English
    chinese = client.get("/audit/?dataset=x&since=soon", **CHINESE).content.decode()
    english = client.get("/audit/?dataset=x&since=soon", **ENGLISH).content.decode()

    # then each error names the filter and the problem in the reader's language
    assert "数据集必须是数据集编号。" in chinese
    assert "起始时间必须是 ISO-8601 格式的日期和时间。" in chinese
    assert "<li>Dataset must be a dataset id.</li>" in english
    assert "<li>Since must be an ISO-8601 date and time.</li>" in english


def test_the_privacy_report_reads_in_chinese(published, compliance_user):
    # given a compliance officer and a dataset with a published release
    client = officer_client(compliance_user)
    url = f"/audit/datasets/{published.dataset_id}/report/"

    # when the report is read in Chinese and in English
    chinese = client.get(url, **CHINESE).content.decode()
    english = client.get(url, **ENGLISH).content.decode()

    # then the release's definition, charge and approval read in Chinese
    assert "隐私报告：#" in chinese
    assert "核算方式 差分隐私" in chinese
    assert "此数据集的任何发布在运行之前都须经合规人员批准" in chinese
    assert "ε-差分隐私, ε 0.3" in chinese
    assert "<small>已发布</small>" in chinese
    assert "<small>已花费</small>" in chinese
    assert "提交时无需批准" in chinese
    assert "锚点（其签名元数据中的审计记录链头）" in chinese
    # and the English report keeps its codes and sentences
    assert "ledger Differential privacy · upload SHA-256" in english
    assert "pure_dp, ε 0.3" in english
    assert "<small>Published</small>" in english
    assert "<small>spent</small>" in english
    assert "Not required when submitted" in english


def test_the_approvals_read_in_chinese(awaiting, officer):
    # given a release awaiting approval and an officer who is not its curator
    client = officer_client(officer)
    review_url = f"/audit/approvals/{awaiting.pk}/"

    # when the list and the review are read in Chinese
    listing = client.get("/audit/approvals/", **CHINESE).content.decode()
    review = client.get(review_url, **CHINESE).content.decode()

    # then the page's words, the definition and the risk read in Chinese
    assert "等待批准的发布" in listing
    assert f"#{awaiting.pk} Ages" in listing
    assert "ε-差分隐私, ε 0.4" in listing
    assert '提交。状态：<strong id="approval-status">等待批准</strong>。' in review
    assert "以下所有内容均来自该发布的计划" in review
    assert "整个发布如实回答的概率至多为 <strong>0.599</strong>" in review
    assert "花费：ε 0.4（提交时已预留）。" in review
    assert "批准并运行" in review
    assert "Risk to one person" not in review

    # and in English the review is the page written before
    english = client.get(review_url, **ENGLISH).content.decode()
    assert (
        "Risk to one person: asked a yes-or-no question about them, the release as a whole "
        "answers truthfully with probability at most <strong>0.599</strong> (½ would reveal "
        "nothing)."
    ) in english
    assert "<p>Charge: ε 0.4 (reserved at submission).</p>" in english
    assert ' UTC. Status: <strong id="approval-status">Awaiting approval</strong>.</p>' in english
    assert f"Release #{awaiting.pk} of dataset #{awaiting.dataset_id} Clinic, submitted by " in (
        english
    )


def test_the_decision_and_its_flash_message_read_in_chinese(
    awaiting, officer, django_capture_on_commit_callbacks
):
    # given a release awaiting approval
    client = officer_client(officer)

    # when an officer approves it from a Chinese page
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(
            f"/audit/approvals/{awaiting.pk}/approve/",
            {"comment": "Looks fine."},
            follow=True,
            **CHINESE,
        )
    page = response.content.decode()

    # then the confirmation and the decision read in Chinese, the comment as written
    assert "已批准：该发布已排队，等待工作进程运行。" in page
    assert "由 <strong>officer1</strong> 于" in page
    assert "已批准：Looks fine." in page


def test_the_code_s_texts_read_in_chinese_and_stay_english_in_english():
    # given texts the compliance pages show but their templates do not write
    broken = "events 4 to 6 are missing"
    refusal = "This release does not await approval (status: queued); it cannot be decided."

    # when they are shown to a Chinese reader
    with translation.override("zh-hans"):
        # then they read in Chinese, their numbers and codes kept
        assert chain_problem_text(broken) == "事件 4 至 6 缺失"
        assert chain_problem_text("the newest events are missing") == "最新的事件缺失"
        assert decision_refusal_text(refusal) == (
            "此发布并未在等待批准（状态：queued），无法对其作出决定。"
        )
        assert filter_problem_text("until", "must be an ISO-8601 date and time") == (
            "截止时间必须是 ISO-8601 格式的日期和时间。"
        )
        assert ledger_kind_name("") == "尚未确定"
        assert ledger_kind_name("blowfish") == "Blowfish 策略"
        assert ledger_state_name("reserved") == "已预留"
        assert definition_kind_name("approx_dp") == "(ε, δ)-差分隐私"
        # and what they do not know is shown as written
        assert chain_problem_text("something new") == "something new"

    # when they are shown in English
    with translation.override("en"):
        # then they are the English the code writes
        assert chain_problem_text(broken) == broken
        assert decision_refusal_text(refusal) == refusal
        assert filter_problem_text("until", "must be an ISO-8601 date and time") == (
            "Until must be an ISO-8601 date and time."
        )
        assert ledger_kind_name("") == "not fixed yet"
        assert ledger_state_name("returned") == "returned"
        assert definition_kind_name("pure_dp") == "pure_dp"
