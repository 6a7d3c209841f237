"""The client of the web request being served, as the trail records it: its network address
truncated to the network (IPv4 /24, IPv6 /48), so events say where actions came from without
naming one machine. Set by :class:`ClientAddressMiddleware` for the request's duration; empty for
work outside a request (workers, management commands)."""

import ipaddress
import time
from collections.abc import Callable
from contextvars import ContextVar

from django.core.cache import caches
from django.http import HttpRequest, HttpResponse

_client: ContextVar[str] = ContextVar("audit_client", default="")
IPV4_PREFIX = 24
IPV6_PREFIX = 48


def truncated_address(address: str | None) -> str:
    """``address``'s network (``"192.0.2.0/24"``, ``"2001:db8:1::/48"``), or "" when it is not
    an IP address."""
    try:
        ip = ipaddress.ip_address((address or "").strip())
    except ValueError:
        return ""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = IPV4_PREFIX if ip.version == 4 else IPV6_PREFIX
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


def client_network(address: str) -> str:
    """What one client is counted as: its IPv4 address, or its IPv6 address's /64 (a host gets a
    whole /64 and could rotate through it); an IPv4-mapped IPv6 address is its IPv4 address.
    Anything else (no address, a unix socket) as given."""
    try:
        parsed = ipaddress.ip_address(address.strip())
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


def current_client() -> str:
    """The truncated address of the request being served, or ""."""
    return _client.get()


class ClientAddressMiddleware:
    """Makes the request's truncated ``REMOTE_ADDR`` the client of every event it records (a
    proxy in front must set REMOTE_ADDR, e.g. gunicorn's ``--forwarded-allow-ips``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _client.set(truncated_address(request.META.get("REMOTE_ADDR")))
        try:
            return self.get_response(request)
        finally:
            _client.reset(token)


# Longest path a denial records (paths hold ids and slugs; the query string is never recorded).
MAX_DENIED_PATH = 200


class AccessDeniedMiddleware:
    """Records a refusal of a logged-in user (a 403, or a 404 from a route of the app: another
    owner's object answers 404) as a ``user.access_denied`` event. Anonymous clients'
    refusals are not recorded, so they cannot flood the trail; the query string is not recorded,
    so no typed value is either."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        user = getattr(request, "user", None)
        match = getattr(request, "resolver_match", None)
        refused = response.status_code == 403 or (response.status_code == 404 and match is not None)
        if refused and user is not None and user.is_authenticated:
            # Imported here: audit.chain imports this module (current_client).
            from audit.chain import AuditAction, audit_record

            recorded = _denials_recorded(user.pk)
            if recorded <= MAX_DENIALS_PER_MINUTE:
                details = {
                    "method": request.method if request.method in HTTP_METHODS else "OTHER",
                    "path": request.path[:MAX_DENIED_PATH],
                    "status": response.status_code,
                }
                if recorded == MAX_DENIALS_PER_MINUTE:
                    details["further_denials"] = "not recorded until the next minute"
                audit_record(
                    actor=user,
                    action=AuditAction.ACCESS_DENIED,
                    object_type="route",
                    object_id=(match.url_name or "")[:60] if match is not None else "",
                    details=details,
                )
        return response


# A user's refusals recorded per minute: enough to see probing, too few to flood the trail (or
# hold its lock) from one account; the last one says that more are not recorded.
MAX_DENIALS_PER_MINUTE = 30
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")


def _denials_recorded(user_id: int) -> int:
    """How many of this user's refusals this minute, this one included (a shared cache, so
    every process counts together)."""
    cache = caches["throttle"]
    key = f"audit-denials:{user_id}:{int(time.time() // 60)}"
    cache.add(key, 0, timeout=120)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=120)
        return 1
