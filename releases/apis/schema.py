"""What the OpenAPI schema (drf-spectacular) says of views that build their answers by hand:
each success answer's shape (releases.apis.responses), the one shape of errors, and each
query-string parameter named with its meaning."""

from collections.abc import Sequence

from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
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
TOO_MANY_REQUESTS = OpenApiResponse(
    ERROR.response,
    description="Too many requests from this address: try again after `Retry-After` seconds",
)
OBJECT = OpenApiResponse(OpenApiTypes.OBJECT, description="See README.md's API table")


class ApiTokenScheme(KnoxTokenScheme):
    """`Authorization: Token <token>` in the schema, as it was before tokens were hashed."""

    target_class = "accounts.tokens.ApiTokenAuthentication"
    name = "tokenAuth"


def query(name: str, description: str, kind: type | OpenApiTypes = str) -> OpenApiParameter:
    return OpenApiParameter(name, kind, OpenApiParameter.QUERY, description=description)


def documented(
    summary: str,
    *,
    ok: int = 200,
    response: object = None,
    parameters: list[OpenApiParameter] | None = None,
    request: object = None,
    files: Sequence[str] = (),
    throttled: bool = False,
    operation_id: str | None = None,
):
    """One operation: its summary, query parameters, request body and answers. ``response`` is
    the success answer's shape (a serializer of releases.apis.responses; the generic object if
    not given); ``files``, instead, the media types of a file the operation answers (a JSON
    file is any JSON document, any other bytes); ``throttled`` documents the 429 of an operation
    open to anonymous clients (the default AnonymousApiThrottle) or otherwise rate-limited."""
    answers: dict = {}
    if files:
        for media_type in files:
            kind = OpenApiTypes.ANY if media_type == "application/json" else OpenApiTypes.BINARY
            answers[ok, media_type] = OpenApiResponse(kind, description="The file")
    elif ok == 204:
        answers[ok] = OpenApiResponse(description=summary)  # no body
    elif response is None:
        answers[ok] = OBJECT
    else:
        answers[ok] = OpenApiResponse(response, description=summary)
    answers |= {status: ERROR for status in (400, 401, 403, 404, 405, 409)}
    if throttled:
        answers[429] = TOO_MANY_REQUESTS
    return extend_schema(
        operation_id=operation_id,
        summary=summary,
        parameters=parameters or [],
        request=request,
        responses=answers,
    )


PAGE = [
    query("page", "Page number, from 1 (or `last`)", int),
    query("page_size", "Results per page, from 1 (at most 200 are served)", int),
]
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
