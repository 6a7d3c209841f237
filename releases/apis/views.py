"""HTTP API v1: validate input, call one service or selector, render JSON."""

import math
import re

from django.conf import settings
from django.contrib.auth import get_user
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_view
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from accounts.permissions import IsCompliance, IsCurator, IsCuratorOrCompliance
from accounts.services import auth_token_logout, auth_token_obtain
from accounts.tokens import ApiTokenAuthentication
from audit.chain import audit_anchor
from privacy_engine import (
    MAX_ROWS,
    EngineValidationError,
    check_declared_size,
    epsilon_to_truth_probability,
    group_privacy,
    posterior_bound,
    truth_probability_to_epsilon,
)
from privacy_engine.guidance import HARM_EPSILON, RELEASES_FACTOR, suggest_starting_point
from privacy_engine.presentation import format_delta, format_epsilon
from releases import selectors
from releases.apis import responses
from releases.apis.approvals import approval_data
from releases.apis.pagination import paginated
from releases.apis.parsers import FormParser, JSONParser, MultiPartParser, json_object_body
from releases.apis.schema import CATALOG_FILTERS, PAGE, documented, query
from releases.apis.throttles import AnonymousApiThrottle, RangeQueryThrottle
from releases.apis.versions import (
    OwnReleaseReadOnlyOncePublished,
    PublishedVersionReadOnly,
    citation_data,
    withdrawn_data,
)
from releases.models import Dataset, Release
from releases.parsing import (
    audit_anchor_parse,
    audit_filters_parse,
    catalog_filters_parse,
    parse_finite_number,
    range_params_parse,
)
from releases.services.budget_audit import trail_verification
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.downloads import release_file_download_record
from releases.services.errors import ValidationFailed
from releases.services.releases import (
    release_draft_create,
    release_epsilon_for_accuracy,
    release_simulated_preview,
    release_submit,
    release_warnings,
)
from releases.services.runs import release_publish_again
from releases.services.signed_metadata import (
    CONTENT_TYPES,
    release_file_content_type,
    release_file_name,
)

# The translation endpoint's ranges: no dataset's budget reaches 10¹² (see
# releases.services.datasets), and the wizard asks about groups far smaller than 1000 people.
TRANSLATE_MAX_EPSILON = 1e12
TRANSLATE_EPSILON_MESSAGE = "must be a number from 0 to 1e12"
TRANSLATE_MAX_GROUP_SIZE = 1000
TRANSLATE_GROUP_MESSAGE = f"must be a whole number from 1 to {TRANSLATE_MAX_GROUP_SIZE}"
TRANSLATE_PROBABILITY_MESSAGE = "must be a number from 0.5 and below 1"
# Every media type a version's file is served with (parameters such as a charset left out).
FILE_MEDIA_TYPES = sorted(
    {content_type.partition(";")[0] for content_type in CONTENT_TYPES.values()}
    | {"application/octet-stream"}
)


def dataset_data(dataset: Dataset) -> dict:
    epsilon, delta = selectors.dataset_budget(dataset)
    return {
        "id": dataset.pk,
        "name": dataset.name,
        "owner": dataset.owner.get_username(),
        "status": dataset.status,
        "progress": dataset.progress,
        "failure_reason": dataset.failure_reason or None,
        "row_count": dataset.row_count,
        "columns": dataset.columns,
        "schema": dataset.schema or None,
        "declared_size": dataset.declared_size,
        "ledger": dataset.ledger_kind or None,
        "budget": epsilon.as_dict(),
        "budget_delta": delta.as_dict(),
        "sha256": dataset.sha256 or None,
        # Another curator's dataset is never named to this one, not even by id.
        "duplicate_of": dataset.duplicate_of_id
        if dataset.duplicate_of_id is not None and dataset.duplicate_of.owner_id == dataset.owner_id
        else None,
        "created_at": dataset.created_at.isoformat(),
        # Set once the upload and its table were deleted (releases/services/raw_data.py).
        "raw_deleted_at": dataset.raw_deleted_at.isoformat() if dataset.raw_deleted_at else None,
        "raw_deleted_reason": dataset.raw_deleted_reason or None,
    }


