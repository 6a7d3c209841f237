"""The ``kmeans`` kind after the worker: submitted through the API, run, published, and read by
the public through the version API, the CSV and JSON files and the version page."""

import csv
import html
import io
import json
import math
import re

import pytest

from privacy_engine.presentation import interval_halfwidth, published_interval, published_value
from releases.models import NoisyAnswer, Release
from releases.services import runs
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.runs import CSV_FIELDS, FORMULA_TRIGGERS, release_csv
from tests.conftest import csv_upload

BOUNDS = {"lower": 0, "upper": 255}
# Three groups of colours around (40, 40, 200), (200, 60, 40) and (120, 220, 120).
CENTRES = [(40, 40, 200), (200, 60, 40), (120, 220, 120)]
PIXELS = b"r,g,b,shade\n" + b"".join(
    f"{r + i % 7 - 3},{g + i % 5 - 2},{b + i % 3 - 1},{('dark', 'light')[i % 2]}\n".encode()
    for i in range(360)
    for r, g, b in [CENTRES[i % 3]]
)
PIXELS_SCHEMA = {
    "columns": {
        "r": {"kind": "numeric", **BOUNDS},
        "g": {"kind": "numeric", **BOUNDS},
        "b": {"kind": "numeric", **BOUNDS},
        "shade": {"kind": "categorical", "categories": ["dark", "light"]},
    },
    "declared_size": 360,
}
CLUSTERS = {"kind": "kmeans", "columns": ["r", "g", "b"], "k": 3, "iterations": 4}


@pytest.fixture
def pixels(curator):
    created = dataset_create(
        owner=curator, name="Pixels", upload=csv_upload(PIXELS, "pixels.csv"), budget_epsilon="20"
    )
    return dataset_schema_update(dataset=created, user=curator, schema=PIXELS_SCHEMA)


def body(dataset_id: int, *queries: dict, epsilon: float = 6.0) -> dict:
    return {
        "dataset": dataset_id,
        "title": "Pixel colours",
        "definition": {"kind": "pure_dp", "epsilon": epsilon},
        "queries": list(queries),
    }


def publish(client, capture, payload: dict) -> Release:
    """A draft created, submitted and run (the eager task) through the API."""
    created = client.post("/api/v1/releases/", payload, format="json")
    assert created.status_code == 201, created.json()
    with capture(execute=True):
        submitted = client.post(f"/api/v1/releases/{created.json()['id']}/submit/")
    assert submitted.status_code == 202, submitted.json()
    release = Release.objects.get(pk=created.json()["id"])
    assert release.status == Release.Status.PUBLISHED, release.failure_reason
    return release


def version_of(client, release: Release) -> dict:
    response = client.get(f"/api/v1/catalog/{release.series.slug}/versions/{release.version}/")
    assert response.status_code == 200
    return response.json()


def download(client, version: dict, file_format: str) -> str:
    (entry,) = [f for f in version["files"] if f["format"] == file_format]
    response = client.get(entry["url"])
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


def chart_data(page: str) -> list[dict]:
    script = re.search(r'<script id="chart-data" type="application/json">(.*?)</script>', page)
    assert script is not None
    return json.loads(script.group(1))


@pytest.fixture
def mixed(curator_client, pixels, django_capture_on_commit_callbacks):
    """A published release of a count, centroids of r, g and b, a histogram and a sum."""
    return publish(
        curator_client,
        django_capture_on_commit_callbacks,
        body(
            pixels.pk,
            {"kind": "count"},
            CLUSTERS,
            {"kind": "histogram", "column": "shade"},
            {"kind": "sum", "column": "r"},
        ),
    )


def test_a_kmeans_draft_previews_one_coordinates_accuracy(curator_client, pixels):
    # when
    response = curator_client.post("/api/v1/releases/", body(pixels.pk, CLUSTERS), format="json")

    # then
    assert response.status_code == 201, response.json()
    (preview,) = response.json()["preview"]
    assert (preview["kind"], preview["column"], preview["columns"]) == (
        "kmeans",
        None,
        ["r", "g", "b"],
    )
    assert preview["mechanism"] == "laplace+geometric"
    assert 0 < preview["ci95_halfwidth"] <= 255


