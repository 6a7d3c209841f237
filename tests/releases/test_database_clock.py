"""Heartbeats, claims and queue times use the database's clock (releases/services/clock.py): a
worker whose own clock is an hour behind keeps its release and its conversion, where before the
reaper on a machine with the right time took them away while they were still computing."""

import json
import textwrap

import pytest

SKEW_SCRIPT = textwrap.dedent(
    """
    import json
    from datetime import timedelta
    from unittest import mock

    from django.utils import timezone

    from accounts.roles import Role
    from accounts.services import user_create_or_reset
    from releases.models import Dataset
    from releases.services import datasets, runs
    from releases.services.clock import database_now
    from releases.services.datasets import dataset_create, dataset_schema_update
    from releases.services.releases import release_draft_create, release_submit
    from tests.conftest import CLINIC_SCHEMA, csv_upload, draft_body

    curator, _ = user_create_or_reset(username="skew-curator", role=Role.CURATOR)
    dataset = dataset_create(owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="1")
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    draft = release_draft_create(
        user=curator, dataset=dataset, title="Skew", definition={"kind": "pure_dp", "epsilon": 0.5},
        queries=draft_body(dataset.pk)["queries"],
    )
    release = release_submit(release=draft, user=curator)
    converting = Dataset.objects.create(
        owner=curator, organisation=dataset.organisation, name="Converting",
        file="datasets/big.csv", status="processing", progress=0.0, budget_epsilon=1,
    )
    out = {"skew_s": (database_now() - timezone.now()).total_seconds()}

    # when: the worker, whose clock is an hour behind, claims both
    behind = timezone.now() - timedelta(hours=1)
    with mock.patch("django.utils.timezone.now", return_value=behind):
        out["release_claimed"] = runs._claim(release.pk, "worker-behind") is not None
        out["conversion_claimed"] = datasets._claim_conversion(converting.pk)

    # then: the reaper, on a machine with the right time, sees both as freshly claimed
    out["reaped_releases"] = [r.release_id for r in runs.release_reap_stale()]
    out["reaped_datasets"] = datasets.dataset_reap_stale()
    print("RESULT" + json.dumps(out))
    """
)


@pytest.mark.services
def test_a_worker_whose_clock_is_behind_keeps_its_claims_on_postgresql(tmp_path, stacks):
    # given a fresh PostgreSQL database, migrated (a copy of the session's migrated template)
    from tests.processes import manage, postgres_redis_env

    with postgres_redis_env(tmp_path) as env:
        stacks.prepare(env)

        # when / then (in the script)
        output = manage(env, "shell", "-c", SKEW_SCRIPT)

    result = json.loads(output.split("RESULT", 1)[1])
    assert abs(result["skew_s"]) < 5  # the database and this machine agree; the worker does not
    assert result["release_claimed"] is True
    assert result["conversion_claimed"] == "claimed"
    assert result["reaped_releases"] == []
    assert result["reaped_datasets"] == []