def compliance_dataset_data(dataset: Dataset) -> dict:
    """Metadata and budget only: compliance never sees rows or the true number of rows."""
    data = dataset_data(dataset)
    data.pop("row_count")
    # Inferred kinds are read from the rows (an "identifier" has all-distinct values): names only.
    data["columns"] = [{"name": column["name"]} for column in dataset.columns]
    # Identical uploads given their own budget are flagged to compliance whoever holds them.
    data["duplicate_of"] = dataset.duplicate_of_id
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
        # Seconds the worker spent reading, computing, drawing noise and publishing. Owner only
        # (these views are): the time to read a table says roughly how large it is.
        "timings": release.timings,
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
        "approval": approval_data(getattr(release, "approval", None)),
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
        # A withdrawn version stays listed, with when and why: ``{at, reason}``, else null.
        "withdrawn": withdrawn_data(release),
        "url": reverse(
            "api-catalog-version",
            request=request,
            kwargs={"slug": release.series.slug, "version": release.version},
        ),
    }


def _queued(release: Release) -> Response:
    """The answer to a request that queued a release for a worker."""
    return Response({"id": release.pk, "status": release.status}, status=status.HTTP_202_ACCEPTED)


class TokenObtainApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class InputSerializer(serializers.Serializer):
        # The longest a user name can be (Django's User); a password's length is bounded too.
        username = serializers.CharField(max_length=150)
        password = serializers.CharField(trim_whitespace=False, max_length=4096)

    @documented(
        "An API token for a user name and password",
        request=InputSerializer,
        response=responses.TokenSerializer,
        throttled=True,
    )
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        issued = auth_token_obtain(request=request, **data.validated_data)
        if issued is None:
            return Response(
                {"detail": "Unable to log in with these credentials."},
                status=status.HTTP_400_BAD_REQUEST,
            )
        token, expiry = issued
        return Response({"token": token, "expiry": expiry})


class TokenLogoutApi(APIView):
    """Revoke the token this request carries; with ``?all=1`` (or a session), every token of
    its user."""

    @documented(
        "Revoke this API token (all=1: every token of this user)",
        request=None,
        ok=204,
        parameters=[query("all", "1: revoke every token of this user, not only this one", bool)],
    )
    def post(self, request):
        everywhere = request.query_params.get("all") in ("1", "true")
        auth_token_logout(request=request, token=None if everywhere else request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    get=documented(
        "Datasets you may see",
        parameters=PAGE,
        response=responses.DATASET_PAGE,
        operation_id="datasets_list",
    ),
    post=documented(
        "Upload a CSV table (multipart: name, file, and budget_epsilon and budget_delta, or harm "
        "and planned_releases to set them from the starting-point questions)",
        ok=201,
        request=OpenApiTypes.OBJECT,
        response=responses.DatasetSerializer,
    ),
)
class DatasetListApi(APIView):
    parser_classes = [MultiPartParser, FormParser]

    def get_permissions(self):
        return [IsCurator()] if self.request.method == "POST" else [IsCuratorOrCompliance()]

    def get(self, request):
        datasets = selectors.dataset_list_visible(user=request.user).select_related("owner")
        return paginated(self, request, datasets, lambda d: dataset_data_for(d, request.user))

    def post(self, request):
        dataset = dataset_create(
            owner=request.user,
            name=request.data.get("name", ""),
            upload=request.FILES.get("file"),
            budget_epsilon=request.data.get("budget_epsilon"),
            budget_delta=request.data.get("budget_delta"),
            declared_size=request.data.get("declared_size"),
            confirm_new_budget=request.data.get("confirm_new_budget", False),
            harm=request.data.get("harm"),
            planned_releases=request.data.get("planned_releases"),
        )
        return Response(dataset_data(dataset), status=status.HTTP_201_CREATED)


@extend_schema_view(
    get=documented(
        "A dataset: its schema, status and budget (never rows)",
        response=responses.DatasetDetailSerializer,
    )
)
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


@extend_schema_view(
    put=documented(
        "Declare a dataset's public schema",
        request=OpenApiTypes.OBJECT,
        response=responses.DatasetSchemaSerializer,
    )
)
class DatasetSchemaApi(APIView):
    permission_classes = [IsCurator]
    parser_classes = [JSONParser]

    def put(self, request, dataset_id: int):
        dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=dataset_id)
        if not isinstance(request.data, dict):
            raise ValidationFailed({"columns": ["must be an object of column declarations"]})
        dataset = dataset_schema_update(dataset=dataset, user=request.user, schema=request.data)
        return Response(dataset.schema)


@extend_schema_view(
    get=documented(
        "Your releases",
        parameters=PAGE,
        response=responses.RELEASE_PAGE,
        operation_id="releases_list",
    ),
    post=documented(
        "Draft a release: definition and queries, previewed",
        ok=201,
        request=OpenApiTypes.OBJECT,
        response=responses.ReleaseSerializer,
    ),
)
class ReleaseListApi(APIView):
    permission_classes = [IsCurator]
    parser_classes = [JSONParser]

    def get(self, request):
        releases = selectors.release_list_owned(user=request.user)
        return paginated(self, request, releases, lambda r: release_data(r, request))

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


