"""Statistics restricted to groups of a partition column: any statistic, computed on the records
whose declared categorical column falls in some of its buckets (``"where": {"column": "region",
"in": ["north"]}``).

A categorical column's buckets (its declared categories and its other bucket) partition the
records: each record falls in at most one of them, under the column's own rules. A statistic
restricted to some buckets reads only their records, so its sensitivity is at most its
unrestricted one under add/remove neighbours, and statistics restricted to disjoint groups of
one column read disjoint records: their ε compose in parallel (footprint.py charges the largest
group's sum, not the sum over groups), when each person has one row.

Under Blowfish a neighbour replaces a record, which can move it from one group to another: the
sensitivities of the kinds do not cover that move, so restrictions are refused there.

:class:`Restricted` wraps the statistic's own query; :class:`RestrictedKind` wraps its kind,
passing the inner query to it and restricting every exact aggregate it asks for (first round and
later rounds alike) with :class:`~privacy_engine.aggregates.Within`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from privacy_engine.aggregates import Aggregate, CategoryCounts, Within
from privacy_engine.definitions import Blowfish, Definition
from privacy_engine.errors import (
    AT_MOST_GROUPS,
    EACH_CATEGORY_ONCE,
    GROUPS_CATEGORICAL,
    LIST_CATEGORIES,
    NAME_CATEGORICAL,
    NO_SCHEMA_COLUMN,
    NOT_A_CATEGORY,
    RESTRICTED_BLOWFISH_REFUSAL,
    WHERE_FIELDS,
    WHERE_OBJECT,
    EngineValidationError,
    prefix_errors,
)
from privacy_engine.kinds.base import (
    Ask,
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    columns_rule,
    kind_of,
    register_wrapper,
)
from privacy_engine.schema import CategoricalColumn, Schema
from privacy_engine.wording import CLAUSE_SEPARATOR, gettext_noop, phrase

# Groups a release's restrictions may name in all (each statistic's ``in`` counted): every
# budget check adds up the amounts of every group named, and ledger rows list them. A statistic
# per group of a column with more groups is a histogram's job.
MAX_GROUPS_NAMED = 1000
# The clause of the published rules that says which records a restricted statistic reads.
ONE_GROUP = gettext_noop("only records whose {column} is {group}")
SOME_GROUPS = gettext_noop("only records whose {column} is {groups} or {last}")


@dataclass(frozen=True)
class Where:
    """The groups a statistic is restricted to: buckets of the categorical ``column``."""

    column: str
    groups: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "in": list(self.groups)}

    def rule(self) -> str:
        """Which records the statistic reads, each group quoted as the column's rules quote a
        category."""
        *groups, last = (f"'{group}'" for group in self.groups)
        if not groups:
            return phrase(ONE_GROUP, column=self.column, group=last)
        return phrase(SOME_GROUPS, column=self.column, groups=", ".join(groups), last=last)


@dataclass(frozen=True)
class Restricted:
    """A query of any kind restricted to the records of ``where``'s groups."""

    query: Any
    where: Where

    @property
    def kind(self) -> str:
        return self.query.kind

    @property
    def weight(self) -> float:
        return self.query.weight

    @property
    def column(self) -> str | None:
        return self.query.column

    @property
    def columns(self) -> tuple[str, ...]:
        """The wrapped query's own ``columns`` (a table's, k-means'), if it has them."""
        return tuple(getattr(self.query, "columns", ()))


def restriction_of(query: Any) -> tuple[str, tuple[str, ...]] | None:
    """``query``'s restriction as footprint.py counts it: (column, groups), or None when it
    reads every record."""
    if isinstance(query, Restricted):
        return query.where.column, query.where.groups
    return None


