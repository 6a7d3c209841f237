"""No input crashes or exhausts the API (issue 7, point 8): each hostile value is a 400 naming its
field, never a 500, a hang or a body read whole into memory."""

import io
import json
import math
from datetime import UTC

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ParseError

from audit.chain import AuditAction, audit_record
from audit.models import AuditEvent
from releases.apis.parsers import (
    BodyRefused,
    FormParser,
    check_json_value,
    parse_json_bytes,
)
from releases.models import Dataset, Release
from releases.parsing import SINCE_RANGE_MESSAGE, parse_iso_datetime
from tests.conftest import csv_upload, draft_body

TRANSLATE_URL = "/api/v1/translate/"
STARTING_POINT_URL = "/api/v1/guidance/starting-point/"
EVENTS_URL = "/api/v1/audit/events/"
NUL = "must not contain a NUL character"
TOO_DEEP = "must not nest arrays and objects deeper than 32 levels"
EPSILON_RANGE = "must be a number from 0 to 1e12"
GROUP_RANGE = "must be a whole number from 1 to 1000"
UNIT_RANGE = "must be a number from 0 to 1"
PROBABILITY_RANGE = "must be a number from 0.5 and below 1"
BEYOND_FLOAT = "must be a number between -1.8e+308 and 1.8e+308"


def invalid(response) -> dict:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["detail"]
    return body["errors"]


def post_json(client, url: str, raw: str | bytes, method: str = "post"):
    return getattr(client, method)(url, data=raw, content_type="application/json")


# --- translate ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "errors"),
    [
        # ε = 1e308 overflowed c·ε (500 before); NaN, infinities and garbage are no ε either
        ("epsilon=1e308", {"epsilon": [EPSILON_RANGE]}),
        ("epsilon=1e308&group_size=2&delta=1e-6", {"epsilon": [EPSILON_RANGE]}),
        ("epsilon=nan", {"epsilon": [EPSILON_RANGE]}),
        ("epsilon=inf", {"epsilon": [EPSILON_RANGE]}),
        ("epsilon=1e999", {"epsilon": [EPSILON_RANGE]}),
        ("epsilon=-0.5", {"epsilon": [EPSILON_RANGE]}),
        ("epsilon=" + "9" * 5000, {"epsilon": [EPSILON_RANGE]}),
        (
            "truth_probability=nan",
            {"truth_probability": [PROBABILITY_RANGE]},
        ),
        (
            "truth_probability=1",
            {"truth_probability": [PROBABILITY_RANGE]},
        ),
        # group sizes beyond any float, or not whole, or beyond the cap
        ("epsilon=1&group_size=1e300", {"group_size": [GROUP_RANGE]}),
        ("epsilon=1&group_size=1e300&delta=1e-6", {"group_size": [GROUP_RANGE]}),
        ("epsilon=1&group_size=1001", {"group_size": [GROUP_RANGE]}),
        ("epsilon=1&group_size=0", {"group_size": [GROUP_RANGE]}),
        ("epsilon=1&group_size=nan", {"group_size": [GROUP_RANGE]}),
        ("epsilon=1&group_size=" + "9" * 5000, {"group_size": [GROUP_RANGE]}),
        # δ and the prior are probabilities
        ("epsilon=1&delta=garbage", {"delta": [UNIT_RANGE]}),
        ("epsilon=1&delta=nan", {"delta": [UNIT_RANGE]}),
        ("epsilon=1&delta=inf", {"delta": [UNIT_RANGE]}),
        ("epsilon=1&delta=2", {"delta": [UNIT_RANGE]}),
        ("epsilon=1&prior=nan", {"prior": [UNIT_RANGE]}),
        # every bad parameter is named at once
        (
            "epsilon=nan&delta=x&group_size=0.5&prior=-1",
            {
                "epsilon": [EPSILON_RANGE],
                "delta": [UNIT_RANGE],
                "group_size": [GROUP_RANGE],
                "prior": [UNIT_RANGE],
            },
        ),
    ],
)
def test_translate_refuses_out_of_range_parameters_naming_each(anonymous_client, query, errors):
    # when
    response = anonymous_client.get(f"{TRANSLATE_URL}?{query}")

    # then
    assert invalid(response) == errors


