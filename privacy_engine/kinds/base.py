"""What every query kind module builds on: the planned and published statistic, the mechanisms'
choice, and the registry of kinds.

A kind module declares, for one query kind: its query type and how it reads, checks and writes
its JSON spec (parse, validate against the schema, to_dict), its sensitivity under the definition,
its exact aggregates (what an engine computes, aggregates.py), its plan (mechanisms, the interval
it promises), the shape of its exact answer, and its release (noise drawn on the answer, then
post-processing with public facts only). Adding a kind means adding one module that subclasses
:class:`QueryKind` and registers itself with :func:`register`, and its tests: queries.py,
sensitivity.py and release.py only look kinds up here.

Most kinds are answered in one round: release.py computes every statistic's :meth:`aggregates`
in one pass of the engine, then draws the noise. An *iterative* kind (``iterative = True``, such
as k-means, whose every iteration clusters around the previous iteration's noisy centroids) asks
for further rounds whose requests depend on its own earlier noisy answers. Its
:meth:`~QueryKind.aggregates` are its first round's (public: they cannot depend on the data),
computed in the shared pass; then release.py calls :meth:`~QueryKind.release_rounds` with that
round's exact answers and ``ask``, a callable bound to the release's engine and table (the stored
table's engine in ``release_stored_table``, the in-memory table in ``run_queries``, with the same
contribution bounding): ``ask(requests)`` returns the exact answers to ``requests``, in order.
The kind draws each round's noise with its planned mechanisms before it asks for the next, and
builds the next requests only from public facts and those noisy answers, so its rounds compose
sequentially (adaptively): the mechanisms it planned, one per use, are what the ledger charges.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from privacy_engine.aggregates import Aggregate
from privacy_engine.definitions import ApproxDP, Definition
from privacy_engine.errors import (
    NAME_STATISTIC_COLUMN,
    NEEDS_NUMERIC,
    NO_SCHEMA_COLUMN,
    EngineValidationError,
)
from privacy_engine.mechanisms import (
    ExactRelease,
    ExponentialMechanism,
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
)
from privacy_engine.noise import NoiseSource
from privacy_engine.schema import Column, NumericColumn, Schema
from privacy_engine.wording import CLAUSE_SEPARATOR


class Query(Protocol):
    """What every query has, whatever its kind (each kind's module defines its own frozen
    dataclass): its kind's name, its accuracy weight, and the one column it reads, if any."""

    @property
    def kind(self) -> str: ...

    @property
    def weight(self) -> float: ...

    @property
    def column(self) -> str | None: ...


Mechanism = (
    GeometricMechanism | LaplaceMechanism | GaussianMechanism | ExactRelease | ExponentialMechanism
)

# An iterative kind's way to the data: the exact answers to its requests, in order, computed by
# the release's engine on the release's (contribution-bounded) table.
Ask = Callable[[Sequence[Aggregate]], list[Any]]


