"""Issue 13, point 1: from the home page to a submitted release of a 10-column survey with three
statistics in at most 15 interactions, every one counted (tests/browser/interactions.py).

Logging in is not counted: the issue counts "from the home page". It takes three more (the
user name, the password and "Log in"), printed with the count."""

import csv
import random

import pytest
from playwright.sync_api import expect

from releases.models import Dataset, Release
from tests.browser.interactions import (
    GUIDED_PATH_BUDGET,
    InteractionBudgetExceeded,
    InteractionCounter,
)
from tests.browser.test_accessibility import broker_without_worker
from tests.conftest import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REGIONS = ["North", "South", "East", "West", "Central"]
EDUCATION = ["none", "primary", "secondary", "tertiary"]
# What the curator knows is public about the survey: the regions and a wage range.
REGION_CATEGORIES = ", ".join(REGIONS)
WAGE_BOUNDS = ("0", "10000")


def write_survey(path, *, rows: int = 3000, seed: int = 13) -> None:
    """A labour-survey-like table of 10 columns, the same for every run (test data, not
    privacy noise)."""
    generator = random.Random(seed)
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(
            [
                "respondent_id",
                "region",
                "sex",
                "age",
                "hours_worked",
                "wage",
                "household_size",
                "education",
                "employed",
                "survey_weight",
            ]
        )
        for number in range(1, rows + 1):
            employed = generator.random() < 0.7
            hours = generator.randint(10, 60) if employed else 0
            writer.writerow(
                [
                    f"R{number:05d}",
                    generator.choice(REGIONS),
                    generator.choice("FM"),
                    generator.randint(16, 80),
                    hours,
                    generator.randint(hours * 40, hours * 150) if employed else 0,
                    generator.randint(1, 8),
                    generator.choice(EDUCATION),
                    "yes" if employed else "no",
                    round(generator.uniform(50, 400), 2),
                ]
            )


