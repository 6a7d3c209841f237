"""Drafting and submitting releases: previews from public facts, budget reserved atomically."""

import secrets
import unicodedata
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils.text import slugify

from audit.chain import AuditAction, audit_record
from privacy_engine import (
    EngineValidationError,
    IncompatibleLedger,
    Ledger,
    epsilon_for_accuracy,
    ledger_charge,
    ledger_for,
    plan_release,
)
from privacy_engine.accounting import ledger_conversion
from privacy_engine.composition import charged_footprints
from privacy_engine.definitions import (
    ApproxDP,
    check_delta,
    definition_from_dict,
    delta_warnings,
)
from privacy_engine.errors import AT_MOST_STATISTICS, prefix_errors
from privacy_engine.footprint import Footprint
from privacy_engine.guidance import simulated_preview
from privacy_engine.kinds import kind_of
from privacy_engine.policies import check_policy_against_schema
from privacy_engine.queries import query_to_dict
from privacy_engine.schema import NumericColumn, schema_from_dict
from privacy_engine.sensitivity import missing_is_public
from privacy_engine.translation import blowfish_explanation
from privacy_engine.wording import gettext_noop, phrase
from releases.models import Dataset, LedgerEntry, Release, ReleaseSeries
from releases.selectors import Budget, dataset_budget
from releases.services.budget_audit import footprint_digest
from releases.services.clock import database_now
from releases.services.datasets import dataset_require_ready
from releases.services.errors import Conflict, ValidationFailed
from releases.services.ledger import budget_reservation_record, ledger_composition
from releases.services.raw_data import dataset_require_raw_data

# Statistics whose files hold a row per record.
RECORD_FILE_KINDS = ("randomized_response", "synthetic")


def _published_cells(plan) -> int:
    """How many numbers a release publishes (each kind counts its own: a histogram one per bar,
    a vector of sums one per column, quantiles one each). Bounds the public page's size."""
    return sum(
        kind_of(statistic.query).published_cells(statistic.query, plan.schema)
        for statistic in plan.statistics
    )


# The installation's limits on a release, said where the curator chooses its statistics (the
# page translates them: releases/refusals.py).
SCHEMA_FIRST = gettext_noop("Declare the dataset's schema (bounds and categories) first.")
TOO_MANY_DRAWS = gettext_noop(
    "these statistics draw {draws} noisy values; at most {limit} per release (use fewer bins, or "
    "split the release)"
)
TOO_MANY_RECORD_FILES = gettext_noop(
    "choose at most {limit} record-level files (randomized records, synthetic tables) per "
    "release: each holds a row per record"
)
TOO_MANY_NUMBERS = gettext_noop(
    "these statistics publish {cells} numbers; at most {limit} per release keep its page "
    "readable (use fewer bins or categories, or split the release)"
)


def _plan(dataset: Dataset, definition: Any, queries: Any):
    if not dataset.schema:
        raise ValidationFailed({"dataset": [SCHEMA_FIRST]})
    limit = settings.RELEASE_MAX_STATISTICS
    if isinstance(queries, list) and len(queries) > limit:
        raise ValidationFailed({"queries": [phrase(AT_MOST_STATISTICS, count=limit)]})
    try:
        plan = plan_release(schema=dataset.schema, definition=definition, queries=queries)
    except EngineValidationError as error:
        raise ValidationFailed(error.errors) from None
    draws = sum(
        kind_of(statistic.query).noise_draws(statistic.query, plan.schema)
        for statistic in plan.statistics
    )
    if draws > settings.RELEASE_MAX_NOISE_DRAWS:
        raise ValidationFailed(
            {
                "queries": [
                    phrase(
                        TOO_MANY_DRAWS,
                        draws=f"{draws:,}",
                        limit=f"{settings.RELEASE_MAX_NOISE_DRAWS:,}",
                    )
                ]
            }
        )
    record_files = sum(1 for s in plan.statistics if s.query.kind in RECORD_FILE_KINDS)
    if record_files > settings.RELEASE_MAX_RECORD_FILES:
        raise ValidationFailed(
            {"queries": [phrase(TOO_MANY_RECORD_FILES, limit=settings.RELEASE_MAX_RECORD_FILES)]}
        )
    cells = _published_cells(plan)
    if cells > settings.RELEASE_MAX_CELLS:
        raise ValidationFailed(
            {
                "queries": [
                    phrase(
                        TOO_MANY_NUMBERS,
                        cells=f"{cells:,}",
                        limit=f"{settings.RELEASE_MAX_CELLS:,}",
                    )
                ]
            }
        )
    return plan


