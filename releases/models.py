"""Datasets, releases, the budget ledger and the audit trail.

Amounts of privacy budget are Decimals with 12 places; ledger entries are never edited once spent.
State changes live in ``releases/services``; these classes hold no side effects.
"""

import os
from decimal import Decimal

from django.conf import settings
from django.core.files.storage import FileSystemStorage, Storage
from django.db import models
from django.db.models import Q
from django.test.signals import setting_changed
from django.utils.functional import LazyObject, empty
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class SettingRootStorage(FileSystemStorage):
    """A file system storage whose root is read from a setting on every use, not at import, so
    a changed setting (a test's temporary directory, a worker's environment) is honoured."""

    def __init__(self, setting_name: str) -> None:
        self.setting_name = setting_name
        super().__init__()

    @property
    def base_location(self) -> str:
        return str(getattr(settings, self.setting_name))

    @property
    def location(self) -> str:
        return os.path.abspath(self.base_location)


class ConfiguredStorage(LazyObject):
    """The storage the settings name, built on first use and again whenever OBJECT_STORAGE
    changes: S3-compatible object storage under ``location`` when configured, else the directory
    in ``root_setting``. File fields keep this one object, so it must follow the settings."""

    def __init__(self, location: str, root_setting: str) -> None:
        super().__init__()
        self.__dict__["_location"] = location
        self.__dict__["_root_setting"] = root_setting
        setting_changed.connect(self._settings_changed, weak=False)

    def _setup(self) -> None:
        if settings.OBJECT_STORAGE:
            from storages.backends.s3 import S3Storage

            self._wrapped = S3Storage(location=self._location, **settings.OBJECT_STORAGE)
        else:
            self._wrapped = SettingRootStorage(self._root_setting)

    def _settings_changed(self, *, setting: str, **kwargs) -> None:
        if setting in ("OBJECT_STORAGE", "OBJECT_STORAGE_BUCKET"):
            self._wrapped = empty


_PRIVATE_STORAGE = ConfiguredStorage("private", "PRIVATE_STORAGE_ROOT")
_RELEASE_STORAGE = ConfiguredStorage("releases", "RELEASE_STORAGE_ROOT")


def private_storage() -> Storage:
    """Uploads and converted tables: never served."""
    return _PRIVATE_STORAGE


def release_storage() -> Storage:
    """Released files: served only by a view that checks publication."""
    return _RELEASE_STORAGE


BUDGET_FIELD = {"max_digits": 24, "decimal_places": 12}
# δ is recorded exactly as published (1e-14 stays 1e-14): far more places than ε needs.
DELTA_FIELD = {"max_digits": 40, "decimal_places": 30}


class LedgerKind(models.TextChoices):
    DIFFERENTIAL_PRIVACY = "differential_privacy", _("Differential privacy")
    BLOWFISH = "blowfish", _("Blowfish policy")


class Dataset(models.Model):
    class Status(models.TextChoices):
        PROCESSING = "processing", _("Processing")
        READY = "ready", _("Ready")
        FAILED = "failed", _("Failed")

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="datasets"
    )
    # The owner's organisation when it was uploaded: its releases, ledger, budget requests and
    # events belong to it, and only that organisation's curators (the owner) and compliance
    # officers see them.
    organisation = models.ForeignKey(
        "organisations.Organisation", on_delete=models.PROTECT, related_name="datasets"
    )
    name = models.CharField(max_length=200)
    # The uploaded CSV, kept only until it is converted to ``table``, then deleted.
    file = models.FileField(storage=private_storage, upload_to="datasets/", blank=True)
    # The table in typed columns (privacy_engine/columnar.py): what every release reads.
    table = models.FileField(storage=private_storage, upload_to="tables/", blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.READY)
    # Share of the upload converted so far (0..1), while processing.
    progress = models.FloatField(default=1.0)
    # Why a conversion failed, safe to show: rows and columns named, never values.
    failure_reason = models.TextField(blank=True)
    # Refreshed by the worker converting the upload; the reaper sends the conversion again when
    # it is stale, and fails it after RELEASE_MAX_DELIVERIES stopped workers. ``queued_at`` is
    # when its conversion was last sent.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    deliveries = models.PositiveIntegerField(default=0)
    # SHA-256 of the uploaded bytes: the same table uploaded twice must not get a fresh budget.
    sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    # Set when the curator confirmed that identical bytes are a new collection (own budget).
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="duplicates"
    )
    # The CSV dialect detected once at upload ({"delimiter": ",", ...}); every later read uses it.
    csv_dialect = models.JSONField(default=dict)
    # The last "suggest from data" output (private, the curator's side only): a schema saved with
    # these values unchanged is marked as taken from the data.
    schema_suggestion = models.JSONField(null=True, blank=True)
    row_count = models.PositiveBigIntegerField(null=True, blank=True)
    # [{"name": ..., "inferred_kind": ...}] in file order; empty until converted.
    columns = models.JSONField(default=list)
    # The curator's declaration: {"columns": {...}, "declared_size": n}. Public facts only.
    schema = models.JSONField(default=dict)
    declared_size = models.PositiveBigIntegerField(null=True, blank=True)
    budget_epsilon = models.DecimalField(**BUDGET_FIELD)
    budget_delta = models.DecimalField(**DELTA_FIELD, default=Decimal(0))
    # The starting-point answers the budget came from (privacy_engine/guidance.py
    # budget_from_questions), blank when the curator set it themselves: each release's
    # default ε follows from how often the table will be released.
    harm = models.CharField(max_length=20, blank=True)
    planned_releases = models.CharField(max_length=20, blank=True)
    budget_reasons = models.JSONField(default=list, blank=True)
    # Fixed by the first submitted release; until then any definition may be chosen.
    ledger_kind = models.CharField(max_length=40, choices=LedgerKind.choices, blank=True)
    # The Blowfish policy of a Blowfish ledger, as JSON.
    ledger_policy = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when the upload and its table were deleted (releases/services/raw_data.py): the
    # dataset's metadata, releases, ledger and trail stay; nothing can read its rows again.
    raw_deleted_at = models.DateTimeField(null=True, blank=True)
    raw_deleted_reason = models.TextField(blank=True)
    # Dual control: when set (by compliance), a submitted release waits for a compliance
    # officer other than its curator to approve it before any worker runs it.
    requires_approval = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name

    @property
    def column_names(self) -> list[str]:
        return [c["name"] for c in self.columns]

    @property
    def is_raw_deleted(self) -> bool:
        return self.raw_deleted_at is not None


