"""Published versions (issue 11, point 3): immutable in the database (SQLite here, PostgreSQL
when DATABASE_URL names one), 405 to any write through the API, withdrawal with a public reason,
the diff between two versions, a permanent URL with a suggested citation, and a new version
drafted from a published one."""

import hashlib
import re

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.core.management.sql import emit_pre_migrate_signal
from django.db import IntegrityError, connection, migrations, models, transaction
from django.test import Client

from audit.chain import AuditAction
from audit.models import AuditEvent
from privacy_engine.versions import compare_published
from releases import immutability
from releases.models import (
    NoisyAnswer,
    Release,
    ReleaseFile,
    ReleaseSeries,
    Withdrawal,
)
from releases.services.datasets import dataset_create
from releases.services.versions import release_new_version, release_withdraw
from tests.conftest import (
    CLINIC_CSV_CRLF,
    client_for,
    csv_upload,
    make_user,
    publish_through_api,
)

FIRST_QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "sum", "column": "age"},
]
SECOND_QUERIES = [
    {"kind": "count"},
    {"kind": "histogram", "column": "sex"},
    {"kind": "mean", "column": "age"},
]


def body(dataset_id: int, epsilon: float, queries: list[dict], **extra) -> dict:
    return {
        "dataset": dataset_id,
        "title": "Clinic statistics",
        "definition": {"kind": "pure_dp", "epsilon": epsilon},
        "queries": queries,
        **extra,
    }


@pytest.fixture
def published(curator_client, dataset, django_capture_on_commit_callbacks) -> Release:
    return publish_through_api(
        curator_client, django_capture_on_commit_callbacks, body(dataset.pk, 0.3, FIRST_QUERIES)
    )


@pytest.fixture
def second(curator_client, dataset, published, django_capture_on_commit_callbacks) -> Release:
    return publish_through_api(
        curator_client,
        django_capture_on_commit_callbacks,
        body(dataset.pk, 0.4, SECOND_QUERIES, series=published.series.slug),
    )


def version_url(release: Release, suffix: str = "") -> str:
    return f"/api/v1/catalog/{release.series.slug}/versions/{release.version}/{suffix}"


def refused(statement, *params) -> str:
    """Run a raw statement in its own savepoint; the database's refusal, as text."""
    with pytest.raises(IntegrityError) as refusal, transaction.atomic(), connection.cursor() as c:
        c.execute(statement, params)
    return str(refusal.value)


def snapshot(release: Release) -> tuple:
    release.refresh_from_db()
    return (
        release.status,
        release.title,
        release.published_at,
        list(NoisyAnswer.objects.filter(release=release).values_list("statistic", flat=True)),
        list(ReleaseFile.objects.filter(release=release).values_list("format", "sha256")),
    )


# --- 1. immutability in the database -------------------------------------------------------


def test_the_database_refuses_an_orm_update_of_a_published_release(published):
    # given
    before = snapshot(published)

    # when / then
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        Release.objects.filter(pk=published.pk).update(title="Edited")
    published.title = "Edited"
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        published.save(update_fields=["title"])
    assert snapshot(published) == before


def test_the_database_refuses_raw_updates_and_deletes_of_a_published_version(published):
    # given
    before = snapshot(published)
    answer = NoisyAnswer.objects.filter(release=published).first()
    release_file = ReleaseFile.objects.filter(release=published).first()

    # when / then: each write refused by the database itself
    statements = [
        ("UPDATE releases_release SET published_at = NULL WHERE id = %s", published.pk),
        ("UPDATE releases_release SET status = 'draft' WHERE id = %s", published.pk),
        ("DELETE FROM releases_release WHERE id = %s", published.pk),
        ("UPDATE releases_noisyanswer SET position = 99 WHERE id = %s", answer.pk),
        ("DELETE FROM releases_noisyanswer WHERE id = %s", answer.pk),
        ("UPDATE releases_releasefile SET sha256 = 'forged' WHERE id = %s", release_file.pk),
        ("DELETE FROM releases_releasefile WHERE id = %s", release_file.pk),
    ]
    for statement, pk in statements:
        assert "immutable" in refused(statement, pk), statement
    assert snapshot(published) == before