def test_translate_refuses_a_group_whose_delta_overflows_naming_group_size(anonymous_client):
    # given parameters each in range whose group δ, c·e^{(c−1)ε}·δ = 1000·e^{4995}·10⁻⁶, is
    # beyond every float (an OverflowError and a 500 before)

    # when
    response = anonymous_client.get(f"{TRANSLATE_URL}?epsilon=5&group_size=1000&delta=1e-6")

    # then
    errors = invalid(response)
    assert list(errors) == ["group_size"]
    assert "choose a smaller group size" in errors["group_size"][0]


def test_translate_answers_at_the_edges_of_its_ranges(anonymous_client):
    # when the largest ε and group, without δ
    body = anonymous_client.get(f"{TRANSLATE_URL}?epsilon=1e12&group_size=1000").json()

    # then the engine's numbers, finite
    assert body["truth_probability"] == 1.0
    assert body["group_epsilon"] == 1e15
    assert body["group_delta"] == 0.0
    assert body["posterior"] == 1.0


# --- starting point ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "declared_size",
    ["0", "1000000000000", "10000000001", "9" * 5000, "-1", "1e3", "12.0"],
)
def test_starting_point_refuses_a_declared_size_outside_1_to_10_10(anonymous_client, declared_size):
    # when (0 divided by zero and 5,000 digits named "releases" before; 10¹² was answered)
    response = anonymous_client.get(
        STARTING_POINT_URL, {"harm": "low", "releases": "once", "declared_size": declared_size}
    )

    # then
    assert list(invalid(response)) == ["declared_size"]


def test_starting_point_accepts_the_largest_declared_size(anonymous_client):
    # when
    response = anonymous_client.get(
        STARTING_POINT_URL, {"harm": "low", "releases": "once", "declared_size": "10000000000"}
    )

    # then δ = 1/n²
    assert response.status_code == 200
    assert response.json()["delta"] == pytest.approx(1e-20)


def test_starting_point_names_each_bad_answer(anonymous_client):
    # when
    response = anonymous_client.get(
        STARTING_POINT_URL, {"harm": "harmless", "releases": "never", "declared_size": "x"}
    )

    # then
    assert invalid(response) == {
        "harm": ["must be one of low, moderate, severe"],
        "releases": ["must be one of once, few, regularly"],
        "declared_size": ["must be a whole number from 1 to 10,000,000,000"],
    }


# --- accuracy solver ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw_target", "message"),
    [
        ("1" + "0" * 400, BEYOND_FLOAT),  # a JSON integer float() overflows on (500 before)
        ("1e400", BEYOND_FLOAT),  # json reads it as inf
        ("-5", "must be a number greater than 0"),
        ("0", "must be a number greater than 0"),
        ('"10"', "must be a number greater than 0"),
        ("true", "must be a number greater than 0"),
    ],
)
def test_accuracy_solver_refuses_a_halfwidth_that_is_no_positive_float(
    curator_client, dataset, raw_target, message
):
    # given
    raw = '{"query": {"kind": "count"}, "ci95_halfwidth": ' + raw_target + "}"

    # when
    response = post_json(curator_client, f"/api/v1/datasets/{dataset.pk}/accuracy/", raw)

    # then
    assert invalid(response) == {"ci95_halfwidth": [message]}


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_bodies_refuse_nan_and_infinity(curator_client, dataset, constant):
    # when
    response = post_json(
        curator_client,
        f"/api/v1/datasets/{dataset.pk}/accuracy/",
        '{"query": {"kind": "count"}, "ci95_halfwidth": ' + constant + "}",
    )

    # then
    assert invalid(response) == {"body": [f"JSON parse error - {constant} is not a JSON number"]}


@pytest.mark.parametrize("raw", ["[1, 2]", '"text"', "5", "null"])
def test_accuracy_solver_refuses_other_json_than_an_object_naming_the_body(
    curator_client, dataset, raw
):
    # when
    response = post_json(curator_client, f"/api/v1/datasets/{dataset.pk}/accuracy/", raw)

    # then
    assert invalid(response) == {"body": ["must be a JSON object"]}


# --- JSON bodies: depth, size, NUL, surrogates -------------------------------------------------


