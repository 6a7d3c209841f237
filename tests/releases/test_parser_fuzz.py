"""Property-based fuzzing (issue 12, point 8) of the three parsers hostile input reaches first:
the CSV reader (``table_convert``), the schema declaration (PUT /api/v1/datasets/{id}/schema/
and the dataset page's schema form) and the release definition (``definition_from_dict``, POST
/api/v1/releases/ and the wizard's privacy step).

Each property says, in a comment, the failure it exists to catch. Runs are bounded (a few dozen
to a few hundred examples each) so the file stays well under a minute; the example database
(.hypothesis/) replays any failure found before.
"""

import codecs
import copy
import csv
import io
import string
import tempfile
from pathlib import Path

import pytest
from django.test import Client
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from privacy_engine import EngineValidationError, definition_from_dict
from releases.models import Dataset, Release
from releases.services.tables import TableError, table_convert
from tests.conftest import stored_cells


def fuzz(examples: int) -> settings:
    """Bounded runs. Function-scoped fixtures (a database, a client) are shared by a property's
    examples on purpose: each example is one more request against the same dataset, as a
    hostile client's would be."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# --- JSON-ish values ----------------------------------------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["", "0", "1e309", "-1", "numeric", "categorical", "identifier", "age"])
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def assert_field_errors(body: dict, *, whole_value_path: str | None = None) -> None:
    """A 400 in the API's shape, naming at least one field, each with a message. The engine
    names fields relative to the value it parses: there ``whole_value_path`` ("") is the value
    itself; the API always names a field."""
    assert isinstance(body.get("detail"), str), body
    errors = body.get("errors")
    assert isinstance(errors, dict), body
    assert errors, body
    for path, messages in errors.items():
        assert isinstance(path, str), body
        assert path or path == whole_value_path, body
        assert isinstance(messages, list), body
        assert messages, body
        assert all(isinstance(m, str) and m for m in messages), body


# --- (a) the CSV reader -------------------------------------------------------------------------


def convert(raw: bytes, *, fast: bool = True, dialect=None):
    """("ok", stored cells, converted table) or ("refused", message) for ``raw``; any other
    exception propagates, and a refusal must leave no file at the target."""
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder, "upload.csv"), Path(folder, "table.parquet")
        source.write_bytes(raw)
        try:
            table = table_convert(source, target, dialect=dialect, max_columns=50, fast=fast)
        except TableError as error:
            assert not target.exists(), "a refused file left a partial table"
            return ("refused", str(error))
        return ("ok", stored_cells(str(target)), table)


# CSV's special characters, Unicode that readers and spreadsheets treat specially (a byte-order
# mark, a direction override, NEL, a line separator), a NUL, and formula payloads.
FRAGMENTS = st.sampled_from(
    [
        *[",", ";", "\t", '"', "'", '""', "\r", "\n", "\r\n", " ", "a", "Z", "1", "-2.5"],
        *["é", "中", "\U0001f600", "\ufeff", "\u202e", "\x85", "\u2028", "\x1c", "\x00"],
        *["=cmd|' /C calc'!A0", "+1", "@SUM(1)"],
    ]
)
ENCODINGS = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-be", "latin-1", "cp1252"])


@st.composite
def hostile_bytes(draw) -> bytes:
    """Arbitrary bytes, or CSV-ish text in any encoding, after up to a few thousand good rows:
    past the first 8 KiB a bad byte is met by the record reader, not by dialect detection."""
    good_rows = draw(st.sampled_from([0, 0, 3, 3000]))
    prefix = ("a,b\n" + "1,2\n" * good_rows).encode() if good_rows else b""
    tail = draw(
        st.binary(max_size=400)
        | st.builds(
            lambda parts, encoding: "".join(parts).encode(encoding, errors="ignore"),
            st.lists(FRAGMENTS, max_size=80),
            ENCODINGS,
        )
    )
    return prefix + tail


# Catches: any exception but TableError escaping the reader (UnicodeDecodeError, csv.Error, an
# Arrow error, an IndexError on an odd record), a refusal that leaves a half-written table, a
# table whose row count is not its rows, and the fast parser reading a file otherwise than the
# csv module (their answers must be identical, table or refusal).
@fuzz(150)
@given(hostile_bytes())
def test_any_bytes_give_a_whole_table_or_a_table_error_the_same_on_both_parsers(raw):
    # when
    fast = convert(raw, fast=True)

    # then
    event(fast[0])
    if fast[0] == "ok":
        _, cells, table = fast
        assert table.row_count == len(cells)
        assert all(len(row) == len(table.columns) for row in cells)
    slow = convert(raw, fast=False)
    assert fast[:2] == slow[:2]


HEADER_NAMES = st.text(string.ascii_letters + "éßж中 _", min_size=1, max_size=8).filter(
    lambda name: name.strip() == name
)
# Cell text from all of Unicode but NUL (it refuses a file) and lone surrogates (not text),
# with the characters CSV and spreadsheets treat specially drawn often.
CELL_TEXT = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")
    | st.sampled_from([",", ";", "\t", '"', "'", "\r", "\n", " ", "=", "+", "-", "@", "\ufeff"]),
    max_size=12,
)


@st.composite
def generated_tables(draw):
    """A well-formed table written by the csv module (RFC 4180 quoting) and its cells."""
    delimiter = draw(st.sampled_from([",", ";", "\t"]))
    quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    width = draw(st.integers(min_value=2, max_value=5))
    header = draw(st.lists(HEADER_NAMES, min_size=width, max_size=width, unique=True))
    rows = draw(
        st.lists(st.lists(CELL_TEXT, min_size=width, max_size=width), min_size=1, max_size=8)
    )
    out = io.StringIO(newline="")
    # CRLF: the writer then quotes any cell holding a CR or an LF.
    writer = csv.writer(out, delimiter=delimiter, quoting=quoting, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    text = out.getvalue()
    if draw(st.booleans()):
        text = text.removesuffix("\r\n")  # no line break after the last record
    raw = text.encode()
    if draw(st.booleans()):
        raw = codecs.BOM_UTF8 + raw
    dialect = {
        "delimiter": delimiter,
        "quotechar": '"',
        "doublequote": True,
        "escapechar": None,
        "skipinitialspace": False,
    }
    return raw, dialect, header, rows


# Catches: a reader that loses, adds, merges or splits rows (a last record without a line break,
# a quoted line break, an empty line inside quotes), mangles a value (quotes doubled or lost,
# Unicode, a byte-order mark kept in the first name), or refuses a well-formed table.
@fuzz(150)
@given(generated_tables())
def test_a_well_formed_table_keeps_every_value_and_row(table):
    # given
    raw, dialect, header, rows = table

    # when read with the dialect it was written in (as every read after the upload is)
    outcome = convert(raw, dialect=dialect)

    # then every value is kept (without surrounding whitespace, which no kind reads)
    assert outcome[0] == "ok", outcome
    _, cells, converted = outcome
    assert [column["name"] for column in converted.columns] == header
    assert converted.row_count == len(rows)
    assert cells == [[cell.strip() for cell in row] for row in rows]


# Catches: a dialect detected at upload that reads a well-formed table into other values and
# still accepts it (a silent misreading); refusing it is allowed, misreading is not.
@fuzz(100)
@given(generated_tables())
def test_a_detected_dialect_reads_a_table_right_or_refuses_it(table):
    # given
    raw, _, header, rows = table

    # when read as an upload is, detecting the dialect
    outcome = convert(raw)

    # then
    event(outcome[0])
    if outcome[0] == "ok":
        _, cells, converted = outcome
        assert [column["name"] for column in converted.columns] == header
        assert cells == [[cell.strip() for cell in row] for row in rows]


# --- inputs near the valid ones -----------------------------------------------------------------


def _slots(value, path=()) -> list[tuple]:
    """Every (path to a container, key) in nested dicts and lists."""
    slots = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        slots.append((path, key))
        if isinstance(child, dict | list) and child:
            slots.extend(_slots(child, (*path, key)))
    return slots


@st.composite
def one_field_changed(draw, valid, replacement=JSON_VALUES):
    """A valid value with one field (at any depth) replaced by ``replacement`` or removed: each
    check of a parser is reached with everything else right, which random structures rarely do."""
    value = copy.deepcopy(draw(valid))
    slots = _slots(value)
    if not slots:
        return value
    # A depth first, then a field at that depth: the few top-level fields are changed as often
    # as the many nested ones.
    depth = draw(st.sampled_from(sorted({len(path) for path, _ in slots})))
    path, key = draw(st.sampled_from([slot for slot in slots if len(slot[0]) == depth]))
    container = value
    for step in path:
        container = container[step]
    if isinstance(container, dict) and draw(st.booleans()):
        del container[key]
    else:
        container[key] = draw(replacement)
    return value


def near(valid, replacement=JSON_VALUES, hostile=JSON_VALUES):
    """Valid values, valid values with one field changed, and anything at all."""
    return valid | one_field_changed(valid, replacement) | hostile


@st.composite
def named_field_changed(draw, valid, field, replacement):
    """A valid form post with ``field`` replaced by ``replacement`` or left out; with ``field``
    None, any fields with any values."""
    if field is None:
        return draw(st.dictionaries(st.text(max_size=12), replacement))
    post = draw(valid)
    if draw(st.integers(min_value=0, max_value=5)) == 0:
        post.pop(field, None)
    else:
        post[field] = draw(replacement)
    return post


# --- (b) the schema: API and page ---------------------------------------------------------------

COLUMN_NAMES = ["name", "age", "sex", "visits"]


@st.composite
def numeric_specs(draw) -> dict:
    lower = draw(st.integers(min_value=-100, max_value=50))
    upper = lower + draw(st.integers(min_value=1, max_value=200))
    spec = {"kind": "numeric", "lower": lower, "upper": upper}
    if draw(st.booleans()):
        spec["fill"] = draw(st.integers(min_value=lower, max_value=upper))
    if draw(st.booleans()):
        spec["typical"] = draw(st.integers(min_value=lower, max_value=upper))
    return spec


CATEGORICAL_SPECS = st.fixed_dictionaries(
    {"kind": st.just("categorical"), "categories": st.sampled_from([["F", "M"], ["F", "M", "X"]])},
    optional={"other": st.just("X"), "fill": st.just("F")},
)
VALID_SCHEMAS = st.fixed_dictionaries(
    {
        "columns": st.fixed_dictionaries(
            {},
            optional={
                "name": st.just({"kind": "identifier"}),
                "age": numeric_specs(),
                "sex": CATEGORICAL_SPECS,
                "visits": numeric_specs(),
            },
        )
    },
    optional={
        "declared_size": st.integers(min_value=1, max_value=10**6),
        "person_key": st.just("name"),
        "max_rows_per_person": st.integers(min_value=1, max_value=5),
    },
)


# Catches: a declaration the schema parser cannot handle (a TypeError on a list where a number
# belongs, an OverflowError on a huge integer, a KeyError on a missing kind) answered with a 5xx
# (the test client raises it), and a 400 that names no field.
@fuzz(150)
@given(body=near(VALID_SCHEMAS))
def test_any_schema_body_is_saved_or_refused_naming_a_field(curator_client, dataset, body):
    # when
    response = curator_client.put(f"/api/v1/datasets/{dataset.pk}/schema/", body, format="json")

    # then
    event(f"status {response.status_code}")
    assert response.status_code in (200, 400), (response.status_code, response.content[:300])
    if response.status_code == 200:
        assert set(response.json()["columns"]) == set(COLUMN_NAMES)
    else:
        assert_field_errors(response.json())


FORM_TEXT = st.text(max_size=10) | st.sampled_from(
    ["", "0", "-1", "1e309", "nan", "inf", "100", "F, M", "F,,M", "numeric", "categorical"]
)
# The schema form as the page posts it (columns in file order: name, age, sex, visits).
VALID_SCHEMA_POSTS = st.fixed_dictionaries(
    {
        "col0-kind": st.just("identifier"),
        "col1-kind": st.just("numeric"),
        "col1-lower": st.integers(-100, 0).map(str),
        "col1-upper": st.integers(1, 200).map(str),
        "col2-kind": st.just("categorical"),
        "col2-categories": st.sampled_from(["F, M", "F,M,X"]),
        "col3-kind": st.sampled_from(["numeric", "identifier"]),
        "col3-lower": st.just("0"),
        "col3-upper": st.just("10"),
    },
    optional={
        "col1-fill": st.integers(0, 1).map(str),
        "col1-typical": st.integers(0, 1).map(str),
        "col2-other": st.just("X"),
        "col2-fill": st.just("F"),
        "person_key": st.just("name"),
        "max_rows_per_person": st.integers(1, 5).map(str),
    },
)


SCHEMA_POST_FIELDS = [
    "col0-kind",
    "col1-kind",
    "col1-lower",
    "col1-upper",
    "col1-fill",
    "col1-typical",
    "col2-kind",
    "col2-categories",
    "col2-other",
    "col2-fill",
    "col3-kind",
    "col3-lower",
    "col3-upper",
    "person_key",
    "max_rows_per_person",
]


@pytest.fixture
def page_client(curator) -> Client:
    client = Client()
    client.force_login(curator)
    return client


def shows_an_error(response) -> bool:
    page = response.content.decode()
    return 'class="errorlist' in page or '<li class="error">' in page


# Catches: the page's schema form turning a posted value into a 5xx (a max_rows_per_person that
# int() cannot read, an engine error with no matching form field), and a refusal that is not
# shown to the curator. Each field in turn is fuzzed with every other one valid (a random post
# almost never gets that far); None posts any fields at all.
@pytest.mark.parametrize("field", [*SCHEMA_POST_FIELDS, None])
@fuzz(12)
@given(draw=st.data())
def test_any_schema_form_post_is_saved_or_shown_with_an_error(page_client, dataset, field, draw):
    # given
    data = draw.draw(named_field_changed(VALID_SCHEMA_POSTS, field, FORM_TEXT))

    # when
    response = page_client.post(f"/datasets/{dataset.pk}/", data)

    # then saved (a redirect), or the page again with the problem shown
    event(f"status {response.status_code}")
    assert response.status_code in (200, 302), response.status_code
    if response.status_code == 200:
        assert shows_an_error(response), data


# --- (c) the release definition: engine, API and wizard -----------------------------------------

EPSILONS = st.floats(min_value=1e-4, max_value=10)
POLICIES = st.one_of(
    st.just({"graph": "full_domain"}),
    st.just({"graph": "partition", "column": "sex", "groups": [["F"], ["M"]]}),
    st.builds(
        lambda width: {"graph": "partition", "column": "age", "width": width},
        st.floats(min_value=1, max_value=100),
    ),
    st.builds(
        lambda columns, theta: {"graph": "distance_threshold", "columns": columns, "theta": theta},
        st.sampled_from([["age"], ["age", "visits"]]),
        st.floats(min_value=0.1, max_value=100),
    ),
    st.builds(lambda c: {"graph": "attribute", "c": c}, st.integers(min_value=1, max_value=3)),
)
VALID_DEFINITIONS = st.one_of(
    st.builds(lambda epsilon: {"kind": "pure_dp", "epsilon": epsilon}, EPSILONS),
    st.builds(
        lambda epsilon, delta: {"kind": "approx_dp", "epsilon": epsilon, "delta": delta},
        EPSILONS,
        st.floats(min_value=1e-30, max_value=1e-3),
    ),
    st.builds(
        lambda epsilon, policy: {"kind": "blowfish", "epsilon": epsilon, "policy": policy},
        EPSILONS,
        POLICIES,
    ),
)


# Catches: a definition the engine's parser cannot handle raising anything but its validation
# error (a TypeError from a string epsilon, a ValueError from float("x"), an unhashable group),
# an error that names no field, and a parsed definition whose JSON form parses to another one.
@fuzz(400)
@given(spec=near(VALID_DEFINITIONS))
def test_any_definition_parses_or_is_refused_naming_a_field(spec):
    # when
    try:
        definition = definition_from_dict(spec)
    except EngineValidationError as error:
        # then
        event("refused")
        assert_field_errors({"detail": str(error), "errors": error.errors}, whole_value_path="")
        return

    # then what it writes reads back as the same definition
    event(f"parsed {definition.kind}")
    assert definition_from_dict(definition.to_dict()) == definition


VALID_QUERIES = st.lists(
    st.sampled_from(
        [
            {"kind": "count"},
            {"kind": "histogram", "column": "sex"},
            {"kind": "sum", "column": "age"},
            {"kind": "mean", "column": "age", "weight": 2},
            {"kind": "quantile", "column": "age"},
            {"kind": "marginal", "columns": ["sex", "visits"]},
        ]
    ),
    min_size=1,
    max_size=4,
)
VALID_DRAFTS = st.fixed_dictionaries(
    {
        "title": st.text(string.ascii_letters + " ", min_size=1, max_size=20),
        "definition": VALID_DEFINITIONS,
        "queries": VALID_QUERIES,
    }
)


# Catches: a release draft whose definition or queries crash the service (a 5xx, raised by the
# test client), or a 400 that names no field.
@fuzz(120)
@given(
    body=near(
        VALID_DRAFTS,
        hostile=st.dictionaries(st.sampled_from(["title", "definition", "queries"]), JSON_VALUES),
    )
)
def test_any_release_draft_is_created_or_refused_naming_a_field(curator_client, dataset, body):
    # when
    response = curator_client.post(
        "/api/v1/releases/", {**body, "dataset": dataset.pk}, format="json"
    )

    # then
    event(f"status {response.status_code}")
    assert response.status_code in (201, 400), (response.status_code, response.content[:300])
    if response.status_code == 201:
        assert Release.objects.get(pk=response.json()["id"]).status == "draft"
    else:
        assert_field_errors(response.json())


PRIVACY_POST_FIELDS = [
    "title",
    "definition_kind",
    "epsilon",
    "truth_probability",
    "delta",
    "policy_graph",
    "policy_column",
    "policy_columns",
    "policy_groups",
    "policy_width",
    "policy_theta",
    "policy_c",
]
POLICY_GRAPHS = [
    "full_domain",
    "partition_groups",
    "partition_width",
    "distance_threshold",
    "attribute",
]
VALID_PRIVACY_POSTS = st.one_of(
    st.fixed_dictionaries(
        {"title": st.just("Clinic"), "definition_kind": st.just("pure_dp")},
        optional={"epsilon": EPSILONS.map(repr), "truth_probability": st.just("0.6")},
    ),
    st.fixed_dictionaries(
        {
            "title": st.just("Clinic"),
            "definition_kind": st.just("approx_dp"),
            "epsilon": EPSILONS.map(repr),
            "delta": st.sampled_from(["", "1e-9", "0.0001"]),
        }
    ),
    st.fixed_dictionaries(
        {
            "title": st.just("Clinic"),
            "definition_kind": st.just("blowfish"),
            "epsilon": EPSILONS.map(repr),
            "policy_graph": st.sampled_from(POLICY_GRAPHS),
            "policy_column": st.sampled_from(["age", "sex", "visits"]),
            "policy_columns": st.sampled_from(["", "age, visits"]),
            "policy_groups": st.sampled_from(["F | M", "F, M"]),
            "policy_width": st.sampled_from(["10", "0.5"]),
            "policy_theta": st.sampled_from(["5", "0.1"]),
            "policy_c": st.sampled_from(["1", "2"]),
        }
    ),
)


# Catches: the wizard's privacy form handing the engine a definition it cannot parse (ε and p
# both left out, a policy field the engine refuses), or a refusal with no field to show it on,
# answered with a 5xx instead of the form and its error. Each field in turn, as above.
@pytest.mark.parametrize("field", [*PRIVACY_POST_FIELDS, None])
@fuzz(12)
@given(draw=st.data())
def test_any_privacy_step_post_drafts_a_release_or_shows_an_error(
    page_client, dataset, field, draw
):
    # given
    data = draw.draw(named_field_changed(VALID_PRIVACY_POSTS, field, FORM_TEXT))

    # when
    response = page_client.post(f"/datasets/{dataset.pk}/releases/new/", data)

    # then a draft and the next step, or the form again with the problem shown
    event(f"status {response.status_code}")
    assert response.status_code in (200, 302), response.status_code
    if response.status_code == 302:
        assert Dataset.objects.get(pk=dataset.pk).releases.filter(status="draft").exists()
    elif data:
        assert shows_an_error(response), data
    # (an empty post is a first visit: the empty form, with nothing to refuse)
