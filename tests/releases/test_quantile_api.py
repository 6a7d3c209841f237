"""The ``quantile`` kind through the API and the pages: draft with its preview, bad specs named,
release by the (eager) worker, catalog page and downloads."""

import csv
import io
import json

import pytest

from releases.models import Release

QUANTILES = {"kind": "quantile", "column": "age", "quantiles": [0.25, 0.5, 0.75]}


def draft(dataset_id: int, *queries: dict) -> dict:
    return {
        "dataset": dataset_id,
        "title": "Ages",
        "definition": {"kind": "pure_dp", "epsilon": 0.5},
        "queries": list(queries),
    }


def test_a_quantile_draft_previews_its_rank_accuracy(curator_client, dataset):
    # when
    response = curator_client.post(
        "/api/v1/releases/", draft(dataset.pk, QUANTILES, {"kind": "count"}), format="json"
    )

    # then
    assert response.status_code == 201, response.json()
    preview = response.json()["preview"][0]
    assert preview["kind"] == "quantile"
    assert preview["mechanism"] == "exponential"
    assert preview["epsilon"] == pytest.approx(0.25)
    assert preview["sensitivity"] == 750  # max(a, d − a) for the quartiles, d = 1000
    assert 0 < preview["ci95_halfwidth"] < 1e6


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"quantiles": []}, "must be a list of 1 to 20 numbers"),
        ({"quantiles": [0.5, "x"]}, "must be a list of 1 to 20 numbers"),
        ({"quantiles": [1.0]}, "between 0 and 1"),
        ({"quantiles": [0.1234]}, "in steps of 0.001"),
        ({"quantiles": [0.5, 0.5]}, "must be distinct"),
        ({"quantiles": [0.5], "column": "sex"}, "needs a numeric column"),
    ],
)
def test_a_bad_quantile_spec_is_a_400_naming_the_field(curator_client, dataset, spec, message):
    # when
    response = curator_client.post(
        "/api/v1/releases/", draft(dataset.pk, {**QUANTILES, **spec}), format="json"
    )

    # then
    assert response.status_code == 400
    errors = response.json()["errors"]
    field = "queries.0.column" if "column" in spec else "queries.0.quantiles"
    assert any(message in m for m in errors[field]), errors


def test_a_quantile_release_is_published_shown_and_downloadable(
    curator_client, anonymous_client, dataset, django_capture_on_commit_callbacks
):
    # given
    created = curator_client.post("/api/v1/releases/", draft(dataset.pk, QUANTILES), format="json")

    # when
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{created.json()['id']}/submit/")

    # then: three candidates within the declared bounds, their rule, a page and the files
    release = Release.objects.get(pk=created.json()["id"])
    assert release.status == "published", release.failure_reason
    version = anonymous_client.get(f"/api/v1/catalog/{release.series.slug}/versions/1/").json()
    (statistic,) = version["statistics"]
    assert list(statistic["value"]) == ["0.25", "0.5", "0.75"]
    assert all(0 <= v <= 100 for v in statistic["value"].values())
    assert "exponential mechanism" in statistic["rule"]
    page = anonymous_client.get(f"/catalog/{release.series.slug}/v1/")
    assert page.status_code == 200
    assert b"0.75" in page.content
    files = {f["format"]: f for f in version["files"]}
    csv_text = b"".join(anonymous_client.get(files["csv"]["url"]).streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert [r.get("cell") or r.get("category") for r in rows if r["kind"] == "quantile"] == [
        "0.25",
        "0.5",
        "0.75",
    ]
    published = json.loads(b"".join(anonymous_client.get(files["json"]["url"]).streaming_content))
    assert published["statistics"][0]["value"] == statistic["value"]


def test_the_wizard_preview_states_a_quantiles_accuracy_in_ranks(client, curator, dataset):
    # given a draft of quantiles and a count
    from releases.services.releases import release_draft_create

    release = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[QUANTILES, {"kind": "count"}],
    )
    client.force_login(curator)

    # when
    response = client.get(f"/releases/{release.pk}/preview/")

    # then
    assert response.status_code == 200
    page = response.content.decode()
    assert "each published quantile&#x27;s rank is within ±" in page
    assert " ranks on average" in page


@pytest.mark.parametrize("quantiles", [[1e-300], [0.9999999999995], [0.0004]])
def test_quantiles_that_round_to_0_or_1_are_refused(curator_client, dataset, quantiles):
    response = curator_client.post(
        "/api/v1/releases/",
        draft(dataset.pk, {**QUANTILES, "quantiles": quantiles}),
        format="json",
    )

    assert response.status_code == 400
    assert "between 0 and 1" in response.json()["errors"]["queries.0.quantiles"][0]


def test_the_wizard_shows_and_keeps_the_quantiles_of_a_draft(client, curator, dataset):
    # given a draft whose quantiles are not the form's default
    from releases.services.releases import release_draft_create

    release = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Ages",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "quantile", "column": "age", "quantiles": [0.1, 0.9]}],
    )
    client.force_login(curator)

    # when the statistics step is shown, then saved as shown
    page = client.get(f"/releases/{release.pk}/statistics/").content.decode()
    saved = client.post(
        f"/releases/{release.pk}/statistics/",
        {
            "stat-TOTAL_FORMS": "1",
            "stat-INITIAL_FORMS": "1",
            "stat-MIN_NUM_FORMS": "1",
            "stat-MAX_NUM_FORMS": "1000",
            "stat-0-kind": "quantile",
            "stat-0-column": "age",
            "stat-0-quantiles": "0.1, 0.9",
            "stat-0-weight": "1",
        },
    )

    # then
    assert 'name="stat-0-quantiles" value="0.1, 0.9"' in page
    assert saved.status_code == 302
    release.refresh_from_db()
    assert release.queries == [{"kind": "quantile", "column": "age", "quantiles": [0.1, 0.9]}]


def test_quantiles_are_published_in_increasing_order(dataset):
    # given a noise source whose choices decrease as the quantiles grow
    from privacy_engine import run_queries
    from privacy_engine.kinds.quantile import Quantile

    class Reversed:
        picks = iter([100, 500, 900])  # 0.75 → 10, 0.5 → 50, 0.25 → 90

        def sample(self, measurement, value):
            return next(self.picks)

    schema = {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 100}}}
    import pandas as pd

    result = run_queries(
        pd.DataFrame({"age": ["1", "50", "99"]}),
        schema=schema,
        definition={"kind": "pure_dp", "epsilon": 1.0},
        queries=[Quantile(column="age", quantiles=(0.75, 0.5, 0.25))],
        noise=Reversed(),
    )

    # then: 0.25 ≤ 0.5 ≤ 0.75 whatever order the choices came in
    assert result.statistics[0].value == {"0.75": 90.0, "0.5": 50.0, "0.25": 10.0}
