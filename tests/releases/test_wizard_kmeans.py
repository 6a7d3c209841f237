"""k-means in the curator wizard: numeric columns ticked, k and the iterations typed (or left
empty: automatic), the engine's query saved, shown again as it was saved, and the engine's
refusals named at the field."""

import html
import re

import pytest

from releases.models import Release
from releases.services.releases import release_draft_create
from tests.conftest import statistics_formset

# In CLINIC_SCHEMA: age is numeric in 0–100, visits numeric in 0–10, sex categorical (F, M).
CLUSTERS = {"kind": "kmeans", "columns": ["age", "visits"], "k": 3, "iterations": 5}


@pytest.fixture
def release(curator, dataset):
    return release_draft_create(
        user=curator,
        dataset=dataset,
        title="Clusters",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "count"}],
    )


def statistics_post(**row) -> dict:
    return statistics_formset({"kind": "kmeans", **row})


def statistic_rows(page: str) -> list[str]:
    table = page.split('<table id="statistics">', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<tr class="statistic-row">(.*?)</tr>', table, re.DOTALL)


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


def test_the_wizard_builds_kmeans_up_to_the_preview(client, curator, release):
    # given
    client.force_login(curator)

    # when the curator ticks two numeric columns and asks for 3 clusters in 5 iterations
    saved = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_post(columns=["age", "visits"], k="3", iterations="5"),
    )

    # then the engine's query is saved and previewed
    assert saved.status_code == 302, statistic_rows(saved.content.decode())
    assert saved["Location"] == f"/releases/{release.pk}/preview/"
    release.refresh_from_db()
    assert release.queries == [CLUSTERS]
    assert release.preview[0]["kind"] == "kmeans"
    preview = client.get(f"/releases/{release.pk}/preview/")
    assert preview.status_code == 200
    assert "Clusters (k-means centres)" in preview.content.decode()
    # with the objective ratio of simulated releases on a public table of the declared shape
    assert "Clusters of age, visits: On a simulated table of" in preview.content.decode()


def test_a_new_row_offers_numeric_columns_only_and_starts_at_4_clusters_and_automatic_iterations(
    client, curator, release
):
    # given
    client.force_login(curator)

    # when
    page = client.get(f"/releases/{release.pk}/statistics/").content.decode()
    new_row = page.split('<template id="statistic-template">', 1)[1].split("</template>", 1)[0]

    # then
    boxes = re.findall(
        r'<input type="checkbox" name="stat-__prefix__-columns" value="(\w+)"', new_row
    )
    assert boxes == ["age", "visits"]
    assert 'name="stat-__prefix__-k" value="4"' in new_row
    # the iterations box starts empty (automatic), and says so in plain words
    (box,) = re.findall(r'<input[^>]*name="stat-__prefix__-iterations"[^>]*>', new_row)
    assert "value=" not in box
    assert 'placeholder="automatic"' in box
    assert 'aria-describedby="id_stat-__prefix__-iterations_helptext"' in box
    help_text = re.search(
        r'<small id="id_stat-__prefix__-iterations_helptext">(.*?)</small>', new_row
    ).group(1)
    assert html.unescape(help_text) == (
        "Clusters: rounds of the algorithm, from 1 to 20, each costing a share of ε; leave "
        "empty: chosen from ε and the table's declared size, 2 to 7."
    )


def test_left_empty_the_iterations_are_automatic(client, curator, release):
    # given
    client.force_login(curator)

    # when
    saved = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_post(columns=["visits"], k="2", iterations=""),
    )

    # then the query leaves them to the engine, which chose 2 (ε = 0.5, about 5 records)
    assert saved.status_code == 302
    release.refresh_from_db()
    assert release.queries == [{"kind": "kmeans", "columns": ["visits"], "k": 2}]
    preview = client.get(f"/releases/{release.pk}/preview/").content.decode()
    assert "after 2 iterations was typically" in html.unescape(preview)


