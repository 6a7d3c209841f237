"""Rate limits for public requests that cost computation the public cache cannot save."""

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle


class RangeQueryThrottle(SimpleRateThrottle):
    """Ranges asked of published range histograms, per client address, from the API and the
    release page together: each answer costs up to about 0.1 s of CPU, and a query string
    bypasses the public cache. The rate is ``RANGE_QUERY_RATE`` (e.g. "120/min"), read per
    request so that settings can change it."""

    scope = "range"

    def get_rate(self) -> str:
        return settings.RANGE_QUERY_RATE

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
