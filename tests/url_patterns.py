"""Every route of the app as an example path, so a test can be generated over all of them and a
new route is covered the day it is added."""

import re
from collections.abc import Iterator

from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern

# A value for each path converter that its route accepts.
CONVERTER_EXAMPLES = {"int": "1", "slug": "x", "str": "x", "path": "x", "uuid": "0" * 32}


def _example(pattern) -> str:
    text = str(pattern)
    if isinstance(pattern, RoutePattern):
        return re.sub(r"<(?:(\w+):)?\w+>", lambda m: CONVERTER_EXAMPLES[m.group(1) or "str"], text)
    # A regular expression (the admin's): each named group becomes a plain word.
    text = re.sub(r"\(\?P<\w+>[^)]*\)", "x", text)
    return text.lstrip("^").rstrip("$").replace("\\", "")


def every_route() -> Iterator[tuple[str, str]]:
    """(example path, route name or pattern) of every route, admin included."""

    def walk(resolver: URLResolver, prefix: str) -> Iterator[tuple[str, str]]:
        for entry in resolver.url_patterns:
            path = prefix + _example(entry.pattern)
            if isinstance(entry, URLResolver):
                yield from walk(entry, path)
            elif isinstance(entry, URLPattern):
                yield path, entry.name or str(entry.pattern)

    yield from walk(get_resolver(), "/")
