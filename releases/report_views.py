"""Compliance's per-dataset privacy report and the CSV export of the audit trail's events (any
filtered view of the audit page). Both are for compliance staff only; the export is itself an
audit event."""

import csv
import json
from collections.abc import Iterator

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render

from accounts.roles import Role, user_has_role
from audit.chain import AuditAction, audit_record
from releases import audit_translations, ledger_selectors, selectors
from releases.ledger_views import ledger_chart
from releases.parsing import audit_filters_parse
from releases.services.runs import csv_cell

EXPORT_FIELDS = (
    "id",
    "at",
    "actor",
    "client",
    "action",
    "object_type",
    "object_id",
    "dataset",
    "details",
    "repeats",
    "hash",
    "previous_hash",
)


def _compliance(request) -> None:
    if not user_has_role(request.user, Role.COMPLIANCE):
        raise PermissionDenied("This page is for compliance staff.")


@login_required
def dataset_privacy_report(request, pk: int):
    """A dataset's privacy over time: its budget as a chart, and every release with its
    definition, charge, dates, withdrawal and the trail head its metadata anchored."""
    _compliance(request)
    dataset = get_object_or_404(selectors.dataset_list_for_compliance(user=request.user), pk=pk)
    epsilon, delta = selectors.dataset_budget(dataset)
    return render(
        request,
        "audit/report.html",
        {
            "dataset": dataset,
            "budget": epsilon,
            "delta_budget": delta,
            "ledger": audit_translations.ledger_kind_name(dataset.ledger_kind),
            "chart": ledger_chart(ledger_selectors.dataset_ledger_rows(dataset=dataset)),
            "releases": [
                _report_row_shown(row) for row in selectors.dataset_privacy_report(dataset=dataset)
            ],
        },
    )


def _report_row_shown(row: dict) -> dict:
    """A release's row of the report with its codes (definition kind, ledger state, decision)
    named in the active language; the English names are the codes the page showed before."""
    approval = getattr(row["release"], "approval", None)
    return {
        **row,
        "kind": audit_translations.definition_kind_name((row["definition"] or {}).get("kind")),
        "ledger_state_text": audit_translations.ledger_state_name(row["ledger_state"]),
        "decision": audit_translations.decision_name(approval.decision) if approval else None,
    }


class _Echo:
    """A file-like object whose write returns what it was given (csv.writer into a stream)."""

    def write(self, value: str) -> str:
        return value


def _rows(events) -> Iterator[str]:
    writer = csv.writer(_Echo(), lineterminator="\r\n")
    yield writer.writerow(EXPORT_FIELDS)
    for event in events.iterator(chunk_size=2000):
        values = (
            event.pk,
            event.at.isoformat(),
            event.actor,
            event.client,
            event.action,
            event.object_type,
            event.object_id,
            event.dataset_id,
            json.dumps(event.details, sort_keys=True, ensure_ascii=False),
            event.repeats,
            event.hash,
            event.previous_hash,
        )
        yield writer.writerow([csv_cell(value) for value in values])


@login_required
def audit_export(request):
    """The audit page's events, with its filters, as CSV (oldest first, every page): text that
    a spreadsheet would read as a formula is escaped."""
    _compliance(request)
    filters, errors = audit_filters_parse(request.GET)
    if errors:
        return HttpResponseBadRequest(
            "; ".join(f"{name}: {', '.join(messages)}" for name, messages in errors.items()),
            content_type="text/plain; charset=utf-8",
        )
    audit_record(
        actor=request.user,
        action=AuditAction.TRAIL_EXPORTED,
        object_type="audit_trail",
        object_id=None,
        details={"filters": {k: str(v) for k, v in filters.items() if v is not None}},
    )
    events = selectors.audit_event_list(user=request.user, **filters).order_by("id")
    response = StreamingHttpResponse(_rows(events), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="audit-events.csv"'
    return response