def parse_where(spec: Any) -> Where:
    """``{"column": name, "in": [bucket, …]}`` read, not yet checked against a schema; errors
    name the spec's fields relative to ``where``."""
    if not isinstance(spec, Mapping):
        raise EngineValidationError.single("", WHERE_OBJECT)
    unknown = sorted(str(key) for key in spec if key not in ("column", "in"))
    if unknown:
        raise EngineValidationError.single(unknown[0][:100], WHERE_FIELDS)
    column = spec.get("column")
    if not isinstance(column, str) or not column:
        raise EngineValidationError.single("column", NAME_CATEGORICAL)
    groups = spec.get("in")
    if (
        not isinstance(groups, list)
        or not groups
        or not all(isinstance(group, str) for group in groups)
    ):
        raise EngineValidationError.single("in", LIST_CATEGORIES)
    if len(groups) > MAX_GROUPS_NAMED:
        raise EngineValidationError.single("in", AT_MOST_GROUPS, count=f"{MAX_GROUPS_NAMED:,}")
    if len(set(groups)) != len(groups):
        raise EngineValidationError.single("in", EACH_CATEGORY_ONCE)
    return Where(column=column, groups=tuple(groups))


def partition_of(where: Where, schema: Schema) -> CategoryCounts:
    """The buckets of ``where``'s column under its declared rules; refused (naming ``where``'s
    fields) unless the column is a declared categorical one and every group is one of its
    buckets."""
    if where.column not in schema.columns:
        raise EngineValidationError.single("column", NO_SCHEMA_COLUMN)
    column = schema.column(where.column)
    if not isinstance(column, CategoricalColumn):
        raise EngineValidationError.single("column", GROUPS_CATEGORICAL)
    partition = CategoryCounts(
        column=where.column, categories=column.categories, other=column.other, fill=column.fill
    )
    buckets = set(partition.buckets)
    unknown = [group for group in where.groups if group not in buckets]
    if unknown:
        raise EngineValidationError.single(
            "in", NOT_A_CATEGORY, column=where.column, categories=", ".join(unknown[:5])
        )
    return partition


def groups_named(queries: list[Any]) -> int:
    """How many groups the queries' restrictions name in all."""
    return sum(len(q.where.groups) for q in queries if isinstance(q, Restricted))


def group_schema(schema: Schema, where: Where) -> Schema:
    """``schema`` with its declared size scaled to the groups' even share (previews assume the
    records spread evenly over the declared shape): the public size a restricted statistic's
    plan and preview work from. Reads no data."""
    if schema.declared_size is None:
        return schema
    return dataclasses.replace(
        schema, declared_size=group_share(where, schema, schema.declared_size)
    )


def group_share(where: Where, schema: Schema, n: int) -> int:
    """The groups' even share of ``n`` records (at least 1)."""
    buckets = len(partition_of(where, schema).buckets)
    return max(1, round(n * len(where.groups) / buckets))


