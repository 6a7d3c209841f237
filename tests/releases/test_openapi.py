"""The API's OpenAPI 3 schema, generated from the views (drf-spectacular): valid, covering
every endpoint with its query parameters and error shape; its documentation page served with
the app's own assets and no inline script."""

import re

import yaml
from drf_spectacular.validation import validate_schema

import releases.urls_api


def schema_of(client) -> dict:
    response = client.get("/api/schema/")
    assert response.status_code == 200
    return yaml.safe_load(response.content)


def test_the_schema_is_valid_openapi_and_covers_every_endpoint(anonymous_client, db):
    schema = schema_of(anonymous_client)

    validate_schema(schema)  # raises on an invalid document
    assert schema["openapi"].startswith("3.")
    documented = set(schema["paths"])
    for pattern in releases.urls_api.urlpatterns:
        # Django's route, in OpenAPI's form: <int:release_id> → {release_id}
        path = "/api/v1/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(pattern.pattern))
        assert path in documented, path
    operations = [op for item in schema["paths"].values() for op in item.values()]
    ids = [op["operationId"] for op in operations]
    assert len(ids) == len(set(ids))
    assert all(op.get("summary") for op in operations)


def test_the_schema_names_query_parameters_and_the_error_shape(anonymous_client, db):
    schema = schema_of(anonymous_client)

    catalog = schema["paths"]["/api/v1/catalog/"]["get"]
    assert {p["name"] for p in catalog["parameters"]} >= {
        "search",
        "kind",
        "since",
        "until",
        "page",
    }
    error = schema["components"]["schemas"]["Error"]
    assert set(error["properties"]) == {"detail", "errors"}
    assert catalog["responses"]["400"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }


def test_the_documentation_page_uses_local_assets_and_no_inline_script(anonymous_client, db):
    html = anonymous_client.get("/api/docs/").content.decode()

    sources = re.findall(r'<script[^>]*src="([^"]+)"', html)
    assert sources
    assert all(src.startswith("/") and not src.startswith("//") for src in sources)
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>\s*\S", html)  # no inline script
    links = re.findall(r'<link[^>]*href="([^"]+)"', html)
    assert all(href.startswith("/") and not href.startswith("//") for href in links)
    script = anonymous_client.get(sources[-1])
    assert script.status_code == 200


def test_the_schema_ignores_lang_and_version_from_the_query_string(anonymous_client, db):
    from django.utils.translation import trans_real

    before = len(trans_real._translations)
    for index in range(20):
        response = anonymous_client.get("/api/schema/", {"lang": f"x{index}" * 300})
        assert response.status_code == 200
    tampered = anonymous_client.get("/api/schema/", {"version": 'a";filename="evil.html\nb'})

    assert len(trans_real._translations) <= before + 1  # no language kept per request
    assert tampered.status_code == 200
    assert "evil" not in tampered["Content-Disposition"]
    assert yaml.safe_load(tampered.content)["info"]["version"] == "1"
