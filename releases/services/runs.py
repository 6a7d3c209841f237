"""What a worker does with a queued release: draw every noisy answer once, then publish.

A delivery of the task first *claims* the release (queued → running, with a fresh claim token),
then works in short transactions, each of which locks the release row and goes on only while this
delivery still holds it (running, same token):
1. draw: if no answers are stored, read the table and draw every answer outside any transaction,
   then store them and mark the reservation spent, in one transaction;
2. publish: write the files from the stored answers and give the release its version.
While it works, the delivery refreshes the release's heartbeat (``releases.services.heartbeat``).

A delivery that finds the release not queued does nothing: it is a duplicate, or arrives late
(Redis restores an unacknowledged message after its visibility timeout). A worker that dies
(killed, out of memory) stops the heartbeat; ``release_reap_stale``, run by every worker at start
and then periodically (and by ``manage.py reap_stale_releases`` from cron if wanted), puts a
running release whose heartbeat is stale back to queued and sends a new message, on every broker.
The next delivery resumes from the stored answers, so noise is never drawn twice. After
``RELEASE_MAX_DELIVERIES`` stops the release fails with that reason instead. A late worker whose
release was taken from it stores nothing and settles nothing.
"""

import csv
import hashlib
import io
import itertools
import json
import logging
import time
import uuid
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import DatabaseError, InterfaceError, OperationalError, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from audit.chain import AuditAction, audit_record
from audit.models import AuditEvent
from privacy_engine import (
    EngineValidationError,
    SyntheticTable,
    microdata_codes,
    release_stored_table,
    synthetic_table,
)
from privacy_engine.engines import EngineChoice
from privacy_engine.presentation import interval_halfwidth, published_value
from privacy_engine.wording import gettext_noop, phrase
from releases.models import (
    MICRODATA_PREFIX,
    LedgerEntry,
    NoisyAnswer,
    Release,
    ReleaseFile,
    ReleaseSeries,
)
from releases.selectors import cell_interval, release_answer_statistics
from releases.services.clock import database_now
from releases.services.datasets import ONCE, TIMES, TWICE, dataset_reap_stale
from releases.services.errors import Conflict
from releases.services.heartbeat import Ticker, release_heartbeat
from releases.services.ledger import budget_settlement_record
from releases.services.releases import series_next_version
from releases.services.signed_metadata import release_configuration_file, release_signed_files
from releases.services.signing import SigningKeyProblem, signing_key
from releases.services.storage import local_copy, object_storage_uri

logger = logging.getLogger(__name__)

CSV_FIELDS = [
    "statistic",
    "kind",
    "column",
    "category",
    "value",
    "ci95_low",
    "ci95_high",
    "mechanism",
    "epsilon",
    "delta",
    "sensitivity",
    "noise_scale",
    "rule",
]
# A spreadsheet runs a cell starting with one of these as a formula (OWASP, "CSV injection").
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
ESCAPE_PREFIX = "'"


class ReleaseFailure(Exception):
    """A reason safe to show the curator: it names no value from the table."""


# Why a release failed: stored in English as its failure reason, translated where a page shows
# it (releases/refusals.py).
TABLE_NOT_READY = gettext_noop("The uploaded table is not ready.")
PLAN_NOT_VALID = gettext_noop("The release plan is not valid: {problems}")
TABLE_UNREADABLE = gettext_noop("The uploaded table could not be read.")
STORING_FAILED = gettext_noop("Internal error while storing the release ({error}).")
COMPUTING_FAILED = gettext_noop("Internal error while computing the release ({error}).")
NO_SIGNING_KEY = gettext_noop("Publication needs the installation's signing key, and {problem}.")
RELEASE_TOO_SLOW = gettext_noop("The release took longer than the time limit.")
RELEASE_WORKER_STOPPED = gettext_noop(
    "The worker computing this release stopped before finishing, {count} (killed, out of "
    "memory or past its time limit); it is not tried again."
)


class ReleaseNotHeld(Exception):
    """This delivery no longer holds the release: it was reaped (and perhaps claimed again)."""


@dataclass(frozen=True)
class ReapedRelease:
    release_id: int
    outcome: str  # "redelivered" or "failed"


def _claim(release_id: int, worker: str) -> str | None:
    """Take a queued release for this delivery; its claim token, or None when there is nothing
    to do (published, failed, or held by another delivery whose heartbeat the reaper watches)."""
    with transaction.atomic():
        release = Release.objects.select_for_update().get(pk=release_id)
        if release.status != Release.Status.QUEUED:
            return None
        now = database_now()
        release.status = Release.Status.RUNNING
        release.claim_token = uuid.uuid4().hex
        release.claimed_at = now
        release.heartbeat_at = now
        release.progress = max(release.progress, 0.1)
        release.worker = worker
        release.save(
            update_fields=[
                "status",
                "claim_token",
                "claimed_at",
                "heartbeat_at",
                "progress",
                "worker",
            ]
        )
        audit_record(
            actor=None,
            action=AuditAction.TASK_STARTED,
            object_type="release",
            object_id=release.pk,
            dataset_id=release.dataset_id,
            details={"worker": worker},
        )
        return release.claim_token


