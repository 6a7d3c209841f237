"""Compile every translation catalogue (``locale/*/LC_MESSAGES/django.po``) to the ``.mo`` file
Django reads, in pure Python (polib): no GNU gettext (``msgfmt``) needed, so ``make install``
runs it on any machine. The ``.mo`` files are build products (not in git)."""

import os
import tempfile
from pathlib import Path

import polib
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


def catalogues() -> list[Path]:
    """Every ``django.po`` under the settings' LOCALE_PATHS, in a stable order."""
    return sorted(
        po
        for locale_path in settings.LOCALE_PATHS
        for po in Path(locale_path).glob("*/LC_MESSAGES/django.po")
    )


def catalogue_compile(po_path: Path) -> tuple[Path, int]:
    """Write ``po_path``'s ``.mo`` beside it and return it with its number of translations.
    Untranslated and fuzzy entries are left out (as msgfmt does): they show in English. The file
    is written under a temporary name and renamed, so a running server never reads half of it."""
    catalogue = polib.pofile(str(po_path))
    mo_path = po_path.with_suffix(".mo")
    descriptor, partial = tempfile.mkstemp(dir=po_path.parent, prefix=".django.", suffix=".mo")
    os.close(descriptor)
    try:
        catalogue.save_as_mofile(partial)
        os.chmod(partial, 0o644)
        os.replace(partial, mo_path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return mo_path, len(catalogue.translated_entries())


class Command(BaseCommand):
    help = (
        "Compile locale/*/LC_MESSAGES/django.po to .mo in pure Python (polib), without GNU "
        "gettext. `make install` (and so `make run` and `make test`) runs it."
    )

    def handle(self, *args, **options):
        found = catalogues()
        if not found:
            raise CommandError(f"No django.po under {settings.LOCALE_PATHS}.")
        for po_path in found:
            try:
                mo_path, count = catalogue_compile(po_path)
            except (OSError, ValueError) as error:
                raise CommandError(f"{po_path}: {error}") from error
            if options["verbosity"] > 0:
                self.stdout.write(f"{mo_path}: {count} translations")