@extend_schema_view(
    get=documented(
        "A release of yours: status, progress, preview", response=responses.ReleaseSerializer
    )
)
class ReleaseDetailApi(OwnReleaseReadOnlyOncePublished, APIView):
    permission_classes = [IsCurator]

    def get(self, request, release_id: int):
        release = get_object_or_404(selectors.release_list_owned(user=request.user), pk=release_id)
        return Response(release_data(release, request))


@extend_schema_view(
    post=documented(
        "Reserve the budget and queue the release",
        ok=202,
        response=responses.QueuedSerializer,
    )
)
class ReleaseSubmitApi(APIView):
    permission_classes = [IsCurator]

    def post(self, request, release_id: int):
        release = get_object_or_404(selectors.release_list_owned(user=request.user), pk=release_id)
        return _queued(release_submit(release=release, user=request.user))


@extend_schema_view(
    post=documented(
        "Queue again a release that failed after its answers were stored",
        ok=202,
        response=responses.QueuedSerializer,
    )
)
class ReleasePublishAgainApi(APIView):
    permission_classes = [IsCurator]

    def post(self, request, release_id: int):
        release = get_object_or_404(selectors.release_list_owned(user=request.user), pk=release_id)
        return _queued(release_publish_again(release=release, user=request.user))


@extend_schema_view(
    get=documented(
        "Published versions, newest first",
        parameters=CATALOG_FILTERS + PAGE,
        response=responses.CATALOG_PAGE,
        throttled=True,
    )
)
class CatalogListApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request):
        filters, errors = catalog_filters_parse(request.query_params, "search")
        if errors:
            raise ValidationFailed(errors)
        releases = selectors.release_list_published(**filters)
        return paginated(self, request, releases, lambda r: catalog_entry(r, request))


@extend_schema_view(
    get=documented(
        "A published version with its statistics",
        response=responses.CatalogVersionSerializer,
        throttled=True,
    )
)
class CatalogVersionApi(PublishedVersionReadOnly, APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request, slug: str, version: int):
        release = selectors.release_get_published(slug=slug, version=version)
        if release is None:
            raise Http404
        statistics = selectors.catalog_statistics(
            release=release, max_inline_bins=settings.CATALOG_MAX_INLINE_BINS
        )
        for stat in statistics:
            if "range_url" in stat:
                stat["range_url"] = request.build_absolute_uri(stat["range_url"])
        return Response(
            {
                **catalog_entry(release, request),
                **citation_data(release, request),
                "statistics": statistics,
            }
        )


def catalog_version_api_cache_key(request, slug: str, version: int) -> list:
    """What the version API will answer (public_cache): one version, in the format asked."""
    return [slug, version, request.GET.get("format")]


def catalog_range_cache_key(request, slug: str, version: int, position: int) -> list:
    """What the range API will answer (public_cache): the range as parsed, or its errors."""
    bounds, errors = range_params_parse(request.GET)
    return [slug, version, position, bounds, errors, request.GET.get("format")]


@extend_schema_view(
    get=documented(
        "A range's answer from a published range histogram",
        parameters=[
            query("from", "Lower end, a number", float),
            query("to", "Upper end, a number", float),
        ],
        response=responses.RangeAnswerSerializer,
        throttled=True,
    )
)
class CatalogRangeApi(APIView):
    """Any range of a published range histogram: ``?from=20&to=40`` in the column's units;
    rate-limited per client address (429 with Retry-After beyond ``RANGE_QUERY_RATE``)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [AnonymousApiThrottle, RangeQueryThrottle]

    def get(self, request, slug: str, version: int, position: int):
        bounds, errors = range_params_parse(request.query_params)
        if errors:
            raise ValidationFailed(errors)
        release = selectors.release_get_published(slug=slug, version=version)
        if release is None:
            raise Http404
        low, high = bounds
        try:
            answer = selectors.release_range_answer(
                release=release, position=position, low=low, high=high
            )
        except EngineValidationError as error:
            raise ValidationFailed(error.errors) from None
        if answer is None:
            raise Http404("This statistic is not a histogram for any range.")
        return Response({"statistic": position, **answer})


def _download_actor(request):
    """Who downloads a public file, for the audit trail: the logged-in user (a session, or a
    valid token) or anonymous. The file is public, so a bad token is not refused here: it is
    simply not anyone's."""
    # The session's user, read from the session itself: this view authenticates nobody, so
    # DRF has set the request's user to anonymous.
    user = get_user(request._request)
    if user.is_authenticated:
        return user
    try:
        found = ApiTokenAuthentication().authenticate(request)
    except exceptions.AuthenticationFailed:
        found = None
    return found[0] if found else request.user  # AnonymousUser: recorded as anonymous