def _series_create(*, user, dataset: Dataset, title: str) -> ReleaseSeries:
    """A new series whose slug is the title plus a random part, so a slug never depends on which
    titles other curators' drafts already took (a "-2" would reveal that one exists)."""
    base = slugify(title)[:100].rstrip("-") or "release"
    for _ in range(5):
        try:
            with transaction.atomic():
                return ReleaseSeries.objects.create(
                    owner=user,
                    dataset=dataset,
                    slug=f"{base}-{secrets.token_hex(4)}",
                    title=title,
                )
        except IntegrityError:
            continue
    raise Conflict("Could not name the release series; try again.")


def _not_a_character(character: str) -> bool:
    code = ord(character)
    return (
        unicodedata.category(character) == "Cs"
        or 0xFDD0 <= code <= 0xFDEF
        or code & 0xFFFE == 0xFFFE
    )


def _title_errors(title: Any) -> tuple[str, list[str]]:
    """The trimmed title and what is wrong with it (empty, too long, control characters)."""
    title = title.strip() if isinstance(title, str) else ""
    if not title:
        return title, ["Give the release a title."]
    if len(title) > 200:
        return title, ["Use at most 200 characters."]
    if any(unicodedata.category(character) == "Cc" for character in title):
        return title, ["The title must not contain control characters (such as NUL or tab)."]
    if any(_not_a_character(character) for character in title):
        # Noncharacters and lone surrogates: no XML document (the Atom feed) may hold them.
        return title, ["The title must not contain noncharacters (such as U+FFFF)."]
    return title, []


def release_draft_create(
    *,
    user,
    dataset: Dataset,
    title: str,
    definition: Any,
    queries: Any,
    series_slug: str | None = None,
) -> Release:
    """Validate a release plan against the declared schema and store it as a draft with its
    preview. Spends no budget and reads no data."""
    dataset_require_ready(dataset)
    errors: dict[str, list[str]] = {}
    title, title_errors = _title_errors(title)
    if title_errors:
        errors["title"] = title_errors
    series = None
    if series_slug:
        series = ReleaseSeries.objects.filter(slug=series_slug, owner=user, dataset=dataset).first()
        if series is None:
            errors["series"] = ["No series with this slug for this dataset."]
    plan = None
    try:
        plan = _plan(dataset, definition, queries)
    except ValidationFailed as error:
        errors.update(error.errors)
    if errors:
        raise ValidationFailed(errors)
    with transaction.atomic():
        # Under the dataset's lock, as its raw data's deletion closes drafts under it: no draft
        # is made after that deletion closed the others.
        dataset_require_raw_data(
            Dataset.objects.select_for_update().get(pk=dataset.pk), action="a new release"
        )
        if series is None:
            series = _series_create(user=user, dataset=dataset, title=title)
        release = Release.objects.create(
            dataset=dataset,
            series=series,
            created_by=user,
            title=title,
            definition=plan.definition.to_dict(),
            queries=[query_to_dict(s.query) for s in plan.statistics],
            preview=plan.preview(),
        )
        audit_record(
            actor=user,
            action=AuditAction.RELEASE_DRAFTED,
            object_type="release",
            object_id=release.pk,
            dataset_id=dataset.pk,
            details={
                "title": title,
                "series": series.slug,
                "definition": release.definition,
                "queries": release.queries,
            },
        )
    return release


