"""Histogram cells keep their declared order wherever a release is read, even on PostgreSQL, whose
jsonb stores an object's keys shortest first, not in the order they were written."""

import json
import textwrap

import pytest

from releases.selectors import release_answer_statistics
from releases.services.releases import release_draft_create, release_submit

# Declared order; jsonb would give "mm", "kiwi", "zebra" ... (shortest first).
CATEGORIES = ["zebra", "kiwi", "apple-pie", "mm"]
TABLE = b"fruit,id\n" + b"".join(f"{c},{i}\n".encode() for i, c in enumerate(CATEGORIES * 3))
SCHEMA = {"columns": {"fruit": {"kind": "categorical", "categories": CATEGORIES}}}


def test_published_statistic_lists_its_cells_in_declared_order(
    curator, django_capture_on_commit_callbacks
):
    # given
    from releases.services.datasets import dataset_create, dataset_schema_update
    from tests.conftest import csv_upload

    dataset = dataset_create(
        owner=curator, name="Fruit", upload=csv_upload(TABLE, "fruit.csv"), budget_epsilon="1"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=SCHEMA)
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Fruit",
        definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=[{"kind": "histogram", "column": "fruit"}],
    )

    # when
    with django_capture_on_commit_callbacks(execute=True):
        release_submit(release=draft, user=curator)

    # then
    [statistic] = release_answer_statistics(release=draft)
    assert statistic["cells"] == CATEGORIES
    assert list(statistic["value"]) == CATEGORIES
    assert list(statistic["ci95"]) == CATEGORIES


PG_SCRIPT = textwrap.dedent(
    f"""
    import json
    from django.core.files.uploadedfile import SimpleUploadedFile
    from accounts.roles import Role
    from accounts.services import user_create_or_reset
    from releases.models import NoisyAnswer, ReleaseFile
    from releases.selectors import release_answer_statistics
    from releases.services.datasets import dataset_create, dataset_schema_update
    from releases.services.releases import release_draft_create, release_submit
    from releases.services.runs import release_run
    from rest_framework.test import APIClient

    curator, _ = user_create_or_reset(username="pg-curator", role=Role.CURATOR)
    upload = SimpleUploadedFile("f.csv", {TABLE!r}, "text/csv")
    dataset = dataset_create(owner=curator, name="Fruit", upload=upload, budget_epsilon="1")
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema={SCHEMA!r})
    draft = release_draft_create(
        user=curator, dataset=dataset, title="Fruit",
        definition={{"kind": "pure_dp", "epsilon": 0.5}},
        queries=[{{"kind": "histogram", "column": "fruit"}}],
    )
    release_submit(release=draft, user=curator)
    release_run(release_id=draft.pk, worker="test")
    draft.refresh_from_db()
    stored = NoisyAnswer.objects.get(release=draft).statistic
    api = APIClient().get(
        f"/api/v1/catalog/{{draft.series.slug}}/versions/1/", HTTP_HOST="localhost"
    ).json()
    published = json.loads(ReleaseFile.objects.get(release=draft, format="json").file.read())
    print("RESULT" + json.dumps({{
        "status": draft.status,
        "stored_keys": list(stored["value"]),
        "selector": list(release_answer_statistics(release=draft)[0]["value"]),
        "api": list(api["statistics"][0]["value"]),
        "file": list(published["statistics"][0]["value"]),
    }}))
    """
)


@pytest.mark.services
def test_on_postgresql_cells_come_back_in_declared_order(tmp_path, stacks):
    # given a fresh PostgreSQL database, migrated (a copy of the session's migrated template)
    from tests.processes import manage, postgres_redis_env

    with postgres_redis_env(tmp_path) as env:
        stacks.prepare(env)

        # when a histogram is released and read back through every path
        output = manage(env, "shell", "-c", PG_SCRIPT)

    # then jsonb did reorder the stored keys, and every reader restores the declared order
    result = json.loads(output.split("RESULT", 1)[1])
    assert result["status"] == "published"
    assert result["stored_keys"] != CATEGORIES
    assert result["selector"] == CATEGORIES
    assert result["api"] == CATEGORIES
    assert result["file"] == CATEGORIES
