"""Curator pages: datasets, schema, the release wizard and the release status page.

Each view validates form input, calls one service or selector and renders; privacy maths comes
from the engine through the services, never from here.
"""

import json
import math
from decimal import Decimal
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_POST

from accounts.roles import Role, user_has_role
from privacy_engine import (
    EngineValidationError,
    accuracy_curve,
    blowfish_refusal,
    truth_probability_to_epsilon,
)
from privacy_engine.definitions import MAX_EPSILON, MIN_EPSILON, default_delta
from privacy_engine.desiderata import desiderata_table
from privacy_engine.guidance import (
    HARM_EPSILON,
    RELEASES_FACTOR,
    suggest_starting_point,
)
from privacy_engine.presentation import format_significant
from privacy_engine.translation import group_privacy
from releases import selectors
from releases.forms import (
    KIND_FIELDS,
    STATISTIC_LABELS,
    ColumnSchemaForm,
    DatasetUploadForm,
    PrivacyStepForm,
    StatisticFormSet,
    group_value,
    initial_kind,
    name_looks_like_identifier,
)
from releases.models import Release
from releases.refusals import refusal_errors, refusal_text
from releases.risk_selectors import risk_card_for_draft
from releases.services.datasets import (
    DuplicateUpload,
    dataset_create,
    dataset_has_submissions,
    dataset_schema_update,
)
from releases.services.errors import Conflict, ValidationFailed
from releases.services.raw_data import REASON_MAX_LENGTH as RAW_DELETE_REASON_MAX_LENGTH
from releases.services.releases import (
    policy_explanation,
    release_charge_preview,
    release_columns_from_data,
    release_draft_create,
    release_draft_update,
    release_simulated_preview,
    release_submit,
    release_warnings,
)
from releases.services.runs import release_publish_again
from releases.services.suggestions import dataset_schema_suggest
from releases.services.versions import version_next_number
from releases.translations import (
    chart_kind_names,
    desiderata_translate,
    engine_text,
    simulated_translate,
    statistics_translate,
)

WIZARD_STEPS = [
    ("privacy", gettext_lazy("Privacy")),
    ("statistics", gettext_lazy("Statistics")),
    ("preview", gettext_lazy("Preview")),
    ("confirm", gettext_lazy("Confirm")),
]


def curator_required(view):
    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not user_has_role(request.user, Role.CURATOR):
            raise PermissionDenied("These pages are for curators.")
        return view(request, *args, **kwargs)

    return wrapper


def _add_errors(form, errors: dict[str, list[str]], fields_prefix: str = "") -> None:
    """Attach service errors (``"definition.epsilon"``) to the matching form field."""
    for path, messages_for_path in errors.items():
        field = path.removeprefix(fields_prefix).split(".")[-1]
        for message in messages_for_path:
            form.add_error(field if field in form.fields else None, refusal_text(message))


def _budget_rows(datasets):
    return [{"dataset": d, "epsilon": selectors.dataset_budget(d)[0]} for d in datasets]


@curator_required
def dataset_list(request):
    datasets = selectors.dataset_list_owned(user=request.user)
    return render(request, "curator/datasets.html", {"rows": _budget_rows(datasets)})


@curator_required
def dataset_upload(request):
    posted = request.method == "POST"
    # Bound on every POST, even an empty one (or one that is no form at all): its errors show.
    form = DatasetUploadForm(request.POST if posted else None, request.FILES if posted else None)
    duplicate_detail = None
    if posted:
        try:
            dataset = dataset_create(
                owner=request.user,
                name=request.POST.get("name", ""),
                upload=request.FILES.get("file"),
                budget_epsilon=request.POST.get("budget_epsilon"),
                budget_delta=request.POST.get("budget_delta"),
                declared_size=request.POST.get("declared_size"),
                confirm_new_budget=request.POST.get("confirm_new_budget", ""),
                harm=request.POST.get("harm"),
                planned_releases=request.POST.get("planned_releases"),
                name_from_file=True,
            )
        except ValidationFailed as error:
            form.is_valid()
            form.errors.clear()
            _add_errors(form, error.errors)
        except DuplicateUpload as duplicate:
            # Everything typed stays in the bound form; only the file must be chosen again.
            form.is_valid()
            form.errors.clear()
            duplicate_detail = duplicate.detail
        except Conflict as refusal:
            form.is_valid()
            form.errors.clear()
            form.add_error(None, refusal_text(refusal.detail))
        else:
            if dataset.status == dataset.Status.PROCESSING:
                messages.success(
                    request, gettext("Uploaded. The table is being converted; wait here.")
                )
            else:
                messages.success(
                    request, gettext("Uploaded. Now declare what is public about each column.")
                )
            return redirect("dataset-detail", pk=dataset.pk)
    return render(
        request,
        "curator/upload.html",
        {
            "form": form,
            "duplicate_detail": duplicate_detail,
            "budget_questions": [form["harm"], form["planned_releases"]],
            "offer_confirm": duplicate_detail is not None
            or request.POST.get("confirm_new_budget") is not None,
        },
    )


# What "Fill in from my data" reads from the rows, by kind: the rest of a typed form is kept.
_SUGGESTED_FIELDS = {"numeric": ("lower", "upper"), "categorical": ("categories",)}