def release_draft_update(
    *,
    release: Release,
    user,
    title: str | None = None,
    definition: Any = None,
    queries: Any = None,
) -> Release:
    """Change a draft's title, definition or statistics (omitted ones stay) and refresh its
    preview. Only drafts change: a submitted release is immutable."""
    title, title_errors = _title_errors(release.title if title is None else title)
    definition = release.definition if definition is None else definition
    queries = release.queries if queries is None else queries
    errors: dict[str, list[str]] = {}
    if title_errors:
        errors["title"] = title_errors
    plan = None
    try:
        plan = _plan(release.dataset, definition, queries)
    except ValidationFailed as error:
        errors.update(error.errors)
    if errors:
        raise ValidationFailed(errors)
    with transaction.atomic():
        locked = Release.objects.select_for_update().get(pk=release.pk)
        if locked.status != Release.Status.DRAFT:
            raise Conflict("Only drafts can be changed; this release was already submitted.")
        locked.title = title
        locked.definition = plan.definition.to_dict()
        locked.queries = [query_to_dict(s.query) for s in plan.statistics]
        locked.preview = plan.preview()
        locked.save(update_fields=["title", "definition", "queries", "preview"])
        audit_record(
            actor=user,
            action=AuditAction.RELEASE_DRAFT_UPDATED,
            object_type="release",
            object_id=locked.pk,
            dataset_id=locked.dataset_id,
            details={"title": title, "definition": locked.definition, "queries": locked.queries},
        )
    return locked


def release_epsilon_for_accuracy(
    *, dataset: Dataset, definition: Any, query: Any, ci95_halfwidth: float
) -> float:
    """The ε a single statistic needs for the given 95% half-width (reads no data)."""
    if not dataset.schema:
        raise ValidationFailed(
            {"dataset": ["Declare the dataset's schema (bounds and categories) first."]}
        )
    if not isinstance(definition, dict):
        definition = {"kind": "pure_dp", "epsilon": 1.0}
    try:
        return epsilon_for_accuracy(
            schema=dataset.schema,
            definition={**definition, "epsilon": 1.0},
            query=query,
            ci95_halfwidth=ci95_halfwidth,
        )
    except EngineValidationError as error:
        raise ValidationFailed(error.errors) from None


def release_simulated_preview(release: Release) -> list[dict] | None:
    """The draft on a simulated table of its dataset's declared shape (see the engine).

    :class:`ValidationFailed` names what no longer fits when the schema changed since the draft
    was made (a column made an identifier, new bounds). :class:`Conflict` once the draft was
    closed or its dataset's raw data deleted: it can never run."""
    dataset_require_raw_data(release.dataset, action="a simulated preview")
    if release.status == Release.Status.CLOSED:
        raise Conflict(release.failure_reason or "This draft was closed.")
    try:
        return simulated_preview(
            schema=release.dataset.schema, definition=release.definition, queries=release.queries
        )
    except EngineValidationError as error:
        raise ValidationFailed(error.errors) from None


def release_warnings(release: Release) -> list[str]:
    """Plain-language warnings about a draft's plan (a δ above 1/n², for example)."""
    definition = release.definition
    if definition.get("kind") != "approx_dp" or definition.get("delta") is None:
        return []
    return delta_warnings(definition["delta"], release.dataset.declared_size)


def _format_amount(amount: Decimal) -> str:
    return format(amount.normalize(), "f")


# Why a submission is refused, as phrases (privacy_engine/wording.py): the audit trail and the
# API keep the English, the confirm page shows it in the reader's language (engine_text).
OVER_BUDGET = gettext_noop(
    "Not enough privacy budget: this release requests {name} = {charge} but only "
    "{name} = {remaining} remains."
)
OVER_BUDGET_IN_PARALLEL = gettext_noop(
    "Not enough privacy budget: this release requests {name} = {charge} (it adds "
    "{name} = {added} to what is in use: its statistics restricted to groups compose in "
    "parallel with earlier ones on other groups) but only {name} = {remaining} remains."
)
DELTA_TOO_LARGE = gettext_noop(
    "δ = {delta} is too large for this table's size: the rule is δ ≤ 1/(10·n) for a table of "
    "n records, because a mechanism that publishes each record with probability δ satisfies "
    "(0, δ)-DP. Choose a smaller δ (or leave it empty for the default)."
)
DRAFT_CLOSED = gettext_noop("This draft was closed.")
ALREADY_SUBMITTED = gettext_noop("This release was already submitted (status: {status}).")
RAW_DATA_DELETED = gettext_noop(
    "The raw data of this dataset was deleted on {date}: no release of it can run any more."
)
DATASET_NOT_READY = gettext_noop(
    "This dataset's table is not ready (still converting, or its upload failed)."
)


