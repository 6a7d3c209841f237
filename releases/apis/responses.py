"""What each API operation answers, for the OpenAPI schema only: serializers that no view calls,
each the exact shape of one of the dicts the API views build by hand (``dataset_data``,
``release_data``, ``catalog_entry``, ``diff_data``, ``ledger_row_data``, …). A key that can be
null is ``allow_null``; a key only some answers carry is ``required=False``. Where a value is
free-form JSON (a statistic's value, a definition, a query, a preview entry) it says so rather
than inventing structure. Exact amounts of ε and δ are decimal text ("0.5"), never floats."""

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from releases.models import (
    BudgetIncrease,
    BudgetMovement,
    Dataset,
    LedgerEntry,
    LedgerKind,
    Release,
)

AMOUNT = 'An exact amount as decimal text without trailing zeros, e.g. "0.5"'


def _amount(help_text: str = AMOUNT, **kwargs) -> serializers.CharField:
    return serializers.CharField(help_text=help_text, **kwargs)


def _json(help_text: str, **kwargs) -> serializers.JSONField:
    return serializers.JSONField(help_text=help_text, **kwargs)


def _object(help_text: str, **kwargs) -> serializers.DictField:
    """A JSON object whose keys and values are free-form."""
    return serializers.DictField(child=serializers.JSONField(), help_text=help_text, **kwargs)


def _interval(help_text: str, **kwargs) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.FloatField(), min_length=2, max_length=2, help_text=help_text, **kwargs
    )


class OpenShapeSerializer(serializers.Serializer):
    """A shape whose declared keys are the common ones: an answer may carry more."""


class OpenShapeExtension(OpenApiSerializerExtension):
    """Every :class:`OpenShapeSerializer` is an object with ``additionalProperties``."""

    target_class = OpenShapeSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {**schema, "additionalProperties": True}


def page_of(name: str, item: serializers.Serializer, **extra: serializers.Field):
    """A page of ``releases.apis.pagination.Pagination``: ``count``, ``next``, ``previous`` and
    ``results`` (``item`` given with ``many=True``), and any ``extra`` keys the view adds."""
    return inline_serializer(
        name,
        {
            "count": serializers.IntegerField(help_text="Items on every page together"),
            "next": serializers.URLField(allow_null=True, help_text="The next page, else null"),
            "previous": serializers.URLField(
                allow_null=True, help_text="The previous page, else null"
            ),
            "results": item,
            **extra,
        },
    )


# --- accounts ---------------------------------------------------------------------------------


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(
        help_text="Send as `Authorization: Token <token>`; shown once, stored only hashed"
    )
    expiry = serializers.DateTimeField(help_text="When the token stops working")


# --- datasets and their budgets ---------------------------------------------------------------


class BudgetFiguresSerializer(serializers.Serializer):
    """One budget (ε or δ) of a dataset, from its ledger."""

    total = _amount("The budget: the initial one plus approved top-ups (decimal text)")
    spent = _amount("Spent by published releases (decimal text)")
    reserved = _amount("Held by releases queued or running (decimal text)")
    remaining = _amount("total − spent − reserved (decimal text)")


class RunningBudgetSerializer(BudgetFiguresSerializer):
    """A budget just after one movement of the ledger."""

    committed = _amount("spent + reserved (decimal text)")


class BudgetSummarySerializer(BudgetFiguresSerializer):
    """The dataset's ε budget now, with its δ budget under `delta`."""

    delta = BudgetFiguresSerializer()


class DatasetColumnSerializer(serializers.Serializer):
    name = serializers.CharField()
    inferred_kind = serializers.CharField(
        required=False,
        help_text="The kind read from the rows (numeric, categorical, identifier); to the "
        "owner only",
    )


class DatasetSchemaSerializer(serializers.Serializer):
    """A dataset's declared public schema, as stored (privacy_engine.schema.Schema.to_dict)."""

    columns = serializers.DictField(
        child=_object("kind (numeric, categorical or identifier) and its bounds or categories"),
        help_text="Each declared column by name",
    )
    declared_size = serializers.IntegerField(
        required=False, help_text="The approximate number of records (public)"
    )
    person_key = serializers.CharField(
        required=False, help_text="The column naming the person each row belongs to"
    )
    max_rows_per_person = serializers.IntegerField(
        required=False, help_text="Rows kept per person (with person_key)"
    )


