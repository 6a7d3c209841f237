"""HTTP API v1: deleting a dataset's raw data (releases/services/raw_data.py)."""

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema_view, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsCurator
from releases import selectors
from releases.apis import responses
from releases.apis.parsers import JSONParser
from releases.apis.schema import documented
from releases.apis.views import dataset_data
from releases.services.errors import ValidationFailed
from releases.services.raw_data import (
    REASON_MAX_LENGTH,
    dataset_raw_delete,
    raw_delete_reason_clean,
)

CONFIRM_MESSAGE = "must be true: deleting the raw data cannot be undone"

RAW_DELETE_REQUEST = inline_serializer(
    "DatasetRawDataDeleteRequest",
    {
        "reason": serializers.CharField(
            max_length=REASON_MAX_LENGTH,
            help_text="Why the raw data is deleted: shown on the dataset page, kept in the trail",
        ),
        "confirm": serializers.BooleanField(help_text="true: the deletion cannot be undone"),
    },
)


def raw_delete_body_clean(body: Any) -> str:
    """The reason from a ``{"reason": …, "confirm": true}`` body; :class:`ValidationFailed`
    naming ``reason`` and ``confirm``, each that is wrong."""
    body = body if isinstance(body, dict) else {}
    errors: dict[str, list[str]] = {}
    reason = ""
    try:
        reason = raw_delete_reason_clean(body.get("reason"))
    except ValidationFailed as error:
        errors.update(error.errors)
    # JSON true only: "yes" or 1 is not a deliberate confirmation of something irreversible.
    if body.get("confirm") is not True:
        errors["confirm"] = [CONFIRM_MESSAGE]
    if errors:
        raise ValidationFailed(errors)
    return reason


@extend_schema_view(
    post=documented(
        "Delete a dataset's raw data (upload and table); releases, ledger and trail stay",
        request=RAW_DELETE_REQUEST,
        response=responses.DatasetSerializer,
    )
)
class DatasetRawDataDeleteApi(APIView):
    """The owner deletes the dataset's raw data for good; a second call changes nothing and
    answers the same. 409 while a release of it is queued or running, or it is converting."""

    permission_classes = [IsCurator]
    parser_classes = [JSONParser]

    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=dataset_id)
        reason = raw_delete_body_clean(request.data)
        dataset = dataset_raw_delete(dataset_id=dataset.pk, actor=request.user, reason=reason)
        return Response(dataset_data(dataset))
