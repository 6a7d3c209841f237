"""Page forms: they collect input; the services validate it against the privacy rules."""

from django import forms

from privacy_engine.queries import QUERY_KINDS

KIND_CHOICES = [
    ("numeric", "Numeric (public bounds)"),
    ("categorical", "Categorical (public list)"),
    ("identifier", "Identifier / not used"),
]
STATISTIC_LABELS = {
    "count": "Count of records",
    "histogram": "Histogram",
    "sum": "Sum",
    "mean": "Mean",
}


class DatasetUploadForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="Shown to you and to compliance staff.")
    file = forms.FileField(help_text="A CSV file in UTF-8 with a header row.")
    budget_epsilon = forms.DecimalField(
        label="Total privacy budget (ε)",
        min_value=0,
        initial=1,
        max_digits=24,
        decimal_places=12,
        help_text="All releases of this table together may spend at most this much ε.",
    )
    declared_size = forms.IntegerField(
        label="Approximate number of records",
        min_value=1,
        required=False,
        help_text="A public, rounded guess used for previews; the true count stays private.",
    )


class ColumnSchemaForm(forms.Form):
    """One column's public declaration."""

    kind = forms.ChoiceField(choices=KIND_CHOICES)
    lower = forms.FloatField(required=False, label="Lower bound")
    upper = forms.FloatField(required=False, label="Upper bound")
    categories = forms.CharField(
        required=False,
        label="Categories",
        help_text="Comma-separated, e.g. F, M",
        widget=forms.TextInput,
    )
    other = forms.CharField(
        required=False,
        label="Bucket for other values",
        help_text="Leave empty to drop values outside the list.",
    )

    def to_spec(self) -> dict:
        data = self.cleaned_data
        if data["kind"] == "numeric":
            return {"kind": "numeric", "lower": data["lower"], "upper": data["upper"]}
        if data["kind"] == "categorical":
            categories = [c.strip() for c in (data["categories"] or "").split(",") if c.strip()]
            spec: dict = {"kind": "categorical", "categories": categories}
            if data["other"].strip():
                spec["other"] = data["other"].strip()
            return spec
        return {"kind": "identifier"}


class PrivacyStepForm(forms.Form):
    title = forms.CharField(max_length=200, label="Release title")
    epsilon = forms.FloatField(
        label="ε for this release",
        min_value=0.0001,
        required=False,
        widget=forms.NumberInput(attrs={"step": "any"}),
    )
    truth_probability = forms.FloatField(
        label="p: probability of a truthful yes/no answer about one person",
        min_value=0.5,
        max_value=0.999999,
        required=False,
        widget=forms.NumberInput(attrs={"step": "any"}),
    )

    def clean(self):
        data = super().clean()
        if data.get("epsilon") is None and data.get("truth_probability") is None:
            raise forms.ValidationError("Set either ε or p.")
        return data


class StatisticForm(forms.Form):
    kind = forms.ChoiceField(choices=[(k, STATISTIC_LABELS[k]) for k in QUERY_KINDS])
    column = forms.ChoiceField(required=False)
    bins = forms.CharField(
        required=False,
        label="Bin edges",
        help_text="Numeric histograms: edges from lower to upper bound, e.g. 0, 18, 65, 100",
    )
    weight = forms.FloatField(
        initial=1,
        min_value=0.001,
        max_value=1000,
        label="Accuracy weight",
        widget=forms.NumberInput(attrs={"step": "any"}),
    )

    def __init__(self, *args, columns: list[str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["column"].choices = [("", "—")] + [(c, c) for c in columns or []]

    def to_query(self) -> dict | None:
        data = self.cleaned_data
        if not data or data.get("DELETE"):
            return None
        query: dict = {"kind": data["kind"], "weight": data["weight"]}
        if data["kind"] != "count":
            query["column"] = data.get("column") or None
        if data["kind"] == "histogram" and data.get("bins", "").strip():
            try:
                query["bins"] = [float(b) for b in data["bins"].split(",") if b.strip()]
            except ValueError:
                query["bins"] = data["bins"]
        return query


StatisticFormSet = forms.formset_factory(StatisticForm, extra=0, can_delete=True, min_num=1)