def json_endpoints(dataset) -> list[tuple[str, str]]:
    return [
        ("post", "/api/v1/auth/token/"),
        ("post", "/api/v1/releases/"),
        ("put", f"/api/v1/datasets/{dataset.pk}/schema/"),
        ("post", f"/api/v1/datasets/{dataset.pk}/accuracy/"),
    ]


@pytest.mark.parametrize(
    "raw",
    [
        "[" * 100_000 + "]" * 100_000,  # RecursionError, a 500, before
        '{"a":' * 100_000 + "1" + "}" * 100_000,
        "[" * 33 + "]" * 33,  # one level more than accepted, far below Python's limit
    ],
    ids=["lists-100000", "objects-100000", "lists-33"],
)
def test_every_json_endpoint_refuses_deep_nesting(curator_client, dataset, raw):
    schema_before = Dataset.objects.get(pk=dataset.pk).schema

    for method, url in json_endpoints(dataset):
        # when
        response = post_json(curator_client, url, raw, method=method)

        # then
        assert invalid(response) == {"body": [TOO_DEEP]}, url
    assert Release.objects.count() == 0
    assert Dataset.objects.get(pk=dataset.pk).schema == schema_before


def test_json_body_larger_than_the_cap_is_refused_unread(curator_client, dataset):
    # given a 3 MiB title (2 MiB is the cap); before, it was read whole and parsed
    raw = json.dumps({**draft_body(dataset.pk), "title": "x" * (3 * 1024 * 1024)})

    # when
    response = post_json(curator_client, "/api/v1/releases/", raw)

    # then
    assert invalid(response) == {"body": ["must be at most 2,097,152 bytes"]}
    assert response.json()["detail"] == "The request body is too large."
    assert Release.objects.count() == 0


def test_body_cap_is_a_setting(curator_client, dataset, settings):
    # given
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "MAX_BODY_BYTES": 100}
    raw = json.dumps(draft_body(dataset.pk))
    assert len(raw) > 100

    # when
    response = post_json(curator_client, "/api/v1/releases/", raw)

    # then
    assert invalid(response) == {"body": ["must be at most 100 bytes"]}


@pytest.mark.parametrize(
    ("extra", "errors"),
    [
        ({"title": "Clinic\x00statistics"}, {"title": [NUL]}),
        ({"series": "clinic\x00"}, {"series": [NUL]}),
        (
            {"queries": [{"kind": "count"}, {"kind": "histogram", "column": "se\x00x"}]},
            {"queries.1.column": [NUL]},
        ),
        (
            {"title": "Clinic \ud800"},
            {"title": ["must be valid Unicode text (it contains a lone surrogate)"]},
        ),
        ({"definition": {"kind\x00": "pure_dp"}}, {"definition": [f"a key {NUL}"]}),
    ],
)
def test_release_draft_refuses_nul_and_surrogates_naming_the_field(
    curator_client, dataset, extra, errors
):
    # given (PostgreSQL stores neither: a 500 there before, and a NUL was stored on SQLite)
    raw = json.dumps({**draft_body(dataset.pk), **extra})

    # when
    response = post_json(curator_client, "/api/v1/releases/", raw)

    # then
    assert invalid(response) == errors
    assert Release.objects.count() == 0


def test_schema_refuses_a_category_with_a_nul_naming_it(curator_client, dataset):
    # given
    schema_before = Dataset.objects.get(pk=dataset.pk).schema
    body = {"columns": {"sex": {"kind": "categorical", "categories": ["F\x00", "M"]}}}

    # when
    response = curator_client.put(f"/api/v1/datasets/{dataset.pk}/schema/", body, format="json")

    # then
    assert invalid(response) == {"columns.sex.categories.0": [NUL]}
    assert Dataset.objects.get(pk=dataset.pk).schema == schema_before


def test_upload_form_refuses_a_name_with_a_nul(curator_client, curator):
    # when
    response = curator_client.post(
        "/api/v1/datasets/",
        {"name": "Clinic\x00", "file": csv_upload(b"a,b\n1,2\n3,4\n")},
        format="multipart",
    )

    # then
    assert invalid(response) == {"name": [NUL]}
    assert Dataset.objects.count() == 0


