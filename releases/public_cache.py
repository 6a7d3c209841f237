"""Public catalog responses kept in the cache, so the pages everyone reads cost one lookup.

A response is cached only for a request that carries no session, CSRF, message or language
cookie (nobody signed in, nothing personal on the page) and only if it is a 200 that sets no
cookie; its key is the host, the path with the query parameters the view reads, and the
catalog's *generation*, which changes whenever a version is published. The
generation is one small query per request; with ``PUBLIC_CACHE_GENERATION_SECONDS`` > 0 a
process reuses it for that long, and a new version then appears on cached pages within that time.
"""

import hashlib
import json
import threading
import time
from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max

from releases.models import Release

_generation_lock = threading.Lock()
_generation: dict[str, object] = {"value": None, "read_at": float("-inf")}


def catalog_generation() -> str:
    """How many versions are published, and the latest publication time."""
    now = time.monotonic()
    with _generation_lock:
        if (
            settings.PUBLIC_CACHE_GENERATION_SECONDS > 0
            and now - _generation["read_at"] < settings.PUBLIC_CACHE_GENERATION_SECONDS
        ):
            return str(_generation["value"])
    published = Release.objects.filter(status=Release.Status.PUBLISHED).aggregate(
        count=Count("pk"), latest=Max("published_at")
    )
    value = f"{published['count']}:{published['latest'].isoformat() if published['latest'] else ''}"
    with _generation_lock:
        _generation.update(value=value, read_at=now)
    return value


def _personal(request) -> bool:
    """A request whose page may be someone's own: it carries a session, a CSRF token, a flash
    message or a language choice. Any other cookie (a tracker's) does not change the page."""
    names = (
        settings.SESSION_COOKIE_NAME,
        settings.CSRF_COOKIE_NAME,
        settings.LANGUAGE_COOKIE_NAME,
        "messages",
    )
    return any(name in request.COOKIES for name in names)


def public_cache(view: Callable, *, params: tuple[str, ...] | None = None) -> Callable:
    """Serve an anonymous GET of ``view`` from the cache while the catalog is unchanged. With
    ``params``, the query parameters the view reads, the key holds only those (in that order,
    the last value of each, as the view reads them): other parameters, added to dodge the cache,
    cost nothing."""

    @wraps(view)
    def cached(request, *args, **kwargs):
        if request.method != "GET" or _personal(request) or not settings.PUBLIC_CACHE_SECONDS:
            return view(request, *args, **kwargs)
        if params is None:
            asked = request.get_full_path()
        else:
            chosen = {name: request.GET[name] for name in params if name in request.GET}
            asked = f"{request.path}\n{json.dumps(chosen)}"
        raw = f"{request.get_host()}\n{asked}\n{catalog_generation()}"
        key = "public:" + hashlib.sha256(raw.encode()).hexdigest()
        response = cache.get(key)
        if response is not None:
            return response
        response = view(request, *args, **kwargs)
        if hasattr(response, "render") and not getattr(response, "is_rendered", True):
            response.render()
        if response.status_code == 200 and not response.cookies and not response.streaming:
            cache.set(key, response, settings.PUBLIC_CACHE_SECONDS)
        return response

    return cached


def public_cache_reset() -> None:
    """Forget every cached response and the generation (tests, or after restoring a database)."""
    cache.clear()
    with _generation_lock:
        _generation.update(value=None, read_at=float("-inf"))
