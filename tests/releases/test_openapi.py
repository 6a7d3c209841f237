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


def test_every_success_answer_has_its_own_shape_and_the_schema_stays_valid(anonymous_client, db):
    schema = schema_of(anonymous_client)

    validate_schema(schema)  # raises on an invalid document
    generic = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            for code, answer in operation["responses"].items():
                content = answer.get("content", {})
                is_file = any(
                    media.get("schema", {}).get("format") == "binary" for media in content.values()
                )
                if not code.startswith("2") or is_file or "application/json" not in content:
                    continue
                shape = content["application/json"]["schema"]
                if "$ref" not in shape and "properties" not in shape:
                    generic.append(f"{method.upper()} {path} {code}")
    assert generic == []


def test_every_operation_documents_405_and_each_public_one_429(anonymous_client, db):
    schema = schema_of(anonymous_client)
    error = {"$ref": "#/components/schemas/Error"}

    operations = {
        op["operationId"]: op for item in schema["paths"].values() for op in item.values()
    }
    for operation_id, operation in operations.items():
        responses = operation["responses"]
        assert responses["405"]["content"]["application/json"]["schema"] == error, operation_id
        if {} in operation.get("security", []):  # reachable anonymously: AnonymousApiThrottle
            assert responses["429"]["content"]["application/json"]["schema"] == error, operation_id
        else:
            assert "429" not in responses, operation_id


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