def test_a_saved_automatic_row_shows_an_empty_box_and_saves_unchanged(client, curator, release):
    # given a saved k-means statistic with automatic iterations
    client.force_login(curator)
    automatic = {"kind": "kmeans", "columns": ["age", "visits"], "k": 3}
    Release.objects.filter(pk=release.pk).update(queries=[automatic])

    # when the statistics step is shown, then saved with the values it shows
    (row,) = statistic_rows(client.get(f"/releases/{release.pk}/statistics/").content.decode())
    (box,) = re.findall(r'<input[^>]*name="stat-0-iterations"[^>]*>', row)
    saved = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_post(columns=["age", "visits"], k="3", iterations=""),
    )

    # then
    assert "value=" not in box
    assert saved.status_code == 302
    release.refresh_from_db()
    assert release.queries == [automatic]


def test_the_step_shows_kmeans_again_and_saves_it_unchanged(client, curator, release):
    # given a saved k-means statistic after a count
    client.force_login(curator)
    Release.objects.filter(pk=release.pk).update(queries=[{"kind": "count"}, CLUSTERS])

    # when the statistics step is shown, then saved with the values it shows
    _, row = statistic_rows(client.get(f"/releases/{release.pk}/statistics/").content.decode())
    checked = re.findall(r'name="stat-1-columns" value="(\w+)"[^>]*checked', row)
    k = re.search(r'name="stat-1-k" value="(\d+)"', row).group(1)
    iterations = re.search(r'name="stat-1-iterations" value="(\d+)"', row).group(1)
    saved = client.post(
        f"/releases/{release.pk}/statistics/",
        {
            **statistics_post(kind="count"),
            "stat-TOTAL_FORMS": "2",
            "stat-INITIAL_FORMS": "2",
            "stat-1-kind": "kmeans",
            "stat-1-weight": "1",
            "stat-1-columns": checked,
            "stat-1-k": k,
            "stat-1-iterations": iterations,
        },
    )

    # then
    assert '<option value="kmeans" selected>' in row
    assert (checked, k, iterations) == (["age", "visits"], "3", "5")
    assert saved.status_code == 302
    release.refresh_from_db()
    assert release.queries == [{"kind": "count"}, CLUSTERS]


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({"k": "50"}, "k", "must be a whole number of clusters from 2 to 20"),
        ({"k": ""}, "k", "must be a whole number of clusters from 2 to 20"),
        ({"k": "1"}, "k", "must be a whole number of clusters from 2 to 20"),
        ({"k": "four"}, "k", "Enter a whole number."),
        ({"iterations": "21"}, "iterations", "must be a whole number from 1 to 20"),
        ({"iterations": "0"}, "iterations", "must be a whole number from 1 to 20"),
        (
            {"columns": []},
            "columns",
            'name 1 to 10 different numeric columns, e.g. ["r", "g", "b"]',
        ),
        (
            {"columns": ["age", "sex"]},
            "columns",
            "Select a valid choice. sex is not one of the available choices.",
        ),
    ],
)
def test_a_refused_kmeans_comes_back_with_the_message_at_its_field(
    client, curator, release, row, field, message
):
    # given
    client.force_login(curator)

    # when
    response = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_post(**{"columns": ["age", "visits"], "k": "3", "iterations": "5", **row}),
    )

    # then
    assert response.status_code == 200
    [shown] = statistic_rows(response.content.decode())
    assert field_errors(shown, field) == [message]
    assert row_errors(shown) == []
    release.refresh_from_db()
    assert release.queries == [{"kind": "count"}]


def test_a_tables_columns_are_still_refused_for_the_row(client, curator, release):
    # given
    client.force_login(curator)

    # when a table names one column twice (the engine's "columns", not the k-means field)
    response = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_post(kind="marginal", column="sex", second_column="sex"),
    )

    # then the message is the row's, not hidden under the k-means columns
    assert response.status_code == 200
    [shown] = statistic_rows(response.content.decode())
    assert row_errors(shown) == ['name two different columns, e.g. ["sex", "region"]']
    assert field_errors(shown, "columns") == []
