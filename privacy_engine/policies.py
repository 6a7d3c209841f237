"""Checks that a Blowfish policy fits the declared schema, and what each policy protects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privacy_engine.definitions import (
    AttributeGraph,
    CategoricalPartition,
    DistanceThreshold,
    FullDomain,
    Policy,
    RangePartition,
)
from privacy_engine.errors import NOT_NUMERIC, EngineValidationError
from privacy_engine.schema import CategoricalColumn, NumericColumn, Schema, schema_from_dict
from privacy_engine.wording import gettext_noop, phrase

# Refusals of a Blowfish policy that does not fit the schema.
BLOWFISH_PERSON_KEY = gettext_noop(
    "Blowfish is not available when rows are grouped by a person key ({key}): changing one "
    "record's key is an edge of every policy (no policy names the key column), and keeping the "
    "first rows per key makes the number of rows kept depend on the data, so neither the exact "
    "count nor the policy's sensitivities would hold. Choose ε-differential privacy or (ε, "
    "δ)-differential privacy instead: they protect all of a person's rows together."
)
MUST_BE_CATEGORICAL = gettext_noop("must be a categorical column")
GROUPS_COVER = gettext_noop(
    "the groups must contain every declared category ({categories}) exactly once"
)
MUST_BE_NUMERIC = gettext_noop("must be a numeric column")


def blowfish_refusal(schema: Schema | Mapping[str, Any]) -> str | None:
    """Why no Blowfish policy can be used on this schema, in plain words, or ``None`` if one can.

    Blowfish's neighbours replace one record along an edge of the policy's graph, with the number
    of records public. A person key breaks both: the key column is not named by any policy, so
    changing one record's key is an edge of every policy, and keeping the first c rows per key
    then changes how many rows are kept (keys a, a, b, c keep three rows with c = 1; a, z, b, c
    keep four), so an "exact" count and the policy's sum sensitivities would be false."""
    schema = schema_from_dict(schema)
    if schema.person_key is None:
        return None
    return phrase(BLOWFISH_PERSON_KEY, key=schema.person_key)


def check_policy_against_schema(policy: Policy, schema: Schema) -> None:
    """Refuse Blowfish on a schema with a person key (``kind``, see :func:`blowfish_refusal`), a
    policy that names unknown or wrongly typed columns, or a partition that does not cover the
    declared categories exactly once."""
    refusal = blowfish_refusal(schema)
    if refusal is not None:
        raise EngineValidationError.single("kind", refusal)
    if isinstance(policy, FullDomain | AttributeGraph):
        return
    if isinstance(policy, CategoricalPartition):
        column = schema.columns.get(policy.column)
        if not isinstance(column, CategoricalColumn):
            raise EngineValidationError.single("policy.column", MUST_BE_CATEGORICAL)
        listed = [value for group in policy.groups for value in group]
        if sorted(listed) != sorted(column.buckets) or len(set(listed)) != len(listed):
            raise EngineValidationError.single(
                "policy.groups", phrase(GROUPS_COVER, categories=", ".join(column.buckets))
            )
        return
    if isinstance(policy, RangePartition):
        if not isinstance(schema.columns.get(policy.column), NumericColumn):
            raise EngineValidationError.single("policy.column", MUST_BE_NUMERIC)
        return
    if isinstance(policy, DistanceThreshold):
        field = "policy.column" if len(policy.columns) == 1 else "policy.columns"
        for name in policy.columns:
            if not isinstance(schema.columns.get(name), NumericColumn):
                raise EngineValidationError.single(field, phrase(NOT_NUMERIC, name=name))
        return
    raise TypeError(f"unsupported policy {policy!r}")
