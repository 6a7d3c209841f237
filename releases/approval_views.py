"""Compliance's side of dual control: the releases awaiting approval, one release's review page
(its definition, risk, statistics and expected accuracy: never a value of the data), the
decision, and the per-dataset requirement. The rules are in releases/services/approvals.py."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from accounts.roles import Role, user_has_role
from privacy_engine import epsilon_to_truth_probability
from releases import selectors
from releases.audit_translations import (
    decision_name,
    decision_refusal_text,
    definition_kind_name,
    release_status_name,
)
from releases.curator_views import accuracy_sentence
from releases.forms import STATISTIC_LABELS
from releases.services.approvals import (
    MAX_COMMENT_LENGTH,
    dataset_approval_requirement_set,
    release_approve,
    release_reject,
)
from releases.services.errors import Conflict, ValidationFailed
from releases.services.releases import release_columns_from_data


def _compliance(request) -> None:
    if not user_has_role(request.user, Role.COMPLIANCE):
        raise PermissionDenied("Approvals are for compliance staff.")


def _reviewable(request, pk: int):
    release = selectors.release_get_for_approval(user=request.user, pk=pk)
    if release is None:
        raise Http404("No such submitted release.")
    return release


@login_required
def approvals_list(request):
    _compliance(request)
    return render(
        request,
        "audit/approvals.html",
        {
            "releases": [
                {"release": release, "kind": definition_kind_name(release.definition.get("kind"))}
                for release in selectors.release_list_awaiting_approval(user=request.user)
            ]
        },
    )


@login_required
def approval_review(request, pk: int):
    """What the approver decides on: the definition and its risk, the statistics with their
    expected accuracy (computed from the declared shape, not from the rows), the charge, and
    which bounds or categories were taken from the data."""
    _compliance(request)
    release = _reviewable(request, pk)
    epsilon = float(release.definition["epsilon"])
    approval = getattr(release, "approval", None)
    rows = [
        {
            **entry,
            "label": STATISTIC_LABELS[entry["kind"]],
            "sentence": accuracy_sentence(entry, release.dataset.declared_size),
        }
        for entry in release.preview
    ]
    return render(
        request,
        "audit/approval.html",
        {
            "release": release,
            "approval": approval,
            "decision": decision_name(approval.decision) if approval else None,
            "status": release_status_name(release.status),
            "rows": rows,
            "truth_probability": epsilon_to_truth_probability(epsilon),
            "data_columns": release_columns_from_data(release=release),
            "budget": selectors.dataset_budget(release.dataset)[0],
            "own_release": release.created_by_id == request.user.pk,
            "comment_max_length": MAX_COMMENT_LENGTH,
        },
    )


@login_required
@require_POST
def approval_decide(request, pk: int, decision: str):
    _compliance(request)
    release = _reviewable(request, pk)
    decide = {"approve": release_approve, "reject": release_reject}[decision]
    try:
        decide(release=release, user=request.user, comment=request.POST.get("comment"))
    except ValidationFailed as error:
        for message in error.errors.get("comment", []):
            messages.error(request, gettext("Comment: %(problem)s") % {"problem": message})
    except Conflict as refusal:
        messages.error(request, decision_refusal_text(refusal.detail))
    else:
        messages.success(
            request,
            gettext("Approved: the release is queued for a worker.")
            if decision == "approve"
            else gettext(
                "Rejected: the release will not run, and its reserved budget was returned."
            ),
        )
    return redirect("approval-review", pk=release.pk)


@login_required
@require_POST
def dataset_approval_requirement(request, pk: int):
    """The privacy report's switch: require approval of this dataset's releases, or not."""
    _compliance(request)
    dataset = get_object_or_404(selectors.dataset_list_for_compliance(user=request.user), pk=pk)
    required = request.POST.get("requires_approval") == "on"
    dataset_approval_requirement_set(dataset=dataset, user=request.user, required=required)
    messages.success(
        request,
        gettext("Releases of this dataset now wait for a compliance officer's approval.")
        if required
        else gettext("Releases of this dataset no longer need approval."),
    )
    return redirect("audit-dataset-report", pk=dataset.pk)