def test_the_version_api_publishes_a_row_per_centroid_with_its_intervals(mixed, anonymous_client):
    # when
    version = version_of(anonymous_client, mixed)

    # then
    assert [s["kind"] for s in version["statistics"]] == ["count", "kmeans", "histogram", "sum"]
    statistic = version["statistics"][1]
    assert statistic["column"] is None
    assert statistic["columns"] == ["r", "g", "b"]
    assert statistic["mechanism"] == "laplace+geometric"
    assert statistic["epsilon"] == pytest.approx(1.5)
    assert len(statistic["parts"]) == 2 * CLUSTERS["iterations"]
    assert [(p["iteration"], p["role"]) for p in statistic["parts"][:2]] == [
        (1, "count"),
        (1, "sum"),
    ]
    assert isinstance(statistic["value"], list)
    assert isinstance(statistic["ci95"], list)
    assert [row["cluster"] for row in statistic["value"]] == [1, 2, 3]
    for row, interval in zip(statistic["value"], statistic["ci95"], strict=True):
        assert list(row) == ["cluster", "size", "r", "g", "b"]
        assert list(interval) == ["cluster", "size", "r", "g", "b"]
        assert interval["cluster"] == row["cluster"]
        assert isinstance(row["size"], int)
        assert row["size"] >= 0
        low, high = interval["size"]
        assert low <= row["size"] <= high
        for column in ("r", "g", "b"):
            low, high = interval[column]
            assert 0 <= low <= row[column] <= high <= 255
    # The other kinds keep their shapes.
    assert isinstance(version["statistics"][0]["value"], int | float)
    assert set(version["statistics"][2]["value"]) == {"dark", "light"}


def test_centroid_rows_keep_their_published_key_order_when_the_database_reorders_them(
    curator_client, pixels, anonymous_client, django_capture_on_commit_callbacks, monkeypatch
):
    # given the stored rows' keys reordered as PostgreSQL's jsonb does (shortest first), as
    # stored, before publication (a published answer never changes)
    def jsonb(row: dict) -> dict:
        return {key: row[key] for key in sorted(row, key=lambda k: (len(k), k))}

    publish_stored = runs._publish

    def publish_reordered(release_id: int, claim_token: str) -> None:
        answer = NoisyAnswer.objects.get(release_id=release_id, position=1)
        statistic = answer.statistic
        statistic["value"] = [jsonb(row) for row in statistic["value"]]
        statistic["ci95"] = [jsonb(row) for row in statistic["ci95"]]
        NoisyAnswer.objects.filter(pk=answer.pk).update(statistic=statistic)
        publish_stored(release_id, claim_token)

    monkeypatch.setattr(runs, "_publish", publish_reordered)
    release = publish(
        curator_client,
        django_capture_on_commit_callbacks,
        body(pixels.pk, {"kind": "count"}, CLUSTERS),
    )
    stored = NoisyAnswer.objects.get(release=release, position=1).statistic["value"][0]
    assert list(stored) == ["b", "g", "r", "size", "cluster"]

    # when
    (row, *_) = version_of(anonymous_client, release)["statistics"][1]["value"]

    # then
    assert list(row) == ["cluster", "size", "r", "g", "b"]


def test_the_csv_writes_a_row_per_centroid_and_stays_rectangular(mixed, anonymous_client):
    # given
    version = version_of(anonymous_client, mixed)
    centroids = version["statistics"][1]

    # when
    text = download(anonymous_client, version, "csv")

    # then every row has every header's cell
    table = list(csv.reader(io.StringIO(text, newline="")))
    header, rows = table[0], table[1:]
    assert header == [
        *CSV_FIELDS,
        "cluster",
        "size",
        "size_ci95_low",
        "size_ci95_high",
        *(f"{c}{suffix}" for c in "rgb" for suffix in ("", "_ci95_low", "_ci95_high")),
    ]
    assert all(len(row) == len(header) for row in rows)
    records = [dict(zip(header, row, strict=True)) for row in rows]
    assert [r["kind"] for r in records] == ["count", "kmeans", "kmeans", "kmeans"] + [
        "histogram"
    ] * 2 + ["sum"]
    clusters = [r for r in records if r["kind"] == "kmeans"]
    for record, row, interval in zip(clusters, centroids["value"], centroids["ci95"], strict=True):
        assert record["statistic"] == "1"
        assert record["column"] == "r, g, b"
        assert (record["category"], record["value"], record["ci95_low"]) == ("", "", "")
        assert int(record["cluster"]) == row["cluster"]
        assert int(record["size"]) == row["size"]
        assert [int(record["size_ci95_low"]), int(record["size_ci95_high"])] == interval["size"]
        for column in "rgb":
            # Rounded to the precision of the coordinate's interval, its ends outwards.
            low, high = interval[column]
            halfwidth = interval_halfwidth(low, high)
            assert record[column] == str(published_value(row[column], halfwidth=halfwidth))
            assert [
                record[f"{column}_ci95_low"],
                record[f"{column}_ci95_high"],
            ] == [str(end) for end in published_interval(low, high)]
        assert record["mechanism"] == "laplace+geometric"
        assert float(record["epsilon"]) == pytest.approx(1.5)
    # The other kinds' rows fill the usual columns and leave the centroid ones empty.
    for record in records:
        if record["kind"] != "kmeans":
            float(record["value"])
            assert all(record[field] == "" for field in header[len(CSV_FIELDS) :])


