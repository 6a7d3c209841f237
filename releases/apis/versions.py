"""HTTP API of published versions after publication: withdraw one, compare two, and the 405 that
answers any attempt to change one (a published version is immutable)."""

import re

from django.conf import settings
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_view
from rest_framework import status
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsCurator
from releases import selectors
from releases.apis import responses
from releases.apis.parsers import FormParser, JSONParser
from releases.apis.schema import documented, query
from releases.models import Release, Withdrawal
from releases.services.errors import ValidationFailed
from releases.services.versions import release_withdraw, version_citation, version_diff

IMMUTABLE_DETAIL = (
    "A published version is immutable: it cannot be changed or deleted. Withdraw it "
    "(POST …/withdraw/ with a reason) or draft a new version in its series."
)
VERSION_MESSAGE = "must be a version number (a whole number from 1)"
# Nine digits: beyond any series' number of versions, and parsed without a big integer.
VERSION_PATTERN = re.compile(r"[1-9][0-9]{0,8}")


class PublishedVersionReadOnly:
    """For API views of published versions: any method the view does not answer is a 405 with an
    ``Allow`` header (DRF adds it) and a detail that says why, in the API's error shape."""

    def http_method_not_allowed(self, request, *args, **kwargs):
        raise MethodNotAllowed(request.method, detail=IMMUTABLE_DETAIL)


def release_withdrawal(release: Release) -> Withdrawal | None:
    try:
        return release.withdrawal
    except Withdrawal.DoesNotExist:
        return None


def withdrawn_data(release: Release) -> dict | None:
    """``{at, reason}`` of a withdrawn version, else None."""
    withdrawal = release_withdrawal(release)
    if withdrawal is None:
        return None
    return {"at": withdrawal.at.isoformat(), "reason": withdrawal.reason}


def permanent_url(release: Release, request) -> str:
    """The version's public page, absolute (from the request: its scheme and host)."""
    return request.build_absolute_uri(
        reverse("catalog-version", kwargs={"slug": release.series.slug, "version": release.version})
    )


def citation_data(release: Release, request) -> dict:
    url = permanent_url(release, request)
    return {"permanent_url": url, "citation": version_citation(release=release, url=url)}


def version_pair_parse(params) -> tuple[int | None, int | None, dict[str, list[str]]]:
    """``from`` and ``to`` as version numbers, and the errors naming each bad one."""
    numbers: dict[str, int | None] = {}
    errors: dict[str, list[str]] = {}
    for name in ("from", "to"):
        text = params.get(name, "")
        if VERSION_PATTERN.fullmatch(text) is None:
            numbers[name] = None
            errors[name] = [VERSION_MESSAGE]
        else:
            numbers[name] = int(text)
    return numbers["from"], numbers["to"], errors


def version_pair_get(slug: str, before: int, after: int) -> tuple[Release, Release]:
    """The two published versions of a series; Http404 naming the parameter that has none."""
    found = {}
    for name, number in (("from", before), ("to", after)):
        release = selectors.release_get_published(slug=slug, version=number)
        if release is None:
            raise Http404(f"No published version {number} of this series ({name}).")
        found[name] = release
    return found["from"], found["to"]


def diff_data(before: Release, after: Release, request) -> dict:
    def side(release: Release) -> dict:
        return {
            "version": release.version,
            "published_at": release.published_at.isoformat(),
            "url": permanent_url(release, request),
            "withdrawn": withdrawn_data(release),
        }

    return {
        "slug": after.series.slug,
        "title": after.title,
        "from": side(before),
        "to": side(after),
        **version_diff(before=before, after=after, max_cells=settings.CATALOG_MAX_INLINE_BINS),
    }


def catalog_diff_cache_key(request, slug: str) -> list:
    """What the diff will answer (public_cache), for the API and the page alike: the pair as
    parsed, or its errors; which of ``from`` and ``to`` were given (without them the page shows
    its form, with bad ones it says what is wrong); and ``format``, the API's renderer."""
    before, after, errors = version_pair_parse(request.GET)
    asked = sorted({"from", "to"} & set(request.GET))
    return [slug, before, after, sorted(errors), asked, request.GET.get("format")]


@extend_schema_view(
    get=documented(
        "What changed between two published versions of a series",
        parameters=[
            query("from", "The earlier version number", int),
            query("to", "The later version number", int),
        ],
        response=responses.VersionDiffSerializer,
        throttled=True,
    )
)
class CatalogDiffApi(APIView):
    """Definition, statistics added and removed, and the published values of the statistics in
    both versions side by side, with whether their 95% intervals overlap."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request, slug: str):
        before, after, errors = version_pair_parse(request.query_params)
        if errors:
            raise ValidationFailed(errors)
        first, second = version_pair_get(slug, before, after)
        return Response(diff_data(first, second, request))


@extend_schema_view(
    post=documented(
        "Withdraw a published version of yours, with a public reason",
        ok=201,
        request=OpenApiTypes.OBJECT,
        response=responses.WithdrawalSerializer,
    )
)
class CatalogWithdrawApi(APIView):
    """The version stays in the catalog, marked withdrawn with the reason and date; its numbers
    and files stay as published. Once only (409 after)."""

    permission_classes = [IsCurator]
    parser_classes = [JSONParser, FormParser]

    def post(self, request, slug: str, version: int):
        release = get_object_or_404(
            selectors.release_list_owned(user=request.user),
            series__slug=slug,
            version=version,
            status=Release.Status.PUBLISHED,
        )
        body = request.data if hasattr(request.data, "get") else {}
        withdrawal = release_withdraw(release=release, user=request.user, reason=body.get("reason"))
        return Response(
            {
                "slug": slug,
                "version": version,
                "withdrawn": {"at": withdrawal.at.isoformat(), "reason": withdrawal.reason},
            },
            status=status.HTTP_201_CREATED,
        )


class OwnReleaseReadOnlyOncePublished:
    """For the curator's release resource: a method it does not answer is a 405 (with ``Allow``)
    whatever the release; once the release is published the detail says it is immutable."""

    def http_method_not_allowed(self, request, *args, **kwargs):
        published = (
            selectors.release_list_owned(user=request.user)
            .filter(pk=kwargs.get("release_id"), status=Release.Status.PUBLISHED)
            .exists()
        )
        if published:
            raise MethodNotAllowed(request.method, detail=IMMUTABLE_DETAIL)
        return super().http_method_not_allowed(request, *args, **kwargs)
