"""Rate limits for public requests that cost computation the public cache cannot save."""

import hashlib
import logging
import math
import time

from django.conf import settings
from django.core.cache import caches
from rest_framework.throttling import SimpleRateThrottle

from audit.context import client_network

logger = logging.getLogger(__name__)

# The cache alias that counts requests: apart from the public cache, whose pages would otherwise
# evict the counters (and reset every address's limit).
THROTTLE_CACHE = "throttle"


class RangeQueryThrottle(SimpleRateThrottle):
    """Ranges asked of published range histograms, per client address, from the API and the
    release page together: each answer costs up to about 0.1 s of CPU, and a query string
    bypasses the public cache. The rate is ``RANGE_QUERY_RATE`` (e.g. "120/min"), read per
    request so that settings can change it.

    A fixed window counted with the cache's atomic ``add`` and ``incr``: concurrent requests
    cannot all read the same history and slip past the limit, as they can with DRF's sliding
    window (read, check, write back); at a window's edge a client can get up to twice the rate
    in a moment. The address is REMOTE_ADDR, or the one the trusted proxies saw
    (``REST_FRAMEWORK["NUM_PROXIES"]``), never a header the client wrote, counted by
    :func:`client_network` and hashed into the key so that no header's text reaches the cache.
    If the counters' cache fails, requests are answered uncounted (and a warning logged)."""

    scope = "range"

    def __init__(self) -> None:
        self.cache = caches[THROTTLE_CACHE]
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.window_end = 0.0

    def get_rate(self) -> str:
        return settings.RANGE_QUERY_RATE

    def get_cache_key(self, request, view) -> str:
        ident = client_network(self.get_ident(request) or "")
        digest = hashlib.sha256(ident.encode("utf-8", "replace")).hexdigest()
        return f"throttle_{self.scope}_{digest[:32]}"

    def allow_request(self, request, view) -> bool:
        now = time.time()
        window = math.floor(now / self.duration)
        self.window_end = (window + 1) * self.duration
        key = f"{self.get_cache_key(request, view)}_{window}"
        try:
            # The key outlives its window by a little, so the count is never lost while it counts.
            self.cache.add(key, 0, timeout=self.duration + 1)
            try:
                count = self.cache.incr(key)
            except ValueError:  # expired between add and incr: this request starts the window
                self.cache.add(key, 1, timeout=self.duration + 1)
                count = 1
        except Exception:
            # The counters' cache is down: answer (the public is not refused for our outage).
            logger.warning("rate-limit cache unavailable; request not counted", exc_info=True)
            return True
        return count <= self.num_requests

    def wait(self) -> float:
        return max(1.0, self.window_end - time.time())


class AnonymousApiThrottle(RangeQueryThrottle):
    """Every API request of a client that is not logged in, per address, at
    ``ANONYMOUS_API_RATE`` (e.g. "300/min"): scripts downloading the catalog are welcome, a flood
    is answered 429 with ``Retry-After`` (DRF sets it from :meth:`wait`). Counted like
    :class:`RangeQueryThrottle` (fixed window, atomic, hashed address). Answers the public cache
    serves never reach a view, so they cost nothing and are not counted. Logged-in users are
    accountable through the audit trail and not limited here."""

    scope = "anonymous"

    def get_rate(self) -> str:
        return settings.ANONYMOUS_API_RATE

    def allow_request(self, request, view) -> bool:
        if request.user is not None and request.user.is_authenticated:
            return True
        return super().allow_request(request, view)
