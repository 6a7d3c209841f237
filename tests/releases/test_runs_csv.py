"""Published CSV files are inert: no text cell starts like a spreadsheet formula, in any field;
numbers the release computed stay numbers, negative ones included, rounded to the precision
their interval supports."""

import csv
import io

from hypothesis import given
from hypothesis import strategies as st

from privacy_engine.presentation import interval_halfwidth, published_value
from releases.models import Release, ReleaseFile
from releases.services.runs import CSV_FIELDS, FORMULA_TRIGGERS, release_csv
from tests.conftest import csv_upload

TEXT_FIELDS = ("kind", "column", "category", "mechanism", "rule")
NUMBER_FIELDS = ("statistic", "value", "ci95_low", "ci95_high", "epsilon", "delta")

HOSTILE_COLUMN = '=HYPERLINK("http://example.com","x")'
# Declared categories lose surrounding whitespace, so a leading tab or CR is covered by the
# property test below, on the writer itself.
HOSTILE_CATEGORIES = ["=1+1", "+1", "-1", "@SUM(A1)", "plain"]


def rows_of(content: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(content.decode(), newline="")))


def escaped(text: str) -> str:
    return "'" + text if text.startswith((*FORMULA_TRIGGERS, "'")) else text


def unescaped(cell: str) -> str:
    """What a reader does: strip one leading quote."""
    return cell.removeprefix("'")


def test_hostile_column_and_category_names_are_escaped_in_the_published_csv(
    curator_client, django_capture_on_commit_callbacks
):
    # given a table whose column name and declared categories look like formulas
    upload = curator_client.post(
        "/api/v1/datasets/",
        {
            "name": "Hostile",
            "budget_epsilon": "1",
            "file": csv_upload(
                b'"=HYPERLINK(""http://example.com"",""x"")",age\n'
                b"=1+1,30\n+1,40\n-1,50\n@SUM(A1),60\nplain,70\n"
            ),
        },
    )
    assert upload.status_code == 201, upload.json()
    dataset_id = upload.json()["id"]
    schema = curator_client.put(
        f"/api/v1/datasets/{dataset_id}/schema/",
        {
            "columns": {
                HOSTILE_COLUMN: {"kind": "categorical", "categories": HOSTILE_CATEGORIES},
                "age": {"kind": "numeric", "lower": -100, "upper": 100},
            }
        },
        format="json",
    )
    assert schema.status_code == 200, schema.json()
    draft = curator_client.post(
        "/api/v1/releases/",
        {
            "dataset": dataset_id,
            "title": "Hostile names",
            "definition": {"kind": "pure_dp", "epsilon": 0.5},
            "queries": [
                {"kind": "histogram", "column": HOSTILE_COLUMN},
                {"kind": "sum", "column": "age"},
            ],
        },
        format="json",
    )
    assert draft.status_code == 201, draft.json()

    # when it is published
    with django_capture_on_commit_callbacks(execute=True):
        submitted = curator_client.post(f"/api/v1/releases/{draft.json()['id']}/submit/")
    assert submitted.status_code == 202
    release = Release.objects.get(pk=draft.json()["id"])
    assert release.status == Release.Status.PUBLISHED, release.failure_reason

    # then every formula-like text cell carries a leading quote, and numbers stay numbers
    record = ReleaseFile.objects.get(release=release, format="csv")
    with record.file.open("rb") as handle:
        rows = rows_of(handle.read())
    histogram = [r for r in rows if r["kind"] == "histogram"]
    assert [r["category"] for r in histogram] == ["'=1+1", "'+1", "'-1", "'@SUM(A1)", "plain"]
    assert {r["column"] for r in histogram} == {"'" + HOSTILE_COLUMN}
    for row in rows:
        for field in TEXT_FIELDS:
            assert not row[field].startswith(FORMULA_TRIGGERS), (field, row[field])
        for field in NUMBER_FIELDS:
            float(row[field])
    assert len(rows) == len(HOSTILE_CATEGORIES) + 1