class ReleaseSeries(models.Model):
    """A titled line of versions; each published release is one version of one series."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="release_series"
    )
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="series")
    slug = models.SlugField(max_length=120, unique=True)
    title = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        verbose_name_plural = "release series"

    def __str__(self) -> str:
        return self.slug


class Release(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        PUBLISHED = "published", pgettext_lazy("a release's status", "Published")
        FAILED = "failed", _("Failed")
        # A draft that can no longer run (its dataset's raw data was deleted), never submitted
        # and never charged; ``failure_reason`` says why.
        CLOSED = "closed", _("Closed")
        # Submitted on a dataset that requires approval: its budget is reserved, and no worker
        # runs it until a compliance officer approves it (then queued) or rejects it (then
        # rejected, its reservation returned). See ReleaseApproval.
        AWAITING_APPROVAL = "awaiting_approval", _("Awaiting approval")
        REJECTED = "rejected", "Rejected"

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="releases")
    series = models.ForeignKey(ReleaseSeries, on_delete=models.PROTECT, related_name="releases")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="releases"
    )
    title = models.CharField(max_length=200)
    definition = models.JSONField()
    queries = models.JSONField()
    preview = models.JSONField()
    # The schema the release was planned and run with, frozen at submission.
    schema = models.JSONField(default=dict)
    # Its statistics' column names, one a line, set at submission: the catalog searches them.
    columns_text = models.TextField(blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT)
    progress = models.FloatField(default=0.0)
    failure_reason = models.TextField(blank=True)
    version = models.PositiveIntegerField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="host:pid of the worker")
    # The delivery that holds the release: only it may store answers and settle the ledger.
    claim_token = models.CharField(max_length=64, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    # Refreshed by the holding worker while it computes; the reaper works from this.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    deliveries = models.PositiveIntegerField(default=0)
    # Seconds the worker spent: {"read_s", "compute_s", "noise_s", "publish_s"}.
    timings = models.JSONField(null=True, blank=True)
    epsilon_charged = models.DecimalField(**BUDGET_FIELD, null=True, blank=True)
    delta_charged = models.DecimalField(**DELTA_FIELD, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["series", "version"],
                condition=Q(version__isnull=False),
                name="unique_version_per_series",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.status})"

    @property
    def is_published(self) -> bool:
        return self.status == self.Status.PUBLISHED


class ReleaseApproval(models.Model):
    """A compliance officer's decision on a release awaiting approval (never its own curator's)."""

    class Decision(models.TextChoices):
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")

    release = models.OneToOneField(Release, on_delete=models.PROTECT, related_name="approval")
    decision = models.CharField(max_length=20, choices=Decision.choices)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="release_decisions"
    )
    comment = models.TextField()
    decided_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"release {self.release_id} {self.decision} by {self.decided_by}"


class NoisyAnswer(models.Model):
    """One drawn noisy statistic. Stored once: a retried task reuses it and never redraws."""

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="answers")
    position = models.PositiveIntegerField()
    statistic = models.JSONField()
    drawn_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["release", "position"]
        constraints = [
            models.UniqueConstraint(fields=["release", "position"], name="one_draw_per_statistic"),
        ]

    def __str__(self) -> str:
        return f"answer {self.position} of release {self.release_id}"


class LedgerEntry(models.Model):
    """A dataset's budget movement for one release: reserved on submit, then spent or returned."""

    class State(models.TextChoices):
        RESERVED = "reserved", _("Reserved")
        SPENT = "spent", _("Spent")
        RETURNED = "returned", _("Returned")

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="ledger")
    release = models.OneToOneField(Release, on_delete=models.PROTECT, related_name="ledger_entry")
    definition_kind = models.CharField(max_length=40)
    epsilon = models.DecimalField(**BUDGET_FIELD)
    delta = models.DecimalField(**DELTA_FIELD, default=Decimal(0))
    # What the release adds to the dataset's footprints, {"epsilon": …, "delta": …}
    # (privacy_engine/footprint.py): amounts for everyone and per group of a partition column.
    # Null for entries made before footprints: their amounts are for everyone.
    footprint = models.JSONField(null=True, blank=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.RESERVED)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "ledger entries"

    def __str__(self) -> str:
        return f"ε {self.epsilon} {self.state} for release {self.release_id}"


