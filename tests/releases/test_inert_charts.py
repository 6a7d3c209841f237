"""Chart labels from curator input reach Plotly as text (issue 7, point 9): Plotly reads links,
styles and line breaks from a subset of HTML in its labels, so the page hands it only labels whose
``&``, ``<`` and ``>`` are entities, which Plotly shows literally."""

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from releases.models import Release
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create, release_submit
from releases.views import plotly_text
from tests.conftest import csv_upload

LINK = '<a href="https://evil.example">x</a>'
STYLED = '<span style="font-size:90px">big</span>'
BREAK = "two<br>lines"
ENTITY = "&lt;b&gt;"  # typed literally: must be shown as these nine characters
COMPANY = "AT&T"
CATEGORIES = [LINK, STYLED, BREAK, ENTITY, COMPANY]
COLUMN = "<b>visits</b>"


def csv_cell(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def hostile_draft(curator) -> Release:
    """A draft whose category names, column name and title are HTML that Plotly would read as
    markup."""
    rows = [",".join(["group", csv_cell(COLUMN), "age"])]
    rows += [f"{csv_cell(name)},{index},{index * 10}" for index, name in enumerate(CATEGORIES)]
    dataset = dataset_create(
        owner=curator,
        name="Hostile labels",
        upload=csv_upload(("\n".join(rows) + "\n").encode()),
        budget_epsilon="1.0",
    )
    dataset = dataset_schema_update(
        dataset=dataset,
        user=curator,
        schema={
            "columns": {
                "group": {"kind": "categorical", "categories": CATEGORIES},
                COLUMN: {"kind": "numeric", "lower": 0, "upper": 10},
                "age": {"kind": "numeric", "lower": 0, "upper": 100},
            },
            "declared_size": 5,
        },
    )
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Labels <i>test</i>",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[
            {"kind": "count"},
            {"kind": "histogram", "column": "group"},
            {"kind": "sum", "columns": [COLUMN, "age"]},
            {"kind": "marginal", "columns": ["group", COLUMN], "bins": {COLUMN: [0, 5, 10]}},
            {"kind": "range_histogram", "column": COLUMN, "bins": 10},
        ],
    )
    return draft


@pytest.fixture
def hostile_release(curator, django_capture_on_commit_callbacks) -> Release:
    draft = hostile_draft(curator)
    with django_capture_on_commit_callbacks(execute=True):
        release_submit(release=draft, user=curator)  # the eager task runs on commit
    draft.refresh_from_db()
    assert draft.status == Release.Status.PUBLISHED
    return draft


def chart_data(page: str) -> list[dict]:
    match = re.search(r'<script id="chart-data" type="application/json">(.*?)</script>', page, re.S)
    assert match is not None
    return json.loads(match.group(1))


def test_chart_labels_from_curator_input_are_escaped_for_plotly(client, hostile_release):
    # when
    response = client.get(f"/catalog/{hostile_release.series.slug}/v1/")

    # then each label is the curator's text with &, < and > as entities, and no other change
    # (compared sorted: PostgreSQL's jsonb does not keep the order of a statistic's keys)
    assert response.status_code == 200
    histogram, vector, table, ranged = chart_data(response.content.decode())
    assert sorted(histogram["labels"]) == sorted(
        [
            '&lt;a href="https://evil.example"&gt;x&lt;/a&gt;',
            '&lt;span style="font-size:90px"&gt;big&lt;/span&gt;',
            "two&lt;br&gt;lines",
            "&amp;lt;b&amp;gt;",
            "AT&amp;T",
        ]
    )
    assert histogram["title"] == "histogram of group"
    assert sorted(vector["labels"]) == ["&lt;b&gt;visits&lt;/b&gt;", "age"]
    assert vector["title"] == "sum of &lt;b&gt;visits&lt;/b&gt;, age"
    for chart in (histogram, vector):
        for text in [*chart["labels"], chart["title"], chart["axis"]]:
            assert "<" not in text
            assert ">" not in text
    # the table's heatmap and the range histogram's bars: every text escaped the same way
    assert sorted(table["y"]) == sorted(histogram["labels"])
    assert table["x_axis"] == ranged["x_axis"] == "&lt;b&gt;visits&lt;/b&gt;"
    assert table["title"] == "Table of group, &lt;b&gt;visits&lt;/b&gt;"
    for text in [*table["x"], *table["y"], table["title"], table["y_axis"], ranged["title"]]:
        assert "<" not in text
        assert ">" not in text


def test_chart_page_keeps_its_labels_in_a_json_script_and_no_inline_script(client, hostile_release):
    # when
    page = client.get(f"/catalog/{hostile_release.series.slug}/v1/").content.decode()

    # then every <script> is either the JSON data or a file from /static/
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S)
    for attributes, body in scripts:
        assert 'type="application/json"' in attributes or (
            'src="/static/' in attributes and body == ""
        )
    assert LINK not in page  # the raw markup appears nowhere, escaped or not, as HTML


# Plotly's own decoding (plotly.js src/lib/svg_text_utils.js, convertEntities): one pass over
# named and numeric entities, outside tags.
PLOTLY_ENTITY = re.compile(r"&(#\d+|#x[\da-fA-F]+|[a-z]+);")
PLOTLY_NAMES = {
    "mu": "\u03bc",
    "amp": "&",
    "lt": "<",
    "gt": ">",
    "nbsp": "\xa0",
    "times": "\xd7",
    "plusmn": "\xb1",
    "deg": "\xb0",
}


def plotly_decode(text: str) -> str:
    def character(match: re.Match) -> str:
        name = match.group(1)
        if name.startswith("#x"):
            return chr(int(name[2:], 16))
        if name.startswith("#"):
            return chr(int(name[1:]))
        return PLOTLY_NAMES.get(name, match.group(0))

    return PLOTLY_ENTITY.sub(character, text)


@given(st.text())
def test_plotly_text_has_no_markup_and_plotly_shows_the_curators_text(text):
    # when
    escaped = plotly_text(text)

    # then no tag can start, and Plotly's entity decoding gives back exactly the curator's text
    assert "<" not in escaped
    assert ">" not in escaped
    assert plotly_decode(escaped) == text


def test_plotly_decode_is_a_faithful_negative_control():
    # given text that is not escaped: Plotly would turn a typed entity into another character
    # when / then
    assert plotly_decode(ENTITY) == "<b>"
    assert plotly_decode(plotly_text(ENTITY)) == ENTITY
