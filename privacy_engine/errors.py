"""Errors the engine raises. Messages never contain data values, only names and public facts."""

from __future__ import annotations

from privacy_engine.wording import gettext_noop, phrase

# Refusals several modules give (each message is a phrase: the web layer translates it).
MUST_BE_OBJECT = gettext_noop("must be an object")
MUST_BE_NUMBER = gettext_noop("must be a number")
MUST_BE_FINITE = gettext_noop("must be a finite number")
MUST_BE_ABOVE_ZERO = gettext_noop("must be a number greater than 0")
MUST_BE_PROBABILITY = gettext_noop("must be a number between 0 and 1")
MUST_BE_TRUE_OR_FALSE = gettext_noop("must be true or false")
MUST_BE_STRING = gettext_noop("must be a string")
MUST_BE_POSITIVE_WHOLE = gettext_noop("must be a positive whole number")
MUST_BE_DISTINCT_NAMES = gettext_noop("must be a list of distinct names")
MUST_BE_DISTINCT = gettext_noop("must be distinct")
ONE_OF = gettext_noop("must be one of: {choices}")
MUST_BE_FROM_TO = gettext_noop("must be from {minimum} to {maximum}")
MUST_BE_LIST_OF_NUMBERS = gettext_noop("must be a list of numbers")
NOT_NUMERIC = gettext_noop("'{name}' is not a numeric column")
NO_SCHEMA_COLUMN = gettext_noop("no such column in the schema")

# The refusals of the statistics' specifications (privacy_engine/kinds), where they are parsed
# and checked against a schema and a definition.
NAME_STATISTIC_COLUMN = gettext_noop("name the column this statistic uses")
NEEDS_NUMERIC = gettext_noop("a {kind} needs a numeric column")
AT_MOST_BINS = gettext_noop("use at most {count} bins")
INCREASING_EDGES = gettext_noop("need at least two increasing edges")
EDGES_AT_BOUNDS = gettext_noop("the first and last edges must be the column's declared bounds")
BINS_NUMERIC_ONLY = gettext_noop("bins apply only to numeric columns")
HISTOGRAM_COLUMN = gettext_noop("histograms need a categorical or numeric column")
NEEDS_EDGES = gettext_noop("a numeric histogram needs bin edges")
QUANTILES_LIST = gettext_noop("must be a list of 1 to {count} numbers, e.g. [0.5]")
QUANTILES_COUNT = gettext_noop("choose 1 to {count} quantiles")
QUANTILE_VALUES = gettext_noop(
    "each must be between 0 and 1 (exclusive), in steps of 0.001, e.g. 0.5"
)
EDGES_BY_COLUMN = gettext_noop('map a numeric column to its edges, e.g. {"age": [0, 18, 65, 100]}')
CATEGORICAL_NO_BINS = gettext_noop("'{name}' is categorical: no bins")
GIVE_EDGES = gettext_noop("give bin edges for the numeric column '{name}'")
NEITHER_KIND = gettext_noop("'{name}' is neither a categorical nor a numeric column")
TWO_COLUMNS_EXAMPLE = gettext_noop('name two different columns, e.g. ["sex", "region"]')
TWO_COLUMNS = gettext_noop("name two different columns")
TOO_MANY_CELLS = gettext_noop("the table would have {cells} cells; at most {limit} allowed")
EQUAL_WIDTH_BINS = gettext_noop(
    "must be a whole number of equal-width bins from {minimum} to {maximum}"
)
BINS_FROM_TO = gettext_noop("use {minimum} to {maximum} bins")
BOUNDS_APART = gettext_noop("bins need a column whose upper bound is above its lower bound")
EDGES_COINCIDE = gettext_noop("too many bins for the column's range: bin edges would coincide")
ABOVE_FROM = gettext_noop("must be a number above from")
RANGE_OVERLAP = gettext_noop("the range must overlap {lower} to {upper}")
KMEANS_NUMERIC = gettext_noop("'{name}' is not a numeric column: k-means needs numeric columns")
KMEANS_COLUMNS_EXAMPLE = gettext_noop(
    'name 1 to {count} different numeric columns, e.g. ["r", "g", "b"]'
)
KMEANS_COLUMNS = gettext_noop("name 1 to {count} different numeric columns")
CLUSTERS_FROM_TO = gettext_noop("must be a whole number of clusters from {minimum} to {maximum}")
WHOLE_FROM_ONE = gettext_noop("must be a whole number from 1 to {maximum}")
RESERVED_NAME = gettext_noop(
    "'{name}' names each centroid's {name} in the published rows: rename that column to cluster it"
)
RESPONSE_CATEGORIES = gettext_noop(
    "randomized response needs from {minimum} to {maximum} public categories"
)
RESPONSE_EPSILON_TOO_SMALL = gettext_noop("is too small for randomized response")
PADDING_TOO_LARGE = gettext_noop(
    "leaves the count so little that the padding would exceed {rows} dummy rows; raise ε, δ or "
    "the count's share"
)
SHARES_EXCEED_EPSILON = gettext_noop("is less than the count's and the reports' shares together")
REPORTS_TOO_LITTLE = gettext_noop("leaves the reports less than {minimum} after the count's share")
COUNT_SHARE = gettext_noop("must be a number between 0 and 1 (the count's share of ε)")
RESPONSE_CATEGORICAL = gettext_noop("randomized response needs a categorical column")
RESPONSE_PURE_DP_REFUSAL = gettext_noop(
    "a record-level file shows how many records there are, which ε-differential privacy keeps "
    "private: choose (ε, δ)-differential privacy (the file is padded with a random number of "
    "dummy rows) or a Blowfish policy (under which the number of records is public)"
)
RESPONSE_PERSON_REFUSAL = gettext_noop(
    "randomized response protects each row, not a person with several rows: it needs at most "
    "one row per person"
)
DUMMY_ROWS = gettext_noop(
    "at this statistic's ε ({epsilon}) and δ ({delta}) hiding the number of records would take "
    "about {rows} dummy rows (at most {limit}): raise ε or δ, or give this statistic more weight"
)
WHERE_OBJECT = gettext_noop('must be an object: {"column": …, "in": […]}')
WHERE_FIELDS = gettext_noop('not a field of a restriction: use "column" and "in"')
NAME_CATEGORICAL = gettext_noop("name a declared categorical column")
LIST_CATEGORIES = gettext_noop("list one or more of the column's categories")
AT_MOST_GROUPS = gettext_noop("name at most {count} groups")
EACH_CATEGORY_ONCE = gettext_noop("name each category once")
GROUPS_CATEGORICAL = gettext_noop("groups come from a categorical column (its declared categories)")
NOT_A_CATEGORY = gettext_noop("not a category of {column}: {categories}")
SYNTHETIC_COLUMNS_EXAMPLE = gettext_noop(
    'name {minimum} to {maximum} different columns, e.g. ["sex", "region", "age"]'
)
SYNTHETIC_COLUMNS = gettext_noop("name {minimum} to {maximum} different columns")
SYNTHETIC_DROPS = gettext_noop(
    "'{name}' can leave records out (a missing value without a fill, or a category outside the "
    "list without an other bucket): a synthetic record needs a value in every column, so "
    "declare a fill value (and an other bucket for a categorical column)"
)
SYNTHETIC_BUCKETS = gettext_noop(
    "'{name}' has {count} buckets; a synthetic table allows at most {limit} per column"
)
WEIGHT_FROM_TO = gettext_noop("must be a number from {minimum} to {maximum}")