@extend_schema_view(
    get=documented("Download a published file", files=FILE_MEDIA_TYPES, throttled=True)
)
class CatalogFileApi(PublishedVersionReadOnly, APIView):
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
        release_file_download_record(
            actor=_download_actor(request),
            release=release,
            release_file=release_file,
            file_format=file_format,
        )
        return FileResponse(
            release_file.file.open("rb"),
            as_attachment=True,
            content_type=release_file_content_type(file_format),
            filename=release_file_name(slug=slug, version=version, file_format=file_format),
        )


@extend_schema_view(
    get=documented(
        "The audit trail (compliance)",
        parameters=[
            query("dataset", "A dataset id", int),
            query("actor", "A user name"),
            query("action", "An action, e.g. release.published"),
            query("since", "ISO-8601 date and time"),
            query("until", "ISO-8601 date and time"),
            *PAGE,
        ],
        response=responses.AUDIT_EVENT_PAGE,
    )
)
class AuditEventListApi(APIView):
    permission_classes = [IsCompliance]

    def get(self, request):
        filters, errors = audit_filters_parse(request.query_params)
        if errors:
            raise ValidationFailed(errors)
        events = selectors.audit_event_list(user=request.user, **filters)
        return paginated(
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
                "repeats": e.repeats,
                "client": e.client,
                "hash": e.hash,
                "previous_hash": e.previous_hash,
            },
        )


@extend_schema_view(
    get=documented(
        "Verify the audit trail's hash chain and every dataset's budget against it (compliance)",
        parameters=[
            query("anchor_event", "An anchored event's id (with anchor_hash)", int),
            query("anchor_hash", "An anchored head's hash, e.g. a version's audit_head", str),
        ],
        response=responses.AuditVerifySerializer,
    )
)
class AuditVerifyApi(APIView):
    permission_classes = [IsCompliance]

    def get(self, request):
        anchors, errors = audit_anchor_parse(request.query_params)
        if errors:
            raise ValidationFailed(errors)
        visible = selectors.dataset_ids_for_compliance(user=request.user)
        return Response(trail_verification(anchors=anchors, datasets=visible))


@extend_schema_view(
    get=documented(
        "The audit trail's head now, to keep outside the database (compliance)",
        response=responses.AuditAnchorSerializer,
    )
)
class AuditAnchorApi(APIView):
    permission_classes = [IsCompliance]

    def get(self, request):
        return Response(audit_anchor().to_dict())


