"""Query kinds, one module each, registered by kind name (see base.py for what a kind declares).
Importing this package registers every kind."""

# Registration order is the order the kinds are listed in (QUERY_KINDS, errors, the web form).
# isort: off
from privacy_engine.kinds import (  # noqa: F401  (registers them)
    count,
    histogram,
    sum,
    mean,
    quantile,
    marginal,
    range_histogram,
    kmeans,
    randomized_response,
    synthetic,
    restricted,
)

# isort: on
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    Query,
    QueryKind,
    StatisticResult,
    kind_named,
    kind_of,
    register,
    registered_kinds,
    unregister,
)

__all__ = [
    "PlanContext",
    "PlannedStatistic",
    "Query",
    "QueryKind",
    "StatisticResult",
    "kind_named",
    "kind_of",
    "register",
    "registered_kinds",
    "unregister",
]