@dataclass(frozen=True)
class PlannedStatistic:
    """One statistic with its mechanisms built: everything public about it before it runs."""

    query: Query
    epsilon: float
    delta: float
    mechanism: str
    sensitivity: float
    noise_scale: float
    expected_abs_error: float | None
    ci95_halfwidth: float | None
    mechanisms: tuple[Mechanism, ...]
    # What the preview's accuracy numbers stand for, when a kind must say (shown in the preview).
    note: str | None = None

    @property
    def epsilon_spent(self) -> float:
        return sum(m.epsilon_spent for m in self.mechanisms)

    @property
    def delta_spent(self) -> float:
        return sum(m.delta_spent for m in self.mechanisms)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the statistic reads."""
        return kind_of(self.query).columns(self.query)

    def to_preview(self) -> dict[str, Any]:
        entry = {
            "kind": self.query.kind,
            "column": self.query.column,
            "weight": self.query.weight,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sensitivity": self.sensitivity,
            "noise_scale": self.noise_scale,
            "expected_abs_error": self.expected_abs_error,
            "ci95_halfwidth": self.ci95_halfwidth,
        }
        if getattr(self.query, "columns", ()):
            entry["columns"] = list(self.query.columns)
        if getattr(self.query, "where", None) is not None:
            entry["where"] = self.query.where.to_dict()
        if self.note is not None:
            entry["note"] = self.note
        return entry


@dataclass(frozen=True)
class StatisticResult:
    """A published statistic and everything Kerckhoffs asks to publish with it.

    ``value`` is an int (count), a float (sum, mean) or a ``{cell: count}`` dict (histogram);
    ``ci95`` is ``(low, high)`` or a dict of them per cell. ``rule`` says how out-of-bounds,
    unknown and missing values were handled, never how many rows that touched.
    """

    kind: str
    column: str | None
    value: Any
    ci95: Any
    mechanism: str
    epsilon: float
    delta: float
    sensitivity: float
    noise_scale: float
    rule: str | None
    columns: list[str] | None = None
    accounting: str | None = None
    # For statistics built from several noisy answers (a mean), each part's mechanism.
    parts: list[dict[str, Any]] | None = None
    # For a range histogram, the tree its bins were estimated from (what range answers need).
    tree: dict[str, Any] | None = None
    # For a table or histogram, its noisy cells before post-processing (consistency.NoisyTable),
    # which consistency across the release's statistics starts from. Never published.
    noisy_table: Any = field(default=None, repr=False, compare=False)
    # For a record-level file (randomized response), what the file is written from: its column,
    # categories, the number of reports of each, and the mechanism's public parameters.
    microdata: dict[str, Any] | None = None
    # For a statistic restricted to groups of a partition column, ``{"column", "in"}``.
    where: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "kind": self.kind,
            "column": self.column,
            "value": self.value,
            "ci95": self.ci95,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sensitivity": self.sensitivity,
            "noise_scale": self.noise_scale,
            "rule": self.rule,
        }
        if self.columns is not None:
            out["columns"] = self.columns
        if self.accounting is not None:
            out["accounting"] = self.accounting
        if self.parts is not None:
            out["parts"] = self.parts
        if self.tree is not None:
            out["tree"] = self.tree
        if self.microdata is not None:
            out["microdata"] = self.microdata
        if self.where is not None:
            out["where"] = self.where
        if isinstance(self.value, dict):
            # The published order of the cells (declared categories, bins, columns), as a list:
            # stores such as PostgreSQL's jsonb do not keep the order of an object's keys.
            out["cells"] = list(self.value)
        return out


@dataclass(frozen=True)
class PlanContext:
    """What planning one statistic needs besides its query and its share of ε and δ."""

    schema: Schema
    definition: Definition
    noise: NoiseSource | None
    # A plan whose numbers are only read (the accuracy chart): Gaussian scales are estimated,
    # unchecked by OpenDP, and its mechanisms draw no noise.
    estimate: bool = False

    @property
    def norm(self) -> str:
        # ε-DP-style sensitivities are L1; the Gaussian mechanism needs L2 ones.
        return "l2" if isinstance(self.definition, ApproxDP) else "l1"

    @property
    def rows_per_person(self) -> int:
        # A person with up to c rows changes every answer up to c times as much as one record.
        return self.schema.rows_per_person


class QueryKind(ABC):
    """One query kind. Its module subclasses this, names the kind and its query type, and
    registers an instance; every method takes that query type."""

    name: str
    query_type: type
    # True for a kind answered in rounds (see the module): release.py then calls
    # release_rounds, with ``ask``, instead of release.
    iterative: bool = False
    # True when simulated_facts simulates a whole release (seconds: k-means' rounds): a preview
    # then shares identical ones and runs a few (guidance.py).
    simulates_releases: bool = False

    @abstractmethod
    def parse(self, spec: Mapping[str, Any], weight: float) -> Any:
        """The query from its JSON spec, whose ``kind`` and ``weight`` are already checked;
        raises :class:`EngineValidationError` naming the spec's fields."""

    @abstractmethod
    def validate(self, query: Any, schema: Schema) -> None:
        """Check the query against the declared schema (queries built in Python included)."""

    @abstractmethod
    def to_dict(self, query: Any) -> dict[str, Any]:
        """The kind's own fields of the JSON spec, as :meth:`parse` reads them (``kind`` and
        ``weight`` are written by ``queries.query_to_dict``)."""

    @abstractmethod
    def columns(self, query: Any) -> tuple[str, ...]: ...

    @abstractmethod
    def sensitivity(self, query: Any, context: PlanContext) -> float:
        """Global sensitivity of the answer under the context's definition, in its norm (for
        an answer built from several noisy parts, that of the part it publishes as its own)."""

    def is_public(self, query: Any, definition: Definition) -> bool:
        """True when the definition makes the exact answer public: it then costs no ε, so its
        weight takes no share of the budget."""
        return False

    def published_cells(self, query: Any, schema: Schema) -> int:
        """How many numbers the statistic publishes (bounds a public page's size)."""
        return 1

    def noise_draws(self, query: Any, schema: Schema) -> int:
        """How many noisy values the statistic draws (bounds a release's work and size); by
        default one per published number."""
        return self.published_cells(query, schema)

    def disjoint_cells(self, query: Any, schema: Schema) -> int | None:
        """How many cells each of the statistic's mechanisms answers at once when every record
        falls in at most one of them, or None when its answer is not such a partition.

        Cells of a partition compose in parallel: one draw over all of them costs the
        mechanism's ε once, not once per cell (the ledger's composition shows this)."""
        return None

    def simulated(self, query: Any, schema: Schema, n: int) -> tuple[Any, Any] | None:
        """The answer on a table of n records spread evenly over the declared shape, never
        built (the declared size may be 10¹⁰): (as shown, as the mechanisms take it), or None
        for a kind without a simulated preview."""
        return None

    def simulated_typical_columns(self, query: Any) -> tuple[str, ...]:
        """The numeric columns whose every simulated value is one typical value (their
        declared ``typical``, else the middle of the bounds) in :meth:`simulated`; none by
        default (kinds that spread values over the range, or count)."""
        return ()

    def simulated_facts(self, planned: PlannedStatistic, schema: Schema, n: int) -> dict[str, Any]:
        """Facts of a simulated release on a public table of n records of the declared shape,
        added to the simulated preview's entry (k-means: its objective ratio); none by default.
        Reads no data and spends no budget."""
        return {}

    @abstractmethod
    def plan(
        self, query: Any, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic: ...

    @abstractmethod
    def aggregates(self, query: Any, schema: Schema) -> list[Aggregate]: ...

    def exact_answer(self, query: Any, answers: list[Any]) -> Any:
        """The mechanisms' input from the answers to :meth:`aggregates`, in order; by default
        the answer to a kind's one aggregate."""
        (answer,) = answers
        return answer

    @abstractmethod
    def release(
        self, planned: PlannedStatistic, exact: Any, schema: Schema, common: dict[str, Any]
    ) -> StatisticResult: ...

    def release_rounds(
        self,
        planned: PlannedStatistic,
        exact: Any,
        ask: Ask,
        schema: Schema,
        common: dict[str, Any],
    ) -> StatisticResult:
        """An iterative kind's release: ``exact`` answers its first round (:meth:`aggregates`,
        shaped by :meth:`exact_answer`), ``ask`` computes the exact answers of later rounds (see
        the module). Only called when ``iterative`` is true."""
        raise NotImplementedError(f"{self.name} is answered in one round")


_KINDS: dict[str, QueryKind] = {}
# Query types that wrap another kind's query (a restriction to groups): their kind is built from
# the wrapped query's.
_WRAPPERS: dict[type, Callable[[Any], QueryKind]] = {}


def register(kind: QueryKind) -> QueryKind:
    """Make ``kind`` the module that parses, plans, aggregates and releases its query type."""
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Forget a registered kind (a test's toy kind)."""
    del _KINDS[name]


def register_wrapper(query_type: type, kind: Callable[[Any], QueryKind]) -> None:
    """Make ``kind(query)`` the kind of every query of ``query_type``, a type that wraps another
    kind's query."""
    _WRAPPERS[query_type] = kind


def kind_of(query: Any) -> QueryKind:
    wrapper = _WRAPPERS.get(type(query))
    if wrapper is not None:
        return wrapper(query)
    try:
        return _KINDS[query.kind]
    except (KeyError, AttributeError):
        raise TypeError(f"unsupported query {query!r}") from None


def kind_named(name: str) -> QueryKind:
    """The registered kind called ``name`` (one of :func:`registered_kinds`)."""
    return _KINDS[name]


def registered_kinds() -> tuple[str, ...]:
    """The kinds' names in registration order."""
    return tuple(_KINDS)


# --- building blocks the kinds share ----------------------------------------------------------


def column_named(spec: Mapping[str, Any]) -> str:
    """The spec's ``column``, which a statistic of one column must name."""
    column = spec.get("column")
    if not isinstance(column, str):
        raise EngineValidationError.single("column", NAME_STATISTIC_COLUMN)
    return column


def declared_column(query: Any, schema: Schema) -> Column:
    """The schema's column the query names."""
    if query.column not in schema.columns:
        raise EngineValidationError.single("column", NO_SCHEMA_COLUMN)
    return schema.column(query.column)


def numeric_column(query: Any, schema: Schema) -> NumericColumn:
    """The schema's numeric column the query names."""
    column = declared_column(query, schema)
    if not isinstance(column, NumericColumn):
        raise EngineValidationError.single("column", NEEDS_NUMERIC, kind=query.kind)
    return column


def integer_mechanism(
    sensitivity: int | float, epsilon: float, delta: float, context: PlanContext
) -> Mechanism:
    """Noise for whole-number answers: none when the answer is public, discrete Gaussian under
    (ε, δ)-DP (``sensitivity`` L2, any real), geometric otherwise (L1, whole)."""
    if sensitivity == 0:
        return ExactRelease()
    if isinstance(context.definition, ApproxDP):
        return GaussianMechanism(
            sensitivity=sensitivity,
            epsilon=epsilon,
            delta=delta,
            integer=True,
            noise=context.noise,
            estimate=context.estimate,
        )
    return GeometricMechanism(sensitivity=sensitivity, epsilon=epsilon, noise=context.noise)


def real_mechanism(
    sensitivity: float,
    epsilon: float,
    delta: float,
    context: PlanContext,
    *,
    vector: bool = False,
) -> Mechanism:
    if isinstance(context.definition, ApproxDP):
        return GaussianMechanism(
            sensitivity=sensitivity,
            epsilon=epsilon,
            delta=delta,
            integer=False,
            noise=context.noise,
            vector=vector,
            estimate=context.estimate,
        )
    return LaplaceMechanism(
        sensitivity=sensitivity, epsilon=epsilon, noise=context.noise, vector=vector
    )


def single(query: Any, epsilon: float, delta: float, mechanism: Mechanism) -> PlannedStatistic:
    """The plan of a statistic answered by one mechanism."""
    return PlannedStatistic(
        query=query,
        epsilon=epsilon,
        delta=delta,
        mechanism=mechanism.name,
        sensitivity=mechanism.sensitivity,
        noise_scale=mechanism.scale,
        expected_abs_error=mechanism.expected_abs_error,
        ci95_halfwidth=mechanism.halfwidth(),
        mechanisms=(mechanism,),
    )


def even(n: int, parts: int) -> list[int]:
    """n records spread as evenly as possible over ``parts`` cells."""
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def count_interval(value: int, halfwidth: float) -> list[int]:
    return [max(0, value - int(halfwidth)), value + int(halfwidth)]


def signed_clamp(value: float, low: float, high: float, column: NumericColumn) -> list[float]:
    """Post-processing with public facts: a sum of non-negative values is non-negative, a sum of
    non-positive values non-positive."""
    if column.lower >= 0:
        value, low, high = max(0.0, value), max(0.0, low), max(0.0, high)
    if column.upper <= 0:
        value, low, high = min(0.0, value), min(0.0, low), min(0.0, high)
    return [value, low, high]


def columns_rule(names: Sequence[str], schema: Schema) -> str:
    """The declared rules of several columns, each clause led by its column's name
    (``age: values clamped to [0, 100]; age: missing or non-numeric values dropped; sex: …``),
    so that no clause reads as another column's, or as the statistic's own clauses after them.
    The web layer translates each such clause as a rule about one column."""
    return CLAUSE_SEPARATOR.join(
        f"{name}: {clause}"
        for name in names
        for clause in schema.column(name).rule().split(CLAUSE_SEPARATOR)
    )


def cleaned_numbers(name: str, schema: Schema) -> dict[str, Any]:
    """The fields of a CleanedNumbers aggregate for a numeric column: its declared rules."""
    column = schema.column(name)
    assert isinstance(column, NumericColumn)
    return {"column": name, "lower": column.lower, "upper": column.upper, "fill": column.fill}