def test_token_form_refuses_a_nul(anonymous_client):
    # when
    response = anonymous_client.post(
        "/api/v1/auth/token/",
        data="username=ann%00&password=x",
        content_type="application/x-www-form-urlencoded",
    )

    # then
    assert invalid(response) == {"username": [NUL]}


def test_multipart_body_beyond_the_upload_cap_is_refused_before_it_is_stored(
    curator_client, settings
):
    # given uploads of at most 1,000 bytes, so the body may be 1,000 bytes plus the 2 MiB cap
    settings.DATASET_MAX_UPLOAD_BYTES = 1000
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "MAX_BODY_BYTES": 1000}
    content = b"a,b\n" + b"1,2\n" * 1000

    # when
    response = curator_client.post(
        "/api/v1/datasets/", {"name": "Big", "file": csv_upload(content)}, format="multipart"
    )

    # then
    assert invalid(response) == {"body": ["must be at most 2,000 bytes"]}
    assert Dataset.objects.count() == 0


# --- the parser under arbitrary input ---------------------------------------------------------


def test_parser_accepts_32_levels_and_refuses_33():
    # when / then
    assert parse_json_bytes(("[" * 32 + "]" * 32).encode()) is not None
    with pytest.raises(BodyRefused) as refused:
        parse_json_bytes(("[" * 33 + "]" * 33).encode())
    assert refused.value.errors == {"body": [TOO_DEEP]}


def test_parser_refuses_a_number_beyond_every_float_naming_its_path():
    # when
    with pytest.raises(BodyRefused) as refused:
        parse_json_bytes(b'{"queries": [{"weight": 1' + b"0" * 400 + b"}]}")

    # then
    assert refused.value.errors == {"queries.0.weight": [BEYOND_FLOAT]}


def test_parser_refuses_bytes_that_are_not_utf8():
    # when / then
    with pytest.raises(ParseError):
        parse_json_bytes(b'{"title": "\xff"}')


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_parser_turns_any_bytes_into_a_value_or_a_parse_error(content):
    # when / then: a value the API can store, or a 400 (ParseError), never another exception
    try:
        value = parse_json_bytes(content)
    except ParseError:
        return
    check_json_value(value, max_depth=32)


JSON_TEXT = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(JSON_TEXT, st.integers(min_value=0, max_value=40))
def test_parser_on_json_like_text_parses_it_or_refuses_it(value, extra_depth):
    # given any JSON-shaped value (NaN, infinities, NULs and surrogates included), maybe wrapped
    raw = "[" * extra_depth + json.dumps(value) + "]" * extra_depth

    # when / then
    try:
        parsed = parse_json_bytes(raw.encode("utf-8", "surrogatepass"))
    except ParseError:
        return
    check_json_value(parsed, max_depth=32)
    assert raw.count("[") - json.dumps(value).count("[") <= 32


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_form_parser_turns_any_bytes_into_fields_or_a_parse_error(content):
    # when / then
    try:
        data = FormParser().parse(io.BytesIO(content), "application/x-www-form-urlencoded", {})
    except ParseError:
        return
    for key, values in data.lists():
        assert "\x00" not in key
        assert all("\x00" not in value for value in values)


# --- audit trail: since, actor, action --------------------------------------------------------


