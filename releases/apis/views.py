"""HTTP API v1: validate input, call one service or selector, render JSON."""

import re

from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from accounts.permissions import IsCompliance, IsCurator, IsCuratorOrCompliance
from accounts.services import auth_token_obtain
from privacy_engine import (
    epsilon_to_truth_probability,
    group_privacy,
    posterior_bound,
    truth_probability_to_epsilon,
)
from privacy_engine.guidance import suggest_starting_point
from releases import selectors
from releases.apis.pagination import Pagination
from releases.models import Dataset, Release, ReleaseFile
from releases.parsing import audit_filters_parse
from releases.services.audit import AuditAction, audit_chain_verify, audit_record
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.errors import ValidationFailed
from releases.services.releases import (
    release_draft_create,
    release_epsilon_for_accuracy,
    release_simulated_preview,
    release_submit,
    release_warnings,
)


def _paginate(view: APIView, request, queryset, render) -> Response:
    paginator = Pagination()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response([render(item) for item in page])


def dataset_data(dataset: Dataset) -> dict:
    epsilon, delta = selectors.dataset_budget(dataset)
    return {
        "id": dataset.pk,
        "name": dataset.name,
        "owner": dataset.owner.get_username(),
        "row_count": dataset.row_count,
        "columns": dataset.columns,
        "schema": dataset.schema or None,
        "declared_size": dataset.declared_size,
        "ledger": dataset.ledger_kind or None,
        "budget": epsilon.as_dict(),
        "budget_delta": delta.as_dict(),
        "created_at": dataset.created_at.isoformat(),
    }


def compliance_dataset_data(dataset: Dataset) -> dict:
    """Metadata and budget only: compliance never sees rows or the true number of rows."""
    data = dataset_data(dataset)
    data.pop("row_count")
    # Inferred kinds are read from the rows (an "identifier" has all-distinct values): names only.
    data["columns"] = [{"name": column["name"]} for column in dataset.columns]
    return data


def dataset_data_for(dataset: Dataset, user) -> dict:
    """Owners see their own datasets whole; anyone else (compliance) sees metadata only."""
    return (
        dataset_data(dataset) if dataset.owner_id == user.pk else compliance_dataset_data(dataset)
    )


def release_data(release: Release, request) -> dict:
    return {
        "id": release.pk,
        "dataset": release.dataset_id,
        "title": release.title,
        "series": release.series.slug,
        "definition": release.definition,
        "queries": release.queries,
        "preview": release.preview,
        "warnings": release_warnings(release) if release.status == Release.Status.DRAFT else [],
        "status": release.status,
        "progress": release.progress,
        "version": release.version,
        "failure_reason": release.failure_reason or None,
        "epsilon_charged": None
        if release.epsilon_charged is None
        else selectors.decimal_text(release.epsilon_charged),
        "delta_charged": None
        if release.delta_charged is None
        else selectors.decimal_text(release.delta_charged),
        "worker": release.worker or None,
        "created_at": release.created_at.isoformat(),
        "submitted_at": release.submitted_at.isoformat() if release.submitted_at else None,
        "published_at": release.published_at.isoformat() if release.published_at else None,
        "catalog_url": reverse(
            "api-catalog-version",
            request=request,
            kwargs={"slug": release.series.slug, "version": release.version},
        )
        if release.is_published
        else None,
    }


def file_data(release: Release, request) -> list[dict]:
    return [
        {**link, "url": request.build_absolute_uri(link["url"])}
        for link in selectors.release_file_links(release=release)
    ]


def catalog_entry(release: Release, request) -> dict:
    return {
        "slug": release.series.slug,
        "title": release.title,
        "version": release.version,
        "published_at": release.published_at.isoformat(),
        "definition": release.definition,
        "files": file_data(release, request),
        "url": reverse(
            "api-catalog-version",
            request=request,
            kwargs={"slug": release.series.slug, "version": release.version},
        ),
    }


class TokenObtainApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField()
        password = serializers.CharField(trim_whitespace=False)

    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        key = auth_token_obtain(request=request, **data.validated_data)
        if key is None:
            return Response(
                {"detail": "Unable to log in with these credentials."},
                status=status.HTTP_400_BAD_REQUEST,
            )
        return Response({"token": key})


class DatasetListApi(APIView):
    parser_classes = [MultiPartParser, FormParser]

    def get_permissions(self):
        return [IsCurator()] if self.request.method == "POST" else [IsCuratorOrCompliance()]

    def get(self, request):
        datasets = selectors.dataset_list_visible(user=request.user).select_related("owner")
        return _paginate(self, request, datasets, lambda d: dataset_data_for(d, request.user))

    def post(self, request):
        dataset = dataset_create(
            owner=request.user,
            name=request.data.get("name", ""),
            upload=request.FILES.get("file"),
            budget_epsilon=request.data.get("budget_epsilon"),
            budget_delta=request.data.get("budget_delta"),
            declared_size=request.data.get("declared_size"),
        )
        return Response(dataset_data(dataset), status=status.HTTP_201_CREATED)