def test_the_json_file_holds_the_rows_as_published(mixed, anonymous_client):
    # given
    version = version_of(anonymous_client, mixed)

    # when
    document = json.loads(download(anonymous_client, version, "json"))

    # then
    (published,) = [s for s in document["statistics"] if s["kind"] == "kmeans"]
    api = version["statistics"][1]
    assert published["value"] == api["value"]
    assert published["ci95"] == api["ci95"]
    assert published["parts"] == api["parts"]
    assert [list(row) for row in published["value"]] == [["cluster", "size", "r", "g", "b"]] * 3


def test_the_public_page_shows_the_clusters_table_and_chart(mixed, anonymous_client):
    # given
    centroids = version_of(anonymous_client, mixed)["statistics"][1]

    # when
    response = anonymous_client.get(f"/catalog/{mixed.series.slug}/v1/")

    # then the sentence, the table (every size and coordinate with its interval) and the chart
    assert response.status_code == 200
    page = response.content.decode()
    section = page.split('id="statistic-1"', 1)[1].split('id="statistic-2"', 1)[0]
    text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section)))
    assert "Clusters (k-means) of r, g, b" in text
    assert (
        "What was clustered: the records' values of r, g and b, grouped into 3 clusters by "
        "4 iterations of private k-means" in text
    )
    assert '<div id="chart-1" class="chart" role="figure"' in section
    assert '<th scope="col">Size</th><th scope="col">r</th>' in section
    rows = re.findall(r"<tr><th scope=\"row\">(\d+)</th>(.*?)</tr>", section)
    assert [int(cluster) for cluster, _ in rows] == [1, 2, 3]
    for (_, cells), row, interval in zip(rows, centroids["value"], centroids["ci95"], strict=True):
        cell_text = re.sub(r"<[^>]+>", "", cells)
        assert f"{row['size']} (95% interval {interval['size'][0]} – {interval['size'][1]})" in (
            cell_text
        )
        assert cell_text.count("95% interval") == 4
    assert "iteration 4 sum: laplace" in text
    charts = chart_data(page)
    assert [c["id"] for c in charts] == ["chart-1", "chart-2"]
    chart = charts[0]
    assert chart["clusters"] is True
    assert (chart["x_axis"], chart["y_axis"]) == ("r", "g")
    assert chart["x"]["values"] == [row["r"] for row in centroids["value"]]
    assert chart["y"]["values"] == [row["g"] for row in centroids["value"]]
    assert chart["x"]["minus"] == pytest.approx(
        [row["r"] - i["r"][0] for row, i in zip(centroids["value"], centroids["ci95"], strict=True)]
    )
    assert chart["y"]["plus"] == pytest.approx(
        [i["g"][1] - row["g"] for row, i in zip(centroids["value"], centroids["ci95"], strict=True)]
    )
    assert chart["sizes"] == [row["size"] for row in centroids["value"]]
    largest = max(chart["sizes"])
    assert max(chart["marker_sizes"]) == 48
    for size, diameter in zip(chart["sizes"], chart["marker_sizes"], strict=True):
        assert diameter == pytest.approx(max(8, 48 * math.sqrt(size / largest)), abs=0.01)
    assert all("<br>b " in hover and "size " in hover for hover in chart["hover"])