def _held(release_id: int, claim_token: str) -> Release:
    """The release row, locked, if this delivery still holds it; call inside a transaction."""
    release = Release.objects.select_for_update().get(pk=release_id)
    if release.status != Release.Status.RUNNING or release.claim_token != claim_token:
        raise ReleaseNotHeld
    return release


def _set_progress(release_id: int, claim_token: str, progress: float) -> None:
    Release.objects.filter(
        pk=release_id, claim_token=claim_token, status=Release.Status.RUNNING
    ).update(progress=progress)


def _draw(release_id: int, claim_token: str) -> None:
    release = Release.objects.select_related("dataset").get(pk=release_id)
    if release.answers.exists():
        return
    # Reading and computing happen outside any transaction, so a long computation does not hold
    # the database's write lock (SQLite) while pages and downloads wait. Answers drawn here are
    # stored only if this delivery still holds the release; answers never stored are never seen.
    dataset = release.dataset
    if dataset.status != dataset.Status.READY or not dataset.table:
        raise ReleaseFailure(TABLE_NOT_READY)
    engine = EngineChoice(
        kind=settings.RELEASE_ENGINE,
        memory_budget_bytes=settings.RELEASE_MEMORY_BUDGET_BYTES,
        scheduler_address=settings.DASK_SCHEDULER_ADDRESS,
    )
    # The distributed engine's workers read object storage themselves; the other engines read
    # a local file (a temporary copy when the table is in object storage).
    uri = (
        object_storage_uri(dataset.table.storage, dataset.table.name)
        if engine.kind == "distributed"
        else None
    )
    try:
        with (
            nullcontext(uri) if uri else local_copy(dataset.table.storage, dataset.table.name)
        ) as table_path:
            result = release_stored_table(
                table_path,
                schema=release.schema,
                definition=release.definition,
                queries=release.queries,
                engine=engine,
            )
    except EngineValidationError as error:
        raise ReleaseFailure(phrase(PLAN_NOT_VALID, problems=error)) from None
    except (OSError, ValueError, pa.ArrowException):
        raise ReleaseFailure(TABLE_UNREADABLE) from None
    with transaction.atomic():
        release = _held(release_id, claim_token)
        entry = LedgerEntry.objects.select_for_update().get(release=release)
        if entry.state == LedgerEntry.State.RETURNED:
            # Answers must never be stored against budget that was given back.
            raise ReleaseNotHeld
        if release.answers.exists():
            return
        NoisyAnswer.objects.bulk_create(
            NoisyAnswer(release=release, position=i, statistic=s.to_dict())
            for i, s in enumerate(result.statistics)
        )
        release.progress = 0.6
        release.timings = {name: round(seconds, 6) for name, seconds in result.timings.items()}
        release.save(update_fields=["progress", "timings"])
        audit_record(
            actor=None,
            action=AuditAction.NOISE_DRAWN,
            object_type="release",
            object_id=release.pk,
            dataset_id=release.dataset_id,
            details={"statistics": len(result.statistics), "engine": result.engine},
        )
        ledger_settle(entry, release=release, state=LedgerEntry.State.SPENT)


def ledger_settle(entry: LedgerEntry, *, release: Release, state: str) -> None:
    """Move a reservation to spent or returned and record it, in the caller's transaction.

    Idempotent and final: only a reservation moves, so spent stays spent and returned stays
    returned whatever a late or repeated delivery does."""
    if entry.state != LedgerEntry.State.RESERVED:
        return
    entry.state = state
    entry.save(update_fields=["state", "updated_at"])
    budget_settlement_record(entry=entry)
    audit_record(
        actor=None,
        action=AuditAction.BUDGET_SPENT
        if state == LedgerEntry.State.SPENT
        else AuditAction.BUDGET_RETURNED,
        object_type="ledger_entry",
        object_id=entry.pk,
        dataset_id=release.dataset_id,
        details={"release": release.pk, "epsilon": str(entry.epsilon), "delta": str(entry.delta)},
    )