class DatasetSerializer(serializers.Serializer):
    """A dataset: whole to its owner; compliance gets metadata only (no `row_count`, and each
    column's name only)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    owner = serializers.CharField(help_text="The owner's user name")
    status = serializers.ChoiceField(choices=Dataset.Status.choices)
    progress = serializers.FloatField(help_text="From 0 to 1 while processing")
    failure_reason = serializers.CharField(allow_null=True)
    row_count = serializers.IntegerField(
        allow_null=True, required=False, help_text="The true number of rows; owner only"
    )
    columns = DatasetColumnSerializer(many=True)
    schema = DatasetSchemaSerializer(allow_null=True, help_text="Null until declared")
    declared_size = serializers.IntegerField(allow_null=True)
    ledger = serializers.ChoiceField(
        choices=LedgerKind.choices,
        allow_null=True,
        help_text="How the budget is accounted, fixed by the first release; null before",
    )
    budget = BudgetFiguresSerializer(help_text="ε")
    budget_delta = BudgetFiguresSerializer(help_text="δ")
    sha256 = serializers.CharField(allow_null=True, help_text="Of the uploaded file")
    duplicate_of = serializers.IntegerField(
        allow_null=True, help_text="The dataset whose upload this one repeats"
    )
    created_at = serializers.DateTimeField()
    raw_deleted_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the upload and its table were deleted (releases, ledger and trail "
        "stay); null while they are kept",
    )
    raw_deleted_reason = serializers.CharField(
        allow_null=True, help_text="Why the raw data was deleted; null while it is kept"
    )


class LedgerEntrySerializer(serializers.Serializer):
    release = serializers.IntegerField()
    definition = serializers.CharField(help_text="The privacy definition's kind")
    epsilon = _amount()
    delta = _amount()
    state = serializers.ChoiceField(choices=LedgerEntry.State.choices)
    at = serializers.DateTimeField()


class DatasetDetailSerializer(serializers.Serializer):
    """A dataset with its ledger entries."""

    ledger_entries = LedgerEntrySerializer(many=True, help_text="One per submitted release")


class DatasetDetailExtension(OpenApiSerializerExtension):
    """The detail as ``allOf`` the Dataset component and its own keys: one Dataset shape for
    clients, and its enums (``status``) named once."""

    target_class = DatasetDetailSerializer

    def map_serializer(self, auto_schema, direction):
        dataset = auto_schema.resolve_serializer(DatasetSerializer(), direction)
        own = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {"allOf": [dataset.ref, own]}


class LedgerReleaseSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    slug = serializers.CharField(allow_null=True, help_text="Once published, else null")
    version = serializers.IntegerField(allow_null=True, help_text="Once published, else null")


class LedgerRowSerializer(serializers.Serializer):
    """One movement of a dataset's budget, with the running figures just after it."""

    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor = serializers.CharField(help_text="A user name, or system")
    kind = serializers.ChoiceField(choices=BudgetMovement.Kind.choices)
    release = LedgerReleaseSerializer(allow_null=True)
    increase = serializers.IntegerField(allow_null=True, help_text="The approved increase")
    epsilon = _amount()
    delta = _amount()
    composition = _object("How the release's cost was composed (free-form)")
    running = RunningBudgetSerializer(help_text="ε")
    running_delta = RunningBudgetSerializer(help_text="δ")


class BudgetIncreaseSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    dataset = serializers.IntegerField()
    dataset_name = serializers.CharField()
    requested_by = serializers.CharField()
    requested_at = serializers.DateTimeField()
    epsilon = _amount()
    delta = _amount()
    reason = serializers.CharField()
    status = serializers.ChoiceField(choices=BudgetIncrease.Status.choices)
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    comment = serializers.CharField(allow_null=True)


DATASET_PAGE = page_of("DatasetPage", DatasetSerializer(many=True))
LEDGER_PAGE = page_of(
    "LedgerPage",
    LedgerRowSerializer(many=True),
    summary=BudgetSummarySerializer(help_text="The dataset's budget now"),
)
BUDGET_INCREASE_PAGE = page_of("BudgetIncreasePage", BudgetIncreaseSerializer(many=True))