class SubmissionRefused(Conflict):
    """A submission that cannot go ahead; ``reason`` is a short code the audit trail records."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True)
class Charge:
    """What a release costs on a ledger: its own (ε, δ), and the footprints (ε, δ) it adds to
    the dataset's (privacy_engine/footprint.py), which decide how much of the budget it uses."""

    ledger: Ledger
    epsilon: Decimal
    delta: Decimal
    footprint: tuple[Footprint, Footprint]


def _charge(dataset: Dataset, plan) -> Charge:
    """The dataset's ledger (or the one this release would fix) and what the release costs on it;
    :class:`SubmissionRefused` when the release cannot be accounted there."""
    ledger = (
        Ledger(kind=dataset.ledger_kind, policy=dataset.ledger_policy)
        if dataset.ledger_kind
        else ledger_for(plan.definition)
    )
    try:
        epsilon, delta = ledger_charge(
            definition=plan.definition,
            epsilon=plan.epsilon_spent,
            delta=plan.delta_spent,
            ledger=ledger,
        )
    except IncompatibleLedger as error:
        raise SubmissionRefused("ledger_mismatch", str(error)) from None
    footprint = charged_footprints(
        plan=plan, ledger=ledger, charged_epsilon=epsilon, charged_delta=delta
    )
    return Charge(ledger, epsilon, delta, footprint)


def _over_budget(name: str, charge: Decimal, before: Budget, after: Budget) -> SubmissionRefused:
    added = after.spent + after.reserved - before.spent - before.reserved
    amounts = {
        "name": name,
        "charge": _format_amount(charge),
        "remaining": _format_amount(before.remaining),
    }
    if added != charge:
        detail = phrase(OVER_BUDGET_IN_PARALLEL, added=_format_amount(added), **amounts)
    else:
        detail = phrase(OVER_BUDGET, **amounts)
    return SubmissionRefused("over_budget", detail)


def _refusal(dataset: Dataset, plan, charge: Charge) -> SubmissionRefused | None:
    """Why a release costing ``charge`` cannot be submitted on ``dataset`` now, or None.

    δ is checked against the table's real number of rows, which drafts never see (they use the
    public declared size): only the owning curator submits, and the message names the rule, not
    the number."""
    if isinstance(plan.definition, ApproxDP):
        try:
            check_delta(plan.definition.delta, dataset.row_count)
        except EngineValidationError:
            return SubmissionRefused(
                "delta_too_large", phrase(DELTA_TOO_LARGE, delta=f"{plan.definition.delta:g}")
            )
    before = dataset_budget(dataset)
    after = dataset_budget(dataset, extra=charge.footprint)
    if after[0].remaining < 0:
        return _over_budget("ε", charge.epsilon, before[0], after[0])
    if after[1].remaining < 0:
        return _over_budget("δ", charge.delta, before[1], after[1])
    return None


def _submission_refused_record(*, release: Release, user, reason: str, detail: str) -> None:
    """Record a refused submission in its own transaction: the refused one rolled back, the
    event must stay. Reasons and messages hold public facts only (ε, δ, rules), never data."""
    with transaction.atomic():
        audit_record(
            actor=user,
            action=AuditAction.SUBMISSION_REFUSED,
            object_type="release",
            object_id=release.pk,
            dataset_id=release.dataset_id,
            details={"reason": reason, "message": detail},
        )


