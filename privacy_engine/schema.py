"""The public shape of a table: what the curator declares, never what the data says.

Bounds, category lists and missing-value rules here are public facts (DESIGN.md rule 1): they shape
the noise and are published with every release.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_engine.errors import (
    MUST_BE_FINITE,
    MUST_BE_NUMBER,
    MUST_BE_OBJECT,
    MUST_BE_POSITIVE_WHOLE,
    MUST_BE_STRING,
    MUST_BE_TRUE_OR_FALSE,
    EngineValidationError,
)
from privacy_engine.wording import CLAUSE_SEPARATOR, gettext_noop, phrase

FROM_DATA_BOUNDS = gettext_noop("bounds taken from the data: they are disclosed exactly")
FROM_DATA_CATEGORIES = gettext_noop("categories taken from the data: they are disclosed exactly")
CLAMPED = gettext_noop("values clamped to [{lower}, {upper}]")
NUMERIC_FILLED = gettext_noop("missing or non-numeric values replaced by {value}")
NUMERIC_DROPPED = gettext_noop("missing or non-numeric values dropped")
OUTSIDE_COUNTED = gettext_noop("values outside the declared categories counted as {value}")
OUTSIDE_DROPPED = gettext_noop("values outside the declared categories dropped")
MISSING_FILLED = gettext_noop("missing values replaced by {value}")
MISSING_DROPPED = gettext_noop("missing values dropped")
PERSON_RULE = gettext_noop(
    "at most {rows} rows per {key} kept (first in file order); rows without a {key} dropped"
)
NOT_USED = gettext_noop("not used")

# Refusals of a schema (the field they name is said by the page or the API).
LABEL_TOO_LONG = gettext_noop("labels are at most {count} characters")
LABEL_CONTROL = gettext_noop("labels cannot hold control or invisible characters")
BOUNDS_FINITE = gettext_noop("bounds must be finite numbers")
BOUNDS_BETWEEN = gettext_noop("bounds must lie between -{limit} and {limit}")
UPPER_ABOVE_LOWER = gettext_noop("upper bound must be greater than lower")
FILL_WITHIN_BOUNDS = gettext_noop("the fill value must lie within the bounds")
TYPICAL_WITHIN_BOUNDS = gettext_noop("the typical value must lie within the bounds")
AT_LEAST_ONE_CATEGORY = gettext_noop("declare at least one category")
AT_MOST_CATEGORIES = gettext_noop("declare at most {count} categories")
DISTINCT_CATEGORIES = gettext_noop("categories must be distinct")
EMPTY_CATEGORY = gettext_noop("a category cannot be empty (empty values are missing: use fill)")
NAME_OTHER = gettext_noop("name the other bucket")
OTHER_NOT_CATEGORY = gettext_noop("the other bucket must not be a category")
FILL_DECLARED = gettext_noop("the fill value must be a declared category")
SIZE_AT_MOST = gettext_noop("must be at most {count}, the largest table the engine answers")
NEED_BOUNDS = gettext_noop("numeric columns need public bounds")
LIST_OF_STRINGS = gettext_noop("must be a list of strings")
COLUMN_KINDS = gettext_noop("must be one of numeric, categorical, identifier")
COLUMN_DECLARATIONS = gettext_noop("must be an object of column declarations")
NO_SUCH_COLUMN = gettext_noop("no such column in the uploaded table")
NAME_A_COLUMN = gettext_noop("must name a column of the table")
KEY_IDENTIFIER = gettext_noop("the person key must be an identifier column")
ROWS_PER_PERSON = gettext_noop("must be a whole number from 1 to 1000")

# The largest table the engine answers, and the largest declared size. A public cap: sums are
# computed exactly on a grid chosen from it and the bounds (exact_sums.py), never from the real
# number of rows, which is private.
MAX_ROWS = 10**10
# Bounds beyond this are refused: a sum of up to MAX_ROWS values within them (at most 10²⁵),
# every width, sensitivity (times up to 1000 rows per person), noise scale and interval stays a
# finite float, and exact_sums.py keeps its grid well inside the float range.
MAX_BOUND = 1e15
_MAX_BOUND_TEXT = f"{MAX_BOUND:.0e}".replace("e+", "e")
# A backstop against a category list that would make one histogram huge; the web app sets its
# own, smaller limit.
MAX_CATEGORIES = 10_000


def format_number(value: float) -> str:
    """A short label that reads back as exactly ``value``: ``{:g}`` when that round-trips (0, 10,
    2.5, 1e+15), the integer itself or the shortest round-trip form otherwise, so distinct
    numbers always get distinct labels (1.0000001 and 1.0000002 are not both "1")."""
    short = f"{value:g}"
    if float(short) == value:
        return short
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


# Longest category label: every label is a cell of every histogram on the public pages and files.
MAX_LABEL = 200


def label_problem(label: str) -> str | None:
    """Why a category label cannot be published, or None."""
    if len(label) > MAX_LABEL:
        return phrase(LABEL_TOO_LONG, count=MAX_LABEL)
    # Line breaks, control and invisible format characters would forge or hide text.
    if any(unicodedata.category(character) in ("Cc", "Cf") for character in label):
        return LABEL_CONTROL
    return None


@dataclass(frozen=True)
class NumericColumn:
    """A numeric column with public bounds; values are clamped into [lower, upper].

    ``fill`` is the public constant that replaces a missing value; ``None`` drops it.
    ``typical`` is an optional public usual value (a published median, say), as public as the
    bounds: it shapes only the simulated preview, whose sums and means give every simulated
    record that value (the middle of the bounds without one). It never touches the noise or the
    real answers.
    ``from_data`` marks bounds copied from the data (the "suggest from data" helper): they are
    raw values, and every release that uses them says they are disclosed exactly.
    """

    lower: float
    upper: float
    fill: float | None = None
    from_data: bool = False
    typical: float | None = None
    kind: str = field(default="numeric", init=False)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lower) and math.isfinite(self.upper)):
            raise EngineValidationError.single("lower", BOUNDS_FINITE)
        errors = {
            key: [phrase(BOUNDS_BETWEEN, limit=_MAX_BOUND_TEXT)]
            for key, value in (("lower", self.lower), ("upper", self.upper))
            if abs(value) > MAX_BOUND
        }
        if errors:
            raise EngineValidationError(errors)
        if self.lower >= self.upper:
            raise EngineValidationError.single("upper", UPPER_ABOVE_LOWER)
        if self.fill is not None and not self.lower <= self.fill <= self.upper:
            raise EngineValidationError.single("fill", FILL_WITHIN_BOUNDS)
        if self.typical is not None and not self.lower <= self.typical <= self.upper:
            raise EngineValidationError.single("typical", TYPICAL_WITHIN_BOUNDS)

    @property
    def width(self) -> float:
        return self.upper - self.lower

    @property
    def simulated_value(self) -> float:
        """Every value of a simulated table: the declared typical value, else the middle of
        the bounds. Public facts only (DESIGN.md rule 1)."""
        return self.typical if self.typical is not None else (self.lower + self.upper) / 2

    @property
    def max_magnitude(self) -> float:
        return max(abs(self.lower), abs(self.upper))

    def rule(self) -> str:
        clamped = phrase(CLAMPED, lower=format_number(self.lower), upper=format_number(self.upper))
        missing = (
            phrase(NUMERIC_FILLED, value=format_number(self.fill))
            if self.fill is not None
            else phrase(NUMERIC_DROPPED)
        )
        return CLAUSE_SEPARATOR.join(
            [*([phrase(FROM_DATA_BOUNDS)] if self.from_data else []), clamped, missing]
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "lower": self.lower, "upper": self.upper}
        if self.fill is not None:
            out["fill"] = self.fill
        if self.typical is not None:
            out["typical"] = self.typical
        if self.from_data:
            out["from_data"] = True
        return out


@dataclass(frozen=True)
class CategoricalColumn:
    """A categorical column with a public list of categories.

    Values outside the list go to the ``other`` bucket when one is declared, otherwise they are
    dropped; missing values become ``fill`` when declared, otherwise they are dropped.
    """

    categories: tuple[str, ...]
    other: str | None = None
    fill: str | None = None
    from_data: bool = False
    kind: str = field(default="categorical", init=False)

    def __post_init__(self) -> None:
        if not self.categories:
            raise EngineValidationError.single("categories", AT_LEAST_ONE_CATEGORY)
        if len(self.categories) > MAX_CATEGORIES:
            raise EngineValidationError.single(
                "categories", phrase(AT_MOST_CATEGORIES, count=f"{MAX_CATEGORIES:,}")
            )
        if len(set(self.categories)) != len(self.categories):
            raise EngineValidationError.single("categories", DISTINCT_CATEGORIES)
        for key, labels in (
            ("categories", self.categories),
            ("other", (self.other,) if self.other is not None else ()),
            ("fill", (self.fill,) if self.fill is not None else ()),
        ):
            if problem := next((p for label in labels if (p := label_problem(label))), None):
                raise EngineValidationError.single(key, problem)
        # An empty value is a missing one: as a label it would only ever count missing values.
        if "" in self.categories:
            raise EngineValidationError.single("categories", EMPTY_CATEGORY)
        if self.other == "":
            raise EngineValidationError.single("other", NAME_OTHER)
        if self.other is not None and self.other in self.categories:
            raise EngineValidationError.single("other", OTHER_NOT_CATEGORY)
        allowed = (*self.categories, *((self.other,) if self.other is not None else ()))
        if self.fill is not None and self.fill not in allowed:
            raise EngineValidationError.single("fill", FILL_DECLARED)

    @property
    def buckets(self) -> tuple[str, ...]:
        """Histogram cells, in declared order, the other bucket last."""
        return self.categories if self.other is None else (*self.categories, self.other)

    def rule(self) -> str:
        outside = (
            phrase(OUTSIDE_COUNTED, value=f"'{self.other}'")
            if self.other is not None
            else phrase(OUTSIDE_DROPPED)
        )
        missing = (
            phrase(MISSING_FILLED, value=f"'{self.fill}'")
            if self.fill is not None
            else phrase(MISSING_DROPPED)
        )
        return CLAUSE_SEPARATOR.join(
            [*([phrase(FROM_DATA_CATEGORIES)] if self.from_data else []), outside, missing]
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "categories": list(self.categories)}
        if self.other is not None:
            out["other"] = self.other
        if self.fill is not None:
            out["fill"] = self.fill
        if self.from_data:
            out["from_data"] = True
        return out


@dataclass(frozen=True)
class IdentifierColumn:
    """A column no statistic may use (names, record ids, free text)."""

    kind: str = field(default="identifier", init=False)

    def rule(self) -> str:
        return phrase(NOT_USED)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind}


Column = NumericColumn | CategoricalColumn | IdentifierColumn


@dataclass(frozen=True)
class Schema:
    """Declared columns by name, and the curator's declared approximate number of records.

    ``declared_size`` is a public guess used only for previews, for δ defaults and for k-means'
    automatic number of iterations; the true number of rows is private under add/remove
    neighbours and is never used in its place.
    """

    columns: Mapping[str, Column]
    declared_size: int | None = None
    # Unit of protection: with a person key, each person may have up to this many rows; rows
    # beyond that are dropped and every sensitivity is multiplied by it, so ε protects a person.
    person_key: str | None = None
    max_rows_per_person: int = 1

    def __post_init__(self) -> None:
        if self.declared_size is not None:
            check_declared_size(self.declared_size)

    @property
    def rows_per_person(self) -> int:
        """How many records one protected unit can contribute (1 without a person key)."""
        return self.max_rows_per_person if self.person_key is not None else 1

    def person_rule(self) -> str | None:
        if self.person_key is None:
            return None
        return phrase(PERSON_RULE, rows=self.max_rows_per_person, key=self.person_key)

    def column(self, name: str) -> Column:
        return self.columns[name]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"columns": {n: c.to_dict() for n, c in self.columns.items()}}
        if self.declared_size is not None:
            out["declared_size"] = self.declared_size
        if self.person_key is not None:
            out["person_key"] = self.person_key
            out["max_rows_per_person"] = self.max_rows_per_person
        return out


def check_declared_size(declared_size: Any) -> int:
    """A declared size is a whole number from 1 to ``MAX_ROWS``; anything else is refused
    naming ``declared_size`` (its cost must never grow with a number the curator typed)."""
    if isinstance(declared_size, bool) or not isinstance(declared_size, int) or declared_size < 1:
        raise EngineValidationError.single("declared_size", MUST_BE_POSITIVE_WHOLE)
    if declared_size > MAX_ROWS:
        raise EngineValidationError.single(
            "declared_size", phrase(SIZE_AT_MOST, count=f"{MAX_ROWS:,}")
        )
    return declared_size


def finite_float(value: Any) -> float | None:
    """``value`` as a float if it is a finite JSON number (not a bool), else ``None``; a whole
    number beyond every float (10⁴⁰⁰) is ``None`` rather than an ``OverflowError``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EngineValidationError.single(path, MUST_BE_NUMBER)
    number = finite_float(value)
    if number is None:
        raise EngineValidationError.single(path, MUST_BE_FINITE)
    return number