class AccuracySerializer(serializers.Serializer):
    epsilon = serializers.FloatField(help_text="The ε the statistic needs")
    ci95_halfwidth = serializers.FloatField(help_text="The target asked for")


# --- releases ---------------------------------------------------------------------------------


class ReleaseSerializer(serializers.Serializer):
    """A release of the curator's, from draft to published."""

    id = serializers.IntegerField()
    dataset = serializers.IntegerField()
    title = serializers.CharField()
    series = serializers.CharField(help_text="The series' slug")
    definition = _object("The privacy definition: kind, epsilon and delta or policy")
    queries = serializers.ListField(child=_object("One statistic's query"))
    preview = serializers.ListField(
        child=_object("A statistic's planned ε share, noise and accuracy (free-form)")
    )
    warnings = serializers.ListField(
        child=serializers.CharField(), help_text="A draft's warnings; empty after"
    )
    status = serializers.ChoiceField(choices=Release.Status.choices)
    progress = serializers.FloatField(help_text="From 0 to 1")
    version = serializers.IntegerField(allow_null=True, help_text="Once published")
    failure_reason = serializers.CharField(allow_null=True)
    epsilon_charged = _amount(allow_null=True)
    delta_charged = _amount(allow_null=True)
    worker = serializers.CharField(allow_null=True, help_text="host:pid of the worker")
    timings = serializers.DictField(
        child=serializers.FloatField(), allow_null=True, help_text="Seconds per step"
    )
    created_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    published_at = serializers.DateTimeField(allow_null=True)
    catalog_url = serializers.URLField(allow_null=True, help_text="Once published")
    approval = serializers.DictField(
        allow_null=True,
        help_text="A compliance officer's decision: {decision, decided_by, decided_at, comment}",
    )


RELEASE_PAGE = page_of("ReleasePage", ReleaseSerializer(many=True))


class QueuedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField(help_text="The release's status (queued)")


class SimulatedEntrySerializer(OpenShapeSerializer):
    """One statistic on a simulated table, before and after one draw of its noise; a kind may
    add its own facts (k-means `objective_ratio`, a synthetic table's `synthetic_error`)."""

    kind = serializers.CharField()
    column = serializers.CharField(allow_null=True)
    columns = serializers.ListField(child=serializers.CharField(), required=False)
    simulated = _json("The exact answer on the simulated table", allow_null=True)
    noisy = _json("The same with noise", allow_null=True)
    ci95 = _json("Its 95% interval(s)", allow_null=True)
    typical_values = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="Sums and means: the value every simulated record has in each column, "
        "{column, value, basis}; basis is 'declared typical value' or 'midpoint of the bounds'",
    )


class SimulatedPreviewSerializer(serializers.Serializer):
    results = SimulatedEntrySerializer(many=True)


# --- the public catalog -----------------------------------------------------------------------


class ReleaseFileSerializer(serializers.Serializer):
    format = serializers.CharField(help_text="csv, json, parquet, metadata, signature, …")
    label = serializers.CharField()
    position = serializers.IntegerField(
        allow_null=True, help_text="The statistic whose records the file holds, else null"
    )
    sha256 = serializers.CharField()
    size = serializers.IntegerField(help_text="Bytes")
    url = serializers.URLField()


class WithdrawnSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    reason = serializers.CharField()


class CatalogEntrySerializer(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    version = serializers.IntegerField()
    published_at = serializers.DateTimeField()
    definition = _object("The privacy definition: kind, epsilon and delta or policy")
    files = ReleaseFileSerializer(many=True)
    withdrawn = WithdrawnSerializer(allow_null=True, help_text="When and why, else null")
    url = serializers.URLField(help_text="This version in the API")


CATALOG_PAGE = page_of("CatalogPage", CatalogEntrySerializer(many=True))


class StatisticSerializer(OpenShapeSerializer):
    """A published statistic: its common keys; a kind adds its own (`parts`, `tree`,
    `microdata`, …)."""

    kind = serializers.CharField()
    column = serializers.CharField(allow_null=True)
    columns = serializers.ListField(child=serializers.CharField(), required=False)
    value = _json(
        "A number, or an object of cells (or a list of rows); null when a range histogram's "
        "bins are in the files only",
        allow_null=True,
    )
    ci95 = _json("The 95% interval(s), in the shape of value; null if none", allow_null=True)
    cells = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="The cells' published order"
    )
    mechanism = serializers.CharField()
    epsilon = serializers.FloatField()
    delta = serializers.FloatField()
    sensitivity = serializers.FloatField()
    noise_scale = serializers.FloatField()
    rule = serializers.CharField(
        allow_null=True, help_text="How out-of-bounds, unknown and missing values were handled"
    )
    accounting = serializers.CharField(required=False)
    range_url = serializers.URLField(required=False, help_text="A range histogram's ranges")
    values_in_files = serializers.BooleanField(
        required=False, help_text="A range histogram whose bins are in the files only"
    )


