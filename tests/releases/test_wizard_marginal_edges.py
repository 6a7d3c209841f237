"""A table of two numeric columns in the curator wizard: each column gets its own edges (``bins``
for the first, ``second_bins``, "Edges across", for the second), kept when the step is shown
again, and bad edges are named at the field that holds them."""

import html
import re

import pytest

from releases.models import Release
from releases.services.releases import release_draft_create
from tests.conftest import statistics_formset

# In CLINIC_SCHEMA: age is numeric in 0–100, visits numeric in 0–10, sex categorical (F, M).
AGES = "0, 18, 65, 100"
VISITS = "0, 2, 5, 10"
TABLE = {
    "kind": "marginal",
    "columns": ["age", "visits"],
    "bins": {"age": [0.0, 18.0, 65.0, 100.0], "visits": [0.0, 2.0, 5.0, 10.0]},
}


@pytest.fixture
def release(curator, dataset):
    return release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages and visits",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "count"}],
    )


def statistics_post(**row) -> dict:
    return statistics_formset({"kind": "marginal", **row})


def only_row(page: str) -> str:
    table = page.split('<table id="statistics">', 1)[1].split("</table>", 1)[0]
    [row] = re.findall(r'<tr class="statistic-row">(.*?)</tr>', table, re.DOTALL)
    return row


def messages_of(errorlist: re.Match | None) -> list[str]:
    if errorlist is None:
        return []
    return [html.unescape(m) for m in re.findall(r"<li>(.*?)</li>", errorlist.group(1))]


def field_errors(row: str, field: str) -> list[str]:
    """The messages Django shows under one field of the row."""
    return messages_of(
        re.search(rf'<ul class="errorlist" id="id_stat-0-{field}_error">(.*?)</ul>', row)
    )


def row_errors(row: str) -> list[str]:
    """The messages shown for the whole row."""
    return messages_of(re.search(r'<ul class="errorlist nonfield">(.*?)</ul>', row))


def test_two_numeric_columns_get_their_own_edges_up_to_the_preview(client, curator, release):
    # given
    client.force_login(curator)

    # when the table of ages across visits is saved with different edges for each column
    saved = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_post(column="age", second_column="visits", bins=AGES, second_bins=VISITS),
    )

    # then each column is cut by its own edges, and the preview prices the 3 × 3 table
    assert saved.status_code == 302, only_row(saved.content.decode())
    assert saved["Location"] == f"/releases/{release.pk}/preview/"
    release.refresh_from_db()
    assert release.queries == [TABLE]
    assert release.preview[0]["columns"] == ["age", "visits"]
    preview = client.get(f"/releases/{release.pk}/preview/").content.decode()
    assert "each published cell of the table is within ±" in preview


def test_the_step_shows_each_columns_edges_again_and_saves_them_unchanged(client, curator, release):
    # given a saved table of two numeric columns, stored with its columns' edges in the other
    # order (a database need not keep a JSON object's order)
    client.force_login(curator)
    Release.objects.filter(pk=release.pk).update(
        queries=[{**TABLE, "bins": {"visits": [0, 2, 5, 10], "age": [0, 18, 65, 100]}}]
    )

    # when the statistics step is shown, then saved with the values it shows
    row = only_row(client.get(f"/releases/{release.pk}/statistics/").content.decode())
    shown = {
        name: html.unescape(value)
        for name, value in re.findall(r'name="stat-0-(bins|second_bins)" value="([^"]*)"', row)
    }
    saved = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_post(column="age", second_column="visits", **shown),
    )

    # then the first column's edges are in Bins, the second's in Edges across, and they round-trip
    assert shown == {"bins": AGES, "second_bins": VISITS}
    assert '<option value="age" selected>' in row
    assert '<option value="visits" selected>' in row
    assert ">Edges across</label>" in row
    assert saved.status_code == 302
    release.refresh_from_db()
    assert release.queries == [TABLE]


