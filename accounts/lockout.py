"""What a locked-out login gets (django-axes' AXES_LOCKOUT_CALLABLE): a 429 with Retry-After,
as JSON in the API's error shape for the API, as a page otherwise."""

import math

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

MESSAGE = (
    "Too many failed logins for this account from your address: try again in {minutes} minutes."
)


def lockout_response(request: HttpRequest, original_response=None, credentials=None):
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    detail = MESSAGE.format(minutes=math.ceil(seconds / 60))
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": detail}, status=429)
    else:
        response = render(request, "accounts/locked.html", {"detail": detail}, status=429)
    response["Retry-After"] = str(seconds)
    return response
