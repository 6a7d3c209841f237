"""English the compliance pages (the audit trail, a dataset's privacy report, the approvals)
show but their templates do not write: the models' choice labels, the trail's verdicts, the
approval services' messages. They stay English where they are stored or answered (the API,
``manage.py verify_audit``, the CSV export); a page translates them here, at render time, and
shows any text it does not know as written."""

import re
from collections.abc import Callable

from django.db.models import TextChoices
from django.utils.translation import gettext, pgettext

from releases.models import LedgerEntry, LedgerKind, ReleaseApproval
from releases.parsing import NUL_MESSAGE, SINCE_MESSAGE, SINCE_RANGE_MESSAGE


def _label(choices: type[TextChoices], value: str) -> str:
    """A choice's label (the models mark them for translation) in the active language; an
    unknown value as written."""
    return str(choices(value).label) if value in choices.values else value


def ledger_kind_name(kind: str | None) -> str:
    """How a dataset's budget is accounted, in the active language ("not fixed yet" before
    its first release fixes it)."""
    if not kind:
        return gettext("not fixed yet")
    return _label(LedgerKind, kind)


def decision_name(decision: str) -> str:
    """An approver's decision ("Approved", "Rejected") in the active language."""
    return _label(ReleaseApproval.Decision, decision)


def ledger_state_name(state: str) -> str:
    """Where a release's charge stands in the ledger (reserved, spent, returned)."""
    names = {
        LedgerEntry.State.RESERVED: gettext("reserved"),
        LedgerEntry.State.SPENT: gettext("spent"),
        LedgerEntry.State.RETURNED: gettext("returned"),
    }
    return names.get(state, state)


def _missing_events(match: re.Match) -> str:
    return gettext("events %(first)s to %(last)s are missing") % {
        "first": match["first"],
        "last": match["last"],
    }


def _missing_legacy(match: re.Match) -> str:
    return gettext(
        "no event has the legacy head recorded outside the database (%(head)s): the events "
        "written before the trail was keyed are gone or were rewritten"
    ) % {"head": match["head"]}


# Why the hash chain is broken (audit.chain.audit_chain_verify), as the chain words it.
_CHAIN_PROBLEMS: list[tuple[re.Pattern, Callable[[re.Match], str]]] = [
    (re.compile(r"events (?P<first>\d+) to (?P<last>\d+) are missing"), _missing_events),
    (
        re.compile(
            r"no event has the legacy head recorded outside the database \((?P<head>[^)]*)\): "
            r"the events written before the trail was keyed are gone or were rewritten"
        ),
        _missing_legacy,
    ),
]


def chain_problem_text(problem: str | None) -> str:
    """Why the audit trail's hash chain is broken, in the active language; a reason the chain
    words otherwise is shown as written."""
    if not problem:
        return ""
    known = {
        "its link to the previous event does not match": gettext(
            "its link to the previous event does not match"
        ),
        "an event from before the key has a client address": gettext(
            "an event from before the key has a client address"
        ),
        "its content does not match its hash": gettext("its content does not match its hash"),
        "the newest events are missing": gettext("the newest events are missing"),
    }
    if problem in known:
        return known[problem]
    for pattern, translate in _CHAIN_PROBLEMS:
        match = pattern.fullmatch(problem)
        if match:
            return translate(match)
    return problem


def decision_refusal_text(detail: str) -> str:
    """Why a release cannot be decided (releases/services/approvals.py), in the active
    language; another message as written."""
    match = re.fullmatch(
        r"This release does not await approval \(status: (?P<status>[a-z_]+)\); "
        r"it cannot be decided\.",
        detail,
    )
    if match:
        return gettext(
            "This release does not await approval (status: %(status)s); it cannot be decided."
        ) % {"status": match["status"]}
    return detail


# The audit page's filters (releases.parsing.audit_filters_parse), as its form names them.
def _filter_name(field: str) -> str:
    names = {
        "dataset": gettext("Dataset"),
        "actor": gettext("Actor"),
        "action": gettext("Action"),
        "since": gettext("Since"),
        "until": gettext("Until"),
    }
    return names.get(field, field.capitalize())


def filter_problem_text(field: str, problem: str) -> str:
    """One error of the audit page's filters: the filter's name, then what is wrong with it
    (the English the page wrote before: "Since must be an ISO-8601 date and time.")."""
    known = {
        NUL_MESSAGE: gettext("must not contain a NUL character"),
        SINCE_MESSAGE: gettext("must be an ISO-8601 date and time"),
        SINCE_RANGE_MESSAGE: gettext(
            "must be an ISO-8601 date and time between the years 1 and 9999 in UTC"
        ),
        "must be a dataset id": gettext("must be a dataset id"),
    }
    return gettext("%(field)s %(problem)s.") % {
        "field": _filter_name(field),
        "problem": known.get(problem, problem),
    }