def column_from_dict(spec: Mapping[str, Any]) -> Column:
    """Build a column from its JSON shape; errors name fields relative to the column."""
    if not isinstance(spec, Mapping):
        raise EngineValidationError.single("", MUST_BE_OBJECT)
    kind = spec.get("kind")
    from_data = spec.get("from_data", False)
    if not isinstance(from_data, bool):
        raise EngineValidationError.single("from_data", MUST_BE_TRUE_OR_FALSE)
    if kind == "numeric":
        errors: dict[str, list[str]] = {}
        bounds: dict[str, float] = {}
        for key in ("lower", "upper"):
            if key not in spec:
                errors[key] = [NEED_BOUNDS]
                continue
            try:
                bounds[key] = _number(spec[key], key)
            except EngineValidationError as error:
                errors.update(error.errors)
        if errors:
            raise EngineValidationError(errors)
        fill = _number(spec["fill"], "fill") if spec.get("fill") is not None else None
        typical = _number(spec["typical"], "typical") if spec.get("typical") is not None else None
        return NumericColumn(
            lower=bounds["lower"],
            upper=bounds["upper"],
            fill=fill,
            from_data=from_data,
            typical=typical,
        )
    if kind == "categorical":
        categories = spec.get("categories")
        if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
            raise EngineValidationError.single("categories", LIST_OF_STRINGS)
        other = spec.get("other")
        fill = spec.get("fill")
        for key, value in (("other", other), ("fill", fill)):
            if value is not None and not isinstance(value, str):
                raise EngineValidationError.single(key, MUST_BE_STRING)
        # Table values are compared after trimming spaces, so declared ones are trimmed too.
        return CategoricalColumn(
            categories=tuple(c.strip() for c in categories),
            other=other.strip() if isinstance(other, str) else None,
            fill=fill.strip() if isinstance(fill, str) else None,
            from_data=from_data,
        )
    if kind == "identifier":
        return IdentifierColumn()
    raise EngineValidationError.single("kind", COLUMN_KINDS)


