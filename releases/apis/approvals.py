"""HTTP API v1 for dual control: compliance lists the releases awaiting approval, approves or
rejects one (never its own) with a comment, and sets whether a dataset requires approval."""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_view
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsCompliance
from releases import selectors
from releases.apis import responses
from releases.apis.pagination import paginated
from releases.apis.parsers import JSONParser, json_object_body
from releases.apis.schema import PAGE, documented
from releases.models import Release, ReleaseApproval
from releases.services.approvals import (
    dataset_approval_requirement_set,
    release_approve,
    release_reject,
)
from releases.services.errors import ValidationFailed


def approval_data(approval: ReleaseApproval | None) -> dict | None:
    if approval is None:
        return None
    return {
        "decision": approval.decision,
        "decided_by": approval.decided_by.get_username(),
        "decided_at": approval.decided_at.isoformat(),
        "comment": approval.comment,
    }


def awaiting_release_data(release: Release) -> dict:
    """What an approver decides on: the plan and its expected accuracy, never data values."""
    return {
        "id": release.pk,
        "dataset": release.dataset_id,
        "dataset_name": release.dataset.name,
        "title": release.title,
        "curator": release.created_by.get_username(),
        "status": release.status,
        "definition": release.definition,
        "queries": release.queries,
        "preview": release.preview,
        "epsilon_charged": selectors.decimal_text(release.epsilon_charged),
        "delta_charged": selectors.decimal_text(release.delta_charged),
        "submitted_at": release.submitted_at.isoformat(),
        "approval": approval_data(getattr(release, "approval", None)),
    }


@extend_schema_view(
    get=documented(
        "Releases awaiting approval, oldest submission first (compliance)",
        parameters=PAGE,
        response=responses.AWAITING_RELEASE_PAGE,
    )
)
class ApprovalListApi(APIView):
    permission_classes = [IsCompliance]

    def get(self, request):
        awaiting = selectors.release_list_awaiting_approval(user=request.user)
        return paginated(self, request, awaiting, awaiting_release_data)


class _DecisionApi(APIView):
    permission_classes = [IsCompliance]
    parser_classes = [JSONParser]
    decide = None

    def post(self, request, release_id: int):
        release = selectors.release_get_for_approval(user=request.user, pk=release_id)
        if release is None:
            get_object_or_404(Release.objects.none())  # the usual 404
        body = json_object_body(request)
        decided = type(self).decide(release=release, user=request.user, comment=body.get("comment"))
        decided.refresh_from_db()
        return Response(awaiting_release_data(decided))


@extend_schema_view(
    post=documented(
        "Approve a release awaiting approval (compliance, not its curator): comment required",
        request=OpenApiTypes.OBJECT,
        response=responses.AwaitingReleaseSerializer,
    )
)
class ReleaseApproveApi(_DecisionApi):
    decide = staticmethod(release_approve)


@extend_schema_view(
    post=documented(
        "Reject a release awaiting approval (compliance, not its curator): comment required; "
        "its reserved budget is returned",
        request=OpenApiTypes.OBJECT,
        response=responses.AwaitingReleaseSerializer,
    )
)
class ReleaseRejectApi(_DecisionApi):
    decide = staticmethod(release_reject)


@extend_schema_view(
    put=documented(
        'Require approval of a dataset\'s releases, or not: {"required": true|false}',
        request=OpenApiTypes.OBJECT,
        response=responses.ApprovalRequirementSerializer,
    )
)
class DatasetApprovalRequirementApi(APIView):
    permission_classes = [IsCompliance]
    parser_classes = [JSONParser]

    def put(self, request, dataset_id: int):
        dataset = get_object_or_404(
            selectors.dataset_list_visible(user=request.user), pk=dataset_id
        )
        required = json_object_body(request).get("required")
        if not isinstance(required, bool):
            raise ValidationFailed({"required": ["must be true or false"]})
        dataset = dataset_approval_requirement_set(
            dataset=dataset, user=request.user, required=required
        )
        return Response({"dataset": dataset.pk, "requires_approval": dataset.requires_approval})