def _column_initial(spec: dict) -> dict:
    return {
        "kind": spec.get("kind", "identifier"),
        "lower": spec.get("lower"),
        "upper": spec.get("upper"),
        "typical": spec.get("typical"),
        "categories": ", ".join(spec.get("categories", [])),
        "other": spec.get("other", ""),
        "fill": _fill_text(spec.get("fill")),
    }


def _column_forms(dataset, data=None, initial_schema=None, typed=None):
    """One form per column, bound to ``data`` when posted for saving. With a suggestion
    (``initial_schema``) and the form as the curator had ``typed`` it, the suggestion only
    replaces the bounds or categories of columns typed as the suggested kind: nothing else
    typed is lost."""
    schema = initial_schema or (dataset.schema or {}).get("columns", {})
    forms = []
    for index, column in enumerate(dataset.columns):
        name = column["name"]
        prefix = f"col{index}"
        spec = schema.get(name) or {
            "kind": initial_kind(name=name, inferred_kind=column["inferred_kind"])
        }
        initial = _column_initial(spec)
        typed_kind = typed.get(f"{prefix}-kind") if typed is not None else None
        if typed_kind in KIND_FIELDS:
            kept = {
                field: typed.get(f"{prefix}-{field}", "") for field in ColumnSchemaForm.base_fields
            }
            if typed_kind == spec.get("kind"):
                kept.update(
                    {
                        field: initial[field]
                        for field in _SUGGESTED_FIELDS.get(typed_kind, ())
                        if spec.get(field) is not None
                    }
                )
            initial = kept
        form = ColumnSchemaForm(data, prefix=prefix, initial=initial)
        # Names the column in the tag editor's remove buttons.
        form.fields["categories"].widget.attrs["data-column"] = name
        # Said on the page, so that the curator knows why an id-like column starts unused.
        form.preselected_by_name = name not in schema and name_looks_like_identifier(name)
        # A saved column no statistic can use although it reads as numbers or categories: left
        # undeclared (or declared an identifier), said on the page with what would publish it.
        detected = initial_kind(name=name, inferred_kind=column["inferred_kind"])
        form.undeclared_kind = (
            detected
            if spec.get("kind") == "identifier"
            and name in schema
            and detected != "identifier"
            and name != (dataset.schema or {}).get("person_key")
            else None
        )
        forms.append((column, form))
    return forms


# What a column of each kind needs before a statistic can use it, as the page names it.
def undeclared_sentence(name: str, kind: str) -> str:
    """What the dataset page says of a saved column no statistic can use although it reads as
    ``kind``: ``age: no bounds given, so no statistic can use it — choose Numeric and add them
    to publish it.``"""
    if kind == "numeric":
        sentence = gettext(
            "%(name)s: no bounds given, so no statistic can use it — choose Numeric and add "
            "them to publish it."
        )
    else:
        sentence = gettext(
            "%(name)s: no categories given, so no statistic can use it — choose Categorical "
            "and add them to publish it."
        )
    return sentence % {"name": name}


def _unit_of_protection(data) -> dict:
    """The person key and the rows each person may have, from the schema form."""
    key = (data.get("person_key") or "").strip()
    if not key:
        return {}
    try:
        max_rows = int(data.get("max_rows_per_person") or 1)
    except ValueError:
        max_rows = 0  # refused by the engine with a message naming the field
    return {"person_key": key, "max_rows_per_person": max_rows}


@curator_required
def dataset_detail(request, pk: int):
    dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=pk)
    if dataset.status != dataset.Status.READY:
        return dataset_page_render(request, dataset)
    # Once the raw data is deleted nothing on the page can change the schema any more.
    locked = dataset_has_submissions(dataset) or dataset.is_raw_deleted
    suggestion = None
    column_forms = _column_forms(dataset)
    if request.method == "POST" and request.POST.get("action") == "suggest" and not locked:
        suggestion = dataset_schema_suggest(dataset=dataset, user=request.user)
        column_forms = _column_forms(dataset, initial_schema=suggestion, typed=request.POST)
    elif request.method == "POST" and not locked:
        column_forms = _column_forms(dataset, data=request.POST)
        if all(form.is_valid() for _, form in column_forms):
            # Columns left with every box of their kind empty are omitted: the service stores
            # them as identifiers, used by no statistic (the API stays strict: a numeric column
            # sent without bounds is refused there).
            undeclared = [
                (c["name"], f.cleaned_data["kind"])
                for c, f in column_forms
                if f.is_left_undeclared()
            ]
            spec = {
                "columns": {
                    c["name"]: f.to_spec() for c, f in column_forms if not f.is_left_undeclared()
                },
                "declared_size": dataset.declared_size,
                **_unit_of_protection(request.POST),
            }
            try:
                dataset_schema_update(dataset=dataset, user=request.user, schema=spec)
            except ValidationFailed as error:
                by_name = {c["name"]: f for c, f in column_forms}
                for path, errors in error.errors.items():
                    parts = path.split(".")
                    form = by_name.get(parts[1]) if len(parts) > 1 else None
                    for message in map(refusal_text, errors):
                        if form is None:
                            messages.error(request, message)
                        else:
                            field = parts[2] if len(parts) > 2 else None
                            form.add_error(field if field in form.fields else None, message)
            except Conflict as conflict:
                messages.error(request, refusal_text(conflict.detail))
            else:
                messages.success(request, gettext("Schema saved."))
                if undeclared:
                    messages.info(
                        request,
                        gettext(
                            "No statistic can use %(columns)s: no bounds or categories were "
                            "given for them. Add them on the dataset page to publish them."
                        )
                        % {"columns": ", ".join(name for name, _ in undeclared)},
                    )
                if request.POST.get("action") == "continue":
                    return redirect("wizard-start", dataset_pk=dataset.pk)
                return redirect("dataset-detail", pk=dataset.pk)
    return dataset_page_render(
        request, dataset, locked=locked, column_forms=column_forms, suggestion=suggestion
    )