def test_a_withdrawal_can_be_neither_updated_nor_deleted(published, curator):
    # given
    withdrawal = release_withdraw(release=published, user=curator, reason="Wrong table.")

    # when / then
    for statement in (
        "UPDATE releases_withdrawal SET reason = 'Nothing' WHERE id = %s",
        "DELETE FROM releases_withdrawal WHERE id = %s",
    ):
        assert "final" in refused(statement, withdrawal.pk)
    with pytest.raises(IntegrityError), transaction.atomic():
        Withdrawal.objects.filter(pk=withdrawal.pk).delete()
    assert Withdrawal.objects.get(pk=withdrawal.pk).reason == "Wrong table."


def test_unpublished_releases_still_change_and_publication_still_works(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    # given a draft (and, through the fixture's API calls, a publication that inserts files and
    # sets the status last)
    draft = curator_client.post(
        "/api/v1/releases/", body(dataset.pk, 0.2, [{"kind": "count"}]), format="json"
    ).json()

    # when
    Release.objects.filter(pk=draft["id"]).update(title="Renamed draft")
    with django_capture_on_commit_callbacks(execute=True):
        curator_client.post(f"/api/v1/releases/{draft['id']}/submit/")

    # then
    release = Release.objects.get(pk=draft["id"])
    assert (release.title, release.status) == ("Renamed draft", "published")
    assert {"csv", "json", "parquet"} <= set(release.files.values_list("format", flat=True))


def test_the_triggers_are_those_of_the_database_in_use(db):
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        names = {name for (name,) in cursor.fetchall()}
    expected = 10 if connection.vendor == "postgresql" else 14
    assert len({name for name in names if name.startswith("releases_")}) == expected
    assert immutability.installed_triggers(connection) == immutability.trigger_names(
        connection.vendor
    )
    assert immutability.check_triggers(databases=["default"]) == []


def test_nothing_can_be_inserted_into_a_published_version(published, anonymous_client):
    # given
    before = snapshot(published)
    answer = NoisyAnswer.objects.filter(release=published).first()

    # when / then: a new answer, a new file, by the ORM or raw SQL
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        NoisyAnswer.objects.create(
            release=published, position=99, statistic=dict(answer.statistic, value=12345)
        )
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        ReleaseFile.objects.create(
            release=published, format="microdata-7.csv", sha256="0" * 64, size=1, file="x.csv"
        )
    assert "immutable" in refused(
        "INSERT INTO releases_noisyanswer (release_id, position, statistic, drawn_at) "
        "SELECT release_id, 98, statistic, drawn_at FROM releases_noisyanswer WHERE id = %s",
        answer.pk,
    )
    # nor a forged version inserted as published, beside the real one
    forged = Release.objects.get(pk=published.pk)
    forged.pk, forged.version, forged.title = None, 2, "Forged"
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        forged.save(force_insert=True)
    assert snapshot(published) == before
    assert Release.objects.count() == 1
    version = anonymous_client.get(version_url(published)).json()
    assert len(version["statistics"]) == len(FIRST_QUERIES)


def test_only_a_published_version_can_be_withdrawn(curator_client, dataset, curator):
    # given a draft
    draft = curator_client.post(
        "/api/v1/releases/", body(dataset.pk, 0.2, [{"kind": "count"}]), format="json"
    ).json()

    # when / then
    with pytest.raises(IntegrityError, match="only a published version"), transaction.atomic():
        Withdrawal.objects.create(release_id=draft["id"], withdrawn_by=curator, reason="Early.")
    assert not Withdrawal.objects.exists()


def test_a_series_with_a_published_version_keeps_its_slug_dataset_and_owner(
    published, curator_client, dataset, other_curator
):
    # given
    series = published.series
    other_dataset = dataset_create(
        owner=other_curator, name="Other", upload=csv_upload(CLINIC_CSV_CRLF), budget_epsilon="1"
    )

    # when / then: what the permanent URLs and the signed metadata name is refused
    for change in (
        {"slug": "renamed"},
        {"dataset": other_dataset},
        {"owner": other_curator},
    ):
        with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
            ReleaseSeries.objects.filter(pk=series.pk).update(**change)
    assert "immutable" in refused("DELETE FROM releases_releaseseries WHERE id = %s", series.pk)
    assert ReleaseSeries.objects.get(pk=series.pk).slug == series.slug
    # its title may change: each version shows its own (Release.title), never the series'
    ReleaseSeries.objects.filter(pk=series.pk).update(title="Clinic statistics, renamed")
    assert Client().get(version_url(published)).json()["title"] == "Clinic statistics"
    # and a series with no published version keeps its slug free
    draft = curator_client.post(
        "/api/v1/releases/", body(dataset.pk, 0.2, [{"kind": "count"}]), format="json"
    ).json()
    fresh = Release.objects.get(pk=draft["id"]).series
    ReleaseSeries.objects.filter(pk=fresh.pk).update(slug="a-draft-only-series")
    assert ReleaseSeries.objects.get(pk=fresh.pk).slug == "a-draft-only-series"


def test_an_insert_or_replace_cannot_delete_a_published_row(published, curator):
    """SQLite: INSERT OR REPLACE deletes the row it replaces, firing DELETE triggers only with
    PRAGMA recursive_triggers on (config/settings.py). PostgreSQL: ON CONFLICT DO UPDATE."""
    # given
    withdrawal = release_withdraw(release=published, user=curator, reason="Original reason.")
    before = snapshot(published)
    answer = NoisyAnswer.objects.filter(release=published).order_by("position").first()

    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA recursive_triggers")
            assert cursor.fetchone() == (1,)
        replace = "INSERT OR REPLACE INTO"
        upsert = ""
    else:
        replace = "INSERT INTO"
        upsert = " ON CONFLICT (id) DO UPDATE SET {} = EXCLUDED.{}"

    # when / then: a published answer, the published release (as a draft) and the withdrawal
    assert "immutable" in refused(
        f"{replace} releases_noisyanswer (id, release_id, position, statistic, drawn_at) "
        "SELECT id, release_id, position, '{}', drawn_at FROM releases_noisyanswer "
        f"WHERE id = %s{upsert.format('statistic', 'statistic')}",
        answer.pk,
    )
    columns = [f.column for f in Release._meta.concrete_fields]
    assert "immutable" in refused(
        f"{replace} releases_release ({', '.join(columns)}) SELECT "
        + ", ".join("'draft'" if c == "status" else c for c in columns)
        + f" FROM releases_release WHERE id = %s{upsert.format('status', 'status')}",
        published.pk,
    )
    assert "final" in refused(
        f"{replace} releases_withdrawal (id, release_id, withdrawn_by_id, reason, at) "
        "SELECT id, release_id, withdrawn_by_id, 'Rewritten.', at FROM releases_withdrawal "
        f"WHERE id = %s{upsert.format('reason', 'reason')}",
        withdrawal.pk,
    )
    assert snapshot(published) == before
    assert Withdrawal.objects.get(pk=withdrawal.pk).reason == "Original reason."


def test_truncating_a_published_version_is_refused(published, curator):
    """PostgreSQL: a TRUNCATE fires no row trigger; a statement trigger refuses it while any
    version is published (SQLite has no TRUNCATE: its DELETE is refused row by row)."""
    if connection.vendor != "postgresql":
        pytest.skip("TRUNCATE is PostgreSQL's")
    release_withdraw(release=published, user=curator, reason="Wrong table.")
    before = snapshot(published)
    with connection.cursor() as cursor:  # the deferred foreign key checks done (else no TRUNCATE)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    for table in (
        "releases_withdrawal",
        "releases_noisyanswer",
        "releases_releasefile",
        "releases_release CASCADE",
        "releases_dataset CASCADE",
    ):
        assert "immutable" in refused(f"TRUNCATE {table}"), table
    assert snapshot(published) == before
    assert Withdrawal.objects.filter(release=published).exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_migrate_puts_back_the_triggers_a_table_rebuild_dropped():
    """SQLite rebuilds a table to alter it, and the table's triggers go with the old one: every
    migrate installs them again (post_migrate), and until then the check releases.E001 says
    which are missing. (PostgreSQL alters in place: there the test drops one itself.)"""
    old = Withdrawal._meta.get_field("reason")
    new = models.TextField(default="")
    new.set_attributes_from_name("reason")
    new.model = Withdrawal
    try:
        # given
        if connection.vendor == "sqlite":
            with connection.schema_editor() as editor:
                editor.alter_field(Withdrawal, old, new)
        else:
            with connection.cursor() as cursor:
                cursor.execute("DROP TRIGGER releases_withdrawal_immutable ON releases_withdrawal")
        missing = immutability.trigger_names(connection.vendor) - immutability.installed_triggers(
            connection
        )
        assert missing
        assert all("withdrawal" in name for name in missing)
        (error,) = immutability.check_triggers(databases=["default"])
        assert error.id == "releases.E001"
        assert all(name in error.msg for name in missing)

        # when
        call_command("migrate", verbosity=0)

        # then
        assert immutability.installed_triggers(connection) == immutability.trigger_names(
            connection.vendor
        )
        assert immutability.check_triggers(databases=["default"]) == []
    finally:
        if connection.vendor == "sqlite":
            with connection.schema_editor() as editor:
                editor.alter_field(Withdrawal, new, old)
            call_command("migrate", verbosity=0)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_migration_can_rebuild_the_release_table_under_the_triggers(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    """SQLite: rebuilding releases_release (create a copy, drop, rename the copy) fails while
    another table's trigger names it, unless the triggers step aside for the migration
    (pre_migrate) and come back after it (post_migrate)."""
    published = publish_through_api(
        curator_client, django_capture_on_commit_callbacks, body(dataset.pk, 0.2, FIRST_QUERIES)
    )
    old = Release._meta.get_field("failure_reason")
    new = models.TextField(blank=True, default="")
    new.set_attributes_from_name("failure_reason")
    new.model = Release

    # when a migration with a plan alters the table, and back
    plan = [(migrations.Migration("9999_rebuild", "releases"), False)]
    emit_pre_migrate_signal(0, False, "default", plan=plan, apps=django_apps)
    with connection.schema_editor() as editor:
        editor.alter_field(Release, old, new)
        editor.alter_field(Release, new, old)
    call_command("migrate", verbosity=0)

    # then the triggers are back and the version as published
    assert immutability.installed_triggers(connection) == immutability.trigger_names(
        connection.vendor
    )
    assert "immutable" in refused("DELETE FROM releases_release WHERE id = %s", published.pk)
    assert Release.objects.get(pk=published.pk).status == "published"


# --- 2. 405 to any write ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["put", "patch", "delete", "post"])
@pytest.mark.parametrize("suffix", ["", "files/csv/"])
def test_any_write_on_a_published_version_is_a_405(
    published, anonymous_client, curator_client, method, suffix
):
    # given
    before = snapshot(published)

    for client in (anonymous_client, curator_client):
        # when
        response = getattr(client, method)(version_url(published, suffix), {}, format="json")

        # then
        assert response.status_code == 405
        assert response["Allow"] == "GET, HEAD, OPTIONS"
        assert "immutable" in response.json()["detail"]
    assert snapshot(published) == before


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_changing_a_published_release_of_ones_own_is_a_405(published, curator_client, method):
    # when
    response = getattr(curator_client, method)(
        f"/api/v1/releases/{published.pk}/", {"title": "Edited"}, format="json"
    )

    # then
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD, OPTIONS"
    assert set(response.json()) == {"detail"}
    assert "immutable" in response.json()["detail"]
    assert Release.objects.get(pk=published.pk).title == "Clinic statistics"


# --- 3. withdrawal --------------------------------------------------------------------------


def test_the_curator_withdraws_a_version_once_with_an_audited_reason(published, curator_client):
    # when
    response = curator_client.post(
        version_url(published, "withdraw/"), {"reason": "  The bounds were wrong.  "}, format="json"
    )
    again = curator_client.post(
        version_url(published, "withdraw/"), {"reason": "Twice."}, format="json"
    )

    # then
    assert response.status_code == 201, response.json()
    assert response.json()["withdrawn"]["reason"] == "The bounds were wrong."
    assert again.status_code == 409
    assert "already withdrawn" in again.json()["detail"]
    assert Withdrawal.objects.get(release=published).reason == "The bounds were wrong."
    (event,) = AuditEvent.objects.filter(action=AuditAction.RELEASE_WITHDRAWN)
    assert event.actor == "curator1"
    assert event.object_id == str(published.pk)
    assert event.details == {
        "slug": published.series.slug,
        "version": 1,
        "reason": "The bounds were wrong.",
    }


def test_only_the_releases_curator_may_withdraw_it(
    published, other_curator_client, compliance_client, anonymous_client
):
    url = version_url(published, "withdraw/")
    reason = {"reason": "Not mine."}

    assert other_curator_client.post(url, reason, format="json").status_code == 404
    assert compliance_client.post(url, reason, format="json").status_code == 403
    assert anonymous_client.post(url, reason, format="json").status_code == 401
    assert not Withdrawal.objects.exists()
    assert not AuditEvent.objects.filter(action=AuditAction.RELEASE_WITHDRAWN).exists()


@pytest.mark.parametrize(
    "reason",
    [None, "", "   ", "x" * 2001, "bad\x00byte", "tab\there", 42, ["a list"]],
)
def test_a_withdrawal_needs_a_plain_reason_of_at_most_2000_characters(
    published, curator_client, reason
):
    # when
    response = curator_client.post(
        version_url(published, "withdraw/"), {"reason": reason}, format="json"
    )

    # then
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["reason"]
    assert not Withdrawal.objects.exists()
    assert not AuditEvent.objects.filter(action=AuditAction.RELEASE_WITHDRAWN).exists()


def test_a_reason_of_2000_characters_with_line_breaks_is_kept(published, curator):
    reason = "First line.\r\n" + "y" * 1987
    withdrawal = release_withdraw(release=published, user=curator, reason=reason)
    assert withdrawal.reason == "First line.\n" + "y" * 1987
    assert len(withdrawal.reason) == 1999


def test_a_withdrawn_version_shows_as_withdrawn_at_once_with_its_files_unchanged(
    published, curator_client
):
    # given the public pages and API read (and cached) before the withdrawal
    reader = Client()
    paths = ["/api/v1/catalog/", version_url(published), "/catalog/", page_url(published)]
    for path in paths:
        assert reader.get(path).status_code == 200
    csv_before = b"".join(reader.get(version_url(published, "files/csv/")).streaming_content)

    # when
    curator_client.post(
        version_url(published, "withdraw/"), {"reason": "Superseded <b>now</b>."}, format="json"
    )

    # then the lists and the version say so, with the reason and the date
    (entry,) = reader.get("/api/v1/catalog/").json()["results"]
    withdrawal = Withdrawal.objects.get(release=published)
    assert entry["withdrawn"] == {
        "at": withdrawal.at.isoformat(),
        "reason": "Superseded <b>now</b>.",
    }
    version = reader.get(version_url(published)).json()
    assert version["withdrawn"] == entry["withdrawn"]
    page = reader.get(page_url(published)).content.decode()
    assert "This version was withdrawn on" in page
    assert "Superseded &lt;b&gt;now&lt;/b&gt;." in page
    assert (
        "withdrawn " + withdrawal.at.strftime("%Y-%m-%d")
        in reader.get("/catalog/").content.decode()
    )
    # and its files are still served, byte for byte, with the same hashes
    csv_after = b"".join(reader.get(version_url(published, "files/csv/")).streaming_content)
    assert csv_after == csv_before
    listed = {f["format"]: f["sha256"] for f in version["files"]}
    assert listed["csv"] == hashlib.sha256(csv_after).hexdigest()
    assert listed == dict(
        ReleaseFile.objects.filter(release=published).values_list("format", "sha256")
    )


def test_an_unwithdrawn_version_says_withdrawn_null(published, anonymous_client):
    (entry,) = anonymous_client.get("/api/v1/catalog/").json()["results"]
    assert entry["withdrawn"] is None
    assert anonymous_client.get(version_url(published)).json()["withdrawn"] is None


def test_the_status_page_withdraws_through_its_form(published, curator, client):
    # given
    client.force_login(curator)
    status_page = client.get(f"/releases/{published.pk}/").content.decode()
    assert 'id="withdraw"' in status_page
    assert "Withdrawing cannot be undone" in status_page
    assert 'name="reason"' in status_page

    # when an empty reason, then a real one
    empty = client.post(f"/releases/{published.pk}/withdraw/", {"reason": " "}, follow=True)
    done = client.post(f"/releases/{published.pk}/withdraw/", {"reason": "Wrong bounds."})

    # then
    assert "Nothing was withdrawn" in empty.content.decode()
    assert done.status_code == 302
    after = client.get(f"/releases/{published.pk}/").content.decode()
    assert 'id="withdraw"' not in after
    assert "Wrong bounds." in after
    assert Withdrawal.objects.get(release=published).withdrawn_by == curator


def test_another_curator_cannot_use_the_withdraw_form(published, other_curator, client):
    client.force_login(other_curator)
    response = client.post(f"/releases/{published.pk}/withdraw/", {"reason": "Mine now."})
    assert response.status_code == 404
    assert not Withdrawal.objects.exists()


# --- 4. diff ---------------------------------------------------------------------------------


def test_compare_published_says_whether_the_intervals_overlap():
    close = compare_published(before=10, before_ci95=[7, 13], after=14, after_ci95=[12, 16])
    apart = compare_published(before=10, before_ci95=[7, 13], after=20, after_ci95=[17, 23])
    blind = compare_published(before=10, before_ci95=None, after=20, after_ci95=[17, 23])
    missing = compare_published(before=None, before_ci95=None, after=20, after_ci95=[17, 23])
    assert (close.difference, close.within_intervals) == (4.0, True)
    assert (apart.difference, apart.within_intervals) == (10.0, False)
    assert (blind.difference, blind.within_intervals) == (10.0, None)
    assert (missing.difference, missing.within_intervals) == (None, None)


def test_the_diff_api_shows_definition_statistics_and_values_side_by_side(
    published, second, anonymous_client
):
    # when
    response = anonymous_client.get(
        f"/api/v1/catalog/{published.series.slug}/diff/", {"from": 1, "to": 2}
    )

    # then
    assert response.status_code == 200, response.json()
    diff = response.json()
    assert (diff["from"]["version"], diff["to"]["version"]) == (1, 2)
    fields = {f["name"]: f for f in diff["definition"]["fields"]}
    assert (fields["epsilon"]["from"], fields["epsilon"]["to"]) == (0.3, 0.4)
    assert fields["epsilon"]["changed"]
    assert not fields["kind"]["changed"]
    statistics = diff["statistics"]
    assert [(s["kind"], s["column"]) for s in statistics["added"]] == [("mean", "age")]
    assert [(s["kind"], s["column"]) for s in statistics["removed"]] == [("sum", "age")]
    count, histogram = statistics["in_both"]
    assert (count["kind"], histogram["kind"]) == ("count", "histogram")
    assert count["changed"]  # each statistic's ε changed with the total
    first_answers = [a.statistic for a in published.answers.order_by("position")]
    second_answers = [a.statistic for a in second.answers.order_by("position")]
    (row,) = count["values"]
    assert (row["from"], row["to"]) == (first_answers[0]["value"], second_answers[0]["value"])
    assert row["difference"] == pytest.approx(row["to"] - row["from"])
    (low_1, high_1), (low_2, high_2) = row["from_ci95"], row["to_ci95"]
    assert row["within_intervals"] == (low_1 <= high_2 and low_2 <= high_1)
    assert [r["cell"] for r in histogram["values"]] == ["F", "M"]
    for cell in histogram["values"]:
        assert cell["from"] == first_answers[1]["value"][cell["cell"]]
        assert cell["to"] == second_answers[1]["value"][cell["cell"]]
        assert cell["from_ci95"] == first_answers[1]["ci95"][cell["cell"]]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"to": "2"}, "from"),
        ({"from": "1"}, "to"),
        ({"from": "one", "to": "2"}, "from"),
        ({"from": "1", "to": "0"}, "to"),
        ({"from": "1", "to": "-2"}, "to"),
        ({"from": "1", "to": "1" * 40}, "to"),
        ({"from": "1.5", "to": "2"}, "from"),
    ],
)
def test_the_diff_names_a_bad_version_parameter(published, second, anonymous_client, params, field):
    response = anonymous_client.get(f"/api/v1/catalog/{published.series.slug}/diff/", params)
    assert response.status_code == 400
    assert list(response.json()["errors"]) == [field]


