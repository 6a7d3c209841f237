"""A schema-driven fuzz run (schemathesis) over every operation of the API's own OpenAPI
schema, as the public and as a curator: no 5xx, every error in the API's one shape, and every
answer as the schema documents it for its status (response_schema_conformance).

Requests go through the WSGI application in this process, against the test's database, with a
published version, a dataset and a draft in place so that paths with real ids are reached too.
Generated bodies are both valid and invalid (schemathesis's positive and negative modes)."""

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from knox.models import AuthToken
from schemathesis import GenerationMode

from tests.conftest import draft_body, publish_through_api

ERROR_STATUSES = range(400, 500)
EXAMPLES = 10
# Operations fuzzed at least (there are more; only those with inputs have invalid forms).
MIN_OPERATIONS = {GenerationMode.POSITIVE: 25, GenerationMode.NEGATIVE: 15}


@schemathesis.check
def errors_have_the_api_shape(ctx, response, case) -> bool | None:
    """A 4xx answer of the API is JSON with a "detail" string (and, for 400, "errors" by field)."""
    if response.status_code not in ERROR_STATUSES or not case.path.startswith("/api/v1/"):
        return None
    where = f"{case.method} {case.formatted_path} answered {response.status_code}"
    content_type = {k.lower(): v for k, v in response.headers.items()}.get("content-type", [""])
    assert content_type[0].startswith("application/json"), (
        f"{where} with {content_type}: {response.text[:200]!r}"
    )
    body = response.json()
    assert isinstance(body, dict), (where, body)
    assert isinstance(body.get("detail"), str), body
    if response.status_code == 400 and "errors" in body:
        assert isinstance(body["errors"], dict), body
    return True


@pytest.fixture
def api_schema(curator, curator_client, dataset, django_capture_on_commit_callbacks, settings):
    settings.ANONYMOUS_API_RATE = "100000/min"
    publish_through_api(curator_client, django_capture_on_commit_callbacks, draft_body(dataset.pk))
    curator_client.post("/api/v1/releases/", draft_body(dataset.pk), format="json")
    # As Django's test client does: a request must not close the test's database connection.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def operations(schema) -> list:
    return [result.ok() for result in schema.get_all_operations()]


@pytest.mark.parametrize(
    ("mode", "as_curator"),
    [
        (GenerationMode.POSITIVE, True),
        (GenerationMode.NEGATIVE, True),
        (GenerationMode.POSITIVE, False),
    ],
    ids=["curator-valid", "curator-invalid", "public-valid"],
)
def test_no_operation_answers_a_server_error(api_schema, curator, mode, as_curator):
    _, token = AuthToken.objects.create(user=curator)
    headers = {"Authorization": f"Token {token}"} if as_curator else {}
    checked = []
    for operation in operations(api_schema):

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def fuzz(case) -> None:
            case.call_and_validate(
                headers=headers,
                checks=[
                    schemathesis.checks.not_a_server_error,
                    schemathesis.checks.response_schema_conformance,
                    errors_have_the_api_shape,
                ],
            )

        try:
            fuzz()
        except Unsatisfiable:
            # Nothing in the operation can be made invalid (no parameters, no body).
            assert mode == GenerationMode.NEGATIVE, operation.label
            continue
        checked.append(operation.label)
    assert len(checked) >= MIN_OPERATIONS[mode], checked
