"""The production WSGI server (issue 8, point 4): gunicorn with DEBUG=0 in front of PostgreSQL,
Redis and a separate Celery worker serves the API, the catalog and a download."""

import hashlib
import time
from collections.abc import Iterator

import pytest
import requests

from tests.processes import Stack, api_token, postgres_redis_env, start_stack

pytestmark = [pytest.mark.worker]

TABLE = "patient,age\n" + "".join(f"P{i:04d},{(i * 37) % 90 + 5}\n" for i in range(300))


@pytest.fixture
def production_stack(tmp_path, stacks) -> Iterator[Stack]:
    with postgres_redis_env(tmp_path) as env:
        env["DEBUG"] = "0"
        # The test speaks plain HTTP to gunicorn; in production a TLS proxy is in front of it.
        env["SECURE_SSL_REDIRECT"] = "0"
        yield from start_stack(env, tmp_path, stacks, web_server="gunicorn")


def test_gunicorn_serves_the_catalog_and_a_download_of_a_release_a_worker_published(
    production_stack,
):
    stack = production_stack
    url = stack.base_url + "/api/v1"
    curator = api_token(stack, "e2e-curator")

    # given a published release
    dataset = requests.post(
        f"{url}/datasets/",
        headers=curator,
        data={"name": "Patients", "budget_epsilon": "2", "declared_size": "300"},
        files={"file": ("patients.csv", TABLE.encode(), "text/csv")},
        timeout=30,
    ).json()
    requests.put(
        f"{url}/datasets/{dataset['id']}/schema/",
        headers=curator,
        json={"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 100}}},
        timeout=10,
    ).raise_for_status()
    draft = requests.post(
        f"{url}/releases/",
        headers=curator,
        json={
            "dataset": dataset["id"],
            "title": "Ages",
            "definition": {"kind": "pure_dp", "epsilon": 1},
            "queries": [{"kind": "count"}, {"kind": "sum", "column": "age"}],
        },
        timeout=30,
    ).json()
    submitted = requests.post(f"{url}/releases/{draft['id']}/submit/", headers=curator, timeout=30)
    assert submitted.status_code == 202, submitted.text
    deadline = time.monotonic() + 120
    while (
        status := requests.get(f"{url}/releases/{draft['id']}/", headers=curator, timeout=10)
        .json()
        .get("status")
    ) not in ("published", "failed"):
        assert time.monotonic() < deadline, stack.logs()
        time.sleep(0.5)
    assert status == "published", stack.logs()

    # when the public asks the production server for the catalog and the files
    catalog = requests.get(f"{url}/catalog/", timeout=10)
    page = requests.get(f"{stack.base_url}/catalog/", timeout=10)
    version = requests.get(catalog.json()["results"][0]["url"], timeout=10).json()
    downloads = [(entry, requests.get(entry["url"], timeout=10)) for entry in version["files"]]

    # then gunicorn answered every request
    assert catalog.headers["Server"].startswith("gunicorn")
    assert catalog.json()["count"] == 1
    assert page.status_code == 200
    assert "Ages" in page.text
    for entry, download in downloads:
        assert download.status_code == 200
        assert download.headers["Server"].startswith("gunicorn")
        assert hashlib.sha256(download.content).hexdigest() == entry["sha256"]