class CatalogVersionSerializer(CatalogEntrySerializer):
    permanent_url = serializers.URLField(help_text="The version's public page")
    citation = serializers.CharField(help_text="A suggested citation")
    statistics = StatisticSerializer(many=True)


def _shape(name: str, fields: dict[str, serializers.Field]) -> type[serializers.Serializer]:
    """A serializer class named ``name`` (its schema component) for keys that are not Python
    names, such as ``from``."""
    return type(name, (serializers.Serializer,), fields)


RangeAnswerSerializer = _shape(
    "RangeAnswer",
    {
        "statistic": serializers.IntegerField(help_text="The statistic's position, from 0"),
        "from": serializers.FloatField(help_text="The range answered: a bin edge"),
        "to": serializers.FloatField(help_text="The range answered: a bin edge"),
        "bins": serializers.IntegerField(),
        "value": serializers.FloatField(help_text="Records in the range (noisy, at least 0)"),
        "ci95": _interval("Its 95% interval"),
    },
)


class WithdrawalSerializer(serializers.Serializer):
    slug = serializers.CharField()
    version = serializers.IntegerField()
    withdrawn = WithdrawnSerializer()


DiffFieldSerializer = _shape(
    "DiffField",
    {
        "name": serializers.CharField(),
        "from": _json("In the earlier version", allow_null=True),
        "to": _json("In the later version", allow_null=True),
        "changed": serializers.BooleanField(),
    },
)
DiffVersionSerializer = _shape(
    "DiffVersion",
    {
        "version": serializers.IntegerField(),
        "published_at": serializers.DateTimeField(),
        "url": serializers.URLField(help_text="The version's public page"),
        "withdrawn": WithdrawnSerializer(allow_null=True),
    },
)
DiffValueSerializer = _shape(
    "DiffValue",
    {
        "cell": serializers.CharField(allow_null=True, help_text="Null for a single number"),
        "from": serializers.FloatField(allow_null=True),
        "to": serializers.FloatField(allow_null=True),
        "difference": serializers.FloatField(allow_null=True, help_text="to − from"),
        "within_intervals": serializers.BooleanField(
            allow_null=True, help_text="Whether the two 95% intervals overlap; null if unknown"
        ),
        "from_ci95": _json("The earlier 95% interval(s)", allow_null=True),
        "to_ci95": _json("The later 95% interval(s)", allow_null=True),
    },
)


class DiffDefinitionSerializer(serializers.Serializer):
    changed = serializers.BooleanField()
    fields = DiffFieldSerializer(many=True)


class DiffStatisticSerializer(serializers.Serializer):
    """A statistic, matched across versions by kind, columns and parameters."""

    kind = serializers.CharField()
    title = serializers.CharField()
    column = serializers.CharField(allow_null=True)
    columns = serializers.ListField(child=serializers.CharField())
    label = serializers.CharField()
    query = _object("The statistic's query, without its weight")
    epsilon = serializers.FloatField(allow_null=True)


class DiffMatchedSerializer(DiffStatisticSerializer):
    changed = serializers.BooleanField(help_text="Whether it was released differently")
    method = DiffFieldSerializer(many=True)
    values = DiffValueSerializer(
        many=True, allow_null=True, help_text="Null when not compared here (see note)"
    )
    note = serializers.CharField(allow_blank=True, help_text="Why values is null, else empty")


class DiffStatisticsSerializer(serializers.Serializer):
    added = DiffStatisticSerializer(many=True)
    removed = DiffStatisticSerializer(many=True)
    in_both = DiffMatchedSerializer(many=True)


VersionDiffSerializer = _shape(
    "VersionDiff",
    {
        "slug": serializers.CharField(),
        "title": serializers.CharField(),
        "from": DiffVersionSerializer(),
        "to": DiffVersionSerializer(),
        "definition": DiffDefinitionSerializer(),
        "statistics": DiffStatisticsSerializer(),
    },
)


