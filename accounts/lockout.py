"""Login throttling's view of a login (django-axes): who is trying (the client, counted as the
app's rate limits count it) and as whom (a name, or one bucket for names that are no account),
and what a locked-out login gets: a 429 with Retry-After, as JSON in the API's error shape for
the API, as a page otherwise."""

import math

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy
from rest_framework.throttling import BaseThrottle

from audit.context import client_network

# Written in the reader's language (the API's clients get English unless they ask otherwise).
MESSAGE = gettext_lazy(
    "Too many failed logins for this account from your address: try again in %(minutes)s minutes."
)
# What a name that is no account is counted (and stored by django-axes) as: a password typed
# into the username box by mistake must not be kept, and all such names from one client share
# one count.
UNKNOWN_ACCOUNT = "(unknown account)"


def login_client(request: HttpRequest) -> str | None:
    """The client as the app's rate limits count it: REMOTE_ADDR, or the address the trusted
    proxies saw (``REST_FRAMEWORK["NUM_PROXIES"]``); an IPv6 address by its /64 (a host can
    rotate through its whole /64), an IPv4-mapped one as its IPv4 address."""
    # An address, not a network (django-axes stores it in an IP address column): a /64's first.
    return client_network(BaseThrottle().get_ident(request) or "").split("/")[0] or None


def login_username(request: HttpRequest, credentials: dict | None) -> str:
    """The name tried, if it is an account's; else UNKNOWN_ACCOUNT."""
    source = credentials if credentials else getattr(request, "POST", {})
    name = source.get(get_user_model().USERNAME_FIELD) if source else None
    if (
        isinstance(name, str)
        and get_user_model()
        ._default_manager.filter(**{get_user_model().USERNAME_FIELD: name})
        .exists()
    ):
        return name
    return UNKNOWN_ACCOUNT


def lockout_response(request: HttpRequest, original_response=None, credentials=None):
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    detail = MESSAGE % {"minutes": math.ceil(seconds / 60)}
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": detail}, status=429)
    else:
        response = render(request, "accounts/locked.html", {"detail": detail}, status=429)
    response["Retry-After"] = str(seconds)
    return response