def dataset_page_render(
    request,
    dataset,
    *,
    locked: bool | None = None,
    column_forms=None,
    suggestion: dict | None = None,
    raw_delete_form=None,
):
    """The dataset page: its budget, schema form, releases and the "Delete raw data" form
    (``raw_delete_form``, bound when it is shown again with its errors). A dataset converting or
    whose upload failed has a page of its own, saying where the upload stands."""
    if dataset.status != dataset.Status.READY:
        return render(
            request,
            "curator/dataset_processing.html",
            {
                "dataset": dataset,
                # The engine's or the table reader's English, in the reader's language.
                "raw_delete_form": raw_delete_form,
                "raw_delete_reason_max_length": RAW_DELETE_REASON_MAX_LENGTH,
            },
        )
    if locked is None:
        locked = dataset_has_submissions(dataset) or dataset.is_raw_deleted
    if column_forms is None:
        column_forms = _column_forms(dataset)
    epsilon, delta_budget = selectors.dataset_budget(dataset)
    releases = dataset.releases.select_related("series").order_by("-created_at")
    schema = dataset.schema or {}
    rows_per_person = schema.get("max_rows_per_person", 1) if schema.get("person_key") else 1
    group_epsilon, _ = group_privacy(group_size=max(rows_per_person, 3), epsilon=1.0)
    unit = _unit_shown(request, schema)
    return render(
        request,
        "curator/dataset.html",
        {
            "dataset": dataset,
            "column_forms": column_forms,
            "undeclared": [
                undeclared_sentence(column["name"], form.undeclared_kind)
                for column, form in column_forms
                if form.undeclared_kind
            ],
            "locked": locked,
            "suggestion": suggestion,
            "delta_budget": delta_budget,
            "identifier_columns": _person_key_choices(column_forms, unit["person_key"]),
            "unit": unit,
            "group_example": {"size": max(rows_per_person, 3), "epsilon": group_epsilon},
            "budget_reasons": [engine_text(reason) for reason in dataset.budget_reasons or []],
            "budget": epsilon,
            "releases": releases,
            "from_data_columns": selectors.dataset_columns_from_data(dataset=dataset),
            # Named only when it is the curator's own: another's dataset stays anonymous.
            "duplicate_of_own": dataset.duplicate_of
            if dataset.duplicate_of_id and dataset.duplicate_of.owner_id == dataset.owner_id
            else None,
            "raw_delete_form": raw_delete_form,
            "raw_delete_reason_max_length": RAW_DELETE_REASON_MAX_LENGTH,
        },
    )


def _unit_shown(request, schema: dict) -> dict:
    """The unit of protection as the schema form shows it: as posted when the form was posted
    (nothing typed is lost on an error), else as saved."""
    if request.method == "POST" and "max_rows_per_person" in request.POST:
        return {
            "person_key": request.POST.get("person_key", ""),
            "max_rows_per_person": request.POST.get("max_rows_per_person", ""),
        }
    return {
        "person_key": schema.get("person_key") or "",
        "max_rows_per_person": schema.get("max_rows_per_person", 1),
    }


def _person_key_choices(column_forms, person_key: str) -> list[str]:
    """Columns the form shows as identifiers (a person key must be one), and the chosen key."""
    names = [column["name"] for column, form in column_forms if form.current_kind == "identifier"]
    chosen = [column["name"] for column, _ in column_forms if column["name"] == person_key]
    return names + [name for name in chosen if name not in names]


def owned_release_get(request, pk: int) -> Release:
    """One of the signed-in curator's releases, whatever its status (draft to published);
    404 for anyone else's."""
    return get_object_or_404(selectors.release_list_owned(user=request.user), pk=pk)


def _wizard_context(release: Release | None, dataset, step: str) -> dict:
    epsilon_budget, _ = selectors.dataset_budget(dataset)
    return {
        "release": release,
        "dataset": dataset,
        "steps": WIZARD_STEPS,
        "step": step,
        "budget": epsilon_budget,
    }


def _epsilon_from(form) -> float:
    if form.cleaned_data.get("epsilon") is not None:
        return form.cleaned_data["epsilon"]
    return truth_probability_to_epsilon(form.cleaned_data["truth_probability"])


POLICY_FIELDS = {
    "theta": "policy_theta",
    "width": "policy_width",
    "groups": "policy_groups",
    "column": "policy_column",
    "columns": "policy_columns",
    "c": "policy_c",
    "graph": "policy_graph",
}