def csv_cell(value: Any) -> Any:
    """A cell as written: numbers this code computed stay numbers (``-3.5`` is a value, not a
    formula), and any text that starts like a formula gets a leading ``'``, whatever field it is
    in (names, categories, rule text, kind, mechanism), as OWASP's CSV injection guidance says."""
    if value is None:
        return ""
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        return value
    text = str(value)
    # A text already starting with the prefix gets one more, so the escape can be undone (strip
    # one leading ') and two texts never read alike ("-1" → "'-1", "'-1" → "''-1").
    return ESCAPE_PREFIX + text if text.startswith((*FORMULA_TRIGGERS, ESCAPE_PREFIX)) else text


# A CSV holding k-means' centroids (a statistic whose value is a list of rows) adds these
# columns, then three per clustered column: ``<column>``, ``<column>_ci95_low`` and
# ``<column>_ci95_high``. Other statistics' rows leave them empty; a CSV without centroids has
# only CSV_FIELDS.
CSV_CLUSTER_FIELDS = ["cluster", "size", "size_ci95_low", "size_ci95_high"]
CI95_SUFFIXES = ("_ci95_low", "_ci95_high")


def _coordinate_fields(statistics: list[dict[str, Any]], taken: list[str]) -> dict[str, str]:
    """Each clustered column's CSV field, in order of first use: its own name, or, when that
    name or its ``_ci95_low``/``_ci95_high`` would repeat a header as written (``value``,
    ``size``, a name that escapes to another's), ``centroid_<name>`` (then ``_2``, ``_3``…),
    so the header never holds one name twice."""
    written = {str(csv_cell(name)) for name in taken}
    fields: dict[str, str] = {}
    for stat in statistics:
        if not isinstance(stat["value"], list):
            continue
        for column in stat.get("columns") or []:
            if column in fields:
                continue
            candidates = (
                column if n == 0 else f"centroid_{column}" if n == 1 else f"centroid_{column}_{n}"
                for n in itertools.count()
            )
            for base in candidates:
                names = [str(csv_cell(base + suffix)) for suffix in ("", *CI95_SUFFIXES)]
                if not written & set(names):
                    break
            fields[column] = base
            written.update(names)
    return fields