@extend_schema_view(
    get=documented(
        "ε, the probability of a truthful answer, odds and group privacy",
        parameters=[
            query("epsilon", "ε", float),
            query("truth_probability", "p in [0.5, 1)", float),
            query("prior", "A prior probability", float),
            query("delta", "δ", float),
            query("group_size", "People in a group", int),
        ],
        response=responses.TranslateSerializer,
        throttled=True,
    )
)
class TranslateApi(APIView):
    """ε ↔ p (probability of a truthful answer about one person), the odds bound and group
    privacy; public facts only, so anyone may ask. Every parameter is checked here, each naming
    itself when out of range, before the engine computes anything."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request):
        params = request.query_params
        errors: dict[str, list[str]] = {}

        def number(name: str, low: float, high: float, message: str) -> float | None:
            text = params.get(name)
            if text in (None, ""):
                return None
            value = parse_finite_number(text)
            if value is None or not low <= value <= high:
                errors[name] = [message]
                return None
            return value

        epsilon = number("epsilon", 0.0, TRANSLATE_MAX_EPSILON, TRANSLATE_EPSILON_MESSAGE)
        probability = number("truth_probability", 0.5, 1.0, TRANSLATE_PROBABILITY_MESSAGE)
        if probability == 1.0:  # certainty is no ε at all
            errors["truth_probability"] = [TRANSLATE_PROBABILITY_MESSAGE]
            probability = None
        prior = number("prior", 0.0, 1.0, "must be a number from 0 to 1")
        delta = number("delta", 0.0, 1.0, "must be a number from 0 to 1")
        group_size = number("group_size", 1.0, TRANSLATE_MAX_GROUP_SIZE, TRANSLATE_GROUP_MESSAGE)
        if group_size is not None and not group_size.is_integer():
            errors["group_size"] = [TRANSLATE_GROUP_MESSAGE]
        if epsilon is None and probability is None and not errors:
            errors["epsilon"] = ["give epsilon or truth_probability"]
        if errors:
            raise ValidationFailed(errors)

        source = "epsilon" if epsilon is not None else "truth_probability"
        group_size = int(group_size or 2)
        prior = 0.1 if prior is None else prior
        try:
            if epsilon is not None:
                probability = epsilon_to_truth_probability(epsilon)
            else:
                epsilon = truth_probability_to_epsilon(probability)
        except (ValueError, OverflowError) as error:
            raise ValidationFailed({source: [str(error)]}) from None
        try:
            posterior = posterior_bound(prior=prior, epsilon=epsilon)
        except (ValueError, OverflowError) as error:
            raise ValidationFailed({"prior": [str(error)]}) from None
        try:
            group_epsilon, group_delta = group_privacy(
                group_size=group_size, epsilon=epsilon, delta=delta or 0.0
            )
        except (ValueError, OverflowError) as error:
            # Every parameter is in range here: only the group's bound can be beyond a float.
            message = (
                str(error)
                if isinstance(error, ValueError)
                else "the group's guarantee is beyond any finite number: choose a smaller "
                "group size or ε"
            )
            raise ValidationFailed({"group_size": [message]}) from None
        return Response(
            {
                "epsilon": epsilon,
                "truth_probability": probability,
                "group_size": group_size,
                "group_epsilon": group_epsilon,
                "group_delta": group_delta,
                # As the pages write them (1.3 × 10⁻⁹), for scripts that show them.
                "group_epsilon_text": format_epsilon(group_epsilon),
                "group_delta_text": format_delta(group_delta),
                "prior": prior,
                "posterior": posterior,
            }
        )


@extend_schema_view(
    post=documented(
        "The ε a statistic needs for a target 95% half-width",
        request=OpenApiTypes.OBJECT,
        response=responses.AccuracySerializer,
    )
)
class AccuracySolverApi(APIView):
    """Accuracy first: the ε one statistic needs for the 95% half-width the curator can live
    with, on one of the curator's datasets (its declared schema; no data is read)."""

    permission_classes = [IsCurator]
    parser_classes = [JSONParser]

    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=dataset_id)
        body = json_object_body(request)
        target = _positive_number(body.get("ci95_halfwidth"))
        if target is None:
            raise ValidationFailed({"ci95_halfwidth": ["must be a number greater than 0"]})
        epsilon = release_epsilon_for_accuracy(
            dataset=dataset,
            definition=body.get("definition"),
            query=body.get("query"),
            ci95_halfwidth=target,
        )
        return Response({"epsilon": epsilon, "ci95_halfwidth": target})


def _positive_number(value) -> float | None:
    """A JSON number as a finite float greater than 0, else ``None`` (10**400, a whole number
    beyond every float, is ``None`` rather than an OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) and number > 0 else None


@extend_schema_view(
    get=documented(
        "A starting ε from two questions",
        parameters=[
            query("harm", "How harmful a disclosure would be"),
            query("releases", "How often the table will be released"),
            query("declared_size", "Records in the table", int),
        ],
        response=responses.StartingPointSerializer,
        throttled=True,
    )
)
class StartingPointApi(APIView):
    """A suggested starting ε (and δ) from two questions, with its reasoning; no data."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request):
        params = request.query_params
        errors: dict[str, list[str]] = {}
        harm, releases = params.get("harm", ""), params.get("releases", "")
        if harm not in HARM_EPSILON:
            errors["harm"] = [f"must be one of {', '.join(HARM_EPSILON)}"]
        if releases not in RELEASES_FACTOR:
            errors["releases"] = [f"must be one of {', '.join(RELEASES_FACTOR)}"]
        declared_size = params.get("declared_size") or None
        if declared_size is not None:
            # Digits are checked before int(): 5,000 of them would be a ValueError of its own.
            if re.fullmatch(r"[0-9]{1,20}", declared_size) is None:
                errors["declared_size"] = [f"must be a whole number from 1 to {MAX_ROWS:,}"]
            else:
                try:
                    declared_size = check_declared_size(int(declared_size))
                except EngineValidationError as error:
                    errors.update(error.errors)
        if errors:
            raise ValidationFailed(errors)
        try:
            point = suggest_starting_point(
                harm=harm, releases=releases, declared_size=declared_size
            )
        except EngineValidationError as error:
            raise ValidationFailed(error.errors) from None
        return Response(
            {"epsilon": point.epsilon, "delta": point.delta, "reasons": list(point.reasons)}
        )


@extend_schema_view(
    get=documented(
        "Each statistic on a simulated table of the declared shape",
        response=responses.SimulatedPreviewSerializer,
    )
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