def definition_kind_name(kind: str | None) -> str:
    """A release's privacy definition as the compliance tables name it: its code in English
    (``pure_dp``, as the API writes it), its name in another language."""
    names = {
        "pure_dp": pgettext("a privacy definition's code", "pure_dp"),
        "approx_dp": pgettext("a privacy definition's code", "approx_dp"),
        "blowfish": pgettext("a privacy definition's code", "blowfish"),
    }
    return names.get(kind or "", kind or "")


def audit_action_names() -> dict[str, str]:
    """Each audit action (audit.chain.AuditAction) as the audit page names it: its code in
    English (the filter's value, the CSV's and the API's), its meaning in another language."""
    return {
        "user.created": pgettext("audit action", "user.created"),
        "user.login": pgettext("audit action", "user.login"),
        "user.login_failed": pgettext("audit action", "user.login_failed"),
        "user.logout": pgettext("audit action", "user.logout"),
        "user.access_denied": pgettext("audit action", "user.access_denied"),
        "user.tokens_revoked": pgettext("audit action", "user.tokens_revoked"),
        "dataset.uploaded": pgettext("audit action", "dataset.uploaded"),
        "dataset.converted": pgettext("audit action", "dataset.converted"),
        "dataset.conversion_failed": pgettext("audit action", "dataset.conversion_failed"),
        "dataset.raw_deleted": pgettext("audit action", "dataset.raw_deleted"),
        "dataset.duplicate_upload_confirmed": pgettext(
            "audit action", "dataset.duplicate_upload_confirmed"
        ),
        "dataset.schema_changed": pgettext("audit action", "dataset.schema_changed"),
        "release.drafted": pgettext("audit action", "release.drafted"),
        "release.draft_updated": pgettext("audit action", "release.draft_updated"),
        "dataset.schema_suggested_from_data": pgettext(
            "audit action", "dataset.schema_suggested_from_data"
        ),
        "release.submitted": pgettext("audit action", "release.submitted"),
        "release.approval_requested": pgettext("audit action", "release.approval_requested"),
        "release.approved": pgettext("audit action", "release.approved"),
        "release.rejected": pgettext("audit action", "release.rejected"),
        "dataset.approval_requirement_changed": pgettext(
            "audit action", "dataset.approval_requirement_changed"
        ),
        "release.submission_refused": pgettext("audit action", "release.submission_refused"),
        "budget.reserved": pgettext("audit action", "budget.reserved"),
        "budget.spent": pgettext("audit action", "budget.spent"),
        "budget.returned": pgettext("audit action", "budget.returned"),
        "task.started": pgettext("audit action", "task.started"),
        "task.noise_drawn": pgettext("audit action", "task.noise_drawn"),
        "task.finished": pgettext("audit action", "task.finished"),
        "task.failed": pgettext("audit action", "task.failed"),
        "task.redelivered": pgettext("audit action", "task.redelivered"),
        "release.requeued": pgettext("audit action", "release.requeued"),
        "release.published": pgettext("audit action", "release.published"),
        "release.downloaded": pgettext("audit action", "release.downloaded"),
        "release.withdrawn": pgettext("audit action", "release.withdrawn"),
        "budget.increase_requested": pgettext("audit action", "budget.increase_requested"),
        "budget.increase_approved": pgettext("audit action", "budget.increase_approved"),
        "budget.increase_rejected": pgettext("audit action", "budget.increase_rejected"),
        "audit.rekeyed": pgettext("audit action", "audit.rekeyed"),
        "audit.exported": pgettext("audit action", "audit.exported"),
    }


def audit_object_names() -> dict[str, str]:
    """What an audit event is about (its ``object_type``) as the audit page names it: the code
    in English, a noun in another language."""
    return {
        "audit_trail": pgettext("audit object", "audit_trail"),
        "budget_increase": pgettext("audit object", "budget_increase"),
        "dataset": pgettext("audit object", "dataset"),
        "ledger_entry": pgettext("audit object", "ledger_entry"),
        "release": pgettext("audit object", "release"),
        "route": pgettext("audit object", "route"),
        "user": pgettext("audit object", "user"),
    }


def release_status_name(status: str) -> str:
    """A release's status as a label of the page's language, in Python (the words of
    templates/partials/release_status_label.html, for a status inside a sentence)."""
    names = {
        "draft": gettext("Draft"),
        "queued": gettext("Queued"),
        "running": gettext("Running"),
        "published": pgettext("a release's status", "Published"),
        "failed": gettext("Failed"),
        "closed": gettext("Closed"),
        "awaiting_approval": gettext("Awaiting approval"),
        "rejected": gettext("Rejected"),
    }
    return names.get(status, status)