def _add_definition_errors(form, errors: dict[str, list[str]]) -> None:
    """Attach ``definition.policy.theta``-style service errors to the privacy form's fields
    (``definition.kind``, a refused definition, to the definition choice)."""
    if not form.is_bound:
        # A saved draft shown again: add_error() needs the cleaned_data an unbound form lacks.
        form.full_clean()
        form.cleaned_data = {}
    for path, messages_for_path in errors.items():
        parts = path.split(".")
        if parts[:2] == ["definition", "policy"] and len(parts) > 2:
            field = POLICY_FIELDS.get(parts[2])
        elif parts == ["definition", "kind"]:
            field = "definition_kind"
        elif parts == ["definition", "policy"]:
            field = "policy_graph"
        elif parts[0] == "queries" and len(parts) > 1 and parts[1].isdigit():
            # A chosen statistic this definition cannot release: said for the form, naming it.
            for message in messages_for_path:
                form.add_error(
                    None,
                    gettext("Statistic %(number)s: %(problem)s")
                    % {"number": int(parts[1]) + 1, "problem": refusal_text(message)},
                )
            continue
        else:
            field = parts[-1]
        for message in messages_for_path:
            form.add_error(field if field in form.fields else None, refusal_text(message))


DRAFT_DEFINITION_STALE = (
    "The dataset's schema changed after this draft was saved, and its privacy definition no "
    "longer fits it: fix what is marked below and save."
)


def _starting_point(request, dataset):
    harm, planned = request.GET.get("harm"), request.GET.get("releases")
    if harm in HARM_EPSILON and planned in RELEASES_FACTOR:
        return suggest_starting_point(
            harm=harm, releases=planned, declared_size=dataset.declared_size
        )
    return None


def _unfit_statistics(release: Release, errors: dict[str, list[str]]) -> set[int] | None:
    """The indexes of the draft's statistics named by ``errors`` when they name nothing else.
    A statistic refused by the definition itself (``queries.<i>.kind``: randomized records under
    ε-DP) is not unfit for the schema: the privacy step says so instead of removing it."""
    indexes = set()
    for path in errors:
        parts = path.split(".")
        if parts[0] != "queries" or len(parts) < 2 or not parts[1].isdigit():
            return None
        if parts[2:] == ["kind"]:
            return None
        indexes.add(int(parts[1]))
    return indexes if indexes and max(indexes) < len(release.queries) else None


def _draft_definition_update(request, release: Release, *, title: str, definition: dict):
    """Save the privacy step on a draft. Statistics that the schema, changed since they were
    chosen, no longer allows would block every save of either step, so they are removed, saying
    which, and the curator chooses them again on the next step."""
    try:
        return release_draft_update(
            release=release, user=request.user, title=title, definition=definition
        )
    except ValidationFailed as error:
        unfit = _unfit_statistics(release, error.errors)
        if unfit is None:
            raise
        problems = error.errors
    kept = [query for index, query in enumerate(release.queries) if index not in unfit]
    updated = release_draft_update(
        release=release,
        user=request.user,
        title=title,
        definition=definition,
        queries=kept or [{"kind": "count"}],
    )
    removed = "; ".join(
        f"{_statistic_name(release.queries[int(path.split('.')[1])])}: {refusal_text(message)}"
        for path, messages_for_path in problems.items()
        for message in messages_for_path
    )
    messages.warning(
        request,
        gettext(
            "The dataset's schema changed since these statistics were chosen, and they no "
            "longer fit it, so they were removed from the draft (%(removed)s). Choose them again."
        )
        % {"removed": removed},
    )
    return updated


def _privacy_step(request, dataset, release: Release | None):
    initial = {}
    if release is not None:
        initial = {"title": release.title, **PrivacyStepForm.initial_from(release.definition)}
    if release is None:
        # A title to accept or change: the step can be saved with one click.
        initial["title"] = (gettext("%(name)s statistics") % {"name": dataset.name})[
            : PrivacyStepForm.base_fields["title"].max_length
        ]
        default_epsilon = selectors.dataset_release_epsilon_default(dataset=dataset)
        if default_epsilon is not None:
            initial["epsilon"] = float(default_epsilon)
    suggestion = _starting_point(request, dataset)
    if suggestion is not None and request.GET.get("use") == "1":
        initial["epsilon"] = suggestion.epsilon
        initial["delta"] = suggestion.delta
    columns = [
        name
        for name, spec in (dataset.schema or {}).get("columns", {}).items()
        if spec.get("kind") != "identifier"
    ]
    refusal = blowfish_refusal(dataset.schema) if dataset.schema else None
    refusal = refusal and refusal_text(refusal)
    form = PrivacyStepForm(
        request.POST or None, initial=initial, columns=columns, blowfish_refusal=refusal
    )
    if request.method == "POST" and form.is_valid():
        definition = form.definition(_epsilon_from(form))
        try:
            if release is None:
                release = release_draft_create(
                    user=request.user,
                    dataset=dataset,
                    title=form.cleaned_data["title"],
                    definition=definition,
                    queries=[{"kind": "count"}],
                )
            else:
                release = _draft_definition_update(
                    request, release, title=form.cleaned_data["title"], definition=definition
                )
        except ValidationFailed as error:
            _add_definition_errors(form, error.errors)
        except Conflict as conflict:
            messages.error(request, refusal_text(conflict.detail))
        else:
            return redirect("wizard-statistics", pk=release.pk)
    blowfish = None
    if release is not None and release.definition["kind"] == "blowfish":
        try:
            blowfish = _explanation_text(
                policy_explanation(
                    dataset=dataset,
                    policy=release.definition["policy"],
                    epsilon=release.definition["epsilon"],
                )
            )
        except ValidationFailed as error:
            # The schema changed under the saved draft (its column made an identifier, a person
            # key declared): shown on the prefilled fields, so the curator can fix it and save.
            if not form.is_bound:
                _add_definition_errors(form, error.errors)
                form.add_error(None, DRAFT_DEFINITION_STALE)
    context = _wizard_context(release, dataset, "privacy")
    context.update(
        {
            "form": form,
            "blowfish_refusal": refusal,
            "spent_and_reserved": epsilon_spent_and_reserved(dataset),
            "desiderata": desiderata_translate(desiderata_table()),
            "starting_point": suggestion,
            "starting_reasons": [engine_text(reason) for reason in suggestion.reasons]
            if suggestion
            else [],
            "person_key": (dataset.schema or {}).get("person_key"),
            "rows_per_person": (dataset.schema or {}).get("max_rows_per_person", 1),
            "group_size_default": 2,
            "harm_choices": list(HARM_EPSILON),
            "releases_choices": list(RELEASES_FACTOR),
            "questionnaire": request.GET,
            "default_delta": default_delta(dataset.declared_size),
            "declared_size": dataset.declared_size,
            "ledger": {
                "differential_privacy": gettext("Differential privacy"),
                "blowfish": gettext("Blowfish policy"),
            }.get(dataset.ledger_kind, dataset.get_ledger_kind_display())
            if dataset.ledger_kind
            else None,
            "ledger_policy": dataset.ledger_policy,
            "blowfish": blowfish,
            "risk": _privacy_step_risk(dataset, form, release),
        }
    )
    return render(request, "curator/wizard_privacy.html", context)


