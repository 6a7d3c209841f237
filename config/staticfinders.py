"""Serve Plotly's JavaScript from the installed plotly package, so no page needs a CDN."""

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_FILE = "plotly.min.js"
PREFIX = "vendor"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args, **kwargs) -> None:
        self.storage = FileSystemStorage(location=Path(plotly.__file__).parent / "package_data")
        self.storage.prefix = PREFIX

    def check(self, **kwargs):
        return []

    def find(self, path: str, find_all: bool = False, **kwargs):
        if path == f"{PREFIX}/{PLOTLY_FILE}":
            match = self.storage.path(PLOTLY_FILE)
            return [match] if find_all else match
        return [] if find_all else None

    def list(self, ignore_patterns):
        yield PLOTLY_FILE, self.storage
