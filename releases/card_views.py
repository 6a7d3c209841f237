"""A published version's release card: one printable page (A4) stating the guarantee, every
statistic with its mechanism and 95% interval, the files with their SHA-256, and what anchors
them (the signed metadata's hash, the audit head, the signing key's fingerprint)."""

from django.http import Http404
from django.shortcuts import render

from releases import selectors
from releases.apis.versions import release_withdrawal
from releases.models import ReleaseFile
from releases.risk_selectors import risk_card_for_version
from releases.services.signed_metadata import release_metadata_read
from releases.translations import definition_name, files_translate, statistics_translate

# Cells listed per statistic on the card; a longer one (a large histogram) refers to the files,
# so the card stays a few pages long.
CARD_MAX_CELLS = 40


def release_card(request, slug: str, version: int):
    release = selectors.release_get_published(slug=slug, version=version)
    if release is None:
        raise Http404("No published release with this name and version.")
    metadata = release_metadata_read(release=release)
    planned = {s["position"]: s for s in (metadata or {}).get("statistics", [])}
    statistics = selectors.release_statistics(release=release)
    statistics_translate(statistics)
    for index, stat in enumerate(statistics):
        stat["ci95_halfwidth"] = planned.get(index, {}).get("ci95_halfwidth")
        rows = stat.get("cell_rows")
        stat["card_rows"] = rows[:CARD_MAX_CELLS] if rows else None
        stat["card_rows_left"] = max(0, len(rows) - CARD_MAX_CELLS) if rows else 0
        interval = stat.get("ci95")
        stat["card_scalar"] = (
            not isinstance(stat["value"], dict | list)
            and isinstance(interval, list)
            and len(interval) == 2
            and all(isinstance(end, int | float) for end in interval)
        )
    files = selectors.release_file_links(release=release)
    files_translate(files)
    signed = {f["format"]: f for f in files}.get(ReleaseFile.Format.METADATA)
    return render(
        request,
        "catalog/card.html",
        {
            "release": release,
            "definition_name": definition_name(str(release.definition.get("kind", ""))),
            # Said at the top, as on the version's page: the card must not outlive a withdrawal
            # unmarked (a withdrawal starts a new catalog generation, so no cached card does).
            "withdrawal": release_withdrawal(release),
            "statistics": statistics,
            "files": files,
            "risk": risk_card_for_version(release=release),
            "metadata": metadata,
            "metadata_sha256": signed["sha256"] if signed else None,
        },
    )


def release_card_cache_key(request, slug: str, version: int) -> list:
    """What the card will answer (public_cache): the version alone, whatever the query string.
    Its withdrawal needs no part here: public_cache adds the catalog's generation, which every
    withdrawal changes (as for the version's page)."""
    return [slug, version]