class DatasetDetailApi(APIView):
    """One dataset with its budget ledger; compliance gets metadata only, never rows."""

    permission_classes = [IsCuratorOrCompliance]

    def get(self, request, dataset_id: int):
        dataset = get_object_or_404(
            selectors.dataset_list_visible(user=request.user), pk=dataset_id
        )
        ledger = [
            {
                "release": entry.release_id,
                "definition": entry.definition_kind,
                "epsilon": selectors.decimal_text(entry.epsilon),
                "delta": selectors.decimal_text(entry.delta),
                "state": entry.state,
                "at": entry.created_at.isoformat(),
            }
            for entry in dataset.ledger.all()
        ]
        return Response({**dataset_data_for(dataset, request.user), "ledger_entries": ledger})


class DatasetSchemaApi(APIView):
    permission_classes = [IsCurator]
    parser_classes = [JSONParser]

    def put(self, request, dataset_id: int):
        dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=dataset_id)
        if not isinstance(request.data, dict):
            raise ValidationFailed({"columns": ["must be an object of column declarations"]})
        dataset = dataset_schema_update(dataset=dataset, user=request.user, schema=request.data)
        return Response(dataset.schema)


class ReleaseListApi(APIView):
    permission_classes = [IsCurator]
    parser_classes = [JSONParser]

    def get(self, request):
        releases = selectors.release_list_owned(user=request.user)
        return _paginate(self, request, releases, lambda r: release_data(r, request))

    def post(self, request):
        body = request.data if isinstance(request.data, dict) else {}
        dataset_id = body.get("dataset")
        if isinstance(dataset_id, bool) or not isinstance(dataset_id, int):
            raise ValidationFailed({"dataset": ["must be the id of one of your datasets"]})
        dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=dataset_id)
        release = release_draft_create(
            user=request.user,
            dataset=dataset,
            title=body.get("title", ""),
            definition=body.get("definition"),
            queries=body.get("queries"),
            series_slug=body.get("series"),
        )
        return Response(release_data(release, request), status=status.HTTP_201_CREATED)


class ReleaseDetailApi(APIView):
    permission_classes = [IsCurator]

    def get(self, request, release_id: int):
        release = get_object_or_404(selectors.release_list_owned(user=request.user), pk=release_id)
        return Response(release_data(release, request))


class ReleaseSubmitApi(APIView):
    permission_classes = [IsCurator]

    def post(self, request, release_id: int):
        release = get_object_or_404(selectors.release_list_owned(user=request.user), pk=release_id)
        release = release_submit(release=release, user=request.user)
        return Response(
            {"id": release.pk, "status": release.status}, status=status.HTTP_202_ACCEPTED
        )


class CatalogListApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request):
        releases = selectors.release_list_published(search=request.query_params.get("search"))
        return _paginate(self, request, releases, lambda r: catalog_entry(r, request))


class CatalogVersionApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request, slug: str, version: int):
        release = selectors.release_get_published(slug=slug, version=version)
        if release is None:
            raise Http404
        statistics = [a.statistic for a in release.answers.order_by("position")]
        return Response({**catalog_entry(release, request), "statistics": statistics})