def policy_explanation(*, dataset: Dataset, policy: Any, epsilon: float) -> dict[str, list[str]]:
    """What an attacker can and cannot learn under a Blowfish policy on this dataset; a
    :class:`ValidationFailed` naming the policy's bad fields when it does not fit the schema."""
    try:
        definition = definition_from_dict(
            {"kind": "blowfish", "epsilon": epsilon, "policy": policy}
        )
        schema = schema_from_dict(dataset.schema)
        check_policy_against_schema(definition.policy, schema)
    except EngineValidationError as error:
        raise ValidationFailed(prefix_errors("definition", error).errors) from None
    return blowfish_explanation(
        definition.policy.to_dict(),
        definition.epsilon,
        missing_public=missing_public_columns(schema, definition),
    )


def missing_public_columns(schema, definition) -> list[str]:
    """Numeric columns whose missing values a Blowfish ``definition`` leaves public (dropped
    rather than filled: a missing value has no place in the policy's graph)."""
    return [
        name
        for name, column in schema.columns.items()
        if isinstance(column, NumericColumn) and missing_is_public(name, column, definition)
    ]


def release_charge_preview(*, release: Release) -> dict[str, Any]:
    """What submitting this draft would charge, on which ledger, and what it would leave; or,
    with ``fits`` false, why it cannot be submitted. Reads no data and reserves nothing."""
    dataset = release.dataset
    refused = {
        "fits": False,
        "epsilon": None,
        "delta": None,
        "ledger": "",
        "note": "",
        "table_epsilon": None,
        "table_delta": None,
    }
    try:
        plan = _plan(dataset, release.definition, release.queries)
        charge = _charge(dataset, plan)
    except ValidationFailed as error:
        messages = "; ".join(message for texts in error.errors.values() for message in texts)
        return {**refused, "error": messages, "preview": release.preview, "leaves": None}
    except SubmissionRefused as refusal:
        return {**refused, "error": refusal.detail, "preview": release.preview, "leaves": None}
    ledger = charge.ledger
    note = ledger_conversion(definition_kind=plan.definition.kind, ledger_kind=ledger.kind) or ""
    refusal = _refusal(dataset, plan, charge)
    after, after_delta = dataset_budget(dataset, extra=charge.footprint)
    return {
        "fits": refusal is None,
        "error": refusal.detail if refusal is not None else "",
        "epsilon": charge.epsilon,
        "delta": charge.delta,
        "ledger": ledger.describe(),
        "note": note,
        # Never a negative remainder: a release that does not fit leaves nothing to show.
        "leaves": after.remaining if refusal is None else None,
        # Every release of the table together once this one is added (the risk card's).
        "table_epsilon": after.spent + after.reserved,
        "table_delta": after_delta.spent + after_delta.reserved,
        # Re-planned against the current schema: what submitting would actually run.
        "preview": plan.preview(),
    }


def release_columns_from_data(*, release: Release) -> list[str]:
    """Columns this release uses whose bounds or categories were taken from the data."""
    declared = (release.dataset.schema or {}).get("columns", {})
    used = [
        name
        for query in release.queries
        for name in (
            *(query.get("columns") or ([query["column"]] if query.get("column") else [])),
            *([query["where"].get("column")] if isinstance(query.get("where"), dict) else []),
        )
    ]
    return [name for name in dict.fromkeys(used) if declared.get(name, {}).get("from_data") is True]


def release_submit(*, release: Release, user) -> Release:
    """Reserve the release's ε (and δ) and queue it for a worker, atomically.

    The dataset row is locked (SQLite: the IMMEDIATE transaction holds the write lock), so two
    submissions can never both see the last of the budget. Raises :class:`SubmissionRefused`
    (already submitted, ledger mismatch, δ too large for the table, over budget) or
    :class:`ValidationFailed` (the plan no longer fits the schema); nothing changes then except
    the audit event ``release.submission_refused``.
    """
    try:
        return _submit(release=release, user=user)
    except SubmissionRefused as refusal:
        _submission_refused_record(
            release=release, user=user, reason=refusal.reason, detail=refusal.detail
        )
        raise
    except ValidationFailed as error:
        _submission_refused_record(
            release=release,
            user=user,
            reason="invalid_plan",
            detail="; ".join(f"{path}: {' '.join(texts)}" for path, texts in error.errors.items()),
        )
        raise