def test_the_curator_status_page_lists_every_centroid(client, curator, mixed):
    # given
    client.force_login(curator)

    # when
    page = client.get(f"/releases/{mixed.pk}/").content.decode()

    # then
    assert "cluster 1: size" in page
    assert "cluster 3: b" in page


def test_one_column_is_drawn_as_a_dot_per_cluster_and_names_are_inert(
    curator, curator_client, anonymous_client, django_capture_on_commit_callbacks
):
    # given a column whose name is markup
    name = "<i>hue</i>"
    table = f"{name},r\n".encode() + b"".join(
        f"{(i * 37) % 100},{i % 50}\n".encode() for i in range(200)
    )
    dataset = dataset_create(
        owner=curator, name="Hues", upload=csv_upload(table, "hues.csv"), budget_epsilon="5"
    )
    dataset = dataset_schema_update(
        dataset=dataset,
        user=curator,
        schema={"columns": {name: {"kind": "numeric", "lower": 0, "upper": 100}}},
    )
    release = publish(
        curator_client,
        django_capture_on_commit_callbacks,
        body(dataset.pk, {"kind": "kmeans", "columns": [name], "k": 2}, epsilon=4),
    )

    # when
    page = anonymous_client.get(f"/catalog/{release.series.slug}/v1/").content.decode()

    # then
    (chart,) = chart_data(page)
    assert "y" not in chart
    assert "y_axis" not in chart
    assert chart["names"] == ["cluster 1", "cluster 2"]
    assert chart["x_axis"] == "&lt;i&gt;hue&lt;/i&gt;"
    assert all("&lt;i&gt;hue&lt;/i&gt; " in hover for hover in chart["hover"])
    assert "<i>hue</i>" not in page
    assert "Dot plot of the 2 cluster centres on &lt;i&gt;hue&lt;/i&gt;" in page
    # no iterations given and no declared size: the default 5, on the page and in the rule
    assert "grouped into 2 clusters by 5 iterations of private k-means" in page
    assert "5 iterations (chosen automatically: no declared size, so the default 5)" in page


def test_automatic_iterations_round_trip_and_are_published_as_used(
    curator_client, pixels, anonymous_client, django_capture_on_commit_callbacks
):
    # given clusters without iterations at ε = 15 on a table declared as 360 records: Su et
    # al.'s rule gives ⌊15 / 2.43⌋ = 6
    automatic = {"kind": "kmeans", "columns": ["r", "g", "b"], "k": 3}

    # when it is drafted, read back, simulated and published
    created = curator_client.post(
        "/api/v1/releases/", body(pixels.pk, automatic, epsilon=15), format="json"
    )
    assert created.status_code == 201, created.json()
    draft = curator_client.get(f"/api/v1/releases/{created.json()['id']}/").json()
    simulated = curator_client.get(
        f"/api/v1/releases/{created.json()['id']}/simulated-preview/"
    ).json()
    with django_capture_on_commit_callbacks(execute=True):
        submitted = curator_client.post(f"/api/v1/releases/{created.json()['id']}/submit/")
    assert submitted.status_code == 202, submitted.json()
    release = Release.objects.get(pk=created.json()["id"])
    assert release.status == Release.Status.PUBLISHED, release.failure_reason
    statistic = version_of(anonymous_client, release)["statistics"][0]
    page = anonymous_client.get(f"/catalog/{release.series.slug}/v1/").content.decode()

    # then the query stays automatic, and the preview, the parts, the rule and the page say 6
    assert draft["queries"] == [automatic]
    assert release.queries == [automatic]
    assert simulated["results"][0]["objective_ratio"]["iterations"] == 6
    assert len(statistic["parts"]) == 12
    assert statistic["parts"][-1]["iteration"] == 6
    assert (
        "6 iterations (chosen automatically by Su et al.'s rule, as diffprivlib does, from ε, "
        "k, the 3 columns and the declared size of about 360 records: from 2 to 7), each with "
        "ε/12 for the counts"
    ) in statistic["rule"]
    assert "grouped into 3 clusters by 6 iterations of private k-means" in page


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({**CLUSTERS, "k": 50}, "queries.0.k", "from 2 to 20"),
        ({**CLUSTERS, "columns": ["r", "shade"]}, "queries.0.columns", "'shade' is not numeric"),
        ({**CLUSTERS, "iterations": 0}, "queries.0.iterations", "from 1 to 20"),
        (
            {**CLUSTERS, "columns": [f"c{i}" for i in range(11)]},
            "queries.0.columns",
            "1 to 10 different numeric columns",
        ),
    ],
)
def test_a_bad_kmeans_query_is_a_400_naming_the_field(
    curator_client, pixels, query, field, message
):
    # when
    response = curator_client.post("/api/v1/releases/", body(pixels.pk, query), format="json")

    # then
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert list(errors) == [field]
    assert message.replace(" is not numeric", "") in errors[field][0]