class RestrictedKind(QueryKind):
    """The kind of a :class:`Restricted` query: its inner kind's, on the groups' records."""

    query_type = Restricted

    def __init__(self, inner: QueryKind) -> None:
        self.inner = inner
        self.name = inner.name
        self.iterative = inner.iterative
        self.simulates_releases = inner.simulates_releases

    def parse(self, spec: Mapping[str, Any], weight: float) -> Restricted:
        raise TypeError("restrictions are parsed by queries.py")

    def validate(self, query: Restricted, schema: Schema) -> None:
        self.inner.validate(query.query, schema)
        try:
            partition_of(query.where, schema)
        except EngineValidationError as error:
            raise prefix_errors("where", error) from None

    def to_dict(self, query: Restricted) -> dict[str, Any]:
        return {**self.inner.to_dict(query.query), "where": query.where.to_dict()}

    def columns(self, query: Restricted) -> tuple[str, ...]:
        inner = self.inner.columns(query.query)
        return inner if query.where.column in inner else (*inner, query.where.column)

    def sensitivity(self, query: Restricted, context: PlanContext) -> float:
        # One record added or removed is in the groups or not: at most what it moves the
        # unrestricted answer (Blowfish, where it could move between groups, is refused).
        return self.inner.sensitivity(query.query, self._context(query, context))

    def is_public(self, query: Restricted, definition: Definition) -> bool:
        return (
            False
            if isinstance(definition, Blowfish)
            else self.inner.is_public(query.query, definition)
        )

    def published_cells(self, query: Restricted, schema: Schema) -> int:
        return self.inner.published_cells(query.query, schema)

    def noise_draws(self, query: Restricted, schema: Schema) -> int:
        return self.inner.noise_draws(query.query, schema)

    def disjoint_cells(self, query: Restricted, schema: Schema) -> int | None:
        return self.inner.disjoint_cells(query.query, schema)

    def simulated(self, query: Restricted, schema: Schema, n: int) -> tuple[Any, Any] | None:
        return self.inner.simulated(query.query, schema, group_share(query.where, schema, n))

    def simulated_typical_columns(self, query: Restricted) -> tuple[str, ...]:
        return self.inner.simulated_typical_columns(query.query)

    def simulated_facts(self, planned: PlannedStatistic, schema: Schema, n: int) -> dict[str, Any]:
        return self.inner.simulated_facts(
            _inner_planned(planned), schema, group_share(planned.query.where, schema, n)
        )

    def plan(
        self, query: Restricted, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        if isinstance(context.definition, Blowfish):
            raise EngineValidationError.single("where", RESTRICTED_BLOWFISH_REFUSAL)
        planned = self.inner.plan(query.query, epsilon, delta, self._context(query, context))
        return dataclasses.replace(planned, query=query)

    def aggregates(self, query: Restricted, schema: Schema) -> list[Aggregate]:
        return _within(query, schema, self.inner.aggregates(query.query, schema))

    def exact_answer(self, query: Restricted, answers: list[Any]) -> Any:
        return self.inner.exact_answer(query.query, answers)

    def release(
        self, planned: PlannedStatistic, exact: Any, schema: Schema, common: dict[str, Any]
    ) -> StatisticResult:
        result = self.inner.release(
            _inner_planned(planned), exact, group_schema(schema, planned.query.where), common
        )
        return _restricted_result(result, planned.query, schema)

    def release_rounds(
        self,
        planned: PlannedStatistic,
        exact: Any,
        ask: Ask,
        schema: Schema,
        common: dict[str, Any],
    ) -> StatisticResult:
        query = planned.query

        def ask_within(requests: Any) -> list[Any]:
            return ask(_within(query, schema, list(requests)))

        result = self.inner.release_rounds(
            _inner_planned(planned), exact, ask_within, group_schema(schema, query.where), common
        )
        return _restricted_result(result, query, schema)

    def _context(self, query: Restricted, context: PlanContext) -> PlanContext:
        return dataclasses.replace(context, schema=group_schema(context.schema, query.where))


def _within(query: Restricted, schema: Schema, requests: list[Aggregate]) -> list[Aggregate]:
    partition = partition_of(query.where, schema)
    return [Within(request, partition, query.where.groups) for request in requests]


def _inner_planned(planned: PlannedStatistic) -> PlannedStatistic:
    return dataclasses.replace(planned, query=planned.query.query)


def _restricted_result(
    result: StatisticResult, query: Restricted, schema: Schema
) -> StatisticResult:
    """The inner kind's result, saying which records it counts and by which rules of the
    partition column (a missing value filled into a group counts in it). Its noisy cells are
    not offered to consistency across the release (consistency.py): a group's table does not
    share its totals with the whole table's."""
    groups_rule = [query.where.rule(), columns_rule([query.where.column], schema)]
    own = result.rule or ""
    column = getattr(query.query, "column", None)
    if column is not None and column != query.where.column:
        # The statistic's own column's rules, after the grouping column's: led by its name too,
        # so that none reads as the grouping column's.
        plain = schema.column(column).rule()
        own = own.replace(plain, columns_rule([column], schema), 1)
    return dataclasses.replace(
        result,
        where=query.where.to_dict(),
        rule=CLAUSE_SEPARATOR.join(filter(None, [*groups_rule, own])),
        noisy_table=None,
    )


register_wrapper(Restricted, lambda query: RestrictedKind(kind_of(query.query)))