def test_the_diff_names_a_version_that_is_not_published(published, anonymous_client):
    slug = published.series.slug
    missing = anonymous_client.get(f"/api/v1/catalog/{slug}/diff/", {"from": 1, "to": 7})
    assert missing.status_code == 404
    assert "(to)" in missing.json()["detail"]
    unknown = anonymous_client.get("/api/v1/catalog/no-such-series/diff/", {"from": 1, "to": 1})
    assert unknown.status_code == 404


def test_the_diff_page_shows_what_changed(published, second):
    # when
    page = Client().get(f"/catalog/{published.series.slug}/diff/", {"from": 1, "to": 2})
    bad = Client().get(f"/catalog/{published.series.slug}/diff/", {"from": "x", "to": 2})

    # then
    text = page.content.decode()
    assert page.status_code == 200
    assert "Mean of age" in text
    assert "Sum of age" in text
    assert "Within the 95% intervals?" in text
    assert bad.status_code == 400
    assert "The earlier version must be a version number" in bad.content.decode()
    version_page = Client().get(page_url(second)).content.decode()
    assert f"/catalog/{published.series.slug}/diff/?from=1&amp;to=2" in version_page


# --- 5. permanent URL and citation ---------------------------------------------------------


def page_url(release: Release) -> str:
    return f"/catalog/{release.series.slug}/v{release.version}/"


