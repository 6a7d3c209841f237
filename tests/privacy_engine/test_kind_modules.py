"""A query kind is one module: a kind defined and registered here, and nowhere else, is read from
its JSON spec, checked, written back, given its sensitivity, planned (public under Blowfish, like
the count) and released by the engine's shared code in queries.py, sensitivity.py and release.py.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pytest

from privacy_engine import (
    EngineValidationError,
    Schema,
    plan_release,
    query_from_dict,
    run_queries,
    schema_from_dict,
    sensitivity,
)
from privacy_engine.aggregates import Aggregate, RowCount
from privacy_engine.definitions import Definition
from privacy_engine.kinds import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    register,
    registered_kinds,
    unregister,
)
from privacy_engine.kinds.base import count_interval, integer_mechanism, single
from privacy_engine.queries import query_to_dict
from privacy_engine.sensitivity import count_sensitivity

SCHEMA = {"columns": {"age": {"kind": "numeric", "lower": 0, "upper": 100}}}
PURE_DP = {"kind": "pure_dp", "epsilon": 1.0}
BLOWFISH = {"kind": "blowfish", "epsilon": 1.0, "policy": {"graph": "full_domain"}}


@dataclass(frozen=True)
class ScaledCount:
    """The number of records times a public whole-number factor: a field no built-in kind has."""

    factor: int
    weight: float = 1.0
    kind: str = field(default="scaled_count", init=False)
    column: None = field(default=None, init=False)


class ScaledCountKind(QueryKind):
    name = "scaled_count"
    query_type = ScaledCount

    def parse(self, spec: Mapping[str, Any], weight: float) -> ScaledCount:
        factor = spec.get("factor")
        if isinstance(factor, bool) or not isinstance(factor, int) or not 1 <= factor <= 100:
            raise EngineValidationError.single("factor", "must be a whole number from 1 to 100")
        return ScaledCount(factor=factor, weight=weight)

    def validate(self, query: ScaledCount, schema: Schema) -> None:
        return None

    def to_dict(self, query: ScaledCount) -> dict[str, Any]:
        return {"factor": query.factor}

    def columns(self, query: ScaledCount) -> tuple[str, ...]:
        return ()

    def sensitivity(self, query: ScaledCount, context: PlanContext) -> int:
        return query.factor * context.rows_per_person * count_sensitivity(context.definition)

    def is_public(self, query: ScaledCount, definition: Definition) -> bool:
        return count_sensitivity(definition) == 0

    def plan(
        self, query: ScaledCount, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        mechanism = integer_mechanism(self.sensitivity(query, context), epsilon, delta, context)
        spent = epsilon if mechanism.epsilon_spent else 0.0
        return single(query, spent, delta if mechanism.delta_spent else 0.0, mechanism)

    def aggregates(self, query: ScaledCount, schema: Schema) -> list[Aggregate]:
        return [RowCount()]

    def exact_answer(self, query: ScaledCount, answers: list[Any]) -> int:
        (count,) = answers
        return query.factor * count

    def release(
        self, planned: PlannedStatistic, exact: int, schema: Schema, common: dict[str, Any]
    ) -> StatisticResult:
        (mechanism,) = planned.mechanisms
        noisy = max(0, int(mechanism.release([exact])[0]))
        return StatisticResult(
            value=noisy, ci95=count_interval(noisy, mechanism.halfwidth()), rule=None, **common
        )


class ZeroNoise:
    def sample(self, measurement, value):
        return value


@pytest.fixture
def scaled_count():
    kind = register(ScaledCountKind())
    yield kind
    unregister(kind.name)


@pytest.mark.usefixtures("scaled_count")
def test_a_registered_kind_is_read_checked_and_written_back():
    schema = schema_from_dict(SCHEMA)
    query = query_from_dict({"kind": "scaled_count", "factor": 3, "weight": 2}, schema)
    assert query == ScaledCount(factor=3, weight=2.0)
    assert query_to_dict(query) == {"kind": "scaled_count", "factor": 3, "weight": 2.0}
    assert query_from_dict(query, schema) is query
    with pytest.raises(EngineValidationError) as error:
        query_from_dict({"kind": "scaled_count", "factor": 0}, schema)
    assert error.value.errors == {"factor": ["must be a whole number from 1 to 100"]}
    with pytest.raises(EngineValidationError) as error:
        query_from_dict({"kind": "nope"}, schema)
    assert error.value.errors == {
        "kind": [
            "must be one of: count, histogram, sum, mean, quantile, marginal, "
            "range_histogram, kmeans, randomized_response, synthetic, scaled_count"
        ]
    }


@pytest.mark.usefixtures("scaled_count")
def test_a_registered_kind_has_its_own_sensitivity():
    query = {"kind": "scaled_count", "factor": 3}
    assert sensitivity(query=query, schema=SCHEMA, definition=PURE_DP) == 3
    assert sensitivity(query=query, schema=SCHEMA, definition=BLOWFISH) == 0


@pytest.mark.usefixtures("scaled_count")
def test_a_registered_kind_is_planned_and_released():
    queries = [{"kind": "scaled_count", "factor": 3}, {"kind": "sum", "column": "age"}]
    scaled, summed = plan_release(schema=SCHEMA, definition=PURE_DP, queries=queries).statistics
    assert (scaled.sensitivity, scaled.epsilon, summed.epsilon) == (3, 0.5, 0.5)
    # Public under Blowfish by the kind's own say: the sum gets the whole ε.
    scaled, summed = plan_release(schema=SCHEMA, definition=BLOWFISH, queries=queries).statistics
    assert (scaled.epsilon_spent, summed.epsilon) == (0.0, 1.0)
    with pytest.raises(EngineValidationError) as error:
        plan_release(schema=SCHEMA, definition=PURE_DP, queries=[{"kind": "scaled_count"}])
    assert error.value.errors == {"queries.0.factor": ["must be a whole number from 1 to 100"]}

    frame = pd.DataFrame({"age": ["30", "40", "50", "60"]})
    result = run_queries(
        frame, schema=SCHEMA, definition=PURE_DP, queries=queries[:1], noise=ZeroNoise()
    )
    assert result.statistics[0].value == 12


def test_an_unregistered_kind_is_unknown_again():
    assert "scaled_count" not in registered_kinds()
    with pytest.raises(EngineValidationError) as error:
        query_from_dict({"kind": "scaled_count", "factor": 3}, schema_from_dict(SCHEMA))
    assert error.value.errors == {
        "kind": [
            "must be one of: count, histogram, sum, mean, quantile, marginal, "
            "range_histogram, kmeans, randomized_response, synthetic"
        ]
    }
