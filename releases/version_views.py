"""Pages of published versions after publication: the public diff between two versions, and the
curator's withdraw and new-version actions on the release status page."""

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext, gettext_lazy, pgettext
from django.views.decorators.http import require_POST

from releases import selectors
from releases.apis.versions import (
    VERSION_MESSAGE,
    diff_data,
    version_pair_get,
    version_pair_parse,
)
from releases.curator_views import curator_required, owned_release_get
from releases.refusals import refusal_text
from releases.services.errors import Conflict, ValidationFailed
from releases.services.versions import release_new_version, release_withdraw
from releases.translations import diff_translate, field_problem

DIFF_FIELD_NAMES = {
    "from": gettext_lazy("The earlier version"),
    "to": gettext_lazy("The later version"),
}


def catalog_diff(request, slug: str):
    """What changed between two published versions (``?from=1&to=2``); without them, or with
    bad ones, the form to choose them, naming what was wrong (400)."""
    published = selectors.release_list_published().filter(series__slug=slug)
    versions = list(published.order_by("version").values_list("version", flat=True))
    if not versions:
        raise Http404("No published release with this name.")
    latest = published.order_by("-version").first()
    before, after, problems = version_pair_parse(request.GET)
    context = {
        "slug": slug,
        "title": latest.title,
        "versions": versions,
        "chosen": {"from": before, "to": after},
        "errors": [],
        "diff": None,
    }
    if problems:
        asked = {"from", "to"} & set(request.GET)
        context["errors"] = [
            field_problem(DIFF_FIELD_NAMES[name], [VERSION_MESSAGE]) for name in problems if asked
        ]
        return render(request, "catalog/version_diff.html", context, status=400 if asked else 200)
    first, second = version_pair_get(slug, before, after)
    context["diff"] = diff_data(first, second, request)
    diff_translate(context["diff"])
    context["max_cells"] = settings.CATALOG_MAX_INLINE_BINS
    return render(request, "catalog/version_diff.html", context)


def _refused(request, error: ValidationFailed, outcome: str) -> None:
    """Each of a refusal's messages, after what did not happen."""
    for texts in error.errors.values():
        for text in texts:
            messages.error(
                request,
                pgettext("what did not happen, then why", "%(outcome)s: %(problem)s")
                % {"outcome": outcome, "problem": refusal_text(text)},
            )


@curator_required
@require_POST
def release_withdraw_view(request, pk: int):
    """The status page's "Withdraw this version" form (see release_withdraw)."""
    release = owned_release_get(request, pk)
    try:
        release_withdraw(release=release, user=request.user, reason=request.POST.get("reason"))
    except ValidationFailed as error:
        _refused(request, error, gettext("Nothing was withdrawn"))
    except Conflict as refusal:
        messages.error(request, refusal_text(refusal.detail))
    else:
        messages.success(
            request,
            gettext(
                "Version %(version)s is withdrawn: it stays in the catalog, marked withdrawn "
                "with your reason."
            )
            % {"version": release.version},
        )
    return redirect("release-status", pk=release.pk)


@curator_required
@require_POST
def release_new_version_view(request, pk: int):
    """The status page's "New version" button: a draft with the same definition and statistics,
    opened at the wizard's confirm step (earlier steps can change it)."""
    release = owned_release_get(request, pk)
    try:
        draft = release_new_version(release=release, user=request.user)
    except ValidationFailed as error:
        _refused(request, error, gettext("No new version was drafted"))
    except Conflict as refusal:
        messages.error(request, refusal_text(refusal.detail))
    else:
        messages.success(
            request,
            gettext(
                "A draft of the next version was made with the same definition and statistics. "
                "Change them in the earlier steps, or submit it here."
            ),
        )
        return redirect("wizard-confirm", pk=draft.pk)
    return redirect("release-status", pk=release.pk)
