"""Every route refuses a body above its cap before anything reads it (issue 12, point 6): 413
naming the body, generated over all URL patterns so that a new route is covered at once."""

from django.test import Client
from django.urls import resolve

from tests.conftest import csv_upload
from tests.url_patterns import every_route

ROUTES = sorted(set(every_route()))
UPLOAD_ROUTES = {"api-datasets", "dataset-upload"}


def test_every_route_resolves_to_a_view():
    assert len(ROUTES) > 50
    for path, name in ROUTES:
        assert resolve(path.split("?")[0]), name


def test_every_route_refuses_a_body_above_its_cap(curator, settings):
    client = Client(enforce_csrf_checks=True)
    client.force_login(curator)
    answered = {}
    for path, name in ROUTES:
        limit = settings.REQUEST_MAX_BODY_BYTES
        if name in UPLOAD_ROUTES:
            limit += settings.DATASET_MAX_UPLOAD_BYTES

        # when a body one byte above the cap is announced (and never sent: it is refused unread)
        response = client.post(
            path, data=b"x", content_type="application/octet-stream", CONTENT_LENGTH=str(limit + 1)
        )

        expected = f"must be at most {limit:,} bytes"
        if path.startswith("/api/"):
            shown = response.json().get("errors") == {"body": [expected]}
        else:
            shown = expected in response.content.decode()
        answered[name] = (response.status_code, shown)

    # then every route answered 413 and said why
    assert {name: answer for name, answer in answered.items() if answer != (413, True)} == {}


def test_a_large_multipart_body_to_the_login_page_is_refused_unread(client, db, settings, tmp_path):
    # given a small cap, and a file part above it posted where no file is taken
    settings.REQUEST_MAX_BODY_BYTES = 64 * 1024
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    body = {
        "username": "someone",
        "password": "x",
        "file": csv_upload(b"a,b\n" + b"1,2\n" * 50_000),
    }

    # when
    response = client.post("/accounts/login/", body)

    # then nothing was parsed or spooled to disk
    assert response.status_code == 413
    assert list(tmp_path.iterdir()) == []


def test_an_upload_route_still_takes_a_table_above_the_general_cap(curator_client, settings):
    # given a general cap smaller than the table
    settings.REQUEST_MAX_BODY_BYTES = 1024
    table = b"name,age\n" + b"".join(b"P%05d,%d\n" % (i, i % 90) for i in range(2000))

    # when
    response = curator_client.post(
        "/api/v1/datasets/",
        {"name": "Large", "file": csv_upload(table), "budget_epsilon": "1"},
        format="multipart",
    )

    # then
    assert response.status_code == 201, response.content


def test_only_a_curator_may_send_a_table_to_the_upload_page(db, settings, tmp_path):
    # given a small cap; Django's CSRF check reads a page's form before its view checks the user
    settings.REQUEST_MAX_BODY_BYTES = 64 * 1024
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024
    table = b"a,b\n" + b"1,2\n" * 50_000

    # when an anonymous client posts a table to the upload page
    client = Client(enforce_csrf_checks=True)
    response = client.post("/datasets/new/", {"name": "x", "file": csv_upload(table)})

    # then it is refused unread
    assert response.status_code == 413
    assert list(tmp_path.iterdir()) == []
