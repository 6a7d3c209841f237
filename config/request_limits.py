"""A cap on every request body, read from its Content-Length before anything parses it.

Django bounds form fields in memory (DATA_UPLOAD_MAX_MEMORY_SIZE) but streams file parts of any
multipart body to disk, on any URL that reads ``request.POST``: without this cap, a client could
send gigabytes to the login page. Only the routes named in UPLOAD_URL_NAMES take a table (up to
DATASET_MAX_UPLOAD_BYTES and its form fields); every other body is refused above
REQUEST_MAX_BODY_BYTES with a 413 naming the body. A body without a Content-Length (chunked) is
not read by Django at all.
"""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext

from accounts.roles import Role, user_has_role


def body_limit(request: HttpRequest) -> int:
    """The largest body, in bytes, the route of ``request`` reads."""
    match = request.resolver_match
    if match is not None and match.url_name in settings.UPLOAD_URL_NAMES:
        if match.url_name in settings.SESSION_UPLOAD_URL_NAMES and not user_has_role(
            request.user, Role.CURATOR
        ):
            # A page's form is parsed (by the CSRF check) before its view checks who posts:
            # only a curator's session may send a table there. The API authenticates first.
            return settings.REQUEST_MAX_BODY_BYTES
        return settings.DATASET_MAX_UPLOAD_BYTES + settings.REQUEST_MAX_BODY_BYTES
    return settings.REQUEST_MAX_BODY_BYTES


def declared_length(request: HttpRequest) -> int:
    try:
        return max(0, int(request.META.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0  # as Django reads it: no body


class RequestBodyLimitMiddleware:
    """Refuses a body above its route's limit before any view or middleware reads it (it must
    come before CsrfViewMiddleware, whose process_view reads POST data)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        limit = body_limit(request)
        if declared_length(request) <= limit:
            return None
        message = f"must be at most {limit:,} bytes"
        if request.path.startswith("/api/"):
            return JsonResponse(
                {"detail": "The request body is too large.", "errors": {"body": [message]}},
                status=413,
            )
        # The page speaks the reader's language; the API keeps its English messages.
        shown = gettext("must be at most %(limit)s bytes") % {"limit": f"{limit:,}"}
        return TemplateResponse(
            request, "request_too_large.html", {"message": shown}, status=413
        ).render()