def _submit(*, release: Release, user) -> Release:
    # Imported here: the task module imports the run services, which import this module.
    from releases.tasks import release_run_task

    with transaction.atomic():
        # The dataset first, then the release: the order a raw-data deletion takes them in.
        dataset = Dataset.objects.select_for_update().get(pk=release.dataset_id)
        locked = Release.objects.select_for_update().get(pk=release.pk)
        if locked.status == Release.Status.CLOSED:
            raise SubmissionRefused("closed", locked.failure_reason or phrase(DRAFT_CLOSED))
        if locked.status != Release.Status.DRAFT:
            raise SubmissionRefused(
                "already_submitted", phrase(ALREADY_SUBMITTED, status=locked.status)
            )
        if dataset.raw_deleted_at is not None:
            raise SubmissionRefused(
                "raw_data_deleted",
                phrase(RAW_DATA_DELETED, date=f"{dataset.raw_deleted_at:%Y-%m-%d}"),
            )
        if dataset.status != Dataset.Status.READY:
            raise SubmissionRefused("dataset_not_ready", phrase(DATASET_NOT_READY))
        plan = _plan(dataset, locked.definition, locked.queries)
        charge = _charge(dataset, plan)
        ledger, epsilon, delta = charge.ledger, charge.epsilon, charge.delta
        refusal = _refusal(dataset, plan, charge)
        if refusal is not None:
            raise refusal
        if not dataset.ledger_kind:
            dataset.ledger_kind, dataset.ledger_policy = ledger.kind, ledger.policy
            dataset.save(update_fields=["ledger_kind", "ledger_policy"])
        composition = ledger_composition(plan=plan, ledger=ledger, epsilon=epsilon, delta=delta)
        entry = LedgerEntry.objects.create(
            dataset=dataset,
            release=locked,
            definition_kind=locked.definition["kind"],
            epsilon=epsilon,
            delta=delta,
            footprint=composition["footprint"],
        )
        budget_reservation_record(entry=entry, user=user, composition=composition)
        # Dual control: on a dataset that requires approval the release waits, its budget
        # reserved, for a compliance officer's decision (releases/services/approvals.py).
        awaiting = dataset.requires_approval
        locked.status = Release.Status.AWAITING_APPROVAL if awaiting else Release.Status.QUEUED
        locked.schema = dataset.schema
        locked.columns_text = statistics_columns_text(locked.queries)
        locked.preview = plan.preview()
        locked.epsilon_charged, locked.delta_charged = epsilon, delta
        locked.submitted_at = database_now()
        locked.save()
        audit_record(
            actor=user,
            action=AuditAction.RELEASE_SUBMITTED,
            object_type="release",
            object_id=locked.pk,
            dataset_id=dataset.pk,
            details={"title": locked.title},
        )
        audit_record(
            actor=user,
            action=AuditAction.BUDGET_RESERVED,
            object_type="ledger_entry",
            object_id=entry.pk,
            dataset_id=dataset.pk,
            details={
                "release": locked.pk,
                "epsilon": str(epsilon),
                "delta": str(delta),
                "ledger": dataset.ledger_kind,
                "footprint_sha256": footprint_digest(entry.footprint),
            },
        )
        if awaiting:
            audit_record(
                actor=user,
                action=AuditAction.APPROVAL_REQUESTED,
                object_type="release",
                object_id=locked.pk,
                dataset_id=dataset.pk,
                details={"title": locked.title},
            )
        else:
            release_run_task.delay_on_commit(locked.pk)
    return locked


def statistics_columns_text(queries: list[dict]) -> str:
    """The column names the statistics use, one a line, each once (the catalog's search)."""
    names: list[str] = []
    for query in queries:
        if isinstance(query.get("column"), str):
            names.append(query["column"])
        names.extend(name for name in query.get("columns") or [] if isinstance(name, str))
    return "\n".join(dict.fromkeys(names))


def series_next_version(series: ReleaseSeries) -> int:
    """Next version number; call with the series row locked."""
    latest = series.releases.aggregate(latest=Max("version"))["latest"]
    return (latest or 0) + 1