# --- the audit trail --------------------------------------------------------------------------


class AuditEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor = serializers.CharField(help_text="A user name, anonymous or system")
    action = serializers.CharField(help_text="e.g. release.published")
    object_type = serializers.CharField()
    object_id = serializers.CharField(allow_blank=True)
    dataset = serializers.IntegerField(allow_null=True)
    details = _object("What the action recorded (free-form)")
    repeats = serializers.IntegerField(
        help_text="Identical actions this event also stands for (an anonymous client's "
        "downloads of one file from one network within a window)"
    )
    client = serializers.CharField(
        allow_blank=True,
        help_text="The client's network for a web request (IPv4 /24, IPv6 /48), else empty",
    )
    hash = serializers.CharField()
    previous_hash = serializers.CharField()


AUDIT_EVENT_PAGE = page_of("AuditEventPage", AuditEventSerializer(many=True))


class BudgetMismatchSerializer(serializers.Serializer):
    dataset = serializers.IntegerField(allow_null=True)
    what = serializers.CharField(help_text="The figure, e.g. 'total ε' or 'release 7: state'")
    table = serializers.CharField(help_text="What the tables hold")
    trail = serializers.CharField(help_text="What the audit trail recorded")


class AuditVerifySerializer(serializers.Serializer):
    valid = serializers.BooleanField(
        help_text="The chain holds, every budget matches the trail and every anchor is there"
    )
    events = serializers.IntegerField(help_text="Events in the trail")
    first_broken_event = serializers.IntegerField(
        allow_null=True, help_text="The first event whose id, hash or link does not match"
    )
    problem = serializers.CharField(allow_null=True, help_text="What is wrong with that event")
    budget_mismatches = BudgetMismatchSerializer(many=True)
    anchor_problems = serializers.ListField(child=serializers.CharField())


class AuditAnchorSerializer(serializers.Serializer):
    event = serializers.IntegerField(allow_null=True, help_text="The newest event's id")
    hash = serializers.CharField(help_text="Its hash")
    at = serializers.CharField(help_text="When the anchor was read (ISO 8601)")


# --- guidance ---------------------------------------------------------------------------------


class TranslateSerializer(serializers.Serializer):
    epsilon = serializers.FloatField()
    truth_probability = serializers.FloatField(
        help_text="The probability of a truthful answer about one person"
    )
    group_size = serializers.IntegerField()
    group_epsilon = serializers.FloatField(help_text="The group's ε")
    group_delta = serializers.FloatField(help_text="The group's δ")
    group_epsilon_text = serializers.CharField(help_text="The group's ε as pages write it (0.25)")
    group_delta_text = serializers.CharField(
        help_text="The group's δ as pages write it (1.3 × 10⁻⁹)"
    )
    prior = serializers.FloatField()
    posterior = serializers.FloatField(help_text="The bound on the posterior probability")


class StartingPointSerializer(serializers.Serializer):
    epsilon = serializers.FloatField()
    delta = serializers.FloatField(help_text="For (ε, δ)-differential privacy")
    reasons = serializers.ListField(child=serializers.CharField())


class AwaitingReleaseSerializer(serializers.Serializer):
    """A submitted release as its approver sees it: the plan, never data values."""

    id = serializers.IntegerField()
    dataset = serializers.IntegerField()
    dataset_name = serializers.CharField()
    title = serializers.CharField()
    curator = serializers.CharField()
    status = serializers.ChoiceField(choices=Release.Status.choices)
    definition = _object("The privacy definition")
    queries = serializers.ListField(child=_object("One statistic's query"))
    preview = serializers.ListField(child=_object("A statistic's expected accuracy"))
    epsilon_charged = _amount()
    delta_charged = _amount()
    submitted_at = serializers.DateTimeField()
    approval = serializers.DictField(
        allow_null=True, help_text="{decision, decided_by, decided_at, comment} once decided"
    )


AWAITING_RELEASE_PAGE = page_of("AwaitingReleasePage", AwaitingReleaseSerializer(many=True))


class ApprovalRequirementSerializer(serializers.Serializer):
    dataset = serializers.IntegerField()
    requires_approval = serializers.BooleanField()