@pytest.mark.parametrize("since", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_event_list_refuses_a_since_that_leaves_the_calendar_in_utc(compliance_client, since):
    # when (an OverflowError, a 500, before)
    response = compliance_client.get(EVENTS_URL, {"since": since})

    # then
    assert invalid(response) == {"since": [SINCE_RANGE_MESSAGE]}


@pytest.mark.parametrize("since", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_audit_page_shows_a_since_that_leaves_the_calendar_as_an_error(
    client, compliance_user, since
):
    # given
    client.force_login(compliance_user)

    # when
    response = client.get("/audit/", {"since": since})

    # then
    assert response.status_code == 200
    assert (
        "<li>Since must be an ISO-8601 date and time between the years 1 and 9999 in UTC.</li>"
        in response.content.decode()
    )


def test_event_list_accepts_the_calendars_edges_in_utc(compliance_client):
    # when
    first = compliance_client.get(EVENTS_URL, {"since": "0001-01-01T00:00:00Z"})
    last = compliance_client.get(EVENTS_URL, {"since": "9999-12-31T23:59:59Z"})

    # then
    assert first.status_code == 200
    assert last.json()["count"] == 0


@pytest.mark.parametrize("dataset", ["9" * 5000, str(2**63)])
def test_event_list_refuses_a_dataset_id_beyond_64_bits(compliance_client, dataset):
    # when (5,000 digits made int() raise, a 500, before)
    response = compliance_client.get(EVENTS_URL, {"dataset": dataset})

    # then
    assert invalid(response) == {"dataset": ["must be a dataset id"]}


@pytest.mark.parametrize("name", ["actor", "action"])
def test_event_list_refuses_a_nul_in_a_text_filter(compliance_client, name):
    # when (PostgreSQL refuses NUL in a query: a 500 there before)
    response = compliance_client.get(EVENTS_URL, {name: "curator\x001"})

    # then
    assert invalid(response) == {name: [NUL]}


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_parse_iso_datetime_gives_utc_or_none_for_any_text(text):
    # when
    value = parse_iso_datetime(text)

    # then
    assert value is None or value.tzinfo == UTC


@settings(max_examples=200, deadline=None)
@given(
    st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
)
def test_parse_iso_datetime_never_raises_on_aware_datetimes(text):
    # when / then
    value = parse_iso_datetime(text)
    assert value is None or value.tzinfo == UTC


# --- pagination and search ---------------------------------------------------------------------


@pytest.mark.parametrize("page", ["abc", "0", "-1", "1e10", "1.5", "00"])
def test_list_refuses_a_page_that_is_no_whole_number(compliance_client, page):
    # when (404 "Invalid page." before, naming nothing)
    response = compliance_client.get(EVENTS_URL, {"page": page})

    # then
    assert invalid(response) == {"page": ["must be a whole number from 1"]}


@pytest.mark.parametrize("page_size", ["abc", "0", "-5", "2.5"])
def test_list_refuses_a_page_size_that_is_no_whole_number(anonymous_client, db, page_size):
    # when (silently the default before)
    response = anonymous_client.get("/api/v1/catalog/", {"page_size": page_size})

    # then
    assert invalid(response) == {
        "page_size": ["must be a whole number from 1 (at most 200 are served)"]
    }


def test_list_serves_a_huge_page_size_as_200_and_a_huge_page_as_past_the_end(compliance_client):
    # given 25 events, more than the default page of 20
    for index in range(25):
        audit_record(
            actor="system",
            action=AuditAction.USER_CREATED,
            object_type="user",
            object_id=index,
            details={},
        )
    count = AuditEvent.objects.count()

    # when (5,000 digits fell back to the default page of 20 before)
    huge_size = compliance_client.get(EVENTS_URL, {"page_size": "9" * 5000})
    huge_page = compliance_client.get(EVENTS_URL, {"page": "9" * 5000})

    # then
    assert huge_size.status_code == 200
    assert len(huge_size.json()["results"]) == min(count, 200) > 20
    assert huge_page.status_code == 404


def test_catalog_api_refuses_a_nul_in_the_search(anonymous_client, db):
    # when (PostgreSQL refuses NUL in a query: a 500 there before)
    response = anonymous_client.get("/api/v1/catalog/", {"search": "clinic\x00"})

    # then
    assert invalid(response) == {"search": [NUL]}


def test_catalog_page_shows_a_nul_in_the_search_as_an_error(client, db):
    # when
    response = client.get("/catalog/", {"q": "clinic\x00"})

    # then the page lists the catalog unfiltered, with the error said
    assert response.status_code == 200
    page = response.content.decode()
    assert (
        '<div role="alert"><ul class="errorlist">'
        "<li>The search must not contain a NUL character.</li>" in page
    )
    assert 'name="q" value=""' in page


def test_json_number_edge_cases_still_work(curator_client, dataset):
    # given the largest finite float and a whole number just within it
    raw = '{"query": {"kind": "count"}, "ci95_halfwidth": 1.7976931348623157e308}'

    # when
    response = post_json(curator_client, f"/api/v1/datasets/{dataset.pk}/accuracy/", raw)

    # then the solver answers: the smallest ε it allows
    assert response.status_code == 200
    assert math.isfinite(response.json()["epsilon"])