def schema_from_dict(
    spec: Mapping[str, Any] | Schema, *, known_columns: list[str] | None = None
) -> Schema:
    """Build a :class:`Schema` from ``{"columns": {...}, "declared_size": n}``.

    With ``known_columns`` (the table's header), unknown names are refused and omitted columns
    become identifiers, as the API promises.
    """
    if isinstance(spec, Schema):
        return spec
    if not isinstance(spec, Mapping) or not isinstance(spec.get("columns"), Mapping):
        raise EngineValidationError.single("columns", COLUMN_DECLARATIONS)
    errors: dict[str, list[str]] = {}
    columns: dict[str, Column] = {}
    for name, column_spec in spec["columns"].items():
        if known_columns is not None and name not in known_columns:
            errors[f"columns.{name}"] = [NO_SUCH_COLUMN]
            continue
        try:
            columns[name] = column_from_dict(column_spec)
        except EngineValidationError as error:
            for path, msgs in error.errors.items():
                errors[f"columns.{name}.{path}" if path else f"columns.{name}"] = msgs
    declared_size = spec.get("declared_size")
    if declared_size is not None:
        try:
            check_declared_size(declared_size)
        except EngineValidationError as error:
            errors.update(error.errors)
    person_key = spec.get("person_key")
    max_rows = spec.get("max_rows_per_person", 1)
    if person_key is not None:
        if not isinstance(person_key, str) or (
            known_columns is not None and person_key not in known_columns
        ):
            errors["person_key"] = [NAME_A_COLUMN]
        elif not isinstance(columns.get(person_key, IdentifierColumn()), IdentifierColumn):
            errors["person_key"] = [KEY_IDENTIFIER]
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 1 <= max_rows <= 1000:
        errors["max_rows_per_person"] = [ROWS_PER_PERSON]
    if errors:
        raise EngineValidationError(errors)
    if known_columns is not None:
        columns = {name: columns.get(name, IdentifierColumn()) for name in known_columns}
    return Schema(
        columns=columns,
        declared_size=declared_size,
        person_key=person_key,
        max_rows_per_person=max_rows,
    )
