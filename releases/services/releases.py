"""Drafting and submitting releases: previews from public facts, budget reserved atomically."""

from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.text import slugify

from privacy_engine import (
    EngineValidationError,
    IncompatibleLedger,
    Ledger,
    epsilon_for_accuracy,
    ledger_charge,
    ledger_for,
    plan_release,
)
from privacy_engine.definitions import definition_from_dict, delta_warnings
from privacy_engine.errors import prefix_errors
from privacy_engine.guidance import simulated_preview
from privacy_engine.policies import check_policy_against_schema
from privacy_engine.queries import query_to_dict
from privacy_engine.schema import NumericColumn, schema_from_dict
from privacy_engine.sensitivity import missing_is_public
from privacy_engine.translation import blowfish_explanation
from releases.models import Dataset, LedgerEntry, Release, ReleaseSeries
from releases.selectors import dataset_budget
from releases.services.audit import AuditAction, audit_record
from releases.services.errors import Conflict, ValidationFailed


def _plan(dataset: Dataset, definition: Any, queries: Any):
    if not dataset.schema:
        raise ValidationFailed(
            {"dataset": ["Declare the dataset's schema (bounds and categories) first."]}
        )
    try:
        return plan_release(schema=dataset.schema, definition=definition, queries=queries)
    except EngineValidationError as error:
        raise ValidationFailed(error.errors) from None


def _series_create(*, user, dataset: Dataset, title: str) -> ReleaseSeries:
    """A new series with a slug from the title; a concurrent draft taking the same slug first
    makes this one retry with the next free slug."""
    for _ in range(5):
        try:
            with transaction.atomic():
                return ReleaseSeries.objects.create(
                    owner=user, dataset=dataset, slug=_unique_slug(title), title=title
                )
        except IntegrityError:
            continue
    raise Conflict("Could not name the release series; try again.")


def _unique_slug(title: str) -> str:
    base = slugify(title)[:100] or "release"
    slug, number = base, 1
    while ReleaseSeries.objects.filter(slug=slug).exists():
        number += 1
        slug = f"{base}-{number}"
    return slug


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
    errors: dict[str, list[str]] = {}
    title = title.strip() if isinstance(title, str) else ""
    if not title:
        errors["title"] = ["Give the release a title."]
    elif len(title) > 200:
        errors["title"] = ["Use at most 200 characters."]
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
    title = release.title if title is None else (title.strip() if isinstance(title, str) else "")
    definition = release.definition if definition is None else definition
    queries = release.queries if queries is None else queries
    errors: dict[str, list[str]] = {}
    if not title:
        errors["title"] = ["Give the release a title."]
    elif len(title) > 200:
        errors["title"] = ["Use at most 200 characters."]
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
    """The draft on a simulated table of its dataset's declared shape (see the engine)."""
    return simulated_preview(
        schema=release.dataset.schema, definition=release.definition, queries=release.queries
    )


def release_warnings(release: Release) -> list[str]:
    """Plain-language warnings about a draft's plan (a δ above 1/n², for example)."""
    definition = release.definition
    if definition.get("kind") != "approx_dp" or definition.get("delta") is None:
        return []
    return delta_warnings(definition["delta"], release.dataset.declared_size)


def _format_amount(amount: Decimal) -> str:
    return format(amount.normalize(), "f")


def _charge(dataset: Dataset, plan) -> tuple[Ledger, Decimal, Decimal]:
    """The dataset's ledger (or the one this release would fix) and what the release costs on it;
    :class:`Conflict` when the release cannot be accounted there."""
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
        raise Conflict(str(error)) from None
    return ledger, epsilon, delta


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
    missing_public = [
        name
        for name, column in schema.columns.items()
        if isinstance(column, NumericColumn) and missing_is_public(name, column, definition)
    ]
    return blowfish_explanation(
        definition.policy.to_dict(), definition.epsilon, missing_public=missing_public
    )


def release_charge_preview(*, release: Release) -> dict[str, Any]:
    """What submitting this draft would charge, on which ledger, and what it would leave; or the
    reason it cannot be submitted. Reads no data and reserves nothing."""
    dataset = release.dataset
    epsilon_budget, _ = dataset_budget(dataset)
    try:
        plan = _plan(dataset, release.definition, release.queries)
        ledger, epsilon, delta = _charge(dataset, plan)
    except (ValidationFailed, Conflict) as error:
        detail = (
            error.detail
            if isinstance(error, Conflict)
            else "; ".join(message for messages in error.errors.values() for message in messages)
        )
        return {
            "error": detail,
            "preview": release.preview,
            "epsilon": Decimal(0),
            "delta": Decimal(0),
            "ledger": "",
            "note": "",
            "leaves": epsilon_budget.remaining,
        }
    note = ""
    if ledger.kind == "blowfish" and release.definition["kind"] != "blowfish":
        note = "a differential-privacy release on a Blowfish budget is charged 2ε"
    return {
        "error": "",
        "epsilon": epsilon,
        "delta": delta,
        "ledger": ledger.describe(),
        "note": note,
        "leaves": epsilon_budget.remaining - epsilon,
        # Re-planned against the current schema: what submitting would actually run.
        "preview": plan.preview(),
    }


def release_submit(*, release: Release, user) -> Release:
    """Reserve the release's ε (and δ) and queue it for a worker, atomically.

    The dataset row is locked (SQLite: the IMMEDIATE transaction holds the write lock), so two
    submissions can never both see the last of the budget. Raises :class:`Conflict` when the
    release was already submitted or the budget would be exceeded; nothing changes then.
    """
    # Imported here: the task module imports the run services, which import this module.
    from releases.tasks import release_run_task

    with transaction.atomic():
        locked = Release.objects.select_for_update().get(pk=release.pk)
        if locked.status != Release.Status.DRAFT:
            raise Conflict(f"This release was already submitted (status: {locked.status}).")
        dataset = Dataset.objects.select_for_update().get(pk=locked.dataset_id)
        plan = _plan(dataset, locked.definition, locked.queries)
        ledger, epsilon, delta = _charge(dataset, plan)
        epsilon_budget, delta_budget = dataset_budget(dataset)
        if epsilon > epsilon_budget.remaining:
            raise Conflict(
                f"Not enough privacy budget: this release requests ε = {_format_amount(epsilon)} "
                f"but only ε = {_format_amount(epsilon_budget.remaining)} remains."
            )
        if delta > delta_budget.remaining:
            raise Conflict(
                f"Not enough privacy budget: this release requests δ = {_format_amount(delta)} "
                f"but only δ = {_format_amount(delta_budget.remaining)} remains."
            )
        if not dataset.ledger_kind:
            dataset.ledger_kind, dataset.ledger_policy = ledger.kind, ledger.policy
            dataset.save(update_fields=["ledger_kind", "ledger_policy"])
        entry = LedgerEntry.objects.create(
            dataset=dataset,
            release=locked,
            definition_kind=locked.definition["kind"],
            epsilon=epsilon,
            delta=delta,
        )
        locked.status = Release.Status.QUEUED
        locked.schema = dataset.schema
        locked.preview = plan.preview()
        locked.epsilon_charged, locked.delta_charged = epsilon, delta
        locked.submitted_at = timezone.now()
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
            },
        )
        release_run_task.delay_on_commit(locked.pk)
    return locked


def series_next_version(series: ReleaseSeries) -> int:
    """Next version number; call with the series row locked."""
    latest = series.releases.aggregate(latest=Max("version"))["latest"]
    return (latest or 0) + 1
