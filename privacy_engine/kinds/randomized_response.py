"""``randomized_response``: a record-level file of one categorical column in which every record's
category went through k-ary randomized response (privacy_engine/randomized_response.py), with the
unbiased estimate of each category's share and its interval: ``{"kind": "randomized_response",
"column": "smoker"}``.

Why the counts suffice
----------------------
Each record is randomized on its own, and the file is published in a random order, so what the
file tells anyone is the multiset of reported categories, whose distribution depends on the data
only through how many records are in each category. The kind therefore asks every engine for the
column's category counts (aggregates.CategoryCounts, which the in-process, out-of-core and
distributed engines all answer) and randomizes that many records of each category: the same
distribution as randomizing the records where they lie, with no per-record request. The published
statistic keeps the number of reports of each category (``microdata.reports``); the file is
those reports in a uniformly random order, written at publication (post-processing).

Under which definitions
-----------------------
- **Blowfish** (replace one record along an edge of the policy's graph; n public): a replacement
  changes one record's report distribution by a factor of at most e^ε, whatever the edge, so the
  file is ε-private under every policy, with exactly n rows. Records the column's rules would
  leave out (a missing value without a fill, a value outside the list without an other bucket)
  report a category of their own, NOT_LISTED: otherwise replacing a record by one that is left
  out would change the number of rows.
- **(ε, δ)-DP** (add or remove a record; n private): the file is padded with a random number of
  dummy rows before its order is shuffled (:func:`padded_plan`), so that its length hides n
  (see privacy_engine/randomized_response.py for the analysis).
- **ε-DP**: refused. A file of one row per record shows how many rows there are; hiding that
  takes dummy rows whose number can fall short with a small probability, δ, which ε-DP does not
  allow.
- A person with several rows (``max_rows_per_person`` > 1) is refused: each row's report protects
  one row, not a person.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from privacy_engine import randomized_response as rr
from privacy_engine.aggregates import Aggregate, CategoryCounts, RowCount
from privacy_engine.consistency import drops_records
from privacy_engine.definitions import ApproxDP, Blowfish
from privacy_engine.errors import (
    DUMMY_ROWS,
    RESPONSE_CATEGORICAL,
    RESPONSE_PERSON_REFUSAL,
    RESPONSE_PURE_DP_REFUSAL,
    EngineValidationError,
)
from privacy_engine.kinds.base import (
    PlanContext,
    PlannedStatistic,
    QueryKind,
    StatisticResult,
    column_named,
    declared_column,
    register,
    single,
)
from privacy_engine.noise import NoiseSource
from privacy_engine.schema import CategoricalColumn, Schema
from privacy_engine.wording import CLAUSE_SEPARATOR, gettext_noop, phrase

# Reports shuffled in memory at most (16 bytes each while sorting random keys); a larger file is
# written grouped by reported category, which tells no more (the order carries no data).
MAX_SHUFFLED_ROWS = 20_000_000
# Dummy rows a padded file may need (its shift): beyond, the file would be mostly padding.
MAX_DUMMY_ROWS = 100_000
# The category of records the column's rules would leave out (missing, or not in the list).
NOT_LISTED = "(missing or not listed)"

# The published rules' own clauses.
EACH_REPORTS = gettext_noop(
    "each record reports its own category with probability {keep} and each other one with "
    "probability {switch} (exact, from the OS's random bits)"
)
RANDOM_ORDER = gettext_noop("the file lists the reports in a random order")
GROUPED_ORDER = gettext_noop(
    "the file lists the reports grouped by reported category (too many to shuffle; the order "
    "carries nothing about the data)"
)
PADDED = gettext_noop("padded with dummy rows that hide the number of records")
SHARE_ESTIMATE = gettext_noop(
    "a share's estimate is unbiased (it can fall slightly outside 0 to 1) and its interval "
    "covers at least 95%"
)


@dataclass(frozen=True)
class RandomizedResponse:
    """The categorical ``column`` as a randomized record-level file."""

    column: str
    weight: float = 1.0
    kind: str = field(default="randomized_response", init=False)


class ResponseMechanism:
    """Randomized response as the plan and the ledger see it: its ε (OpenDP's map of the keep
    probability) and δ (the padding's, under (ε, δ)-DP), its accuracy on the declared size, and
    the draw from the category counts."""

    name = "randomized_response"
    sensitivity = 1  # one record changes one report

    def __init__(
        self,
        *,
        categories: int,
        epsilon: float,
        delta: float,
        declared_size: int | None,
        noise: NoiseSource | None = None,
        random_bytes: rr.ByteSource | None = None,
    ) -> None:
        self.categories = categories
        self.declared_size = declared_size
        self.noise = noise
        self.random_bytes = random_bytes
        self.padding = (
            rr.padded_plan(categories=categories, epsilon=epsilon, delta=delta) if delta else None
        )
        report_epsilon = self.padding.report_epsilon if self.padding else epsilon
        self.responses = rr.RandomizedResponseMechanism(
            categories=categories, epsilon=report_epsilon, random_bytes=random_bytes
        )
        # OpenDP's own figures: the keep probability's map, and the count's under padding.
        self.epsilon_spent = (
            self.padding.epsilon_spent if self.padding else self.responses.epsilon_spent
        )
        self.delta_spent = self.padding.delta_spent if self.padding else 0.0

    @property
    def scale(self) -> float:
        """The probability that a record reports another category than its own."""
        return 1.0 - self.responses.keep_probability

    @property
    def expected_abs_error(self) -> float | None:
        if self.declared_size is None:
            return None
        if self.padding is not None:
            return rr.padded_expected_abs_error(self.declared_size, self.padding)
        return self.responses.expected_abs_error(self.declared_size)

    def halfwidth(self, coverage: float = 0.95) -> float | None:
        if self.declared_size is None or self.padding is not None:
            return None  # the padded interval depends on the padding drawn: see the release
        return self.responses.halfwidth(self.declared_size, coverage)

    def reports(self, counts: list[int]) -> np.ndarray:
        """The number of reports of each category in the file (dummy rows included): each
        category's records randomized a chunk at a time (memory bounded whatever n), then, when
        padded, the dummy rows. Counting the reports is what a shuffled file tells, so the
        counts have the distribution of :func:`randomized_response.padded_release`'s file."""
        reports = np.zeros(self.categories, dtype=np.int64)
        for category, count in enumerate(counts):
            for start in range(0, int(count), rr.CHUNK_RECORDS):
                size = min(rr.CHUNK_RECORDS, int(count) - start)
                chunk = self.responses.release(np.full(size, category, dtype=np.uint16))
                reports += np.bincount(chunk, minlength=self.categories)
        if self.padding is not None:
            dummies = int(rr.draw_padding(self.padding, 1, self.noise)[0])
            source = self.random_bytes or rr.system_random_bytes
            rows = rr.uniform_codes(dummies, self.categories, source)
            reports += np.bincount(rows, minlength=self.categories)
        return reports


def microdata_codes(
    reports: list[int], random_bytes: rr.ByteSource | None = None
) -> tuple[np.ndarray, bool]:
    """The file's rows (category codes) from the number of reports of each category: in a
    uniformly random order (randomized_response.secure_permutation), or grouped by category
    beyond MAX_SHUFFLED_ROWS; and whether they were shuffled. Post-processing of published
    counts: the order carries nothing about the data either way."""
    counts = np.asarray(reports, dtype=np.int64)
    dtype = np.uint8 if len(counts) <= 256 else np.uint16
    codes = np.repeat(np.arange(len(counts), dtype=dtype), counts)
    if codes.size > MAX_SHUFFLED_ROWS:
        return codes, False
    return codes[rr.secure_permutation(codes.size, random_bytes)], True


def report_categories(column: CategoricalColumn) -> list[str]:
    """The categories a record can report: the column's buckets, and when its rules can leave a
    record out (a missing value without a fill, a value outside the list without an other
    bucket), one more for those records, so that every record has its row."""
    buckets = list(column.buckets)
    if not drops_records(column):
        return buckets
    label = NOT_LISTED
    while label in buckets:
        label += "*"
    return [*buckets, label]


class RandomizedResponseKind(QueryKind):
    name = "randomized_response"
    query_type = RandomizedResponse

    def parse(self, spec: Mapping[str, Any], weight: float) -> RandomizedResponse:
        return RandomizedResponse(column=column_named(spec), weight=weight)

    def validate(self, query: RandomizedResponse, schema: Schema) -> None:
        column = declared_column(query, schema)
        if not isinstance(column, CategoricalColumn):
            raise EngineValidationError.single("column", RESPONSE_CATEGORICAL)

    def to_dict(self, query: RandomizedResponse) -> dict[str, Any]:
        return {"column": query.column}

    def columns(self, query: RandomizedResponse) -> tuple[str, ...]:
        return (query.column,)

    def sensitivity(self, query: RandomizedResponse, context: PlanContext) -> int:
        return ResponseMechanism.sensitivity

    def published_cells(self, query: RandomizedResponse, schema: Schema) -> int:
        column = schema.column(query.column)
        assert isinstance(column, CategoricalColumn)
        return len(report_categories(column))

    def plan(
        self, query: RandomizedResponse, epsilon: float, delta: float, context: PlanContext
    ) -> PlannedStatistic:
        column = context.schema.column(query.column)
        assert isinstance(column, CategoricalColumn)
        definition = context.definition
        if context.rows_per_person > 1:
            raise EngineValidationError.single("kind", RESPONSE_PERSON_REFUSAL)
        if isinstance(definition, Blowfish):
            delta = 0.0
        elif not isinstance(definition, ApproxDP) or delta <= 0:
            raise EngineValidationError.single("kind", RESPONSE_PURE_DP_REFUSAL)
        mechanism = ResponseMechanism(
            categories=len(report_categories(column)),
            epsilon=epsilon,
            delta=delta,
            declared_size=context.schema.declared_size,
            noise=context.noise,
        )
        if mechanism.padding is not None and mechanism.padding.shift > MAX_DUMMY_ROWS:
            raise EngineValidationError.single(
                "kind",
                DUMMY_ROWS,
                epsilon=f"{epsilon:.4g}",
                delta=f"{delta:.3g}",
                rows=f"{mechanism.padding.shift:,}",
                limit=f"{MAX_DUMMY_ROWS:,}",
            )
        return replace(
            single(query, epsilon, delta, mechanism),  # type: ignore[arg-type]
            note="errors are of each category's estimated share of the records (0 to 1)",
        )

    def aggregates(self, query: RandomizedResponse, schema: Schema) -> list[Aggregate]:
        column = schema.column(query.column)
        assert isinstance(column, CategoricalColumn)
        counts = CategoryCounts(
            column=query.column,
            categories=tuple(column.categories),
            other=column.other,
            fill=column.fill,
        )
        # Records the rules leave out are a category of their own: every record has a row.
        return [counts, RowCount()] if drops_records(column) else [counts]

    def exact_answer(self, query: RandomizedResponse, answers: list[Any]) -> list[int]:
        if len(answers) == 1:
            return list(answers[0])
        counts, rows = answers
        return [*counts, rows - sum(counts)]

    def release(
        self, planned: PlannedStatistic, exact: list[int], schema: Schema, common: dict[str, Any]
    ) -> StatisticResult:
        query = planned.query
        column = schema.column(query.column)
        assert isinstance(column, CategoricalColumn)
        (mechanism,) = planned.mechanisms
        assert isinstance(mechanism, ResponseMechanism)
        buckets = report_categories(column)
        reports = mechanism.reports(exact)
        responses = mechanism.responses
        microdata: dict[str, Any] = {
            "column": query.column,
            "categories": buckets,
            "reports": [int(r) for r in reports],
            "rows": int(reports.sum()),
            "keep_probability": responses.keep_probability,
            "switch_probability": responses.switch_probability,
        }
        if mechanism.padding is not None:
            estimate = rr.estimate_padded(reports, mechanism.padding, counts=True)
            shares, intervals = estimate.shares, estimate.shares_ci95
            microdata["records"] = estimate.records
            microdata["records_ci95"] = list(estimate.records_ci95)
            microdata["dummy_rows"] = (
                f"max(0, {mechanism.padding.shift} + L) rows of uniformly random categories, L "
                f"two-sided geometric with α = {mechanism.padding.alpha:.10g} (OpenDP's "
                "sampler)"
            )
        elif sum(exact) == 0:
            shares, intervals = [0.0] * len(buckets), [[0.0, 1.0]] * len(buckets)
        else:
            found = responses.estimate_from_counts(reports)
            shares = [float(s) for s in found.shares]
            intervals = [
                [float(lo), float(hi)] for lo, hi in zip(found.ci_low, found.ci_high, strict=True)
            ]
        each_reports = phrase(
            EACH_REPORTS,
            keep=f"{responses.keep_probability:.10g}",
            switch=f"{responses.switch_probability:.10g}",
        )
        padded = [phrase(PADDED)] if mechanism.padding is not None else []
        # The order microdata_codes will write the file in (it shuffles up to MAX_SHUFFLED_ROWS).
        order = phrase(RANDOM_ORDER if reports.sum() <= MAX_SHUFFLED_ROWS else GROUPED_ORDER)
        rule = CLAUSE_SEPARATOR.join(
            [column.rule(), each_reports, order, *padded, phrase(SHARE_ESTIMATE)]
        )
        return StatisticResult(
            value={bucket: float(share) for bucket, share in zip(buckets, shares, strict=True)},
            ci95={
                bucket: [float(lo), float(hi)]
                for bucket, (lo, hi) in zip(buckets, intervals, strict=True)
            },
            rule=rule,
            microdata=microdata,
            **common,
        )


KIND = register(RandomizedResponseKind())
