"""Query kinds, one module each, registered by kind name (see base.py for what a kind declares).
Importing this package registers every kind."""

from privacy_engine.kinds import count, histogram, mean, sum  # noqa: F401  (registers them)
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    kind_of,
    register,
    registered_kinds,
)

__all__ = [
    "PlanContext",
    "PlannedStatistic",
    "QueryKind",
    "StatisticResult",
    "kind_of",
    "register",
    "registered_kinds",
]