def _privacy_step_risk(dataset, form, release: Release | None):
    """The risk card of what the privacy step shows: the curator's input when it is a whole
    definition, else the saved draft's, else the suggested or default ε under ε-DP."""
    if form.is_bound:
        if not form.is_valid():
            return None
        try:
            definition = form.definition(_epsilon_from(form))
        except (KeyError, TypeError, ValueError):
            return None
    elif release is not None:
        definition = release.definition
    else:
        definition = {"kind": "pure_dp", "epsilon": form["epsilon"].value()}
    return risk_card_for_draft(dataset=dataset, definition=definition)


@curator_required
@require_POST
def wizard_risk_card(request, dataset_pk: int):
    """The privacy step's risk card for the definition being edited (public facts only: the
    definition, the declared schema and the ledger's totals), for the page to swap in."""
    dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=dataset_pk)
    data = request.POST.copy()
    data.setdefault("title", "untitled")  # the card does not depend on the title
    refusal = blowfish_refusal(dataset.schema) if dataset.schema else None
    form = PrivacyStepForm(data, columns=_usable_columns_of(dataset), blowfish_refusal=refusal)
    return render(
        request,
        "partials/risk_card.html",
        {"risk": _privacy_step_risk(dataset, form, None)},
    )


def epsilon_spent_and_reserved(dataset) -> Decimal:
    budget, _ = selectors.dataset_budget(dataset)
    return budget.spent + budget.reserved


@curator_required
def wizard_start(request, dataset_pk: int):
    dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=dataset_pk)
    if not dataset.schema:
        messages.error(
            request, gettext("Declare the schema (bounds and categories) before a release.")
        )
        return redirect("dataset-detail", pk=dataset.pk)
    return _privacy_step(request, dataset, None)


def _draft_or_status(request, pk: int):
    release = owned_release_get(request, pk)
    if release.status != Release.Status.DRAFT:
        return release, redirect("release-status", pk=release.pk)
    return release, None


@curator_required
def wizard_privacy(request, pk: int):
    release, done = _draft_or_status(request, pk)
    return done or _privacy_step(request, release.dataset, release)


def _edge_text(edge: float) -> str:
    """A bin edge as text that parses back to the same float."""
    return str(int(edge)) if float(edge).is_integer() else repr(float(edge))


def _fill_text(fill) -> str:
    """A declared fill value as the schema form shows it."""
    if fill is None:
        return ""
    return _edge_text(fill) if isinstance(fill, float | int) else str(fill)


def _usable_columns_of(dataset) -> list[str]:
    columns = (dataset.schema or {}).get("columns", {})
    return [name for name, spec in columns.items() if spec.get("kind") != "identifier"]


def _usable_columns(release: Release) -> list[str]:
    return _usable_columns_of(release.dataset)


def _numeric_columns(release: Release) -> list[str]:
    columns = (release.dataset.schema or {}).get("columns", {})
    return [name for name, spec in columns.items() if spec.get("kind") == "numeric"]


def _partition_columns(release: Release) -> dict[str, list[str]]:
    """Each categorical column's buckets (its categories, then its other bucket): the groups a
    statistic can be restricted to."""
    columns = (release.dataset.schema or {}).get("columns", {})
    return {
        name: [*spec.get("categories", []), *([spec["other"]] if spec.get("other") else [])]
        for name, spec in columns.items()
        if spec.get("kind") == "categorical"
    }


def _bins_text(query: dict) -> str:
    """A statistic's bins as the form shows them: a number of bins, or edges (a table's first
    binned column's)."""
    bins = query.get("bins")
    if query["kind"] == "range_histogram":
        return str(bins)
    if isinstance(bins, dict):
        bins = next(iter(bins.values()), [])
    return ", ".join(_edge_text(b) for b in bins or [])


def _edges_text(edges) -> str:
    return ", ".join(_edge_text(b) for b in edges or [])