def test_the_version_api_and_page_give_a_permanent_url_and_a_citation(published):
    # when
    version = Client().get(version_url(published)).json()
    page = Client().get(page_url(published)).content.decode()

    # then
    url = f"http://testserver/catalog/{published.series.slug}/v1/"
    year = published.published_at.year
    assert version["permanent_url"] == url
    assert version["citation"] == (
        f"Clinic statistics (version 1). Guided data release, {year}. {url}. "
        "Released under ε-differential privacy (ε = 0.3)."
    )
    assert f'<code id="permanent-url">{url}</code>' in page
    assert 'data-copy-target="citation"' in page
    assert "/static/js/copy-text.js" in page
    # the copy buttons work without inline script
    assert re.findall(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", page) == []


# --- 6. a new version from a published one -------------------------------------------------


def test_a_new_version_is_a_draft_in_the_same_series_with_the_same_plan(published, curator):
    # when
    draft = release_new_version(release=published, user=curator)

    # then
    assert draft.status == Release.Status.DRAFT
    assert draft.series_id == published.series_id
    assert (draft.definition, draft.queries) == (published.definition, published.queries)
    assert draft.version is None


def test_the_status_page_drafts_a_new_version_and_the_confirm_page_says_what_it_costs(
    published, curator, client
):
    # given
    client.force_login(curator)
    assert 'id="new-version"' in client.get(f"/releases/{published.pk}/").content.decode()

    # when
    response = client.post(f"/releases/{published.pk}/new-version/")

    # then
    draft = Release.objects.exclude(pk=published.pk).get()
    assert response.status_code == 302
    assert response["Location"] == f"/releases/{draft.pk}/confirm/"
    confirm = client.get(response["Location"]).content.decode()
    notice = re.search(r'<p id="next-version"[^>]*>(.*?)</p>', confirm, re.S).group(1)
    assert "This is version 2 of" in notice
    assert "draws new noise" in notice
    assert "spends privacy budget again: ε = 0.3" in notice


def test_a_first_version_draft_has_no_next_version_notice(curator_client, dataset, curator):
    draft = curator_client.post(
        "/api/v1/releases/", body(dataset.pk, 0.2, [{"kind": "count"}]), format="json"
    ).json()
    client = Client()
    client.force_login(curator)
    assert (
        'id="next-version"' not in client.get(f"/releases/{draft['id']}/confirm/").content.decode()
    )


def test_only_the_owner_drafts_a_new_version(published, client):
    client.force_login(make_user("curator3", "curator"))
    assert client.post(f"/releases/{published.pk}/new-version/").status_code == 404
    assert Release.objects.count() == 1


def test_compliance_reads_the_withdrawal_in_the_audit_trail(published, curator, compliance_user):
    release_withdraw(release=published, user=curator, reason="Audit me.")
    events = client_for(compliance_user).get(
        "/api/v1/audit/events/", {"action": "release.withdrawn"}
    )
    (event,) = events.json()["results"]
    assert event["details"]["reason"] == "Audit me."


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_transactional_test_that_publishes_is_emptied_afterwards(
    curator_client, dataset, django_capture_on_commit_callbacks
):
    """The flush after a transactional test removes published versions (a TRUNCATE on
    PostgreSQL; tests/conftest.py gives SQLite's flush the same meaning), and the triggers are
    in force again for the next test."""
    published = publish_through_api(
        curator_client, django_capture_on_commit_callbacks, body(dataset.pk, 0.2, FIRST_QUERIES)
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Release.objects.filter(pk=published.pk).update(title="Edited")


def test_the_triggers_are_back_after_a_flush(published):
    assert "immutable" in refused("DELETE FROM releases_release WHERE id = %s", published.pk)