def log_in(page, live_server, username: str) -> int:
    """Logs in from the login page, landing on the home page; returns the interactions it took
    (not counted against the budget)."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    return 3


def walk_to_the_dataset_page(page, steps: InteractionCounter, survey, *, typed_name=None):
    """Home page → upload → the dataset page."""
    steps.click(page.locator("#publish-statistics"), "Publish statistics")
    if typed_name is not None:
        steps.fill(page.get_by_label("Name"), typed_name, "Name")
    steps.set_input_files(page.get_by_label("File"), str(survey), survey.name)
    steps.click(page.get_by_role("button", name="Upload"), "Upload")
    page.wait_for_selector("#schema-form")
    # The page's scripts have run (the category boxes become tag editors): a person types after
    # the page has loaded, and a test as fast as a script must wait as long.
    page.wait_for_load_state("load")


def test_the_default_path_submits_three_statistics_in_at_most_15_interactions(
    page, live_server, tmp_path
):
    # given a curator on the home page and a survey of 10 columns and 3,000 rows
    make_user("curator1", "curator")
    login_interactions = log_in(page, live_server, "curator1")
    survey = tmp_path / "labour_survey.csv"
    write_survey(survey)
    steps = InteractionCounter()

    # when they follow the default path: upload (the name comes from the file)
    walk_to_the_dataset_page(page, steps, survey)
    dataset = Dataset.objects.get()
    assert dataset.name == "labour_survey"
    assert [c["name"] for c in dataset.columns][:2] == ["respondent_id", "region"]
    assert len(dataset.columns) == 10

    # and declare only what the statistics need: the regions and the wage bounds
    steps.fill(page.get_by_label("Categories of region"), REGION_CATEGORIES, "categories of region")
    steps.fill(page.get_by_label("Lower bound of wage"), WAGE_BOUNDS[0], "lower bound of wage")
    steps.fill(page.get_by_label("Upper bound of wage"), WAGE_BOUNDS[1], "upper bound of wage")
    steps.click(
        page.get_by_role("button", name="Save and choose what to publish →"),
        "Save and choose what to publish →",
    )

    # and accept the privacy step as it comes (title and ε by default)
    page.wait_for_selector("#privacy-form")
    expect(page.get_by_label("Release title")).to_have_value("labour_survey statistics")
    expect(page.locator("main")).to_contain_text("No statistic can use sex, age, hours_worked")
    steps.click(
        page.get_by_role("button", name="Save and choose statistics →"),
        "Save and choose statistics →",
    )

    # and add the two suggested statistics to the count
    page.wait_for_selector("#statistics-form")
    expect(page.locator("button.quick-add")).to_have_count(2)
    steps.click(page.get_by_role("button", name="+ Histogram of region"), "+ Histogram of region")
    steps.click(page.get_by_role("button", name="+ Mean of wage"), "+ Mean of wage")
    expect(page.locator("tr.statistic-row")).to_have_count(3)
    expect(page.locator("#quick-adds")).to_be_hidden()
    steps.click(
        page.get_by_role("button", name="Save and preview accuracy →"),
        "Save and preview accuracy →",
    )

    # and go from the preview to the confirmation and submit
    page.wait_for_selector("#preview")
    steps.click(page.get_by_role("link", name="Continue to confirm →"), "Continue to confirm →")
    page.wait_for_selector("#summary")
    with broker_without_worker():
        steps.click(page.get_by_role("button", name="Submit release"), "Submit release")
        page.wait_for_selector("#release-status")

    # then the release is submitted with exactly the three statistics, within the budget
    print(
        f"\nGuided path: {steps.count} interactions from the home page to a submitted release "
        f"(budget {GUIDED_PATH_BUDGET}; logging in took {login_interactions} more):\n"
        + steps.report()
    )
    release = Release.objects.get()
    assert release.status in (Release.Status.QUEUED, Release.Status.PUBLISHED)
    assert release.title == "labour_survey statistics"
    assert [(q["kind"], q.get("column")) for q in release.queries] == [
        ("count", None),
        ("histogram", "region"),
        ("mean", "wage"),
    ]
    dataset.refresh_from_db()
    assert dataset.schema["columns"]["region"]["categories"] == REGIONS
    assert dataset.schema["columns"]["wage"] == {"kind": "numeric", "lower": 0.0, "upper": 10000.0}
    assert dataset.schema["columns"]["age"] == {"kind": "identifier"}
    assert steps.count <= GUIDED_PATH_BUDGET
    assert steps.count == 13
    assert page.console_errors == []


def test_every_step_of_the_path_can_be_revisited_without_losing_input(page, live_server, tmp_path):
    # given a curator on the statistics step of the default path
    make_user("curator1", "curator")
    log_in(page, live_server, "curator1")
    survey = tmp_path / "survey.csv"
    write_survey(survey, rows=300)
    steps = InteractionCounter(budget=100)
    walk_to_the_dataset_page(page, steps, survey)
    page.get_by_label("Categories of region").fill(REGION_CATEGORIES)
    page.get_by_label("Lower bound of wage").fill(WAGE_BOUNDS[0])
    page.get_by_label("Upper bound of wage").fill(WAGE_BOUNDS[1])
    page.get_by_role("button", name="Save and choose what to publish →").click()
    page.get_by_label("Release title").fill("Survey 2026")
    page.get_by_role("button", name="Save and choose statistics →").click()
    page.get_by_role("button", name="+ Histogram of region").click()
    page.get_by_role("button", name="+ Mean of wage").click()
    page.get_by_role("button", name="Save and preview accuracy →").click()
    page.wait_for_selector("#preview")

    # when they go back to each step through the wizard's navigation
    nav = page.get_by_role("navigation", name="Release wizard steps")
    nav.get_by_role("link", name="2. Statistics").click()

    # then the statistics are as chosen
    rows = page.locator("tr.statistic-row")
    expect(rows).to_have_count(3)
    expect(rows.nth(1).get_by_label("Statistic")).to_have_value("histogram")
    expect(rows.nth(1).get_by_label("Column")).to_have_value("region")
    expect(rows.nth(2).get_by_label("Column")).to_have_value("wage")
    expect(page.locator("#quick-adds")).to_be_hidden()

    # and the privacy step keeps its title, and saving it keeps the statistics
    nav.get_by_role("link", name="1. Privacy").click()
    expect(page.get_by_label("Release title")).to_have_value("Survey 2026")
    page.get_by_role("button", name="Save and choose statistics →").click()
    expect(page.locator("tr.statistic-row")).to_have_count(3)

    # and forward again to the preview and the confirmation
    nav.get_by_role("link", name="3. Preview").click()
    page.wait_for_selector("#preview")
    expect(page.locator("#preview")).to_contain_text("Mean")
    nav.get_by_role("link", name="4. Confirm").click()
    page.wait_for_selector("#summary")

    # and the dataset page keeps what was declared, saying what no statistic can use
    dataset = Dataset.objects.get()
    page.goto(f"{live_server.url}/datasets/{dataset.pk}/")
    assert float(page.get_by_label("Lower bound of wage").input_value()) == 0
    assert float(page.get_by_label("Upper bound of wage").input_value()) == 10000
    expect(page.locator("#undeclared-columns")).to_contain_text(
        "age: no bounds given, so no statistic can use it — choose Numeric and add them to "
        "publish it."
    )
    release = Release.objects.get()
    assert release.title == "Survey 2026"
    assert [q["kind"] for q in release.queries] == ["count", "histogram", "mean"]
    assert page.console_errors == []


def test_a_suggestion_adds_its_row_without_scripts(new_context, live_server, tmp_path):
    # given a curator on the statistics step with scripts off
    make_user("curator1", "curator")
    page = new_context(java_script_enabled=False).new_page()
    log_in(page, live_server, "curator1")
    survey = tmp_path / "survey.csv"
    write_survey(survey, rows=300)
    walk_to_the_dataset_page(page, InteractionCounter(budget=100), survey)
    page.get_by_label("Categories of region").fill(REGION_CATEGORIES)
    page.get_by_role("button", name="Save and choose what to publish →").click()
    page.get_by_role("button", name="Save and choose statistics →").click()

    # when they click the suggestion
    page.get_by_role("button", name="+ Histogram of region").click()

    # then the server shows the row added, and saving keeps it
    rows = page.locator("tr.statistic-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(1).get_by_label("Statistic")).to_have_value("histogram")
    expect(rows.nth(1).get_by_label("Column")).to_have_value("region")
    expect(page.get_by_role("button", name="+ Histogram of region")).to_have_count(0)
    page.get_by_role("button", name="Save and preview accuracy →").click()
    page.wait_for_selector("#preview")
    release = Release.objects.get()
    assert [(q["kind"], q.get("column")) for q in release.queries] == [
        ("count", None),
        ("histogram", "region"),
    ]


def test_the_same_walk_declaring_every_column_and_typing_the_name_exceeds_the_budget(
    page, live_server, tmp_path
):
    # given a curator who types the name and declares all nine data columns by hand
    make_user("curator1", "curator")
    log_in(page, live_server, "curator1")
    survey = tmp_path / "survey.csv"
    write_survey(survey, rows=300)
    steps = InteractionCounter()
    walk_to_the_dataset_page(page, steps, survey, typed_name="Labour survey")
    declarations = [
        ("Categories of region", REGION_CATEGORIES),
        ("Categories of sex", "F, M"),
        ("Lower bound of age", "16"),
        ("Upper bound of age", "80"),
        ("Lower bound of hours_worked", "0"),
        ("Upper bound of hours_worked", "60"),
        ("Lower bound of wage", "0"),
        ("Upper bound of wage", "10000"),
        ("Lower bound of household_size", "1"),
        ("Upper bound of household_size", "8"),
        ("Categories of education", ", ".join(EDUCATION)),
        ("Categories of employed", "yes, no"),
        ("Lower bound of survey_weight", "0"),
        ("Upper bound of survey_weight", "1000"),
    ]

    # when they declare the columns: 4 interactions so far, and 11 more reach the budget
    for label, value in declarations[:11]:
        steps.fill(page.get_by_label(label), value, label)
    assert steps.count == 15

    # then the counter stops the 16th, before doing it
    label, value = declarations[11]
    with pytest.raises(
        InteractionBudgetExceeded, match=r"^interaction 16 \(fill .* above the budget"
    ):
        steps.fill(page.get_by_label(label), value, label)
    assert steps.count == 15
    assert steps.log[-1] == f"fill Categories of education with {', '.join(EDUCATION)!r}"
    expect(page.get_by_label("Categories of employed")).to_have_value("")