class Withdrawal(models.Model):
    """A published version's withdrawal, with its reason. An insert beside the version, never an
    update of it: the version's row, numbers and files stay as published (and downloadable)."""

    release = models.OneToOneField(Release, on_delete=models.PROTECT, related_name="withdrawal")
    withdrawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="withdrawals"
    )
    reason = models.TextField()
    at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"withdrawal of release {self.release_id}"


class BudgetIncrease(models.Model):
    """A curator's request to raise a dataset's total budget, with a reason; it takes effect only
    when a compliance officer (not the requester) approves it."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="budget_increases")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="budget_requests"
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    epsilon = models.DecimalField(**BUDGET_FIELD)
    delta = models.DecimalField(**DELTA_FIELD, default=Decimal(0))
    reason = models.TextField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="budget_decisions",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    comment = models.TextField(blank=True)

    class Meta:
        ordering = ["-requested_at", "-id"]

    def __str__(self) -> str:
        return f"ε +{self.epsilon} for dataset {self.dataset_id} ({self.status})"


class BudgetMovement(models.Model):
    """One line of a dataset's budget ledger, written once and never edited: the dataset's
    opening total, a reservation, its spend or refund, or an approved top-up of the total. The
    ledger page and API list these, with running totals summed from these rows alone."""

    class Kind(models.TextChoices):
        OPENING = "opening", _("Opening budget")
        RESERVATION = "reservation", _("Reservation")
        SPEND = "spend", _("Spend")
        REFUND = "refund", _("Refund")
        TOP_UP = "top_up", _("Top-up")

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="budget_movements")
    release = models.ForeignKey(
        Release, on_delete=models.PROTECT, null=True, blank=True, related_name="budget_movements"
    )
    increase = models.ForeignKey(
        BudgetIncrease, on_delete=models.PROTECT, null=True, blank=True, related_name="movements"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    actor = models.CharField(max_length=150, help_text="username, or 'system'")
    at = models.DateTimeField()
    epsilon = models.DecimalField(**BUDGET_FIELD)
    delta = models.DecimalField(**DELTA_FIELD, default=Decimal(0))
    # How the release's statistics were composed into ``epsilon`` (sequential across
    # statistics, parallel across disjoint cells): shown on every ledger row.
    composition = models.JSONField(default=dict)

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset"],
                condition=models.Q(kind="opening"),
                name="budgetmovement_one_opening_per_dataset",
            ),
            models.UniqueConstraint(
                fields=["release"],
                condition=models.Q(kind="reservation"),
                name="budgetmovement_one_reservation_per_release",
            ),
            models.UniqueConstraint(
                fields=["release"],
                condition=models.Q(kind__in=["spend", "refund"]),
                name="budgetmovement_one_settlement_per_release",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of ε {self.epsilon} on dataset {self.dataset_id}"


# A record-level file's format starts so, then the statistic's position and the extension
# (``microdata-2.csv``): one per statistic that publishes records (randomized response).
MICRODATA_PREFIX = "microdata-"


class ReleaseFile(models.Model):
    class Format(models.TextChoices):
        CSV = "csv", "CSV"
        JSON = "json", "JSON"
        PARQUET = "parquet", "Parquet"
        # The draft body that re-creates this version's plan (releases/services/signed_metadata).
        CONFIGURATION = "configuration", "configuration (JSON)"
        # Machine-readable metadata of the version, listing every other file's SHA-256, and
        # its Ed25519 signature (base64).
        METADATA = "metadata", "signed metadata (JSON)"
        SIGNATURE = "signature", "signature of the metadata"

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="files")
    # A Format, or a record-level file's MICRODATA_PREFIX format.
    format = models.CharField(max_length=40)
    file = models.FileField(storage=release_storage, upload_to="files/")
    sha256 = models.CharField(max_length=64)
    # Bytes; a record-level file can pass 2 GiB (a 32-bit column on PostgreSQL).
    size = models.PositiveBigIntegerField()

    class Meta:
        ordering = ["release", "format"]
        constraints = [
            models.UniqueConstraint(fields=["release", "format"], name="one_file_per_format"),
        ]

    def __str__(self) -> str:
        return f"{self.format} of release {self.release_id}"
