"""What the OpenAPI schema (drf-spectacular) says of views that build their answers by hand:
every answer is a JSON object, errors have one shape, and each query-string parameter is
named with its meaning. README.md's API table has the fields in full."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from drf_spectacular.views import SpectacularAPIView
from rest_framework import serializers

ERROR = OpenApiResponse(
    inline_serializer(
        "Error",
        {
            "detail": serializers.CharField(),
            "errors": serializers.DictField(
                child=serializers.ListField(child=serializers.CharField()), required=False
            ),
        },
    ),
    description="A refusal: `detail`, and `errors` naming each bad field",
)
OBJECT = OpenApiResponse(OpenApiTypes.OBJECT, description="See README.md's API table")


def query(name: str, description: str, kind: type | OpenApiTypes = str) -> OpenApiParameter:
    return OpenApiParameter(name, kind, OpenApiParameter.QUERY, description=description)


def documented(
    summary: str,
    *,
    ok: int = 200,
    parameters: list[OpenApiParameter] | None = None,
    request: object = None,
    binary: bool = False,
    operation_id: str | None = None,
):
    """One operation: its summary, query parameters, request body and answers."""
    answer = OpenApiResponse(OpenApiTypes.BINARY, description="The file") if binary else OBJECT
    return extend_schema(
        operation_id=operation_id,
        summary=summary,
        parameters=parameters or [],
        request=request,
        responses={ok: answer, 400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR, 409: ERROR},
    )


PAGE = [query("page", "Page number, from 1", int)]
CATALOG_FILTERS = [
    query("search", "A title or a statistic's column (at most 200 characters)"),
    query("kind", "The privacy definition: pure_dp, approx_dp or blowfish"),
    query("since", "First publication day, YYYY-MM-DD (UTC, inclusive)"),
    query("until", "Last publication day, YYYY-MM-DD (UTC, inclusive)"),
]


class SchemaView(SpectacularAPIView):
    """The schema, its version SPECTACULAR_SETTINGS', in the one language the API speaks.
    drf-spectacular would take ``lang`` and ``version`` from the query string: any ``lang`` is
    activated and Django keeps every language it has seen (memory without bound), and
    ``version`` goes into a header."""

    @extend_schema(exclude=True)  # the schema does not list itself
    def get(self, request, *args, **kwargs):
        return self._get_schema_response(request)

    def _get_version_parameter(self, request):
        return None
