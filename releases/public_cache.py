"""Public catalog responses kept in the cache, so the pages everyone reads cost one lookup.

A response is cached only for an anonymous request with no flash message waiting (nothing
personal on the page) and only if it is a 200 that sets no cookie; its key is the scheme, host
and Accept header, the URL pattern that answers (a page and an API endpoint may describe their
answers alike), what the view will answer (its parsed arguments), and the catalog's
*generation*, which changes whenever a version is published or withdrawn. The
generation is one small query per request; with ``PUBLIC_CACHE_GENERATION_SECONDS`` > 0 a
process reuses it for that long, and a new version then appears on cached pages within that time.
"""

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.messages import get_messages
from django.core.cache import cache
from django.db.models import Count, Max
from django.utils import translation

from releases.models import Release

logger = logging.getLogger(__name__)

_generation_lock = threading.Lock()
_generation: dict[str, object] = {"value": None, "read_at": float("-inf")}


def catalog_generation() -> str:
    """How many versions are published and withdrawn, and the latest publication time: a
    withdrawal changes the published pages and API answers of its version and of the lists, so
    it starts a new generation as a publication does (withdrawals are never deleted, so their
    count only grows)."""
    now = time.monotonic()
    with _generation_lock:
        if (
            settings.PUBLIC_CACHE_GENERATION_SECONDS > 0
            and now - _generation["read_at"] < settings.PUBLIC_CACHE_GENERATION_SECONDS
        ):
            return str(_generation["value"])
    published = Release.objects.filter(status=Release.Status.PUBLISHED).aggregate(
        count=Count("pk"), latest=Max("published_at"), withdrawn=Count("withdrawal")
    )
    latest = published["latest"].isoformat() if published["latest"] else ""
    value = f"{published['count']}:{latest}:{published['withdrawn']}"
    with _generation_lock:
        _generation.update(value=value, read_at=now)
    return value


def _personal(request) -> bool:
    """A request whose page may be someone's own: someone signed in, or a flash message waiting
    to be shown. Decided by what the request is, not by cookie names: a forged session cookie or
    a tracker's cookie leaves the page public (and cached)."""
    return request.user.is_authenticated or len(get_messages(request)) > 0


# What a view will answer, given the request and the URL's arguments: requests that give the
# same description get the same response, however their query strings are written.
CacheKey = Callable[..., Any]


def public_cache(view: Callable, *, key: CacheKey | None = None) -> Callable:
    """Serve an anonymous GET (or HEAD) of ``view`` from the cache while the catalog is unchanged.

    The key holds the scheme, host, Accept header (links and JSON rendering follow them) and the
    active language and,
    with ``key``, what the view will answer as ``key(request, **url_arguments)`` describes it
    (parsed values, so that padded, reordered or ignored parameters, leading zeros and garbage
    the view treats alike share one entry); without it, the full path. A cache that fails is
    skipped, never an error."""

    @wraps(view)
    def cached(request, *args, **kwargs):
        if (
            request.method not in ("GET", "HEAD")
            or not settings.PUBLIC_CACHE_SECONDS
            or _personal(request)
        ):
            return view(request, *args, **kwargs)
        asked = request.get_full_path() if key is None else json.dumps(key(request, **kwargs))
        match = getattr(request, "resolver_match", None)
        raw = "\n".join(
            [
                request.scheme,
                request.get_host(),
                request.headers.get("Accept", ""),
                # The page's language (LocaleMiddleware: the switcher's cookie or
                # Accept-Language): an English page is never served to a Chinese reader.
                translation.get_language() or "",
                # Which URL pattern answers: two views whose keys read alike never share entries.
                match.route if match is not None else request.path_info,
                asked,
                catalog_generation(),
            ]
        )
        cache_key = "public:" + hashlib.sha256(raw.encode()).hexdigest()
        try:
            response = cache.get(cache_key)
        except Exception:  # the cache is down: answer without it
            logger.warning("public cache unavailable", exc_info=True)
            return view(request, *args, **kwargs)
        if response is not None:
            return response
        response = view(request, *args, **kwargs)
        if hasattr(response, "render") and not getattr(response, "is_rendered", True):
            response.render()
        if (
            request.method == "GET"
            and response.status_code == 200
            and not response.cookies
            and not response.streaming
            # A page that holds a CSRF token holds the reader's own: never someone else's page.
            and not request.META.get("CSRF_COOKIE_NEEDS_UPDATE")
        ):
            try:
                cache.set(cache_key, response, settings.PUBLIC_CACHE_SECONDS)
            except Exception:
                logger.warning("public cache unavailable", exc_info=True)
        return response

    return cached


def public_cache_reset() -> None:
    """Forget every cached response and the generation (tests, or after restoring a database)."""
    cache.clear()
    with _generation_lock:
        _generation.update(value=None, read_at=float("-inf"))