# Unit tests of the writer: column names that would repeat a header or look like formulas.


def centroids(columns: list[str], kind: str = "kmeans") -> dict:
    return {
        "kind": kind,
        "column": None,
        "columns": columns,
        "value": [
            {"cluster": 1, "size": 10, **{c: -1.5 for c in columns}},
            {"cluster": 2, "size": 0, **{c: 2.0 for c in columns}},
        ],
        "ci95": [
            {"cluster": 1, "size": [4, 16], **{c: [-3.0, 0.5] for c in columns}},
            {"cluster": 2, "size": [0, 6], **{c: [0.0, 4.0] for c in columns}},
        ],
        "mechanism": "laplace+geometric",
        "epsilon": 1.0,
        "delta": 0.0,
        "sensitivity": 5.0,
        "noise_scale": 40.0,
        "rule": "rule",
    }


def read(content: bytes) -> tuple[list[str], list[dict[str, str]]]:
    table = list(csv.reader(io.StringIO(content.decode(), newline="")))
    assert len(table) > 1
    assert all(len(row) == len(table[0]) for row in table)
    return table[0], [dict(zip(table[0], row, strict=True)) for row in table[1:]]


def test_coordinate_columns_never_repeat_a_header():
    # given columns named like the CSV's own fields, and like each other's interval fields
    columns = ["value", "size_ci95_low", "x", "x_ci95_low"]

    # when
    header, rows = read(release_csv([centroids(columns)]))

    # then each header is once, and each coordinate is found under its own name
    assert len(set(header)) == len(header)
    fields = header[len(CSV_FIELDS) + 4 :]
    assert fields == [
        "centroid_value",
        "centroid_value_ci95_low",
        "centroid_value_ci95_high",
        "centroid_size_ci95_low",
        "centroid_size_ci95_low_ci95_low",
        "centroid_size_ci95_low_ci95_high",
        "x",
        "x_ci95_low",
        "x_ci95_high",
        "centroid_x_ci95_low",
        "centroid_x_ci95_low_ci95_low",
        "centroid_x_ci95_low_ci95_high",
    ]
    assert [row["size"] for row in rows] == ["10", "0"]
    assert [row["centroid_value"] for row in rows] == ["-1.5", "2"]
    assert [row["x_ci95_low"] for row in rows] == ["-3", "0"]
    assert [row["centroid_x_ci95_low_ci95_high"] for row in rows] == ["0.5", "4"]


def test_two_kmeans_statistics_share_a_column_and_names_like_formulas_are_escaped():
    # given two sets of centroids sharing "r", one over a column named like a formula
    first, second = centroids(["r", "=cmd()"]), centroids(["r", "g"])
    count = {**centroids([]), "kind": "count", "value": 7, "ci95": [5, 9], "columns": None}

    # when
    header, rows = read(release_csv([first, count, second]))

    # then
    assert header[len(CSV_FIELDS) + 4 :] == [
        "r",
        "r_ci95_low",
        "r_ci95_high",
        "'=cmd()",
        "'=cmd()_ci95_low",
        "'=cmd()_ci95_high",
        "g",
        "g_ci95_low",
        "g_ci95_high",
    ]
    assert not any(name.startswith(FORMULA_TRIGGERS) for name in header)
    assert [row["statistic"] for row in rows] == ["0", "0", "1", "2", "2"]
    assert rows[0]["column"] == "r, =cmd()"
    assert (rows[0]["'=cmd()"], rows[3]["'=cmd()"], rows[3]["g"]) == ("-1.5", "", "-1.5")
    assert (rows[2]["value"], rows[2]["cluster"], rows[2]["r"]) == ("7", "", "")


def test_a_release_without_centroids_keeps_the_usual_header():
    count = {**centroids([]), "kind": "count", "value": 7, "ci95": [5, 9], "columns": None}

    header, _ = read(release_csv([count]))

    assert header == CSV_FIELDS
