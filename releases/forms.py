"""Page forms: they collect input; the services validate it against the privacy rules."""

import itertools
import json
import re

from django import forms
from django.forms import BoundField
from django.utils.translation import gettext_lazy as _

from privacy_engine.queries import QUERY_KINDS
from privacy_engine.schema import MAX_ROWS

KIND_CHOICES = [
    ("numeric", _("Numeric (public bounds)")),
    ("categorical", _("Categorical (public list)")),
    ("identifier", _("Identifier / not used")),
]
STATISTIC_LABELS = {
    "count": _("Count of records"),
    "histogram": _("Histogram"),
    "sum": _("Sum"),
    "mean": _("Mean"),
    "quantile": _("Quantiles (median, quartiles…)"),
    "marginal": _("Table of two columns"),
    "range_histogram": _("Histogram for any range (numeric)"),
    "kmeans": _("Clusters (k-means centres)"),
    "randomized_response": _("Record-level file, randomized (categorical)"),
    "synthetic": _("Synthetic table (record-level file)"),
}


HARM_CHOICES = [
    ("low", _("Low: embarrassing at worst (e.g. favourite sport)")),
    ("moderate", _("Moderate: could cost someone money or standing (e.g. wages, opinions)")),
    ("severe", _("Severe: could endanger someone (e.g. health, immigration status)")),
]
PLANNED_RELEASES_CHOICES = [
    ("once", _("Once")),
    ("few", _("A few times")),
    ("regularly", _("Regularly (e.g. every month)")),
]


class DatasetUploadForm(forms.Form):
    name = forms.CharField(
        label=_("Name"),
        max_length=200,
        required=False,
        help_text=_("Shown to you and to compliance staff. Leave empty to use the file's name."),
        widget=forms.TextInput(attrs={"placeholder": _("e.g. Labour survey 2026")}),
    )
    file = forms.FileField(label=_("File"), help_text=_("A CSV file in UTF-8 with a header row."))
    harm = forms.ChoiceField(
        choices=HARM_CHOICES,
        initial="moderate",
        widget=forms.RadioSelect,
        label=_("How harmful would it be if one person's data in this table were disclosed?"),
        required=False,
    )
    planned_releases = forms.ChoiceField(
        choices=PLANNED_RELEASES_CHOICES,
        initial="few",
        widget=forms.RadioSelect,
        label=_("How often will statistics of this table be published?"),
        required=False,
    )
    budget_epsilon = forms.DecimalField(
        label=_("Total privacy budget (ε)"),
        min_value=0,
        max_digits=24,
        decimal_places=12,
        required=False,
        help_text=_(
            "All releases of this table together may spend at most this much ε. Leave "
            "empty to take it from the two questions above."
        ),
    )
    budget_delta = forms.DecimalField(
        label=_("Total δ budget (for (ε, δ)-DP releases)"),
        min_value=0,
        max_digits=40,
        decimal_places=30,
        required=False,
        help_text=_(
            "Leave empty to take it from the questions; 0 allows only releases that "
            "never fail (ε-DP and Blowfish)."
        ),
    )
    declared_size = forms.IntegerField(
        label=_("Approximate number of records"),
        min_value=1,
        max_value=MAX_ROWS,
        required=False,
        help_text=_("A public, rounded guess used for previews; the true count stays private."),
    )
    # Offered once an upload was refused as identical to a stored dataset.
    confirm_new_budget = forms.BooleanField(
        required=False,
        label=_("This is a new collection of records: give it a budget of its own"),
        help_text=_(
            "Only if these are different people or a different time, not the same records "
            "uploaded again. The pair is flagged to compliance."
        ),
    )


# The fields each declared kind uses; the others stay in the page (switching kind back loses
# nothing) but are neither shown nor validated.
KIND_FIELDS = {
    "numeric": ("lower", "upper", "typical", "fill"),
    "categorical": ("categories", "other", "fill"),
    "identifier": (),
}
# The fill box serves both kinds: its example follows the kind chosen.
FILL_PLACEHOLDERS = {"numeric": _("e.g. 0"), "categorical": _("e.g. F")}
# Last (or only) words of a column name that name a record rather than describe it.
_IDENTIFIER_WORDS = {"id", "uuid", "guid", "identifier"}