@pytest.mark.parametrize(
    ("second_bins", "message"),
    [
        ("0, two, 10", "must be a list of numbers"),
        ("0, 5, 2, 10", "need at least two increasing edges"),
        ("0, inf", "must be a list of numbers"),
        ("", "give bin edges for the numeric column 'visits'"),
    ],
)
def test_bad_edges_across_are_named_at_their_field(client, curator, release, second_bins, message):
    # given
    client.force_login(curator)

    # when the second column's edges are bad and the first column's good
    response = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_post(column="age", second_column="visits", bins=AGES, second_bins=second_bins),
    )

    # then the page comes back with the message under Edges across, nowhere else
    assert response.status_code == 200
    row = only_row(response.content.decode())
    assert field_errors(row, "second_bins") == [message]
    assert field_errors(row, "bins") == []
    assert row_errors(row) == []
    release.refresh_from_db()
    assert release.queries == [{"kind": "count"}]


@pytest.mark.parametrize(
    ("bins", "second_bins", "message"),
    [
        ("0, 18, x", VISITS, "must be a list of numbers"),
        ("0, 65, 18, 100", VISITS, "need at least two increasing edges"),
        ("0, 65, 18, 100", "0, x", "must be a list of numbers"),  # both read before checked
        ("", VISITS, "give bin edges for the numeric column 'age'"),
    ],
)
def test_bad_first_edges_stay_at_the_bins_field(
    client, curator, release, bins, second_bins, message
):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_post(column="age", second_column="visits", bins=bins, second_bins=second_bins),
    )

    # then the engine's first complaint is shown at the field that caused it
    assert response.status_code == 200
    row = only_row(response.content.decode())
    field = "second_bins" if second_bins == "0, x" else "bins"
    assert field_errors(row, field) == [message]
    assert row_errors(row) == []


def test_edges_off_a_columns_bounds_are_said_at_that_columns_field(client, curator, release):
    # given
    client.force_login(curator)

    # when the second column's edges are well formed but end past its upper bound (10)
    response = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_post(column="age", second_column="visits", bins=AGES, second_bins="0, 5, 20"),
    )

    # then the engine's refusal of the second column's edges is shown at Edges across
    assert response.status_code == 200
    row = only_row(response.content.decode())
    assert field_errors(row, "second_bins") == [
        "the first and last edges must be the column's declared bounds"
    ]
    assert field_errors(row, "bins") == []
    assert row_errors(row) == []


@pytest.mark.parametrize(
    ("row", "bins"),
    [
        # one numeric column, second: the bins cut it, as before, unless edges across are given
        ({"column": "sex", "second_column": "age", "bins": "0, 50, 100"}, {"age": [0, 50, 100]}),
        (
            {"column": "sex", "second_column": "age", "second_bins": "0, 40, 100"},
            {"age": [0, 40, 100]},
        ),
        (
            {
                "column": "sex",
                "second_column": "age",
                "bins": "0, 50, 100",
                "second_bins": "0, 40, 100",
            },
            {"age": [0, 40, 100]},
        ),
        # one numeric column, first: the bins cut it; edges across have no numeric column to cut
        (
            {
                "column": "visits",
                "second_column": "sex",
                "bins": "0, 3, 10",
                "second_bins": "0, 1",
            },
            {"visits": [0, 3, 10]},
        ),
    ],
)
def test_a_table_with_one_numeric_column_is_cut_as_before(client, curator, release, row, bins):
    # given
    client.force_login(curator)

    # when
    saved = client.post(f"/releases/{release.pk}/statistics/", statistics_post(**row))

    # then
    assert saved.status_code == 302, only_row(saved.content.decode())
    release.refresh_from_db()
    assert release.queries == [
        {"kind": "marginal", "columns": [row["column"], row["second_column"]], "bins": bins}
    ]


def test_a_table_with_its_numeric_column_second_shows_its_edges_in_bins(client, curator, release):
    # given a saved table of sex across binned ages
    client.force_login(curator)
    Release.objects.filter(pk=release.pk).update(
        queries=[{"kind": "marginal", "columns": ["sex", "age"], "bins": {"age": [0, 40, 100]}}]
    )

    # when
    row = only_row(client.get(f"/releases/{release.pk}/statistics/").content.decode())

    # then the edges are shown where they are read back from, and Edges across stays empty
    assert 'name="stat-0-bins" value="0, 40, 100"' in row
    assert re.search(r'name="stat-0-second_bins"(?! value=)[^>]*>', row)