# The refusals of a release as a whole (privacy_engine/release.py).
AT_LEAST_ONE_STATISTIC = gettext_noop("choose at least one statistic")
AT_MOST_STATISTICS = gettext_noop("choose at most {count} statistics per release")
GROUPS_PER_RELEASE = gettext_noop("restrictions name at most {count} groups per release in all")
FINITE_AT_LEAST_ZERO = gettext_noop("must be a finite number ≥ 0")
SIZE_FOR_MEAN = gettext_noop("declare the table's approximate size to solve for a mean's accuracy")
EVEN_LARGEST_EPSILON = gettext_noop("even ε = {epsilon} cannot make this statistic that accurate")
TABLE_LACKS_COLUMNS = gettext_noop("the table lacks declared columns")
AT_MOST_ROWS = gettext_noop("the engine answers tables of at most {count} rows")

# An exact sum whose grid step would swamp a bound's sensitivity (privacy_engine/sensitivity.py).
ROUNDING_DOMINATES = gettext_noop(
    "{what} ({exact}) is too small next to the column's bounds for an exact sum: sums of up to "
    "{rows} records are computed in steps of {step}, which would add more than {share} to the "
    "sensitivity. Make it at least {smallest}, declare bounds nearer 0, or choose ε-DP."
)
RANGE_OF_THE_COLUMN = gettext_noop("the range of the column")
RANGE_OF = gettext_noop("the range of {name}")
WIDTH_W = gettext_noop("the width w")
RESTRICTED_BLOWFISH_REFUSAL = gettext_noop(
    "a statistic restricted to groups is not available under Blowfish: a neighbour there "
    "replaces a record, which can move it from one group to another"
)


class EngineValidationError(ValueError):
    """A definition, schema or query is malformed.

    ``errors`` maps a dotted field path (``"queries.1.column"``) to messages, in the shape the HTTP
    API returns for a 400.
    """

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{path}: {' '.join(msgs)}" for path, msgs in errors.items()))

    @classmethod
    def single(cls, path: str, message: str, **values: object) -> EngineValidationError:
        """One message about ``path``: ``message`` is a registered phrase whose fields are
        filled from ``values`` (privacy_engine/wording.py), so a page can translate it."""
        return cls({path: [phrase(message, **values) if values else message]})


def prefix_errors(prefix: str, error: EngineValidationError) -> EngineValidationError:
    """Re-root every path of ``error`` under ``prefix`` (``"column"`` → ``"queries.2.column"``)."""
    return EngineValidationError(
        {f"{prefix}.{path}" if path else prefix: msgs for path, msgs in error.errors.items()}
    )
