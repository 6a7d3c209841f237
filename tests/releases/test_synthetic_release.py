"""A synthetic table through the API and the wizard: planned, drawn by the worker's code (noisy
marginals stored, never rows), its rows generated at publication into CSV/JSON files, the page's
chart of the published marginals beside the rows' shares, and refusals naming the field."""

import bisect
import csv
import io
import json
import re
from datetime import timedelta

import pyarrow.parquet as pq
import pytest
from django.utils import timezone

from releases.forms import EdgesTextError, column_edges
from releases.models import NoisyAnswer, Release
from releases.services.datasets import dataset_create, dataset_schema_update
from releases.services.releases import release_draft_create
from tests.conftest import RELEASE_FILE_FORMATS, csv_upload, publish_through_api, statistics_formset

WARDS = b"ward,sex,age,name\n" + b"".join(
    b"%s,%s,%d,p%d\n" % ([b"a", b"b", b"c"][i % 3], [b"F", b"M"][(i // 3) % 2], 20 + i % 60, i)
    for i in range(1_200)
)
SCHEMA = {
    "columns": {
        "ward": {
            "kind": "categorical",
            "categories": ["a", "b", "c"],
            "other": "other",
            "fill": "a",
        },
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other", "fill": "F"},
        "age": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 40},
        "name": {"kind": "identifier"},
    },
    "declared_size": 1_200,
}
PURE = {"kind": "pure_dp", "epsilon": 2.0}
SYNTHETIC = {"kind": "synthetic", "columns": ["ward", "sex", "age"]}


@pytest.fixture
def wards(curator):
    created = dataset_create(
        owner=curator, name="Wards", upload=csv_upload(WARDS, "w.csv"), budget_epsilon="5"
    )
    return dataset_schema_update(dataset=created, user=curator, schema=SCHEMA)


def publish(client, capture, dataset_id: int, *queries: dict) -> Release:
    body = {"dataset": dataset_id, "title": "Wards", "definition": PURE, "queries": list(queries)}
    return publish_through_api(client, capture, body)


def test_the_rows_are_published_in_files_and_the_statistic_stays_small(
    curator_client, anonymous_client, wards, django_capture_on_commit_callbacks
):
    release = publish(
        curator_client, django_capture_on_commit_callbacks, wards.pk, {"kind": "count"}, SYNTHETIC
    )
    base = f"/api/v1/catalog/{release.series.slug}/versions/1/"

    version = anonymous_client.get(base).json()
    rows = list(
        csv.reader(
            io.StringIO(b"".join(anonymous_client.get(base + "files/microdata-1.csv/")).decode())
        )
    )
    document = json.loads(b"".join(anonymous_client.get(base + "files/microdata-1.json/")))
    typed = pq.read_table(
        io.BytesIO(b"".join(anonymous_client.get(base + "files/microdata-1.parquet/")))
    )

    statistic = version["statistics"][1]
    microdata = statistic["microdata"]
    # the statistic: the noisy marginals kept, the guarantee, the rows' count; no rows
    assert statistic["kind"] == "synthetic"
    assert "records" not in microdata
    assert [m["columns"] for m in microdata["marginals"][:3]] == [["ward"], ["sex"], ["age"]]
    assert len(microdata["marginals"]) == 5  # and a spanning tree of two pairs
    assert microdata["guarantee"].startswith("ε = 1 in all")  # half of the release's 2
    assert abs(microdata["rows"] - 1_200) < 100
    # the rows in both files, as many as said, every value in its declared domain
    assert {f["format"] for f in version["files"]} == RELEASE_FILE_FORMATS | {
        "microdata-1.csv",
        "microdata-1.json",
        "microdata-1.parquet",
    }
    assert rows[0] == ["ward", "sex", "age"]
    assert len(rows) - 1 == microdata["rows"] == len(document["rows"]) == statistic["value"]
    assert {r[0] for r in rows[1:]} <= {"a", "b", "c", "other"}
    assert all(0 <= float(r[2]) <= 100 for r in rows[1:])
    assert document["columns"] == ["ward", "sex", "age"]
    # the Parquet file: the same rows in the same order, categories as text, numbers as doubles
    assert typed.column_names == ["ward", "sex", "age"]
    assert [list(row.values()) for row in typed.to_pylist()] == document["rows"]
    assert str(typed.schema.field("age").type) == "double"
    # the rows' buckets, counted at publication, are what the page compares
    generated = microdata["generated_counts"]
    assert sum(generated[0]) == microdata["rows"]
    assert generated[0][:3] == [sum(r[0] == w for r in rows[1:]) for w in "abc"]
    stored = NoisyAnswer.objects.get(release=release, position=1).statistic
    assert len(json.dumps(stored)) < 10_000


def test_the_page_sets_the_rows_beside_the_published_marginals(
    curator_client, anonymous_client, wards, django_capture_on_commit_callbacks
):
    release = publish(curator_client, django_capture_on_commit_callbacks, wards.pk, SYNTHETIC)

    html = anonymous_client.get(f"/catalog/{release.series.slug}/v1/").content.decode()

    assert "Synthetic table of ward, sex, age" in html
    assert "The rows are not real records" in html
    assert "Download the records of statistic 1 (CSV)" in html
    assert "Counts behind the chart" in html
    charts = json.loads(
        html.split('id="chart-data" type="application/json">')[1].split("</script>")[0]
    )
    (chart,) = charts
    assert chart["synthetic"] is True
    assert [c["name"] for c in chart["columns"]] == ["ward", "sex", "age"]
    assert sum(chart["columns"][0]["generated"]) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("query", "field", "words"),
    [
        ({"kind": "synthetic", "columns": ["ward"]}, "queries.0.columns", "2 to 10"),
        ({"kind": "synthetic", "columns": ["ward", "name"]}, "queries.0.columns", "neither"),
        (
            {"kind": "synthetic", "columns": ["ward", "age"], "bins": {"age": [1, 50, 100]}},
            "queries.0.bins.age",
            "declared bounds",
        ),
        ({"kind": "synthetic", "columns": "ward"}, "queries.0.columns", "2 to 10"),
    ],
)
def test_bad_queries_are_400s_naming_the_field(curator_client, wards, query, field, words):
    body = {"dataset": wards.pk, "title": "Wards", "definition": PURE, "queries": [query]}
    response = curator_client.post("/api/v1/releases/", body, format="json")

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert words in " ".join(errors[field])


def test_the_wizard_row_takes_the_columns_and_the_preview_states_the_simulated_error(
    client, curator, wards
):
    release = release_draft_create(
        user=curator, dataset=wards, title="Wards", definition=PURE, queries=[{"kind": "count"}]
    )
    client.force_login(curator)
    url = f"/releases/{release.pk}/statistics/"

    saved = client.post(
        url, statistics_formset({"kind": "synthetic", "table_columns": ["ward", "age"]})
    )

    assert saved.status_code == 302
    release.refresh_from_db()
    assert release.queries == [{"kind": "synthetic", "columns": ["ward", "age"]}]
    # the row reads back with its columns ticked
    page = client.get(url).content.decode()
    ticked = re.findall(r'name="stat-0-table_columns" value="(\w+)"[^>]*checked', page)
    assert ticked == ["ward", "age"]
    preview = client.get(saved["Location"]).content.decode()
    assert "Synthetic table of ward, age: On a simulated table of 1,200 records" in preview


def test_the_wizard_names_a_refusal_at_the_columns(client, curator, wards):
    release = release_draft_create(
        user=curator, dataset=wards, title="Wards", definition=PURE, queries=[{"kind": "count"}]
    )
    client.force_login(curator)

    page = client.post(
        f"/releases/{release.pk}/statistics/",
        statistics_formset({"kind": "synthetic", "table_columns": ["ward"]}),
    ).content.decode()

    errors = re.search(r'<ul class="errorlist" id="id_stat-0-table_columns_error">(.*?)</ul>', page)
    assert errors is not None
    assert "2 to 10" in errors.group(1)


def test_synthetic_tables_count_towards_the_record_level_files_cap(curator_client, wards):
    queries = [SYNTHETIC, {"kind": "synthetic", "columns": ["ward", "sex"]}] * 2
    body = {"dataset": wards.pk, "title": "Wards", "definition": PURE, "queries": queries}

    response = curator_client.post("/api/v1/releases/", body, format="json")

    assert response.status_code == 400
    assert response.json()["errors"]["queries"][0].startswith("choose at most 3 record-level")


def test_every_value_in_the_files_lies_in_the_bin_the_page_counts_it_in(
    curator, curator_client, anonymous_client, django_capture_on_commit_callbacks
):
    # given scores just below 20, in a bin narrower than 10 significant digits can tell from
    # the next bin's edge (printed to 10 digits they would read as 20, the next bin)
    upload = b"sex,score\n" + b"".join(
        b"%s,19.99999999996\n" % [b"F", b"M"][i % 2] for i in range(600)
    )
    schema = {
        "columns": {
            "sex": SCHEMA["columns"]["sex"],
            "score": {"kind": "numeric", "lower": 0, "upper": 100, "fill": 50},
        },
        "declared_size": 600,
    }
    created = dataset_create(
        owner=curator, name="Scores", upload=csv_upload(upload, "s.csv"), budget_epsilon="5"
    )
    dataset = dataset_schema_update(dataset=created, user=curator, schema=schema)
    edges = [0, 19.9999999999, 20, 100]
    query = {"kind": "synthetic", "columns": ["sex", "score"], "bins": {"score": edges}}
    release = publish(curator_client, django_capture_on_commit_callbacks, dataset.pk, query)
    base = f"/api/v1/catalog/{release.series.slug}/versions/1/"
    microdata = anonymous_client.get(base).json()["statistics"][0]["microdata"]

    # when the files are read back
    text = b"".join(anonymous_client.get(base + "files/microdata-0.csv/")).decode()
    document = json.loads(b"".join(anonymous_client.get(base + "files/microdata-0.json/")))
    from_csv = [float(row[1]) for row in list(csv.reader(io.StringIO(text)))[1:]]
    from_json = [row[1] for row in document["rows"]]

    # then each value falls in the bin it was drawn in: the counts the page shows
    def counts(values):
        bins = [min(bisect.bisect_right(edges, v) - 1, 2) for v in values]
        return [bins.count(b) for b in range(3)]

    assert counts(from_csv) == counts(from_json) == microdata["generated_counts"][1]
    assert microdata["generated_counts"][1][1] > 500  # the narrow bin holds the records


def test_the_wizard_keeps_a_numeric_columns_own_edges_and_names_bad_ones_at_bins(
    client, curator, wards
):
    # given a draft whose synthetic table has edges of its own (set through the API)
    own = {"kind": "synthetic", "columns": ["ward", "age"], "bins": {"age": [0, 18, 65, 100]}}
    release = release_draft_create(
        user=curator, dataset=wards, title="Wards", definition=PURE, queries=[own]
    )
    client.force_login(curator)
    url = f"/releases/{release.pk}/statistics/"

    # when the curator opens the step and saves it as the page shows it
    page = client.get(url).content.decode()
    shown = re.search(r'name="stat-0-bins" value="([^"]*)"', page).group(1)
    saved = client.post(
        url,
        statistics_formset({"kind": "synthetic", "table_columns": ["ward", "age"], "bins": shown}),
    )

    # then the edges are kept
    assert shown == "age: 0, 18, 65, 100"
    assert saved.status_code == 302
    release.refresh_from_db()
    assert release.queries == [own]

    # and edges that miss the bounds are refused at the Bins field
    refused = client.post(
        url,
        statistics_formset(
            {"kind": "synthetic", "table_columns": ["ward", "age"], "bins": "age: 5, 50, 100"}
        ),
    ).content.decode()
    errors = re.search(r'<ul class="errorlist" id="id_stat-0-bins_error">(.*?)</ul>', refused)
    assert errors is not None
    assert "declared bounds" in errors.group(1)


def test_a_release_that_failed_at_publication_publishes_its_stored_answers_again(
    client, curator, curator_client, wards, django_capture_on_commit_callbacks, monkeypatch
):
    # given a synthetic table whose rows cannot be generated the first time (out of memory)
    from audit.models import AuditEvent
    from releases.models import LedgerEntry
    from releases.services import runs

    real = runs.synthetic_table
    calls = []

    def failing_once(microdata):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError
        return real(microdata)

    monkeypatch.setattr(runs, "synthetic_table", failing_once)
    body = {"dataset": wards.pk, "title": "Wards", "definition": PURE, "queries": [SYNTHETIC]}
    created = curator_client.post("/api/v1/releases/", body, format="json").json()
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{created['id']}/submit/")
    release = Release.objects.get(pk=created["id"])
    assert release.status == "failed"
    answers = list(NoisyAnswer.objects.filter(release=release).values_list("pk", "statistic"))
    assert LedgerEntry.objects.get(release=release).state == "spent"

    # when its curator asks, from the status page, to publish it again
    client.force_login(curator)
    page = client.get(f"/releases/{release.pk}/").content.decode()
    assert "Publish again" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/releases/{release.pk}/publish-again/")

    # then the same answers are published: no new noise, one spent reservation
    assert response.status_code == 302
    release.refresh_from_db()
    assert release.status == "published", release.failure_reason
    assert release.version == 1
    after = list(NoisyAnswer.objects.filter(release=release).values_list("pk", "statistic"))
    assert [pk for pk, _ in after] == [pk for pk, _ in answers]
    assert after[0][1]["microdata"]["marginals"] == answers[0][1]["microdata"]["marginals"]
    assert LedgerEntry.objects.filter(release=release).count() == 1
    assert LedgerEntry.objects.get(release=release).state == "spent"
    assert AuditEvent.objects.filter(action="release.requeued", object_id=release.pk).count() == 1
    # and a published release cannot be queued again
    again = curator_client.post(f"/api/v1/releases/{release.pk}/publish-again/")
    assert again.status_code == 409
    assert "is published" in again.json()["detail"]


def test_a_release_that_failed_before_drawing_cannot_be_published_again(
    curator_client, wards, django_capture_on_commit_callbacks, monkeypatch
):
    from releases.services import runs

    def unreadable(*args, **kwargs):
        raise OSError

    monkeypatch.setattr(runs, "release_stored_table", unreadable)
    body = {"dataset": wards.pk, "title": "Wards", "definition": PURE, "queries": [SYNTHETIC]}
    created = curator_client.post("/api/v1/releases/", body, format="json").json()
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{created['id']}/submit/")
    assert Release.objects.get(pk=created["id"]).status == "failed"

    response = curator_client.post(f"/api/v1/releases/{created['id']}/publish-again/")

    assert response.status_code == 409
    assert "budget was returned" in response.json()["detail"]


def test_the_page_discloses_every_stages_epsilon_sensitivity_scale_and_interval(
    curator_client, anonymous_client, wards, django_capture_on_commit_callbacks
):
    release = publish(curator_client, django_capture_on_commit_callbacks, wards.pk, SYNTHETIC)
    statistic = anonymous_client.get(f"/api/v1/catalog/{release.series.slug}/versions/1/").json()[
        "statistics"
    ][0]

    html = anonymous_client.get(f"/catalog/{release.series.slug}/v1/").content.decode()

    parts = statistic["parts"]
    assert parts[0]["role"] == "each column's counts"
    assert parts[-1]["role"] == "the chosen pairs' counts"
    assert sum(p["epsilon"] for p in parts) == pytest.approx(statistic["epsilon"])
    assert "each column&#x27;s counts: geometric, ε = 0.6, sensitivity 3" in html
    assert "95% of one noisy count within ±" in html


@pytest.mark.parametrize(
    ("text", "columns", "expected"),
    [
        ("age: 0, 18, 100", ["ward", "age"], {"age": [0.0, 18.0, 100.0]}),
        (
            " age : 0, 100 ; income: 0, 5, 10 ",
            ["age", "income"],
            {"age": [0, 100], "income": [0, 5, 10]},
        ),
        ("grade;level: 0, 5, 10", ["grade;level"], {"grade;level": [0, 5, 10]}),
        ("a:b: 1, 2; a: 3, 4", ["a", "a:b"], {"a:b": [1, 2], "a": [3, 4]}),
    ],
)
def test_the_bins_text_of_a_synthetic_row_reads_each_columns_edges(text, columns, expected):
    assert column_edges(text, columns) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("age: 0, 100; age: 0, 50, 100", "'age' is given twice"),
        ("Age: 0, 100", "'Age' is not one of the table's columns"),
        ("0, 18, 100", "'0, 18, 100' is not one of the table's columns"),
        (";;;", "write each numeric column's edges as age"),
    ],
)
def test_the_bins_text_of_a_synthetic_row_is_refused_naming_what_is_wrong(text, message):
    with pytest.raises(EdgesTextError, match=re.escape(message)):
        column_edges(text, ["ward", "age"])


