"""One error shape for the whole API: {"detail": "…"} and, for 400, "errors" by field path."""

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found
from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.response import Response
from rest_framework.views import exception_handler

from releases.apis.parsers import BodyRefused
from releases.services.errors import Conflict, ValidationFailed


def _flatten(data: Any, prefix: str = "") -> dict[str, list[str]]:
    if isinstance(data, dict):
        out: dict[str, list[str]] = {}
        for key, value in data.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            out.update(_flatten(value, path))
        return out
    if isinstance(data, list) and data and all(isinstance(item, str) for item in data):
        return {prefix or "non_field_errors": [str(item) for item in data]}
    if isinstance(data, list):
        out = {}
        for index, value in enumerate(data):
            out.update(_flatten(value, f"{prefix}.{index}" if prefix else str(index)))
        return out
    return {prefix or "non_field_errors": [str(data)]}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ValidationFailed):
        return Response(
            {"detail": exc.detail, "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST
        )
    if isinstance(exc, BodyRefused):
        return Response(
            {"detail": str(exc.detail), "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST
        )
    if isinstance(exc, ParseError):
        # A body that is not JSON (or not a form) at all: the body is the field at fault.
        return Response(
            {"detail": "Invalid input.", "errors": {"body": [str(exc.detail)]}},
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, Conflict):
        return Response({"detail": exc.detail}, status=status.HTTP_409_CONFLICT)
    response = exception_handler(exc, context)
    if response is None:
        return None
    if response.status_code == status.HTTP_400_BAD_REQUEST:
        response.data = {"detail": "Invalid input.", "errors": _flatten(response.data)}
    elif not (isinstance(response.data, dict) and "detail" in response.data):
        response.data = {"detail": str(response.data)}
    return response


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 404 (a path no route matches, e.g. ``/api/v1/releases/-1/``): in the API's error
    shape under /api/, the site's page elsewhere. The path within the site (``path_info``), so
    a deployment under a prefix (``SCRIPT_NAME``, e.g. ``/data/api/…``) answers the same."""
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=status.HTTP_404_NOT_FOUND)
    return page_not_found(request, exception)