class CatalogFileApi(APIView):
    """Serves a released file only if its release is published; every download is audited."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request, slug: str, version: int, file_format: str):
        release = selectors.release_get_published(slug=slug, version=version)
        if release is None:
            raise Http404
        release_file = release.files.filter(format=file_format).first()
        if release_file is None:
            raise Http404
        audit_record(
            actor=request.user,
            action=AuditAction.FILE_DOWNLOADED,
            object_type="release_file",
            object_id=release_file.pk,
            dataset_id=release.dataset_id,
            details={"slug": slug, "version": version, "format": file_format},
        )
        content_type = "text/csv" if file_format == ReleaseFile.Format.CSV else "application/json"
        return FileResponse(
            release_file.file.open("rb"),
            as_attachment=True,
            content_type=content_type,
            filename=f"{slug}-v{version}.{file_format}",
        )


class AuditEventListApi(APIView):
    permission_classes = [IsCompliance]

    def get(self, request):
        filters, errors = audit_filters_parse(request.query_params)
        if errors:
            raise ValidationFailed(errors)
        events = selectors.audit_event_list(**filters)
        return _paginate(
            self,
            request,
            events,
            lambda e: {
                "id": e.pk,
                "at": e.at.isoformat(),
                "actor": e.actor,
                "action": e.action,
                "object_type": e.object_type,
                "object_id": e.object_id,
                "dataset": e.dataset_id,
                "details": e.details,
                "hash": e.hash,
                "previous_hash": e.previous_hash,
            },
        )


class AuditVerifyApi(APIView):
    permission_classes = [IsCompliance]

    def get(self, request):
        result = audit_chain_verify()
        return Response(
            {
                "valid": result.valid,
                "events": result.events,
                "first_broken_event": result.first_broken_event,
            }
        )


class TranslateApi(APIView):
    """ε ↔ p (probability of a truthful answer about one person) and the odds bound; public facts
    only, so anyone may ask."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request):
        params = request.query_params
        errors: dict[str, list[str]] = {}
        values: dict[str, float] = {}
        for name in ("epsilon", "truth_probability", "prior", "delta", "group_size"):
            if params.get(name) not in (None, ""):
                try:
                    values[name] = float(params[name])
                except ValueError:
                    errors[name] = ["must be a number"]
        if errors:
            raise ValidationFailed(errors)
        try:
            if "epsilon" in values:
                epsilon = values["epsilon"]
                probability = epsilon_to_truth_probability(epsilon)
            elif "truth_probability" in values:
                probability = values["truth_probability"]
                epsilon = truth_probability_to_epsilon(probability)
            else:
                raise ValidationFailed({"epsilon": ["give epsilon or truth_probability"]})
            prior = values.get("prior", 0.1)
            posterior = posterior_bound(prior=prior, epsilon=epsilon)
            group_size = values.get("group_size", 2.0)
            if not group_size.is_integer():
                raise ValueError("group size must be a whole number ≥ 1")
            group_epsilon, group_delta = group_privacy(
                group_size=int(group_size), epsilon=epsilon, delta=values.get("delta", 0.0)
            )
        except ValueError as error:
            message = str(error)
            field = next(
                (name for name in ("prior", "group size", "delta") if name in message),
                "epsilon" if "epsilon" in values else "truth_probability",
            ).replace("group size", "group_size")
            raise ValidationFailed({field: [message]}) from None
        return Response(
            {
                "epsilon": epsilon,
                "truth_probability": probability,
                "group_size": int(group_size),
                "group_epsilon": group_epsilon,
                "group_delta": group_delta,
                "prior": prior,
                "posterior": posterior,
            }
        )


class AccuracySolverApi(APIView):
    """Accuracy first: the ε one statistic needs for the 95% half-width the curator can live
    with, on one of the curator's datasets (its declared schema; no data is read)."""

    permission_classes = [IsCurator]
    parser_classes = [JSONParser]

    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=dataset_id)
        body = request.data if isinstance(request.data, dict) else {}
        target = body.get("ci95_halfwidth")
        if isinstance(target, bool) or not isinstance(target, int | float):
            raise ValidationFailed({"ci95_halfwidth": ["must be a number greater than 0"]})
        epsilon = release_epsilon_for_accuracy(
            dataset=dataset,
            definition=body.get("definition"),
            query=body.get("query"),
            ci95_halfwidth=float(target),
        )
        return Response({"epsilon": epsilon, "ci95_halfwidth": float(target)})


class StartingPointApi(APIView):
    """A suggested starting ε (and δ) from two questions, with its reasoning; no data."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request):
        params = request.query_params
        declared_size = params.get("declared_size")
        if declared_size is not None and not re.fullmatch(r"[0-9]+", declared_size):
            raise ValidationFailed({"declared_size": ["must be a positive whole number"]})
        try:
            point = suggest_starting_point(
                harm=params.get("harm", ""),
                releases=params.get("releases", ""),
                declared_size=int(declared_size) if declared_size else None,
            )
        except ValueError as error:
            field = "harm" if "harm" in str(error) else "releases"
            raise ValidationFailed({field: [str(error)]}) from None
        return Response(
            {"epsilon": point.epsilon, "delta": point.delta, "reasons": list(point.reasons)}
        )


class ReleaseSimulatedPreviewApi(APIView):
    """A draft's statistics on a simulated table of the declared shape, before and after one
    draw of the noise it would add. Never reads the real data; spends no budget."""

    permission_classes = [IsCurator]

    def get(self, request, release_id: int):
        release = get_object_or_404(selectors.release_list_owned(user=request.user), pk=release_id)
        simulated = release_simulated_preview(release)
        if simulated is None:
            raise ValidationFailed(
                {"declared_size": ["declare the table's approximate size to simulate it"]}
            )
        return Response({"results": simulated})