def _statistic_initial(query: dict) -> dict:
    """A saved statistic as its row's initial values, which StatisticForm.to_query reads back
    as the same statistic."""
    kind = query["kind"]
    initial = {
        "kind": kind,
        "column": query.get("column") or "",
        "bins": _bins_text(query),
        "quantiles": ", ".join(_edge_text(a) for a in query.get("quantiles", [])),
        "weight": query.get("weight", 1),
    }
    where = query.get("where")
    if isinstance(where, dict):
        initial["groups"] = [group_value(where.get("column"), b) for b in where.get("in") or []]
    if kind == "marginal":
        first, second = [*(query.get("columns") or []), "", ""][:2]
        initial.update(column=first, second_column=second)
        bins = query.get("bins")
        if isinstance(bins, dict) and first in bins and second in bins:
            # Both columns numeric: each its own edges (looked up by name: a JSON object's
            # order is not kept by every database).
            initial.update(bins=_edges_text(bins[first]), second_bins=_edges_text(bins[second]))
    elif kind == "synthetic":
        bins = query.get("bins")
        initial.update(
            table_columns=list(query.get("columns") or []),
            # Each numeric column's own edges, as the form reads them back.
            bins="; ".join(f"{name}: {_edges_text(edges)}" for name, edges in bins.items())
            if isinstance(bins, dict)
            else "",
        )
    elif kind == "kmeans":
        initial.update(
            columns=list(query.get("columns") or []),
            k=query.get("k"),
            iterations=query.get("iterations"),  # None (an empty box) when automatic
        )
    return initial


# The statistics offered in one click per declared column: kinds that need nothing more than
# the column (its declared categories or bounds).
QUICK_ADD_KINDS = {"categorical": "histogram", "numeric": "mean"}


def _quick_adds(release: Release, chosen: set[tuple[str, str]]) -> list[dict]:
    """One suggestion per declared categorical or numeric column, in the schema's order,
    except those already ``chosen`` (kind and column, for the whole table)."""
    columns = (release.dataset.schema or {}).get("columns", {})
    suggestions = []
    for name, spec in columns.items():
        kind = QUICK_ADD_KINDS.get(spec.get("kind"))
        if kind is not None and (kind, name) not in chosen:
            suggestions.append(
                {
                    "kind": kind,
                    "column": name,
                    "label": gettext("%(statistic)s of %(column)s")
                    % {"statistic": STATISTIC_LABELS[kind], "column": name},
                }
            )
    return suggestions


def _chosen_statistics(formset) -> set[tuple[str, str]]:
    """Kind and column of each row the statistics form shows (posted or saved), not removed and
    not restricted to groups."""
    chosen = set()
    for form in formset.forms:
        if form.is_bound:
            value = form.data.get
            kind, column = value(form.add_prefix("kind")), value(form.add_prefix("column"))
            if value(form.add_prefix("DELETE")) or form.data.getlist(form.add_prefix("groups")):
                continue
        else:
            kind, column = form.initial.get("kind"), form.initial.get("column")
            if form.initial.get("groups"):
                continue
        if kind and column:
            chosen.add((kind, column))
    return chosen


def _with_quick_add(release: Release, data):
    """The posted statistics with the row a suggestion's button adds (the page without
    scripts), or None when the post is no such click or names no offered suggestion."""
    kind, _, column = (data.get("quick_add") or "").partition(":")
    offered = {(s["kind"], s["column"]) for s in _quick_adds(release, set())}
    total = data.get("stat-TOTAL_FORMS", "")
    if (kind, column) not in offered or not total.isascii() or not total.isdigit():
        return None
    index = int(total)
    if index >= StatisticFormSet.max_num:
        return None
    data = data.copy()
    data.update(
        {
            "stat-TOTAL_FORMS": str(index + 1),
            f"stat-{index}-kind": kind,
            f"stat-{index}-column": column,
            f"stat-{index}-weight": "1",
        }
    )
    return data


@curator_required
def wizard_statistics(request, pk: int):
    release, done = _draft_or_status(request, pk)
    if done:
        return done
    columns = _usable_columns(release)
    initial = [_statistic_initial(q) for q in release.queries]
    # A suggestion's button without scripts: the row is added to what was posted and shown
    # again, nothing saved (as the script adds it in the page).
    quick_add = request.method == "POST" and "quick_add" in request.POST
    data = request.POST
    if quick_add:
        data = _with_quick_add(release, request.POST) or request.POST
    formset = StatisticFormSet(
        data or None,
        initial=initial,
        form_kwargs={
            "columns": columns,
            "numeric": _numeric_columns(release),
            "partitions": _partition_columns(release),
        },
        prefix="stat",
    )
    if request.method == "POST" and not quick_add and formset.is_valid():
        queries = [q for form in formset if (q := form.to_query()) is not None]
        live_forms = [form for form in formset if form.to_query() is not None]
        try:
            release_draft_update(release=release, user=request.user, queries=queries)
        except ValidationFailed as error:
            for path, errors in error.errors.items():
                parts = path.split(".")
                if parts[0] == "queries" and len(parts) > 2 and parts[1].isdigit():
                    form = live_forms[int(parts[1])]
                    for message in errors:
                        form.add_engine_error(".".join(parts[2:]), refusal_text(message))
                elif parts[0] == "definition":
                    # The schema changed under the draft's definition: only the privacy step
                    # can fix it, and no statistics can be saved until then.
                    for message in errors:
                        messages.error(
                            request,
                            gettext(
                                "The dataset's schema changed since the privacy definition was "
                                "chosen (%(field)s: %(message)s): fix it on the Privacy step "
                                "first."
                            )
                            % {
                                "field": path.removeprefix("definition."),
                                "message": refusal_text(message),
                            },
                        )
                else:
                    for message in errors:
                        messages.error(request, refusal_text(message))
        else:
            return redirect("wizard-preview", pk=release.pk)
    context = _wizard_context(release, release.dataset, "statistics")
    shares = [entry["epsilon"] for entry in release.preview]
    form_rows = [
        (form, shares[i] if i < len(shares) else None) for i, form in enumerate(formset.forms)
    ]
    context.update(
        {
            "formset": formset,
            "form_rows": form_rows,
            "columns": columns,
            "definition_json": json.dumps(release.definition),
            "numeric_columns": _numeric_columns(release),
            "quick_adds": _quick_adds(release, _chosen_statistics(formset)),
        }
    )
    return render(request, "curator/wizard_statistics.html", context)


