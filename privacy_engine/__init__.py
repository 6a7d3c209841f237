"""privacy_engine: the privacy maths of the product, free of any web framework.

Imports only the standard library, numpy, pandas, pyarrow and opendp. Everything a release
publishes about its guarantee (mechanism, ε, sensitivity, noise scale, 95% interval) is computed
here.
"""

from privacy_engine.accounting import IncompatibleLedger, Ledger, ledger_charge, ledger_for
from privacy_engine.accuracy import (
    geometric_expected_abs_error,
    geometric_halfwidth,
    geometric_tail,
    laplace_expected_abs_error,
    laplace_halfwidth,
    laplace_tail,
)
from privacy_engine.definitions import (
    ApproxDP,
    AttributeGraph,
    Blowfish,
    CategoricalPartition,
    Definition,
    DistanceThreshold,
    FullDomain,
    PureDP,
    RangePartition,
    definition_from_dict,
)
from privacy_engine.errors import EngineValidationError
from privacy_engine.guidance import budget_from_questions
from privacy_engine.kinds.kmeans import KMeans
from privacy_engine.kinds.randomized_response import microdata_codes
from privacy_engine.kinds.range_histogram import PublishedRanges, range_answer, range_sum
from privacy_engine.mechanisms import (
    ExactRelease,
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
)
from privacy_engine.noise import NoiseSource, OpenDPNoise
from privacy_engine.policies import blowfish_refusal
from privacy_engine.queries import Count, Histogram, Mean, Query, Sum, query_from_dict
from privacy_engine.release import (
    PlannedStatistic,
    ReleasePlan,
    ReleaseResult,
    StatisticResult,
    accuracy_curve,
    epsilon_for_accuracy,
    plan_release,
    preview,
    release_stored_table,
    run_queries,
    split_epsilon,
)
from privacy_engine.risk import RiskCard, risk_card
from privacy_engine.schema import (
    MAX_BOUND,
    MAX_CATEGORIES,
    MAX_ROWS,
    CategoricalColumn,
    IdentifierColumn,
    NumericColumn,
    Schema,
    check_declared_size,
    format_number,
    schema_from_dict,
)
from privacy_engine.sensitivity import sensitivity
from privacy_engine.synthetic import SyntheticTable, synthetic_table
from privacy_engine.translation import (
    epsilon_to_truth_probability,
    group_privacy,
    posterior_bound,
    truth_probability_to_epsilon,
)

__all__ = [
    "MAX_BOUND",
    "MAX_CATEGORIES",
    "MAX_ROWS",
    "ApproxDP",
    "AttributeGraph",
    "Blowfish",
    "CategoricalColumn",
    "CategoricalPartition",
    "Count",
    "Definition",
    "DistanceThreshold",
    "EngineValidationError",
    "ExactRelease",
    "FullDomain",
    "GaussianMechanism",
    "GeometricMechanism",
    "Histogram",
    "IdentifierColumn",
    "IncompatibleLedger",
    "KMeans",
    "LaplaceMechanism",
    "Ledger",
    "Mean",
    "NoiseSource",
    "NumericColumn",
    "OpenDPNoise",
    "PlannedStatistic",
    "PublishedRanges",
    "PureDP",
    "Query",
    "RangePartition",
    "ReleasePlan",
    "ReleaseResult",
    "RiskCard",
    "Schema",
    "StatisticResult",
    "Sum",
    "SyntheticTable",
    "accuracy_curve",
    "blowfish_refusal",
    "budget_from_questions",
    "check_declared_size",
    "definition_from_dict",
    "epsilon_for_accuracy",
    "epsilon_to_truth_probability",
    "format_number",
    "geometric_expected_abs_error",
    "geometric_halfwidth",
    "geometric_tail",
    "group_privacy",
    "laplace_expected_abs_error",
    "laplace_halfwidth",
    "laplace_tail",
    "ledger_charge",
    "ledger_for",
    "microdata_codes",
    "plan_release",
    "posterior_bound",
    "preview",
    "query_from_dict",
    "range_answer",
    "range_sum",
    "release_stored_table",
    "risk_card",
    "run_queries",
    "schema_from_dict",
    "sensitivity",
    "split_epsilon",
    "synthetic_table",
    "truth_probability_to_epsilon",
]