def release_rows(statistics: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """The rows of one version's table files, and their fields: one row per published cell,
    and one per centroid of a k-means statistic (its cluster, size and a coordinate per column,
    each with its 95% interval, in the fields after CSV_FIELDS; ``category`` and ``value`` stay
    empty). Values as computed: the CSV escapes them, the Parquet file types them."""
    rows: list[dict[str, Any]] = []
    has_rows = any(isinstance(stat["value"], list) for stat in statistics)
    coordinates = _coordinate_fields(statistics, CSV_FIELDS + CSV_CLUSTER_FIELDS)
    fields = CSV_FIELDS + (
        CSV_CLUSTER_FIELDS
        + [base + suffix for base in coordinates.values() for suffix in ("", *CI95_SUFFIXES)]
        if has_rows
        else []
    )
    write = rows.append

    for index, stat in enumerate(statistics):
        common = {
            k: stat[k]
            for k in (
                "kind",
                "column",
                "mechanism",
                "epsilon",
                "delta",
                "sensitivity",
                "noise_scale",
                "rule",
            )
        }
        if not common["column"] and stat.get("columns"):
            # A statistic of several columns (a vector of sums, a table) names them all.
            common["column"] = ", ".join(stat["columns"])
        if isinstance(stat["value"], list):
            for centroid, interval in zip(stat["value"], stat["ci95"], strict=True):
                row = {
                    "statistic": index,
                    "cluster": centroid["cluster"],
                    "size": centroid["size"],
                    "size_ci95_low": interval["size"][0],
                    "size_ci95_high": interval["size"][1],
                    **common,
                }
                for column in stat.get("columns") or []:
                    base = coordinates[column]
                    row[base] = centroid[column]
                    row[base + CI95_SUFFIXES[0]], row[base + CI95_SUFFIXES[1]] = interval[column]
                write(row)
        elif isinstance(stat["value"], dict):
            for category, value in stat["value"].items():
                low, high = cell_interval(stat, category)
                write(
                    {
                        "statistic": index,
                        "category": category,
                        "value": value,
                        "ci95_low": low,
                        "ci95_high": high,
                        **common,
                    }
                )
        else:
            # A synthetic table's value is its number of rows: no interval.
            low, high = stat["ci95"] or (None, None)
            write(
                {
                    "statistic": index,
                    "category": "",
                    "value": stat["value"],
                    "ci95_low": low,
                    "ci95_high": high,
                    **common,
                }
            )
    return fields, rows


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def csv_rounded(row: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    """A row of the CSV file with its numbers as people read them (the engine's
    ``published_value``): each value and the ends of its 95% interval (``value`` with
    ``ci95_low`` and ``ci95_high``; a centroid's ``size`` or coordinate with its own) rounded to
    the precision that interval supports (the ends outwards), every other number (ε, δ,
    sensitivity, noise scale, a value without interval) cleared of a float's artefacts.
    Post-processing: the JSON and Parquet files keep every digit."""
    # Each value field with the two fields of its interval: ``value``, a centroid's ``size``,
    # then each coordinate's three fields, in the order release_rows writes them (a column may be
    # named like another's interval field, so names alone cannot tell them apart).
    coordinates = fields[len(CSV_FIELDS) + len(CSV_CLUSTER_FIELDS) :]
    intervals = {"value": ("ci95_low", "ci95_high"), "size": ("size_ci95_low", "size_ci95_high")}
    for start in range(0, len(coordinates) - 2, 3):
        base, low, high = coordinates[start : start + 3]
        intervals[base] = (low, high)
    # How each number is rounded: to its interval's half-width; the ends outwards, so that the
    # written interval holds the computed one.
    how: dict[str, dict[str, Any]] = {}
    for base, (low, high) in intervals.items():
        halfwidth = interval_halfwidth(row.get(low), row.get(high))
        how[base] = {"halfwidth": halfwidth}
        how[low] = {"halfwidth": halfwidth, "rounding": "down"}
        how[high] = {"halfwidth": halfwidth, "rounding": "up"}
    return {
        field: published_value(value, **how.get(field, {})) if _is_number(value) else value
        for field, value in row.items()
    }


def release_csv(statistics: list[dict[str, Any]]) -> bytes:
    """The published CSV file of one version (:func:`release_rows`), every text cell escaped
    against spreadsheet formulas and every number rounded as people read it
    (:func:`csv_rounded`)."""
    fields, rows = release_rows(statistics)
    rows = [csv_rounded(row, fields) for row in rows]
    out = io.StringIO()
    # CRLF (RFC 4180) makes the writer quote any cell holding a CR or LF, so a name with a line
    # break can never split a row.
    writer = csv.writer(out, lineterminator="\r\n")
    # The header is escaped like any other cell: it holds the clustered columns' names.
    writer.writerow([csv_cell(field) for field in fields])
    for row in rows:
        writer.writerow([csv_cell(row.get(field)) for field in fields])
    return out.getvalue().encode()


def _column(values: list[Any]) -> pa.Array:
    """One Parquet column: numbers (whole ones as int64) when every value is a number or
    missing, else text."""
    present = [v for v in values if v is not None]
    numbers = all(isinstance(v, int | float | Decimal) and not isinstance(v, bool) for v in present)
    if numbers and all(isinstance(v, int) for v in present):
        return pa.array(values, type=pa.int64())
    if numbers:
        return pa.array([None if v is None else float(v) for v in values], type=pa.float64())
    return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def release_parquet(statistics: list[dict[str, Any]]) -> bytes:
    """The published Parquet file of one version: the CSV's rows and fields
    (:func:`release_rows`), each column typed (numbers as numbers, missing as null) and no
    text escaped (no spreadsheet reads Parquet as formulas)."""
    fields, rows = release_rows(statistics)
    table = pa.table({field: _column([row.get(field) for row in rows]) for field in fields})
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def microdata_file_format(position: int, extension: str) -> str:
    """The file format (and download path segment) of a statistic's record-level file."""
    return f"{MICRODATA_PREFIX}{position}.{extension}"


def synthetic_tables(statistics: list[dict[str, Any]]) -> dict[int, SyntheticTable]:
    """The rows of each synthetic statistic, by position: generated by the engine from the
    stored noisy marginals (post-processing; seconds each, so before any transaction)."""
    return {
        position: synthetic_table(stat["microdata"])
        for position, stat in enumerate(statistics)
        if (stat.get("microdata") or {}).get("format") == "synthetic"
    }


def microdata_files(
    statistics: list[dict[str, Any]], tables: dict[int, SyntheticTable] | None = None
) -> dict[str, bytes]:
    """The record-level files of the statistics that publish one, as CSV, JSON and Parquet
    (the same rows in the same order in each): randomized response's reports (one column, a row
    per report in a random order, written from the published number of reports of each
    category), a synthetic table's rows (``tables``, from :func:`synthetic_tables`)."""
    files: dict[str, bytes] = {}
    for position, stat in enumerate(statistics):
        microdata = stat.get("microdata")
        if not microdata:
            continue
        if microdata.get("format") == "synthetic":
            bodies = _synthetic_files(stat, (tables or {})[position])
        else:
            bodies = _response_files(stat)
        for extension, body in zip(("csv", "json", "parquet"), bodies, strict=True):
            files[microdata_file_format(position, extension)] = body
    return files


def _parquet(columns: dict[str, pa.Array]) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.table(columns), out)
    return out.getvalue()


def _categories(codes: np.ndarray, labels: Sequence[str]) -> pa.DictionaryArray:
    """A column of category labels stored as their codes (Parquet's dictionary encoding):
    typed text, without a Python string per row."""
    return pa.DictionaryArray.from_arrays(
        pa.array(codes.astype(np.int32)), pa.array(list(labels), type=pa.string())
    )


def _response_files(stat: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    microdata = stat["microdata"]
    codes, _ = microdata_codes(microdata["reports"])
    labels = microdata["categories"]
    cells = np.asarray([_csv_text(label) for label in labels], dtype=object)
    header = _csv_text(microdata["column"])
    csv_body = f"{header}\n" + ("\n".join(cells[codes]) + "\n" if codes.size else "")
    document = {
        "column": microdata["column"],
        "categories": labels,
        "rule": stat["rule"],
        "epsilon": stat["epsilon"],
        "delta": stat["delta"],
        "records": np.asarray(labels, dtype=object)[codes].tolist(),
    }
    parquet_body = _parquet({microdata["column"]: _categories(codes, labels)})
    return csv_body.encode(), json.dumps(document, ensure_ascii=False).encode(), parquet_body


# Rows of a synthetic table turned into text at a time: bounds the temporary Python objects.
SYNTHETIC_CHUNK_ROWS = 20_000


def _synthetic_files(stat: dict[str, Any], table: SyntheticTable) -> tuple[bytes, bytes, bytes]:
    """A synthetic table's rows as CSV (a column per table column, categories defused like any
    text) and JSON (``columns`` and ``rows``, each row a list in that order), written a chunk
    of rows at a time, and as Parquet (categories as text, numbers as doubles). A number is
    written in the shortest form that reads back as the same double, so a value drawn inside
    its bin stays inside it (fewer digits could print it on the next bin's edge)."""
    microdata = stat["microdata"]
    escaped = [
        np.asarray([_csv_text(label) for label in buckets], dtype=object)
        for buckets in table.buckets
    ]
    # Each chunk encoded at once: the whole file is held once, as bytes.
    csv_parts = [(",".join(_csv_text(name) for name in table.columns) + "\n").encode()]
    json_parts = []
    for start in range(0, table.rows, SYNTHETIC_CHUNK_ROWS):
        stop = min(table.rows, start + SYNTHETIC_CHUNK_ROWS)
        texts = [
            escaped[c][table.codes[start:stop, c]].tolist()
            if table.numbers[c] is None
            else [repr(v) for v in table.column(c, start, stop)]
            for c in range(len(table.columns))
        ]
        csv_parts.append("".join(",".join(row) + "\n" for row in zip(*texts, strict=True)).encode())
        values = [table.column(c, start, stop) for c in range(len(table.columns))]
        rows = json.dumps([list(row) for row in zip(*values, strict=True)], ensure_ascii=False)
        json_parts.append(rows[1:-1].encode())
    head = {
        "columns": list(table.columns),
        "rule": stat["rule"],
        "guarantee": microdata["guarantee"],
        "epsilon": stat["epsilon"],
        "delta": stat["delta"],
        "marginals_preserved": [m["columns"] for m in microdata["marginals"]],
    }
    opening = (json.dumps(head, ensure_ascii=False)[:-1] + ', "rows": [').encode()
    json_body = opening + b", ".join(part for part in json_parts if part) + b"]}"
    parquet_body = _parquet(
        {
            name: _categories(table.codes[:, c], table.buckets[c])
            if table.numbers[c] is None
            else pa.array(table.numbers[c], type=pa.float64())
            for c, name in enumerate(table.columns)
        }
    )
    return b"".join(csv_parts), json_body, parquet_body


def _csv_text(text: str) -> str:
    """One CSV field of text: quoted when it must be, and a formula's start defused."""
    out = io.StringIO()
    # The usual terminator, so that a line break inside a label would be quoted.
    csv.writer(out, lineterminator="\r\n").writerow([csv_cell(text)])
    return out.getvalue().removesuffix("\r\n")


def _record_generated(
    release: Release, statistics: list[dict[str, Any]], tables: dict[int, SyntheticTable]
) -> None:
    """Each synthetic statistic's rows per bucket, beside its noisy marginals (the page sets
    them side by side): added to the statistic and its stored answer, in the caller's
    transaction, before the version is published."""
    for position, table in tables.items():
        statistics[position]["microdata"]["generated_counts"] = list(table.bucket_counts)
        answer = release.answers.get(position=position)
        answer.statistic["microdata"]["generated_counts"] = list(table.bucket_counts)
        answer.save(update_fields=["statistic"])


def release_document(release: Release, statistics: list[dict[str, Any]]) -> dict[str, Any]:
    """The published JSON document of one version (also the API's statistics)."""
    return {
        "slug": release.series.slug,
        "title": release.title,
        "version": release.version,
        "definition": release.definition,
        "published_at": release.published_at.isoformat() if release.published_at else None,
        "statistics": statistics,
    }


def _store_files(release: Release, contents: dict[str, bytes]) -> None:
    for file_format, content in contents.items():
        record = ReleaseFile(
            release=release,
            format=file_format,
            sha256=hashlib.sha256(content).hexdigest(),
            size=len(content),
        )
        record.file.save(
            f"{release.series.slug}-v{release.version}.{file_format}",
            ContentFile(content),
            save=False,
        )
        record.save()


def _publish(release_id: int, claim_token: str) -> None:
    started = time.perf_counter()
    # Synthetic rows take seconds to generate: outside the transaction (post-processing of the
    # stored answers; a retried delivery generates new rows, nothing having been published).
    queued = Release.objects.get(pk=release_id)
    needs_rows = any(query.get("kind") == "synthetic" for query in queued.queries)
    tables = synthetic_tables(release_answer_statistics(release=queued)) if needs_rows else {}
    with transaction.atomic():
        release = _held(release_id, claim_token)
        series = ReleaseSeries.objects.select_for_update().get(pk=release.series_id)
        release.series = series
        statistics = release_answer_statistics(release=release)
        _record_generated(release, statistics, tables)
        release.version = series_next_version(series)
        release.published_at = timezone.now()
        document = release_document(release, statistics)
        contents = {
            ReleaseFile.Format.CSV: release_csv(statistics),
            ReleaseFile.Format.JSON: json.dumps(document, indent=2, ensure_ascii=False).encode(),
            ReleaseFile.Format.PARQUET: release_parquet(statistics),
            **microdata_files(statistics, tables),
            ReleaseFile.Format.CONFIGURATION: release_configuration_file(release),
        }
        _store_files(release, contents)
        # Last, just before the publication's audit events: the metadata (every file above
        # with its hash, and the audit head, which stays locked from here until commit) and its
        # signature.
        signed = release_signed_files(release=release, statistics=statistics, contents=contents)
        _store_files(release, signed)
        contents |= signed
        release.status = Release.Status.PUBLISHED
        release.progress = 1.0
        release.timings = {
            **(release.timings or {}),
            "publish_s": round(time.perf_counter() - started, 6),
        }
        release.save(update_fields=["status", "progress", "version", "published_at", "timings"])
        audit_record(
            actor=None,
            action=AuditAction.TASK_FINISHED,
            object_type="release",
            object_id=release.pk,
            dataset_id=release.dataset_id,
            details={},
        )
        audit_record(
            actor=None,
            action=AuditAction.RELEASE_PUBLISHED,
            object_type="release",
            object_id=release.pk,
            dataset_id=release.dataset_id,
            details={
                "slug": series.slug,
                "version": release.version,
                "files": {f: hashlib.sha256(c).hexdigest() for f, c in contents.items()},
            },
        )


def _fail_locked(release: Release, reason: str) -> None:
    """Fail a locked, unfinished release in the caller's transaction. The reservation comes back
    only if no answer was ever stored: stored answers have spent the budget, published or not."""
    release.status = Release.Status.FAILED
    release.failure_reason = reason
    release.save(update_fields=["status", "failure_reason"])
    audit_record(
        actor=None,
        action=AuditAction.TASK_FAILED,
        object_type="release",
        object_id=release.pk,
        dataset_id=release.dataset_id,
        details={"reason": reason},
    )
    entry = LedgerEntry.objects.select_for_update().filter(release=release).first()
    if entry is not None:
        ledger_settle(
            entry,
            release=release,
            state=LedgerEntry.State.SPENT
            if release.answers.exists()
            else LedgerEntry.State.RETURNED,
        )


def release_fail(*, release_id: int, reason: str, claim_token: str | None = None) -> bool:
    """Mark the release failed with a safe reason; publish nothing. With ``claim_token`` (a
    worker's own failure) only while that delivery still holds the release. Returns whether the
    release was failed by this call."""
    with transaction.atomic():
        release = Release.objects.select_for_update().get(pk=release_id)
        if release.status in (Release.Status.PUBLISHED, Release.Status.FAILED):
            return False
        if claim_token is not None and (
            release.status != Release.Status.RUNNING or release.claim_token != claim_token
        ):
            return False
        _fail_locked(release, reason)
        return True


# Times one release may be queued again after failing at publication: a failure that three
# retries did not cure is not a passing one.
MAX_PUBLISH_AGAIN = 3


def release_publish_again(*, release: Release, user) -> Release:
    """Queue again a release that failed after its noisy answers were stored (a publication
    step that ran out of memory or time): the next delivery publishes those answers. No noise is
    drawn and no budget is spent again: the answers and the spent reservation are kept. Any
    other release is refused (:class:`Conflict`)."""
    # Imported here: the task module imports this one.
    from releases.tasks import release_run_task

    with transaction.atomic():
        locked = Release.objects.select_for_update().get(pk=release.pk)
        spent = LedgerEntry.objects.filter(release=locked, state=LedgerEntry.State.SPENT).exists()
        if locked.status != Release.Status.FAILED or not locked.answers.exists() or not spent:
            raise Conflict(
                "Only a release that failed after its noisy answers were drawn can be published "
                "again; this one "
                + (
                    "has no stored answers (its budget was returned): submit a new release."
                    if locked.status == Release.Status.FAILED
                    else f"is {locked.get_status_display().lower()}."
                )
            )
        tries = AuditEvent.objects.filter(
            action=AuditAction.RELEASE_REQUEUED, object_type="release", object_id=locked.pk
        ).count()
        if tries >= MAX_PUBLISH_AGAIN:
            raise Conflict(
                f"This release was already published again {tries} times and failed each time: "
                "its failure will not go away by retrying; submit a new release (with fewer or "
                "smaller statistics)."
            )
        reason = locked.failure_reason
        locked.status = Release.Status.QUEUED
        locked.failure_reason = ""
        locked.deliveries = 0
        locked.claim_token = ""
        # Fresh, so the reaper waits for this delivery rather than take it for a lost message.
        locked.heartbeat_at = database_now()
        locked.claimed_at = None
        locked.save(
            update_fields=[
                "status",
                "failure_reason",
                "deliveries",
                "claim_token",
                "heartbeat_at",
                "claimed_at",
            ]
        )
        audit_record(
            actor=user,
            action=AuditAction.RELEASE_REQUEUED,
            object_type="release",
            object_id=locked.pk,
            dataset_id=locked.dataset_id,
            details={"after": reason},
        )
        release_run_task.delay_on_commit(locked.pk)
    return locked


def _unclaim(release_id: int, claim_token: str) -> None:
    """Give a held release back to the queue (a retried database error), so the retry's delivery
    can claim it at once. Best effort: when the database is down the reaper does it later."""
    try:
        Release.objects.filter(
            pk=release_id, claim_token=claim_token, status=Release.Status.RUNNING
        ).update(
            status=Release.Status.QUEUED,
            claim_token="",
            claimed_at=None,
            heartbeat_at=database_now(),
        )
    except DatabaseError as error:
        logger.warning("release %s could not be requeued: %s", release_id, type(error).__name__)


def release_run(*, release_id: int, worker: str) -> None:
    """Run a queued release to publication, or leave it failed with a safe reason.

    Database errors propagate so the task can retry them; every other error fails the release.
    A delivery that finds the release taken from it stops without storing anything.
    """
    claim_token = _claim(release_id, worker)
    if claim_token is None:
        return
    try:
        with release_heartbeat(release_id=release_id, claim_token=claim_token):
            # Before any noise is drawn: a key that cannot sign would otherwise fail the
            # publication only after the budget is spent. The first publication creates it.
            signing_key()
            _draw(release_id, claim_token)
            _set_progress(release_id, claim_token, 0.8)
            _publish(release_id, claim_token)
    except ReleaseNotHeld:
        logger.warning("release %s was taken from this delivery; it stored nothing", release_id)
    except (OperationalError, InterfaceError):
        # Transient (a lost connection, a locked database): give the release back for the
        # task's retry. Any other database error would repeat on every delivery, so it fails the
        # release below, saying only its type.
        _unclaim(release_id, claim_token)
        raise
    except DatabaseError as error:
        logger.error("release %s failed with %s", release_id, type(error).__name__)
        release_fail(
            release_id=release_id,
            reason=phrase(STORING_FAILED, error=type(error).__name__),
            claim_token=claim_token,
        )
    except ReleaseFailure as failure:
        release_fail(release_id=release_id, reason=str(failure), claim_token=claim_token)
    except SigningKeyProblem as problem:
        # Before drawing (or, if the key broke since, at publication): the reservation comes
        # back unless answers were stored.
        logger.error("release %s: %s", release_id, problem)
        release_fail(
            release_id=release_id,
            reason=phrase(NO_SIGNING_KEY, problem=problem),
            claim_token=claim_token,
        )
    except SoftTimeLimitExceeded:
        release_fail(
            release_id=release_id,
            reason=RELEASE_TOO_SLOW,
            claim_token=claim_token,
        )
    except Exception as error:
        # Only the type is logged: messages from data libraries can quote table values.
        logger.error("release %s failed with %s", release_id, type(error).__name__)
        release_fail(
            release_id=release_id,
            reason=phrase(COMPUTING_FAILED, error=type(error).__name__),
            claim_token=claim_token,
        )


def _send(release_id: int) -> None:
    # Imported here: the task module imports this one.
    from releases.tasks import release_run_task

    release_run_task.delay(release_id)


def _times(count: int) -> str:
    return {1: phrase(ONCE), 2: phrase(TWICE)}.get(count) or phrase(TIMES, times=count)


def _reap_one(release_id: int, *, running_cutoff: datetime, queued_cutoff: datetime) -> str | None:
    with transaction.atomic():
        release = Release.objects.select_for_update().get(pk=release_id)
        last_seen = release.heartbeat_at or release.claimed_at or release.submitted_at
        now = database_now()
        if release.status == Release.Status.RUNNING and last_seen < running_cutoff:
            stops = release.deliveries + 1
            max_deliveries = settings.RELEASE_MAX_DELIVERIES
            if stops >= max_deliveries:
                _fail_locked(release, phrase(RELEASE_WORKER_STOPPED, count=_times(stops)))
                return "failed"
            details = {"reason": "worker stopped", "worker": release.worker, "stops": stops}
            release.deliveries = stops
        elif release.status == Release.Status.QUEUED and last_seen < queued_cutoff:
            # Never claimed: the message was lost (e.g. the broker was down at submission).
            details = {"reason": "message lost"}
        else:
            return None
        release.status = Release.Status.QUEUED
        release.claim_token = ""
        release.claimed_at = None
        # For a queued release this marks when it was queued again, so the next message is sent
        # only if this one is lost too.
        release.heartbeat_at = now
        release.save(
            update_fields=["status", "claim_token", "claimed_at", "heartbeat_at", "deliveries"]
        )
        audit_record(
            actor=None,
            action=AuditAction.TASK_REDELIVERED,
            object_type="release",
            object_id=release.pk,
            dataset_id=release.dataset_id,
            details=details,
        )
        # A failed send is logged; the release stays queued and is sent again later.
        transaction.on_commit(partial(_send, release.pk), robust=True)
        return "redelivered"


def release_reap_stale(*, older_than: timedelta | None = None) -> list[ReapedRelease]:
    """Recover releases whose delivery is gone, on any broker.

    A running release whose heartbeat (or claim) is older than ``RELEASE_STALE_SECONDS`` lost its
    worker: it is queued again with a new message (the next delivery resumes from the stored
    answers), or failed once ``RELEASE_MAX_DELIVERIES`` deliveries have stopped. A queued release
    that no delivery claimed for ``older_than`` (default: twice the task's hard time limit, since
    submission or since it was last queued again) gets a new message: its first one was lost.
    A message that turns up later anyway finds nothing to do.
    """
    now = database_now()
    running_cutoff = now - timedelta(seconds=float(settings.RELEASE_STALE_SECONDS))
    queued_cutoff = now - (
        older_than
        if older_than is not None
        else timedelta(seconds=2 * settings.CELERY_TASK_TIME_LIMIT)
    )
    stale = list(
        Release.objects.annotate(last_seen=Coalesce("heartbeat_at", "claimed_at", "submitted_at"))
        .filter(
            Q(status=Release.Status.RUNNING, last_seen__lt=running_cutoff)
            | Q(status=Release.Status.QUEUED, last_seen__lt=queued_cutoff)
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    reaped = []
    for release_id in stale:
        outcome = _reap_one(release_id, running_cutoff=running_cutoff, queued_cutoff=queued_cutoff)
        if outcome is not None:
            reaped.append(ReapedRelease(release_id=release_id, outcome=outcome))
    return reaped


def release_reaper_start() -> Ticker:
    """Run ``release_reap_stale`` in a daemon thread of this process: now, then every half
    ``RELEASE_STALE_SECONDS``. Every worker runs one (see ``config/celery.py``), so a release
    whose worker died is recovered without cron; several reapers are safe, each release is
    re-checked under its row lock."""

    def reap() -> None:
        for reaped in release_reap_stale():
            logger.warning("release %s: %s by the reaper", reaped.release_id, reaped.outcome)
        for dataset_id, outcome in dataset_reap_stale():
            logger.warning("dataset %s conversion: %s by the reaper", dataset_id, outcome)

    ticker = Ticker(
        name="release-reaper",
        interval=max(float(settings.RELEASE_STALE_SECONDS) / 2, 0.1),
        action=reap,
        run_first=True,
    )
    ticker.start()
    return ticker