def accuracy_sentence(entry: dict, declared_size: int | None) -> str:
    half = entry["ci95_halfwidth"]
    if entry["mechanism"].startswith("none"):
        return gettext("Published exactly: the number of records is public under this definition.")
    if half is None:
        return gettext(
            "Declare an approximate number of records to see how accurate this mean will be."
        )
    # Whole units from 10 up (±2,996); below, two significant digits (±0.0042, not ±0.00).
    amount = f"{half:,.0f}" if half >= 10 else format_significant(half, significant=2)
    kind = entry["kind"]
    if kind == "mean" and declared_size:
        return gettext(
            "With 95%% probability the published mean is within ±%(amount)s of the true mean "
            "(for about %(size)s records)."
        ) % {"amount": amount, "size": f"{declared_size:,}"}
    sentences = {
        "count": gettext(
            "With 95%% probability the published count is within ±%(amount)s of the true count."
        ),
        "histogram": gettext(
            "With 95%% probability each published bar is within ±%(amount)s of its true count."
        ),
        "sum": gettext(
            "With 95%% probability the published sum is within ±%(amount)s of the true sum."
        ),
        "mean": gettext(
            "With 95%% probability the published mean is within ±%(amount)s of the true mean."
        ),
        "quantile": gettext(
            "With 95%% probability each published quantile's rank is within ±%(amount)s "
            "records of the true quantile's."
        ),
        "marginal": gettext(
            "With 95%% probability each published cell of the table is within ±%(amount)s of "
            "its true count."
        ),
        "range_histogram": gettext(
            "With 95%% probability each published bin is within ±%(amount)s of its true count; "
            "any range's answer, read on the release page, has its own interval (long ranges "
            "are far more accurate than the sum of the bins' errors)."
        ),
    }
    sentence = sentences.get(kind) or gettext(
        "With 95%% probability the published value is within ±%(amount)s of the true value."
    )
    return sentence % {"amount": amount}


def _epsilon_grid(epsilon: float, points: int = 25) -> list[float]:
    low, high = max(MIN_EPSILON, epsilon / 10), min(MAX_EPSILON, epsilon * 10)
    step = (math.log(high) - math.log(low)) / (points - 1)
    return [math.exp(math.log(low) + i * step) for i in range(points)]


def _statistic_name(query: dict) -> str:
    columns = query.get("columns") or ([query["column"]] if query.get("column") else [])
    label = STATISTIC_LABELS.get(query.get("kind"), str(query.get("kind")))
    return label + (" of " + ", ".join(map(str, columns)) if columns else "")


def _back_to_fix(request, release: Release, errors: dict[str, list[str]]):
    """Back to the step where a draft the schema no longer fits can be fixed, saying what no
    longer fits: the privacy step for its definition, else the statistics."""
    texts = []
    for path, messages_for_path in errors.items():
        parts = path.split(".")
        where = path.removeprefix("definition.")
        if parts[0] == "queries" and len(parts) > 1 and parts[1].isdigit():
            index = int(parts[1])
            if index < len(release.queries):
                where = f"statistic {index + 1} ({_statistic_name(release.queries[index])})"
        texts += [f"{where}: {refusal_text(message)}" for message in messages_for_path]
    if any(path.split(".")[0] == "definition" for path in errors):
        messages.error(
            request,
            gettext(
                "Choose the privacy definition again: the dataset's schema changed since this "
                "draft was saved (%(problems)s)."
            )
            % {"problems": "; ".join(texts)},
        )
        return redirect("wizard-privacy", pk=release.pk)
    messages.error(
        request,
        gettext("Choose the statistics again: %(problems)s") % {"problems": "; ".join(texts)},
    )
    return redirect("wizard-statistics", pk=release.pk)


