"""The Content-Security-Policy every response carries (issue 12, point 6): scripts and styles from
the app's origin only. Browser tests fail on any violation (tests/browser/conftest.py);
tests/browser/test_content_security_policy.py shows that watch catching one."""

import re
from pathlib import Path

import plotly
import pytest

PLOTLY_MAP_STYLE_ID = "9f215cf04c5486422605d13261cb87401f4e7763b6296af81e98efbc0130da53"


def policy(response) -> dict[str, list[str]]:
    directives = {}
    for part in response["Content-Security-Policy"].split(";"):
        name, *sources = part.split()
        directives[name] = sources
    return directives


@pytest.mark.parametrize(
    "path",
    ["/", "/catalog/", "/accounts/login/", "/api/docs/", "/api/v1/catalog/", "/admin/login/"],
)
def test_every_kind_of_response_carries_the_policy(client, db, path):
    # when
    response = client.get(path)

    # then
    assert response.status_code == 200
    directives = policy(response)
    assert directives["default-src"] == ["'self'"]
    assert directives["script-src"] == ["'self'", "'report-sample'"]
    assert "'unsafe-inline'" not in directives["style-src"]
    # style attributes only (Plotly's): they cannot run code or load anything
    assert directives["style-src-attr"] == ["'unsafe-inline'"]
    assert "'unsafe-eval'" not in directives["script-src"]
    assert directives["object-src"] == ["'none'"]
    assert directives["frame-ancestors"] == ["'none'"]


def test_no_template_has_an_inline_script_or_style():
    # Inline code would be refused by the policy; data lives in data- attributes and JSON blocks.
    templates = Path(__file__).resolve().parents[2] / "templates"
    offenders = []
    for template in templates.rglob("*.html"):
        text = template.read_text()
        for pattern in (
            r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>",
            r"\sstyle=\"",
            r"<style",
            r"\son[a-z]+=\"",
        ):
            offenders += [f"{template.name}: {m.group(0)}" for m in re.finditer(pattern, text)]
    assert offenders == []


def test_the_placeholder_that_keeps_plotly_from_injecting_map_styles_matches_plotly():
    # When Plotly is upgraded, its map style's id changes: the placeholder must follow it.
    bundle = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert f'getElementById("{PLOTLY_MAP_STYLE_ID}")' in bundle.read_text()
    partial = Path(__file__).resolve().parents[2] / "templates" / "partials" / "plotly.html"
    assert f'<template id="{PLOTLY_MAP_STYLE_ID}">' in partial.read_text()