def test_publishing_again_is_capped_and_leaves_the_reaper_nothing_to_redeliver(
    curator_client, wards, django_capture_on_commit_callbacks, monkeypatch
):
    # given a release whose publication fails every time
    from audit.models import AuditEvent
    from releases.services import runs

    def always_failing(microdata):
        raise MemoryError

    monkeypatch.setattr(runs, "synthetic_table", always_failing)
    body = {"dataset": wards.pk, "title": "Wards", "definition": PURE, "queries": [SYNTHETIC]}
    created = curator_client.post("/api/v1/releases/", body, format="json").json()
    url = f"/api/v1/releases/{created['id']}/publish-again/"
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{created['id']}/submit/")

    # when it is queued again (the reaper running at once after each requeue) until refused
    answers = []
    for _ in range(runs.MAX_PUBLISH_AGAIN + 1):
        Release.objects.filter(pk=created["id"]).update(
            heartbeat_at=timezone.now() - timedelta(days=30)
        )
        with django_capture_on_commit_callbacks(execute=False):
            response = curator_client.post(url)
        if response.status_code == 202:
            assert runs.release_reap_stale(older_than=timedelta(hours=1)) == []
            with django_capture_on_commit_callbacks(execute=True):
                runs.release_run(release_id=created["id"], worker="test")
        answers.append(response.status_code)

    # then three tries are allowed, the fourth refused, and noise was drawn once
    assert answers == [202, 202, 202, 409]
    assert "already published again 3 times" in response.json()["detail"]
    assert NoisyAnswer.objects.filter(release_id=created["id"]).count() == 1
    assert (
        AuditEvent.objects.filter(action="task.noise_drawn", object_id=created["id"]).count() == 1
    )
    assert not AuditEvent.objects.filter(action="task.redelivered").exists()
