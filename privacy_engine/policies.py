"""Checks that a Blowfish policy fits the declared schema, and what each policy protects."""

from __future__ import annotations

from privacy_engine.definitions import (
    AttributeGraph,
    CategoricalPartition,
    DistanceThreshold,
    FullDomain,
    Policy,
    RangePartition,
)
from privacy_engine.errors import EngineValidationError
from privacy_engine.schema import CategoricalColumn, NumericColumn, Schema


def check_policy_against_schema(policy: Policy, schema: Schema) -> None:
    """Refuse a policy that names unknown or wrongly typed columns, or a partition that does not
    cover the declared categories exactly once."""
    if isinstance(policy, FullDomain | AttributeGraph):
        return
    if isinstance(policy, CategoricalPartition):
        column = schema.columns.get(policy.column)
        if not isinstance(column, CategoricalColumn):
            raise EngineValidationError.single("policy.column", "must be a categorical column")
        listed = [value for group in policy.groups for value in group]
        if sorted(listed) != sorted(column.buckets) or len(set(listed)) != len(listed):
            raise EngineValidationError.single(
                "policy.groups",
                "the groups must contain every declared category "
                f"({', '.join(column.buckets)}) exactly once",
            )
        return
    if isinstance(policy, RangePartition):
        if not isinstance(schema.columns.get(policy.column), NumericColumn):
            raise EngineValidationError.single("policy.column", "must be a numeric column")
        return
    if isinstance(policy, DistanceThreshold):
        field = "policy.column" if len(policy.columns) == 1 else "policy.columns"
        for name in policy.columns:
            if not isinstance(schema.columns.get(name), NumericColumn):
                raise EngineValidationError.single(field, f"'{name}' is not a numeric column")
        return
    raise TypeError(f"unsupported policy {policy!r}")