def name_looks_like_identifier(name: str) -> bool:
    """Whether a column's name says it identifies records: ``id``, ``patient_id``,
    ``PatientID``, ``record-uuid``, ``id_number``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    words = [word for word in re.split(r"[^0-9a-z]+", spaced.lower()) if word]
    return bool(words) and (words[-1] in _IDENTIFIER_WORDS or words[0] == "id")


def initial_kind(*, name: str, inferred_kind: str) -> str:
    """The kind the schema form starts a column with before anything is declared: identifier
    for id-like names and for what the upload read as identifiers or free text (numbered ids
    read as numbers, yet no statistic of them makes sense)."""
    if name_looks_like_identifier(name):
        return "identifier"
    return inferred_kind if inferred_kind in ("numeric", "categorical") else "identifier"


# The page's one explanation of each field (dataset.html), shared by every column's box.
COLUMN_HELP_IDS = {
    "lower": "help-bounds",
    "upper": "help-bounds",
    "typical": "help-typical",
    "categories": "help-categories",
    "other": "help-categories",
    "fill": "help-fill",
}


class _ColumnBoundField(BoundField):
    """Describes a box by the page's explanation of its field and by its errors (Django's
    own would name a help text the page does not repeat in every row)."""

    @property
    def aria_describedby(self) -> str:
        ids = [COLUMN_HELP_IDS[self.name]] if self.name in COLUMN_HELP_IDS else []
        if self.errors:
            ids.append(f"{self.auto_id}_error")
        return " ".join(ids)


class ColumnSchemaForm(forms.Form):
    """One column's public declaration; only the fields of its kind count."""

    bound_field_class = _ColumnBoundField

    kind = forms.ChoiceField(label=_("Kind"), choices=KIND_CHOICES)
    lower = forms.FloatField(
        required=False,
        label=_("Lower bound"),
        widget=forms.NumberInput(attrs={"placeholder": _("e.g. 0")}),
    )
    upper = forms.FloatField(
        required=False,
        label=_("Upper bound"),
        widget=forms.NumberInput(attrs={"placeholder": _("e.g. 120")}),
    )
    typical = forms.FloatField(
        required=False,
        label=_("Typical value"),
        help_text=_(
            "Optional and public like the bounds (e.g. a published median): previews "
            "simulate the column with it instead of the midpoint of the bounds."
        ),
        widget=forms.NumberInput(attrs={"placeholder": _("e.g. 35")}),
    )
    categories = forms.CharField(
        required=False,
        label=_("Categories"),
        help_text=_("Comma-separated, e.g. F, M"),
        # The class lets schema-form.js turn the box into a list of tags.
        widget=forms.TextInput(attrs={"placeholder": _("e.g. F, M"), "class": "category-list"}),
    )
    other = forms.CharField(
        required=False,
        label=_("Bucket for other values"),
        help_text=_("Leave empty to drop values outside the list."),
        widget=forms.TextInput(attrs={"placeholder": _("e.g. other")}),
    )
    fill = forms.CharField(
        required=False,
        label=_("Fill missing values with"),
        help_text=_(
            "A public constant (a number within the bounds, or a declared category); "
            "leave empty to drop missing values."
        ),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        fill = self.fields["fill"].widget.attrs
        fill.update({f"data-placeholder-{k}": text for k, text in FILL_PLACEHOLDERS.items()})
        fill["placeholder"] = FILL_PLACEHOLDERS.get(self.current_kind, "")

    @property
    def current_kind(self) -> str:
        """The kind the page shows the column as: the posted one when it is a choice, else the
        initial one."""
        kind = self.data.get(self.add_prefix("kind")) if self.is_bound else None
        if kind not in KIND_FIELDS:
            kind = self.initial.get("kind")
        return kind if kind in KIND_FIELDS else "identifier"

    def full_clean(self) -> None:
        super().full_clean()
        kind = self.cleaned_data.get("kind") if self.is_bound else None
        if kind in KIND_FIELDS:
            # A value left in another kind's (hidden) box is ignored, not refused.
            for name in set(self.fields) - {"kind", *KIND_FIELDS[kind]}:
                self._errors.pop(name, None)

    def is_left_undeclared(self) -> bool:
        """Whether a numeric or categorical column was left with every box of its kind empty
        (no bounds, no categories, nothing else). That is no error: the page saves such a
        column as used by no statistic, because bounds and categories are public facts only the
        curator can give, never read from the data. A column with any box of its kind filled was
        started, and must be complete."""
        kind = self.cleaned_data.get("kind")
        if kind not in ("numeric", "categorical"):
            return False
        return all(
            not str(self.data.get(self.add_prefix(field), "")).strip()
            for field in KIND_FIELDS[kind]
        )

    def to_spec(self) -> dict:
        data = self.cleaned_data
        fill = (data.get("fill") or "").strip()
        if data["kind"] == "numeric":
            # An empty bound is left out: the engine then says that bounds are needed.
            spec = {
                "kind": "numeric",
                **{key: data[key] for key in ("lower", "upper") if data[key] is not None},
            }
            if fill:
                try:
                    spec["fill"] = float(fill)
                except ValueError:
                    spec["fill"] = fill  # refused by the engine, naming the field
            if data.get("typical") is not None:
                spec["typical"] = data["typical"]
            return spec
        if data["kind"] == "categorical":
            categories = [c.strip() for c in (data["categories"] or "").split(",") if c.strip()]
            spec: dict = {"kind": "categorical", "categories": categories}
            if data["other"].strip():
                spec["other"] = data["other"].strip()
            if fill:
                spec["fill"] = fill
            return spec
        return {"kind": "identifier"}


DEFINITION_CHOICES = [
    ("pure_dp", _("ε-differential privacy (recommended)")),
    ("approx_dp", _("(ε, δ)-differential privacy")),
    ("blowfish", _("Blowfish privacy with a policy")),
]
POLICY_CHOICES = [
    ("full_domain", _("Full domain: any one record may change arbitrarily")),
    ("partition_groups", _("Partition a categorical column into groups")),
    ("partition_width", _("Partition a numeric column into ranges")),
    ("distance_threshold", _("Distance threshold θ on numeric columns")),
    ("attribute", _("Attributes: records differing in at most c attributes")),
]


def _split_list(text: str) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


class PrivacyStepForm(forms.Form):
    title = forms.CharField(max_length=200, label=_("Release title"))
    definition_kind = forms.ChoiceField(
        choices=DEFINITION_CHOICES,
        initial="pure_dp",
        widget=forms.RadioSelect,
        label=_("Privacy definition"),
        required=False,
    )
    epsilon = forms.FloatField(
        label=_("ε for this release"),
        min_value=0.0001,
        required=False,
        widget=forms.NumberInput(attrs={"step": "any"}),
    )
    truth_probability = forms.FloatField(
        label=_("p: probability of a truthful yes/no answer about one person"),
        min_value=0.5,
        max_value=0.999999,
        required=False,
        widget=forms.NumberInput(attrs={"step": "any"}),
    )
    delta = forms.FloatField(
        label=_("δ: probability that the guarantee fails"),
        required=False,
        widget=forms.NumberInput(attrs={"step": "any"}),
        help_text=_("Leave empty for the default min(10⁻⁶, 1/n²) on the declared size."),
    )
    policy_graph = forms.ChoiceField(choices=POLICY_CHOICES, required=False, label=_("Policy"))
    policy_column = forms.ChoiceField(required=False, label=_("Column of the policy"))
    policy_columns = forms.CharField(
        required=False,
        label=_("Columns of the distance (comma-separated)"),
        help_text=_("Leave empty to use the column above; several columns use their L1 distance."),
    )
    policy_groups = forms.CharField(
        required=False,
        label=_("Groups (| between groups, commas inside a group)"),
        help_text=_("e.g. healthy | flu, cold | cancer, stroke"),
    )
    policy_width = forms.FloatField(
        required=False,
        label=_("Width of each range"),
        widget=forms.NumberInput(attrs={"step": "any"}),
    )
    policy_theta = forms.FloatField(
        required=False,
        label=_("θ: distance within which values are protected"),
        widget=forms.NumberInput(attrs={"step": "any"}),
    )
    policy_c = forms.IntegerField(
        required=False, min_value=1, initial=1, label=_("c: attributes that may differ")
    )

    def __init__(
        self,
        *args,
        columns: list[str] | None = None,
        blowfish_refusal: str | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.fields["policy_column"].choices = [("", "—")] + [(c, c) for c in columns or []]
        # The engine's reason why no Blowfish policy fits the schema (a person key), or None.
        self.blowfish_refusal = blowfish_refusal
        if blowfish_refusal is not None:
            # Not offered, yet still a valid choice for the field, so that a posted "blowfish"
            # is answered with the reason rather than Django's "not one of the choices".
            self.fields["definition_kind"].widget.choices = [
                choice for choice in DEFINITION_CHOICES if choice[0] != "blowfish"
            ]

    def clean_definition_kind(self) -> str:
        kind = self.cleaned_data.get("definition_kind")
        if kind == "blowfish" and self.blowfish_refusal is not None:
            raise forms.ValidationError(self.blowfish_refusal)
        return kind

    def clean(self):
        data = super().clean()
        if data.get("epsilon") is None and data.get("truth_probability") is None:
            raise forms.ValidationError(_("Set either ε or p."))
        return data

    def policy(self) -> dict:
        data = self.cleaned_data
        graph = data.get("policy_graph") or "full_domain"
        if graph == "partition_groups":
            groups = [_split_list(part) for part in (data.get("policy_groups") or "").split("|")]
            return {
                "graph": "partition",
                "column": data.get("policy_column"),
                "groups": [g for g in groups if g],
            }
        if graph == "partition_width":
            return {
                "graph": "partition",
                "column": data.get("policy_column"),
                "width": data.get("policy_width"),
            }
        if graph == "distance_threshold":
            columns = _split_list(data.get("policy_columns"))
            if len(columns) > 1:
                return {
                    "graph": "distance_threshold",
                    "columns": columns,
                    "theta": data.get("policy_theta"),
                }
            column = columns[0] if columns else data.get("policy_column")
            return {
                "graph": "distance_threshold",
                "column": column,
                "theta": data.get("policy_theta"),
            }
        if graph == "attribute":
            return {"graph": "attribute", "c": data.get("policy_c") or 1}
        return {"graph": "full_domain"}

    def definition(self, epsilon: float) -> dict:
        kind = self.cleaned_data.get("definition_kind") or "pure_dp"
        if kind == "approx_dp":
            definition: dict = {"kind": kind, "epsilon": epsilon}
            if self.cleaned_data.get("delta") is not None:
                definition["delta"] = self.cleaned_data["delta"]
            return definition
        if kind == "blowfish":
            return {"kind": kind, "epsilon": epsilon, "policy": self.policy()}
        return {"kind": "pure_dp", "epsilon": epsilon}

    @staticmethod
    def initial_from(definition: dict) -> dict:
        initial = {
            "definition_kind": definition["kind"],
            "epsilon": definition["epsilon"],
            "delta": definition.get("delta"),
        }
        policy = definition.get("policy") or {}
        graph = policy.get("graph")
        if graph == "partition":
            initial["policy_graph"] = (
                "partition_groups" if "groups" in policy else ("partition_width")
            )
            initial["policy_groups"] = " | ".join(", ".join(g) for g in policy.get("groups", []))
            initial["policy_width"] = policy.get("width")
        elif graph:
            initial["policy_graph"] = graph
        initial["policy_column"] = policy.get("column")
        initial["policy_columns"] = ", ".join(policy.get("columns", []))
        initial["policy_theta"] = policy.get("theta")
        initial["policy_c"] = policy.get("c", 1)
        return initial


def _numbers(text: str) -> list[float] | str:
    """Comma-separated numbers as a list; the text itself when one is not a number (the engine
    then names the field)."""
    try:
        return [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        return text


class EdgesTextError(ValueError):
    """Bins text of a synthetic table that does not read as columns and edges."""


def column_edges(text: str, columns: list[str]) -> dict[str, list[float] | str]:
    """``age: 0, 18, 65, 100; income: 0, 1000`` as each column's edges, for the table's
    ``columns`` (names are matched whole, longest first, so a name may hold ``:`` or ``;``).
    Raises :class:`EdgesTextError` saying what is wrong, naming the column."""
    names = sorted(set(columns), key=len, reverse=True)
    starts = (
        list(re.finditer(r"(?:^|;)\s*(" + "|".join(map(re.escape, names)) + r")\s*:", text))
        if names
        else []
    )
    if not starts or text[: starts[0].start()].strip():
        first = text.split(";")[0].partition(":")[0].strip()
        raise EdgesTextError(
            f"'{first[:60]}' is not one of the table's columns: write each numeric column's "
            "edges as age: 0, 18, 65, 100; income: 0, 1000, 5000"
            if first
            else "write each numeric column's edges as age: 0, 18, 65, 100; income: 0, 1000, 5000"
        )
    edges: dict[str, list[float] | str] = {}
    for match, following in itertools.zip_longest(starts, starts[1:]):
        name = match.group(1)
        if name in edges:
            raise EdgesTextError(f"'{name[:60]}' is given twice")
        end = following.start() if following else len(text)
        edges[name] = _numbers(text[match.end() : end])
    return edges


def _whole_number(text: str) -> int | str:
    """A whole number; the text itself when it is not one (the engine then names the field)."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else text


# Bins of a range histogram when the curator gives none.
DEFAULT_RANGE_BINS = 100
# k-means: the clusters a row starts with. Its iterations box starts empty: the engine then
# chooses them from the statistic's ε and the declared size (kinds/kmeans.py).
DEFAULT_CLUSTERS = 4


class StatisticForm(forms.Form):
    kind = forms.ChoiceField(
        label=_("Statistic"), choices=[(k, STATISTIC_LABELS[k]) for k in QUERY_KINDS]
    )
    column = forms.ChoiceField(required=False)
    second_column = forms.ChoiceField(
        required=False, label=_("Table across"), help_text=_("Tables: the column across the top.")
    )
    columns = forms.MultipleChoiceField(
        required=False,
        label=_("Columns of the clusters"),
        help_text=_("Clusters: the numeric columns whose centres are published (1 to 10)."),
        widget=forms.CheckboxSelectMultiple,
    )
    table_columns = forms.MultipleChoiceField(
        required=False,
        label=_("Columns of the synthetic table"),
        help_text=_(
            "Synthetic table: 2 to 10 columns; a numeric one is cut into 10 equal bins "
            "between its bounds, or into your own edges typed in Bins as "
            "age: 0, 18, 65, 100; income: 0, 1000, 5000."
        ),
        widget=forms.CheckboxSelectMultiple,
    )
    bins = forms.CharField(
        required=False,
        label=_("Bins"),
        help_text=_(
            "Numeric histograms and tables with a numeric column: edges from lower to "
            "upper bound, e.g. 0, 18, 65, 100; histograms for any range: how many equal bins, "
            "e.g. 100"
        ),
    )
    second_bins = forms.CharField(
        required=False,
        label=_("Edges across"),
        help_text=_(
            "Tables whose second column is numeric: its edges from lower to upper bound, "
            "e.g. 0, 2, 5, 10"
        ),
    )
    k = forms.IntegerField(
        required=False,
        initial=DEFAULT_CLUSTERS,
        label=_("k: number of clusters"),
        help_text=_("Clusters: how many centres, from 2 to 20."),
    )
    iterations = forms.IntegerField(
        required=False,
        label=_("Iterations"),
        help_text=_(
            "Clusters: rounds of the algorithm, from 1 to 20, each costing a share of ε; "
            "leave empty: chosen from ε and the table's declared size, 2 to 7."
        ),
        widget=forms.NumberInput(attrs={"placeholder": _("automatic")}),
    )
    quantiles = forms.CharField(
        required=False,
        label=_("Quantiles"),
        help_text=_("Quantiles: numbers between 0 and 1, e.g. 0.5 for the median, 0.25, 0.5, 0.75"),
        widget=forms.TextInput(attrs={"placeholder": "0.25, 0.5, 0.75"}),
    )
    groups = forms.MultipleChoiceField(
        required=False,
        label=_("Only for these groups"),
        help_text=_(
            "Leave empty for every record. Pick groups of one categorical column to "
            "compute the statistic on their records only: statistics on different groups of one "
            "column read different people, so they share the budget in parallel."
        ),
    )
    weight = forms.FloatField(
        initial=1,
        min_value=0.001,
        max_value=1000,
        label=_("Accuracy weight"),
        widget=forms.NumberInput(attrs={"step": "any"}),
    )

    def __init__(
        self,
        *args,
        columns: list[str] | None = None,
        numeric: list[str] | None = None,
        partitions: dict[str, list[str]] | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.numeric = set(numeric or [])
        # Each categorical column's buckets, one option each as [column, bucket] in JSON (a
        # category may hold any character).
        choices = [
            (column, [(group_value(column, bucket), bucket) for bucket in buckets])
            for column, buckets in (partitions or {}).items()
        ]
        # A saved group the schema no longer declares stays chosen, so saving again sends it
        # and the engine says it is not a category, rather than the restriction vanishing.
        offered = {value for _, options in choices for value, _ in options}
        gone = [value for value in self.initial.get("groups") or [] if value not in offered]
        if gone:
            choices.append(
                ("no longer declared", [(value, json.loads(value)[1]) for value in gone])
            )
        self.fields["groups"].choices = choices
        self.fields["column"].choices = [("", "—")] + [(c, c) for c in columns or []]
        self.fields["second_column"].choices = self.fields["column"].choices
        self.fields["columns"].choices = [(c, c) for c in numeric or []]
        self.fields["table_columns"].choices = [(c, c) for c in columns or []]

    def _edge_fields(self, first: str, second: str) -> dict[str, str]:
        """A table's numeric columns, each with the field holding its edges: with two, the first
        column's in ``bins`` and the second's in ``second_bins``; with one, ``bins`` (or
        ``second_bins`` when it is the second column and that field is filled)."""
        if first in self.numeric and second in self.numeric:
            return {first: "bins", second: "second_bins"}
        if second in self.numeric:
            return {second: "second_bins" if self.cleaned_data.get("second_bins") else "bins"}
        if first in self.numeric:
            return {first: "bins"}
        return {}

    def clean(self):
        data = super().clean()
        chosen = [json.loads(value) for value in data.get("groups") or []]
        if len({column for column, _ in chosen}) > 1:
            self.add_error("groups", _("Choose groups of one column."))
        elif chosen:
            data["where"] = {"column": chosen[0][0], "in": [bucket for _, bucket in chosen]}
        if data.get("kind") == "synthetic" and data.get("bins", "").strip():
            try:
                data["synthetic_edges"] = column_edges(
                    data["bins"], list(data.get("table_columns") or [])
                )
            except EdgesTextError as error:
                self.add_error("bins", str(error))
        return data

    def to_query(self) -> dict | None:
        data = self.cleaned_data
        if not data or data.get("DELETE"):
            return None
        query: dict = {"kind": data["kind"], "weight": data["weight"]}
        if data["kind"] == "marginal":
            query["columns"] = [data.get("column") or "", data.get("second_column") or ""]
            fields = self._edge_fields(*query["columns"])
            bins = {c: _numbers(data[f]) for c, f in fields.items() if data.get(f, "").strip()}
            if bins:
                query["bins"] = bins
            elif not fields and data.get("bins", "").strip():
                query["bins"] = _numbers(data["bins"])  # no numeric column: the engine says so
        elif data["kind"] == "kmeans":
            query["columns"] = list(data.get("columns") or [])
            query["k"] = data.get("k")  # None when cleared: the engine names the field
            if data.get("iterations") is not None:  # left empty: automatic
                query["iterations"] = data["iterations"]
        elif data["kind"] == "synthetic":
            query["columns"] = list(data.get("table_columns") or [])
            if data.get("synthetic_edges"):
                query["bins"] = data["synthetic_edges"]
        elif data["kind"] != "count":
            query["column"] = data.get("column") or None
        if data["kind"] == "histogram" and data.get("bins", "").strip():
            query["bins"] = _numbers(data["bins"])
        if data["kind"] == "quantile":
            query["quantiles"] = _numbers(data.get("quantiles") or "0.5")
        if data["kind"] == "range_histogram":
            query["bins"] = _whole_number(data.get("bins") or str(DEFAULT_RANGE_BINS))
        if data.get("where"):
            query["where"] = data["where"]
        return query

    def add_engine_error(self, field: str, message: str) -> None:
        """The engine's message about the query's ``field``, shown at the input it came from
        (a table's edges are refused per column, as ``bins.<column>``), else for the row."""
        kind = self.cleaned_data.get("kind")
        if field.startswith("bins.") and kind == "marginal":
            first = self.cleaned_data.get("column") or ""
            second = self.cleaned_data.get("second_column") or ""
            field = self._edge_fields(first, second).get(field.removeprefix("bins."), "bins")
        elif field == "columns" and kind == "synthetic":
            field = "table_columns"
        elif field.startswith("bins.") and kind == "synthetic":
            field = "bins"  # every column's edges are typed in that one field
        elif field == "columns" and kind != "kmeans":
            field = ""  # a table's two columns: said for the row
        elif field.split(".")[0] == "where":
            field = "groups"
        self.add_error(field if field in self.fields else None, message)


def group_value(column: str, bucket: str) -> str:
    """The option value of one group in StatisticForm's ``groups``."""
    return json.dumps([column, bucket])


StatisticFormSet = forms.formset_factory(StatisticForm, extra=0, can_delete=True, min_num=1)