@curator_required
def wizard_preview(request, pk: int):
    release, done = _draft_or_status(request, pk)
    if done:
        return done
    declared_size = release.dataset.declared_size
    rows = [
        {
            **entry,
            "label": STATISTIC_LABELS[entry["kind"]],
            "sentence": accuracy_sentence(entry, declared_size),
        }
        for entry in release.preview
    ]
    try:
        curve = accuracy_curve(
            schema=release.dataset.schema,
            definition=release.definition,
            queries=release.queries,
            epsilons=_epsilon_grid(release.definition["epsilon"]),
        )
        simulated = release_simulated_preview(release)
    except (EngineValidationError, ValidationFailed) as error:
        # The schema changed since the draft was saved.
        return _back_to_fix(request, release, error.errors)
    chart = {
        "epsilon": release.definition["epsilon"],
        "series": [
            {
                "name": gettext("%(statistic)s of %(column)s")
                % {"statistic": row["label"], "column": row["column"]}
                if row["column"]
                else str(row["label"]),
                "x": [point["epsilon"] for point in curve],
                "y": [point["errors"][index] for point in curve],
            }
            for index, row in enumerate(rows)
        ],
    }
    context = _wizard_context(release, release.dataset, "preview")
    context["simulated"] = simulated_translate(simulated)
    context["kind_names"] = chart_kind_names()
    # The value each numeric column's records get in the simulated table, once per column.
    context["schema_editable"] = not dataset_has_submissions(release.dataset)
    context["simulated_values"] = list(
        {
            item["column"]: item
            for entry in simulated or ()
            for item in entry.get("typical_values", ())
        }.values()
    )
    context.update(
        {
            "rows": rows,
            "chart": chart,
            "is_blowfish": release.definition["kind"] == "blowfish",
            "has_delta": release.definition["kind"] == "approx_dp",
            "warnings": release_warnings(release),
        }
    )
    return render(request, "curator/wizard_preview.html", context)


@curator_required
def wizard_confirm(request, pk: int):
    release, done = _draft_or_status(request, pk)
    if done:
        return done
    data_columns = release_columns_from_data(release=release)
    if request.method == "POST":
        if data_columns and request.POST.get("confirm_data_derived") != "on":
            messages.error(
                request,
                gettext(
                    "Confirm that you accept publishing the bounds or categories taken from the "
                    "data (%(columns)s) exactly; nothing was submitted."
                )
                % {"columns": ", ".join(data_columns)},
            )
        else:
            try:
                release_submit(release=release, user=request.user)
            except Conflict as conflict:
                # The audit trail keeps the refusal's English; the curator reads their language.
                messages.error(request, engine_text(conflict.detail))
            except ValidationFailed as error:
                for errors in error.errors.values():
                    for message in errors:
                        messages.error(request, refusal_text(message))
            else:
                return redirect("release-status", pk=release.pk)
    context = _wizard_context(release, release.dataset, "confirm")
    charge = release_charge_preview(release=release)
    table = (charge["table_epsilon"], charge["table_delta"]) if charge["fits"] else None
    # The ledger's words and a refusal as the engine wrote them, in the reader's language.
    charge.update({key: engine_text(charge[key]) for key in ("ledger", "note", "error")})
    context.update(
        {
            "charge": charge,
            "risk": risk_card_for_draft(
                dataset=release.dataset, definition=release.definition, table=table
            ),
            # Set for a draft in a series that already has versions: it will be the next one.
            "next_version": version_next_number(release=release),
            "data_columns": data_columns,
            "rows": [
                {**entry, "label": STATISTIC_LABELS[entry["kind"]]} for entry in charge["preview"]
            ],
        }
    )
    return render(request, "curator/wizard_confirm.html", context)


@curator_required
def release_status(request, pk: int):
    release = owned_release_get(request, pk)
    statistics = selectors.release_statistics(release=release) if release.is_published else []
    statistics_translate(statistics)
    return render(
        request,
        "curator/release_status.html",
        {
            "release": release,
            "api_url": reverse("api-release", kwargs={"release_id": release.pk}),
            "catalog_url": reverse(
                "catalog-version", kwargs={"slug": release.series.slug, "version": release.version}
            )
            if release.is_published
            else None,
            "statistics": statistics,
            # Why it failed or was closed, in the reader's language (stored in English).
            "can_publish_again": release.status == Release.Status.FAILED
            and release.answers.exists(),
        },
    )


@curator_required
@require_POST
def release_publish_again_view(request, pk: int):
    """The status page's "Publish again" button (see release_publish_again)."""
    release = owned_release_get(request, pk)
    try:
        release_publish_again(release=release, user=request.user)
    except Conflict as refusal:
        messages.error(request, refusal_text(refusal.detail))
    else:
        messages.success(
            request,
            gettext(
                "Queued again: its stored answers will be published (no new noise, no budget)."
            ),
        )
    return redirect("release-status", pk=release.pk)


@curator_required
@require_POST
def wizard_blowfish_explanation(request, dataset_pk: int):
    """What the Blowfish policy being configured protects and does not, for the privacy step to
    show as the curator edits it (public facts only)."""
    dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=dataset_pk)
    form = PrivacyStepForm(request.POST, columns=_usable_columns_of(dataset))
    form.is_valid()  # partial input is expected while the curator types
    epsilon = form.cleaned_data.get("epsilon") or 1.0
    try:
        explanation = policy_explanation(dataset=dataset, policy=form.policy(), epsilon=epsilon)
    except ValidationFailed as error:
        # For the privacy step's script, which shows them on the page.
        return JsonResponse({"errors": refusal_errors(error.errors)}, status=400)
    # The page's script shows these lines as they come: in the reader's language.
    return JsonResponse(_explanation_text(explanation))


def _explanation_text(explanation: dict[str, list[str]]) -> dict[str, list[str]]:
    """A Blowfish policy's explanation (privacy_engine.translation.blowfish_explanation) with
    each line in the active language."""
    return {key: [engine_text(line) for line in lines] for key, lines in explanation.items()}
