"""The ``range_histogram`` kind through the API and the pages: its preview, bad specs named, a
release by the (eager) worker, any range asked of the API and of the page, and the downloads."""

import csv
import io
import json

import pytest

from releases.models import Release

RANGES = {"kind": "range_histogram", "column": "age", "bins": 1000}


def draft(dataset_id: int, *queries: dict) -> dict:
    return {
        "dataset": dataset_id,
        "title": "Ages",
        "definition": {"kind": "pure_dp", "epsilon": 0.5},
        "queries": list(queries),
    }


@pytest.fixture
def published(curator_client, dataset, django_capture_on_commit_callbacks) -> Release:
    created = curator_client.post(
        "/api/v1/releases/", draft(dataset.pk, {"kind": "count"}, RANGES), format="json"
    )
    assert created.status_code == 201, created.json()
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{created.json()['id']}/submit/")
    release = Release.objects.get(pk=created.json()["id"])
    assert release.status == "published", release.failure_reason
    return release


def test_a_range_histogram_draft_previews_a_bins_accuracy(curator_client, dataset):
    response = curator_client.post("/api/v1/releases/", draft(dataset.pk, RANGES), format="json")

    assert response.status_code == 201, response.json()
    (preview,) = response.json()["preview"]
    assert preview["kind"] == "range_histogram"
    assert preview["mechanism"] == "geometric"
    assert preview["sensitivity"] == 3  # a forest of 10-ary trees of 3 levels over 1,000 bins
    assert 0 < preview["ci95_halfwidth"] < 100


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"bins": "many"}, "queries.0.bins"),
        ({"bins": 0}, "queries.0.bins"),
        ({"bins": 10**9}, "queries.0.bins"),
        ({"bins": [0, 50, 100]}, "queries.0.bins"),
        ({"column": "sex"}, "queries.0.column"),
        ({"column": "nope"}, "queries.0.column"),
    ],
)
def test_a_bad_range_histogram_spec_is_a_400_naming_the_field(curator_client, dataset, spec, field):
    response = curator_client.post(
        "/api/v1/releases/", draft(dataset.pk, {**RANGES, **spec}), format="json"
    )

    assert response.status_code == 400
    assert field in response.json()["errors"], response.json()


def test_the_api_answers_any_range_consistently(anonymous_client, published):
    # given
    base = f"/api/v1/catalog/{published.series.slug}/versions/1/"
    (_, statistic) = anonymous_client.get(base).json()["statistics"]
    assert statistic["tree"]["bins"] == 1000
    assert len(statistic["cells"]) == 1000

    # when
    response = anonymous_client.get(base + "statistics/1/range/?from=20&to=40.05")

    # then the range is widened to whole bins and is the sum of the published bins
    assert response.status_code == 200, response.json()
    answer = response.json()
    assert (answer["from"], answer["to"], answer["bins"]) == (20.0, 40.1, 201)
    cells = statistic["cells"][200:401]
    assert answer["value"] == pytest.approx(max(0.0, sum(statistic["value"][c] for c in cells)))
    low, high = answer["ci95"]
    assert low <= answer["value"] <= high


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("", "from"),
        ("?from=20", "to"),
        ("?from=x&to=3", "from"),
        ("?from=1e999&to=3", "from"),
        ("?from=5&to=5", "to"),
        ("?from=500&to=600", "from"),
    ],
)
def test_a_bad_range_is_a_400_naming_the_field(anonymous_client, published, query, field):
    base = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/1/range/"

    response = anonymous_client.get(base + query)

    assert response.status_code == 400
    assert field in response.json()["errors"], response.json()


@pytest.mark.parametrize("position", [0, 2, 9999, 2**31, 10**20])
def test_a_statistic_that_is_not_a_range_histogram_is_a_404(anonymous_client, published, position):
    base = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/{position}/range/"

    assert anonymous_client.get(base + "?from=0&to=10").status_code == 404


def test_the_page_shows_a_range_tool_and_answers_the_range_asked(anonymous_client, published):
    page = f"/catalog/{published.series.slug}/v1/"

    # when nothing is asked: the tool over the whole column, no row per bin
    first = anonymous_client.get(page)
    assert first.status_code == 200
    assert b"Ask any range" in first.content
    assert b"[0.1, 0.2)" not in first.content

    # when a range is asked
    answered = anonymous_client.get(page + "?statistic=1&from=10&to=30").content.decode()
    assert "Records from 10 to 30 (200 bins)" in answered
    assert "95% interval" in answered

    # when the range is bad: said on the page, never a 500
    bad = anonymous_client.get(page + "?statistic=1&from=30&to=10")
    assert bad.status_code == 200
    assert "To must be above from." in bad.content.decode()
    outside = anonymous_client.get(page + "?statistic=1&from=300&to=400")
    assert "From: the range must overlap 0 to 100." in outside.content.decode()


def test_the_files_hold_every_bin_and_the_tree(anonymous_client, published):
    version = anonymous_client.get(f"/api/v1/catalog/{published.series.slug}/versions/1/").json()
    files = {f["format"]: f for f in version["files"]}

    csv_text = b"".join(anonymous_client.get(files["csv"]["url"]).streaming_content).decode()
    rows = [r for r in csv.DictReader(io.StringIO(csv_text)) if r["kind"] == "range_histogram"]
    published_json = json.loads(
        b"".join(anonymous_client.get(files["json"]["url"]).streaming_content)
    )

    assert len(rows) == 1000
    assert rows[0]["category"] == "[0, 0.1)"
    assert rows[-1]["category"] == "[99.9, 100]"
    assert published_json["statistics"][1]["tree"]["branching"] == 10
    assert published_json["statistics"][1]["tree"]["rooted"] is False


def test_the_wizard_keeps_a_range_histograms_bins(client, curator, dataset):
    from releases.services.releases import release_draft_create

    release = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{**RANGES, "bins": 256}],
    )
    client.force_login(curator)

    page = client.get(f"/releases/{release.pk}/statistics/").content.decode()

    assert 'value="256"' in page


def test_range_histograms_drawing_too_many_noisy_values_are_a_400(curator_client, dataset):
    # three histograms of 65,536 bins: up to 131,070 tree nodes each to draw and store
    queries = [{**RANGES, "bins": 65_536}] * 3

    response = curator_client.post("/api/v1/releases/", draft(dataset.pk, *queries), format="json")

    assert response.status_code == 400
    (message,) = response.json()["errors"]["queries"]
    assert "393,210 noisy values; at most 300,000 per release" in message
    assert (
        curator_client.post(
            "/api/v1/releases/", draft(dataset.pk, *queries[:2]), format="json"
        ).status_code
        == 201
    )


def test_the_noise_draw_bound_counts_the_gaussians_tree(curator_client, dataset):
    # under (ε, δ)-DP 65,536 bins take a binary forest of 131,070 nodes: three exceed 300,000
    queries = [{**RANGES, "bins": 65_536}] * 3
    body = {
        **draft(dataset.pk, *queries),
        "definition": {"kind": "approx_dp", "epsilon": 0.5, "delta": 1e-6},
    }

    response = curator_client.post("/api/v1/releases/", body, format="json")

    assert response.status_code == 400
    assert "393,210 noisy values" in response.json()["errors"]["queries"][0]
