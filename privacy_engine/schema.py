"""The public shape of a table: what the curator declares, never what the data says.

Bounds, category lists and missing-value rules here are public facts (DESIGN.md rule 1): they shape
the noise and are published with every release.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_engine.errors import EngineValidationError


@dataclass(frozen=True)
class NumericColumn:
    """A numeric column with public bounds; values are clamped into [lower, upper].

    ``fill`` is the public constant that replaces a missing value; ``None`` drops it.
    """

    lower: float
    upper: float
    fill: float | None = None
    kind: str = field(default="numeric", init=False)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lower) and math.isfinite(self.upper)):
            raise EngineValidationError.single("lower", "bounds must be finite numbers")
        if self.lower >= self.upper:
            raise EngineValidationError.single("upper", "upper bound must be greater than lower")
        if self.fill is not None and not self.lower <= self.fill <= self.upper:
            raise EngineValidationError.single("fill", "the fill value must lie within the bounds")

    @property
    def width(self) -> float:
        return self.upper - self.lower

    @property
    def max_magnitude(self) -> float:
        return max(abs(self.lower), abs(self.upper))

    def rule(self) -> str:
        missing = f"replaced by {self.fill:g}" if self.fill is not None else "dropped"
        return (
            f"values clamped to [{self.lower:g}, {self.upper:g}]; "
            f"missing or non-numeric values {missing}"
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "lower": self.lower, "upper": self.upper}
        if self.fill is not None:
            out["fill"] = self.fill
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
    kind: str = field(default="categorical", init=False)

    def __post_init__(self) -> None:
        if not self.categories:
            raise EngineValidationError.single("categories", "declare at least one category")
        if len(set(self.categories)) != len(self.categories):
            raise EngineValidationError.single("categories", "categories must be distinct")
        if self.other is not None and self.other in self.categories:
            raise EngineValidationError.single("other", "the other bucket must not be a category")
        allowed = (*self.categories, *((self.other,) if self.other is not None else ()))
        if self.fill is not None and self.fill not in allowed:
            raise EngineValidationError.single("fill", "the fill value must be a declared category")

    @property
    def buckets(self) -> tuple[str, ...]:
        """Histogram cells, in declared order, the other bucket last."""
        return self.categories if self.other is None else (*self.categories, self.other)

    def rule(self) -> str:
        outside = f"counted as '{self.other}'" if self.other is not None else "dropped"
        missing = f"replaced by '{self.fill}'" if self.fill is not None else "dropped"
        return f"values outside the declared categories {outside}; missing values {missing}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "categories": list(self.categories)}
        if self.other is not None:
            out["other"] = self.other
        if self.fill is not None:
            out["fill"] = self.fill
        return out


@dataclass(frozen=True)
class IdentifierColumn:
    """A column no statistic may use (names, record ids, free text)."""

    kind: str = field(default="identifier", init=False)

    def rule(self) -> str:
        return "not used"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind}


Column = NumericColumn | CategoricalColumn | IdentifierColumn


@dataclass(frozen=True)
class Schema:
    """Declared columns by name, and the curator's declared approximate number of records.

    ``declared_size`` is a public guess used only for previews and for δ defaults; the true number
    of rows is private under add/remove neighbours and is never used in its place.
    """

    columns: Mapping[str, Column]
    declared_size: int | None = None
    # Unit of protection: with a person key, each person may have up to this many rows; rows
    # beyond that are dropped and every sensitivity is multiplied by it, so ε protects a person.
    person_key: str | None = None
    max_rows_per_person: int = 1

    @property
    def rows_per_person(self) -> int:
        """How many records one protected unit can contribute (1 without a person key)."""
        return self.max_rows_per_person if self.person_key is not None else 1

    def person_rule(self) -> str | None:
        if self.person_key is None:
            return None
        return (
            f"at most {self.max_rows_per_person} rows per {self.person_key} kept (first in "
            f"file order); rows without a {self.person_key} dropped"
        )

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


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EngineValidationError.single(path, "must be a number")
    if not math.isfinite(value):
        raise EngineValidationError.single(path, "must be a finite number")
    return float(value)


def column_from_dict(spec: Mapping[str, Any]) -> Column:
    """Build a column from its JSON shape; errors name fields relative to the column."""
    if not isinstance(spec, Mapping):
        raise EngineValidationError.single("", "must be an object")
    kind = spec.get("kind")
    if kind == "numeric":
        errors: dict[str, list[str]] = {}
        bounds: dict[str, float] = {}
        for key in ("lower", "upper"):
            if key not in spec:
                errors[key] = ["numeric columns need public bounds"]
                continue
            try:
                bounds[key] = _number(spec[key], key)
            except EngineValidationError as error:
                errors.update(error.errors)
        if errors:
            raise EngineValidationError(errors)
        fill = _number(spec["fill"], "fill") if spec.get("fill") is not None else None
        return NumericColumn(lower=bounds["lower"], upper=bounds["upper"], fill=fill)
    if kind == "categorical":
        categories = spec.get("categories")
        if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
            raise EngineValidationError.single("categories", "must be a list of strings")
        other = spec.get("other")
        fill = spec.get("fill")
        for key, value in (("other", other), ("fill", fill)):
            if value is not None and not isinstance(value, str):
                raise EngineValidationError.single(key, "must be a string")
        # Table values are compared after trimming spaces, so declared ones are trimmed too.
        return CategoricalColumn(
            categories=tuple(c.strip() for c in categories),
            other=other.strip() if isinstance(other, str) else None,
            fill=fill.strip() if isinstance(fill, str) else None,
        )
    if kind == "identifier":
        return IdentifierColumn()
    raise EngineValidationError.single("kind", "must be one of numeric, categorical, identifier")


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
        raise EngineValidationError.single("columns", "must be an object of column declarations")
    errors: dict[str, list[str]] = {}
    columns: dict[str, Column] = {}
    for name, column_spec in spec["columns"].items():
        if known_columns is not None and name not in known_columns:
            errors[f"columns.{name}"] = ["no such column in the uploaded table"]
            continue
        try:
            columns[name] = column_from_dict(column_spec)
        except EngineValidationError as error:
            for path, msgs in error.errors.items():
                errors[f"columns.{name}.{path}" if path else f"columns.{name}"] = msgs
    declared_size = spec.get("declared_size")
    if declared_size is not None and (
        isinstance(declared_size, bool) or not isinstance(declared_size, int) or declared_size < 1
    ):
        errors["declared_size"] = ["must be a positive whole number"]
    person_key = spec.get("person_key")
    max_rows = spec.get("max_rows_per_person", 1)
    if person_key is not None:
        if not isinstance(person_key, str) or (
            known_columns is not None and person_key not in known_columns
        ):
            errors["person_key"] = ["must name a column of the table"]
        elif not isinstance(columns.get(person_key, IdentifierColumn()), IdentifierColumn):
            errors["person_key"] = ["the person key must be an identifier column"]
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 1 <= max_rows <= 1000:
        errors["max_rows_per_person"] = ["must be a whole number from 1 to 1000"]
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
