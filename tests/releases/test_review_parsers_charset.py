"""Only UTF-8 bodies are read (found by review: charset=punycode gave a 500, and decoding a large
punycode body took seconds for an anonymous client)."""

import pytest

from releases.models import Dataset


@pytest.mark.parametrize("charset", ["punycode", "utf-16", "latin-1", "rot13"])
def test_a_json_body_in_another_charset_is_a_400_naming_body(curator_client, charset):
    response = curator_client.generic(
        "POST",
        "/api/v1/releases/",
        b'{"title": "x"}',
        content_type=f"application/json; charset={charset}",
    )
    # (DRF itself refuses a charset that is not a text encoding, with its own message)
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["body"]
    assert "charset" in response.json()["errors"]["body"][0]


def test_a_form_body_in_punycode_is_a_400_naming_body(anonymous_client):
    response = anonymous_client.generic(
        "POST",
        "/api/v1/auth/token/",
        b"username=a&password=" + b"b" * 100_000,
        content_type="application/x-www-form-urlencoded; charset=punycode",
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {"body": ["unsupported charset; send UTF-8"]}


def test_a_dataset_form_in_punycode_is_a_400_naming_body_and_creates_nothing(curator_client):
    # when
    response = curator_client.generic(
        "POST",
        "/api/v1/datasets/",
        b"name=Clinic&budget_epsilon=1.0",
        content_type="application/x-www-form-urlencoded; charset=punycode",
    )

    # then
    assert response.status_code == 400
    assert response.json()["errors"] == {"body": ["unsupported charset; send UTF-8"]}
    assert Dataset.objects.count() == 0


@pytest.mark.parametrize("charset", ["utf-8", "UTF-8", "utf8"])
def test_utf8_in_any_spelling_is_read(curator_client, charset):
    response = curator_client.generic(
        "POST",
        "/api/v1/releases/",
        b'{"dataset": "x"}',
        content_type=f"application/json; charset={charset}",
    )
    assert response.status_code == 400
    assert "dataset" in response.json()["errors"]
