"""A curator walks the whole path in a real browser, with a real Celery worker publishing."""

import itertools
import os

import pytest
from django.db import connection
from playwright.sync_api import expect

from audit.models import AuditEvent
from releases.models import Dataset, Release
from tests.browser.conftest import screenshot, wait_until
from tests.conftest import make_user
from tests.processes import start_celery_worker, stop

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

TABLE = "patient,age,sex,diagnosis\n" + "".join(
    f"P{i:04d},{(i * 37) % 90 + 5},{'F' if i % 3 else 'M'},{['flu', 'cold', 'healthy'][i % 3]}\n"
    for i in range(300)
)


def _switch_broker(app, url: str) -> None:
    """Point this process's producer at another broker, dropping connections made earlier."""
    app.conf.broker_url = url
    # Dropped, not closed: kombu's shared producer registry may still hold the old pool.
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def celery_worker_process(settings, tmp_path):
    """A separate worker process on the test database, fed through a SQLite-file broker."""
    from config.celery import app

    broker = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{connection.settings_dict['NAME']}",
        "CELERY_BROKER_URL": broker,
        "PRIVATE_STORAGE_ROOT": str(settings.PRIVATE_STORAGE_ROOT),
        "RELEASE_STORAGE_ROOT": str(settings.RELEASE_STORAGE_ROOT),
        "VAR_DIR": str(tmp_path / "worker-var"),
    }
    log = (tmp_path / "worker.log").open("w")
    worker = start_celery_worker(env, log)
    previous = app.conf.broker_url
    _switch_broker(app, broker)
    app.conf.task_always_eager = False
    worker.log_path = tmp_path / "worker.log"
    yield worker
    app.conf.task_always_eager = True
    _switch_broker(app, previous)
    stop(worker)
    log.close()


def test_curator_uploads_declares_drafts_previews_and_publishes(
    page, live_server, tmp_path, celery_worker_process
):
    # given a curator who logs in
    make_user("curator1", "curator")
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("curator1")
    page.get_by_label("Password").fill("pw-test-12345")
    page.get_by_role("button", name="Log in").click()

    # when they upload a table
    page.get_by_role("link", name="My datasets").click()
    page.get_by_role("link", name="Upload a table").click()
    page.get_by_label("Name").fill("Clinic 2026")
    csv_path = tmp_path / "clinic.csv"
    csv_path.write_text(TABLE)
    page.get_by_label("File").set_input_files(str(csv_path))
    # (low harm: a total budget of ε = 2, from the starting-point questions)
    page.get_by_label("Low: embarrassing at worst").check()
    page.get_by_label("Approximate number of records").fill("300")
    page.get_by_role("button", name="Upload").click()

    # and declare the schema
    page.get_by_label("Kind of patient").select_option("identifier")
    page.get_by_label("Lower bound of age").fill("0")
    page.get_by_label("Upper bound of age").fill("100")
    page.get_by_label("Categories of sex").fill("F, M")
    page.get_by_label("Categories of diagnosis").fill("flu, cold, healthy")
    page.get_by_label("Other bucket of diagnosis").fill("other")
    page.get_by_role("button", name="Save schema").click()
    assert "Schema saved." in page.inner_text("main")
    dataset = Dataset.objects.get(name="Clinic 2026")
    assert dataset.schema["columns"]["age"] == {"kind": "numeric", "lower": 0.0, "upper": 100.0}

    # and start a release, setting p and seeing ε follow
    page.get_by_role("link", name="New release").first.click()
    page.get_by_label("Release title").fill("Clinic statistics 2026")
    wait_until(page, "document.getElementById('odds-view').textContent.includes('at most')")
    page.get_by_label("p: probability of a truthful yes/no answer about one person").fill("0.6")
    wait_until(page, "document.getElementById('id_epsilon').value.startsWith('0.405')")
    assert page.input_value("#id_epsilon").startswith("0.405")  # ln(0.6 / 0.4)
    page.get_by_label("ε for this release").fill("1")
    wait_until(page, "document.getElementById('id_truth_probability').value === '0.73106'")
    assert "at most" in page.inner_text("#odds-view")
    expect(page.locator("#group-view")).to_contain_text("A group of 2 is protected at ε = 2.")
    screenshot(page, "wizard-privacy")
    page.get_by_role("button", name="Save and choose statistics →").click()

    # and choose statistics with accuracy weights
    page.get_by_role("button", name="+ Add a statistic").click()
    rows = page.locator("tr.statistic-row")
    rows.nth(1).get_by_label("Statistic").select_option("histogram")
    rows.nth(1).get_by_label("Column").select_option("diagnosis")
    page.get_by_role("button", name="+ Add a statistic").click()
    rows.nth(2).get_by_label("Statistic").select_option("mean")
    rows.nth(2).get_by_label("Column").select_option("age")
    rows.nth(2).get_by_label("Accuracy weight").fill("2")
    assert rows.nth(2).locator(".share").inner_text() == "0.5"
    rows.nth(0).get_by_label("Error you can live with").fill("10")
    rows.nth(0).get_by_label("Error you can live with").press("Tab")
    expect(rows.nth(0).locator(".needed")).to_contain_text("needs ε = ")
    screenshot(page, "wizard-statistics")
    page.get_by_role("button", name="Save and preview accuracy →").click()

    # then the preview explains accuracy and charts error against ε
    page.wait_for_selector("#error-chart .main-svg")
    assert "With 95% probability the published count is within ±" in page.inner_text("#preview")
    # and its lines differ by dash and marker, not colour alone, and no two axis labels overlap
    styles = page.evaluate(
        "Array.from(document.getElementById('error-chart').data,"
        " t => t.line.dash + ' ' + t.marker.symbol)"
    )
    assert len(set(styles)) == len(styles) == 3
    for ticks in ("xtick", "ytick"):
        boxes = page.evaluate(
            f"Array.from(document.querySelectorAll('#error-chart .{ticks} text'), e => {{"
            " const r = e.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; })"
        )
        assert len(boxes) >= 2
        for a, b in itertools.combinations(boxes, 2):
            assert a[1] <= b[0] or b[1] <= a[0] or a[3] <= b[2] or b[3] <= a[2], (ticks, a, b)
    screenshot(page, "wizard-preview")
    release = Release.objects.get(title="Clinic statistics 2026")
    assert release.status == Release.Status.DRAFT
    assert not release.dataset.ledger.exists()

    # when they confirm and submit
    page.get_by_role("link", name="Continue to confirm →").click()
    assert "ε-differential privacy with ε = 1" in page.inner_text("#summary")
    page.get_by_role("button", name="Submit release").click()

    # then the status page follows the worker to publication
    try:
        page.wait_for_selector("#published-link", timeout=90_000)
    except Exception:
        release.refresh_from_db()
        pytest.fail(
            f"not published ({release.status}: {release.failure_reason})\n"
            f"{celery_worker_process.log_path.read_text()[-3000:]}"
        )
    assert "Count of records" not in page.inner_text("#results")  # kinds, not form labels
    assert "Histogram of diagnosis: flu" in page.inner_text("#results")
    screenshot(page, "release-status")
    release.refresh_from_db()
    assert release.status == Release.Status.PUBLISHED
    assert int(release.worker.rsplit(":", 1)[1]) == celery_worker_process.pid
    assert AuditEvent.objects.filter(action="release.published", object_id=str(release.pk)).exists()
    assert page.console_errors == []
