"""The budget ledger page (a dataset's curator and compliance) and its forms: a curator's request
to raise the budget, and compliance's approval or rejection. Each view checks the role, calls one
service or selector and renders."""

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext, pgettext
from django.views.decorators.http import require_POST

from accounts.roles import Role, user_has_role
from privacy_engine.accounting import ledger_spends_delta
from privacy_engine.composition import composition_sentences
from releases import ledger_selectors, selectors
from releases.models import BudgetIncrease, BudgetMovement, Dataset
from releases.refusals import refusal_errors
from releases.services.errors import Conflict, ValidationFailed
from releases.services.ledger import (
    MAX_TOP_UP_EPSILON,
    budget_increase_approve,
    budget_increase_reject,
    budget_increase_request,
)
from releases.translations import engine_text, statistic_title
from releases.views import plotly_text

# What releases/services/ledger.py writes of a movement reserved before the journal existed.
BEFORE_JOURNAL_NOTE = (
    "reserved before the journal existed: amounts as its ledger entry records them"
)


def _curator_or_compliance(view):
    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not (
            user_has_role(request.user, Role.CURATOR)
            or user_has_role(request.user, Role.COMPLIANCE)
        ):
            raise PermissionDenied("The budget ledger is for curators and compliance staff.")
        return view(request, *args, **kwargs)

    return wrapper


def ledger_chart(rows: list[ledger_selectors.LedgerRow]) -> dict:
    """Step lines of the ε total, committed (spent + reserved) and spent: one point per movement
    (the first is the opening budget, when the dataset was created) and one now, so the last
    step reaches today."""
    points = []
    for row in rows:
        movement = row.movement
        if movement.release_id:
            about = movement.release.title
        elif movement.kind == BudgetMovement.Kind.OPENING:
            about = gettext("dataset created")
        else:
            about = gettext("budget raised")
        label = gettext("%(movement)s of ε %(amount)s · %(about)s") % {
            "movement": movement.get_kind_display(),
            "amount": selectors.decimal_text(movement.epsilon),
            "about": plotly_text(about),
        }
        points.append(
            (movement.at, row.epsilon.total, row.epsilon_committed, row.epsilon.spent, label)
        )
    if points:
        last = points[-1]
        now = pgettext("the last point of the ledger's chart", "now")
        points.append((max(timezone.now(), last[0]), *last[1:4], now))
    return {
        "at": [point[0].isoformat() for point in points],
        "total": [float(point[1]) for point in points],
        "committed": [float(point[2]) for point in points],
        "spent": [float(point[3]) for point in points],
        "labels": [point[4] for point in points],
        # The lines' names, in the reader's language (static/js/ledger-chart.js).
        "names": {
            "total": pgettext("a line of the ledger's chart", "total"),
            "committed": pgettext("a line of the ledger's chart", "committed"),
            "spent": pgettext("a line of the ledger's chart", "spent"),
        },
    }


def composition_text(composition: dict) -> dict:
    """A movement's composition (privacy_engine/composition.py) with the engine's English in the
    active language, for the page; the stored row, the API and the audit trail keep the
    English."""
    shown = dict(composition)
    for key in ("rule", "sum_rule", "ledger", "groups", "note"):
        if isinstance(shown.get(key), str):
            shown[key] = engine_text(shown[key])
    if shown.get("note") == BEFORE_JOURNAL_NOTE:
        shown["note"] = gettext(
            "reserved before the journal existed: amounts as its ledger entry records them"
        )
    if isinstance(shown.get("statistics"), list):
        shown["statistics"] = [
            _share_text(share) if isinstance(share, dict) else share
            for share in shown["statistics"]
        ]
    return shown


def _share_text(share: dict) -> dict:
    """One statistic's share of a charge as the page shows it: its title, the values of its group
    joined with "or", how its parts compose, in the active language."""
    where = share.get("where") if isinstance(share.get("where"), dict) else {}
    values = where.get("in") if isinstance(where.get("in"), list) else []
    return {
        **share,
        "title": statistic_title(str(share.get("kind", ""))),
        "within": engine_text(share.get("within")) if isinstance(share.get("within"), str) else "",
        "where_values": pgettext("between values a group may take", " or ").join(map(str, values)),
    }


def composition_rules_text() -> str:
    """The ledger's composition rules in the active language, one sentence at a time: a space
    after a sentence that ends as English does, none after a full-width stop (Chinese)."""
    shown = ""
    for sentence in composition_sentences():
        if shown and not shown.endswith("。"):
            shown += " "
        shown += engine_text(sentence)
    return shown


def _page(request, dataset: Dataset, *, form_errors=None, form_values=None, status: int = 200):
    rows = ledger_selectors.dataset_ledger_rows(dataset=dataset)
    for row in rows:
        # Only this page's copy of the row: the page shows it, nothing saves it.
        row.movement.composition = composition_text(row.movement.composition or {})
    epsilon, delta = selectors.dataset_budget(dataset)
    is_compliance = user_has_role(request.user, Role.COMPLIANCE)
    return render(
        request,
        "releases/ledger.html",
        {
            "dataset": dataset,
            "rows": rows,
            "budget": epsilon,
            "delta_budget": delta,
            "chart": ledger_chart(rows),
            "composition_rules": composition_rules_text(),
            "delta_top_up": ledger_spends_delta(dataset.ledger_kind),
            "increases": ledger_selectors.budget_increase_list(user=request.user, dataset=dataset),
            "is_owner": dataset.owner_id == request.user.pk,
            "may_decide": is_compliance,
            "form_errors": form_errors or {},
            "form_values": form_values or {},
            "max_top_up": MAX_TOP_UP_EPSILON,
        },
        status=status,
    )


@_curator_or_compliance
def dataset_ledger(request, pk: int):
    dataset = get_object_or_404(selectors.dataset_list_visible(user=request.user), pk=pk)
    return _page(request, dataset)


@require_POST
@_curator_or_compliance
def budget_increase_request_view(request, pk: int):
    if not user_has_role(request.user, Role.CURATOR):
        raise PermissionDenied("Only the dataset's curator asks for more budget.")
    dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=pk)
    values = {name: request.POST.get(name, "") for name in ("epsilon", "delta", "reason")}
    try:
        budget_increase_request(dataset=dataset, user=request.user, **values)
    except ValidationFailed as error:
        errors = refusal_errors(error.errors)
        return _page(request, dataset, form_errors=errors, form_values=values, status=400)
    messages.success(request, gettext("Request sent: compliance will approve or reject it."))
    return redirect("dataset-ledger", pk=dataset.pk)


@require_POST
@_curator_or_compliance
def budget_increase_decide_view(request, pk: int, decision: str):
    if not user_has_role(request.user, Role.COMPLIANCE):
        raise PermissionDenied("Budget requests are decided by compliance staff.")
    increase: BudgetIncrease = get_object_or_404(
        ledger_selectors.budget_increase_list(user=request.user), pk=pk
    )
    decide = budget_increase_approve if decision == "approve" else budget_increase_reject
    try:
        decide(increase=increase, user=request.user, comment=request.POST.get("comment", ""))
    except (ValidationFailed, Conflict, PermissionDenied) as error:
        detail = (
            " ".join(m for texts in error.errors.values() for m in texts)
            if isinstance(error, ValidationFailed)
            else getattr(error, "detail", None) or str(error)
        )
        messages.error(request, detail)
    else:
        done = (
            gettext("Request #%(number)s approved.")
            if decision == "approve"
            else gettext("Request #%(number)s rejected.")
        )
        messages.success(request, done % {"number": increase.pk})
    return redirect("dataset-ledger", pk=increase.dataset_id)