def statistics_with(text: st.SearchStrategy[str]) -> st.SearchStrategy[list[dict]]:
    number = st.one_of(
        st.integers(min_value=-(10**12), max_value=10**12),
        st.floats(allow_nan=False, allow_infinity=False),
    )
    interval = st.tuples(number, number).map(list)
    scalar = st.fixed_dictionaries(
        {"value": number, "ci95": interval, "kind": text, "column": st.none() | text}
    )
    cells = st.dictionaries(text, st.tuples(number, interval), min_size=1, max_size=4)
    histogram = st.builds(
        lambda kind, column, cells: {
            "kind": kind,
            "column": column,
            "value": {c: v for c, (v, _) in cells.items()},
            "ci95": {c: i for c, (_, i) in cells.items()},
        },
        text,
        text,
        cells,
    )
    common = st.fixed_dictionaries(
        {
            "mechanism": text,
            "epsilon": number,
            "delta": number,
            "sensitivity": number,
            "noise_scale": number,
            "rule": st.none() | text,
        }
    )
    statistic = st.builds(lambda a, b: {**a, **b}, scalar | histogram, common)
    return st.lists(statistic, min_size=1, max_size=4)


# Text with every formula trigger, quotes, separators and line breaks over-represented.
curator_text = st.text(
    alphabet=st.sampled_from(["=", "+", "-", "@", "\t", "\r", "\n", '"', ",", "'", " ", "a", "1"])
    | st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=12,
)


@given(curator_text)
def test_the_escape_can_be_undone_so_two_texts_never_read_alike(text):
    # given two categories, one the other with a leading quote ("-1" and "'-1")
    quoted = "'" + text
    statistic = {
        "kind": "histogram",
        "column": "c",
        "value": {text: 1, quoted: 2},
        "ci95": {text: [0, 2], quoted: [1, 3]},
        "mechanism": "geometric",
        "epsilon": 1.0,
        "delta": 0.0,
        "sensitivity": 1,
        "noise_scale": 1.0,
        "rule": "",
    }

    # when
    rows = rows_of(release_csv([statistic]))

    # then their cells differ, and stripping one leading quote gives each back
    assert rows[0]["category"] != rows[1]["category"]
    assert [unescaped(r["category"]) for r in rows] == [text, quoted]


@given(statistics_with(curator_text))
def test_no_text_cell_of_a_published_csv_starts_like_a_formula(statistics):
    # when
    rows = rows_of(release_csv(statistics))

    # then each cell reads back as written: text escaped, numbers rounded as the engine rounds
    # them (a value and its interval to the interval's precision, the ends outwards; other
    # numbers cleared of a float's artefacts)
    def number(value, interval=(None, None), rounding="nearest"):
        halfwidth = interval_halfwidth(*interval)
        return str(published_value(value, halfwidth=halfwidth, rounding=rounding))

    expected = []
    for index, stat in enumerate(statistics):
        cells = (
            [(c, v, stat["ci95"][c]) for c, v in stat["value"].items()]
            if isinstance(stat["value"], dict)
            else [("", stat["value"], stat["ci95"])]
        )
        for category, value, (low, high) in cells:
            expected.append(
                {
                    "statistic": str(index),
                    "kind": escaped(stat["kind"]),
                    "column": escaped(stat["column"] or ""),
                    "category": escaped(category),
                    "value": number(value, (low, high)),
                    "ci95_low": number(low, (low, high), "down"),
                    "ci95_high": number(high, (low, high), "up"),
                    "mechanism": escaped(stat["mechanism"]),
                    "epsilon": number(stat["epsilon"]),
                    "delta": number(stat["delta"]),
                    "sensitivity": number(stat["sensitivity"]),
                    "noise_scale": number(stat["noise_scale"]),
                    "rule": escaped(stat["rule"] or ""),
                }
            )
    assert rows == expected
    for row in rows:
        assert list(row) == CSV_FIELDS
        for field in TEXT_FIELDS:
            assert not row[field].startswith(FORMULA_TRIGGERS)


def test_negative_numbers_written_by_the_release_are_not_escaped():
    # given a sum whose noisy value and interval are negative
    statistics = [
        {
            "kind": "sum",
            "column": "balance",
            "value": -3.5,
            "ci95": [-10.5, 3.5],
            "mechanism": "laplace",
            "epsilon": 0.5,
            "delta": 0.0,
            "sensitivity": 100.0,
            "noise_scale": 200.0,
            "rule": None,
        }
    ]

    # when
    (row,) = rows_of(release_csv(statistics))

    # then
    assert (row["value"], row["ci95_low"], row["ci95_high"]) == ("-3.5", "-10.5", "3.5")
    assert (row["column"], row["category"], row["rule"]) == ("balance", "", "")
