"""HTTP API v1 for the budget journal and top-ups: validate input, call one service or selector,
render JSON. A dataset's curator and compliance read its ledger; anyone else gets the 404 every
dataset endpoint gives."""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_view
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import IsCompliance, IsCurator, IsCuratorOrCompliance
from releases import ledger_selectors, selectors
from releases.apis import responses
from releases.apis.pagination import paginated
from releases.apis.parsers import JSONParser, json_object_body
from releases.apis.schema import PAGE, documented, query
from releases.models import BudgetIncrease
from releases.selectors import Budget, decimal_text
from releases.services.errors import ValidationFailed
from releases.services.ledger import (
    budget_increase_approve,
    budget_increase_reject,
    budget_increase_request,
)


def _figures(budget: Budget) -> dict[str, str]:
    return {
        **budget.as_dict(),
        "committed": decimal_text(budget.spent + budget.reserved),
    }


def ledger_row_data(row: ledger_selectors.LedgerRow) -> dict:
    movement = row.movement
    release = movement.release
    return {
        "id": movement.pk,
        "at": movement.at.isoformat(),
        "actor": movement.actor,
        "kind": movement.kind,
        "release": None
        if release is None
        else {
            "id": release.pk,
            "title": release.title,
            "slug": release.series.slug if release.is_published else None,
            "version": release.version if release.is_published else None,
        },
        "increase": movement.increase_id,
        "epsilon": decimal_text(movement.epsilon),
        "delta": decimal_text(movement.delta),
        "composition": movement.composition,
        "running": _figures(row.epsilon),
        "running_delta": _figures(row.delta),
    }


def budget_increase_data(increase: BudgetIncrease) -> dict:
    return {
        "id": increase.pk,
        "dataset": increase.dataset_id,
        "dataset_name": increase.dataset.name,
        "requested_by": increase.requested_by.get_username(),
        "requested_at": increase.requested_at.isoformat(),
        "epsilon": decimal_text(increase.epsilon),
        "delta": decimal_text(increase.delta),
        "reason": increase.reason,
        "status": increase.status,
        "decided_by": increase.decided_by.get_username() if increase.decided_by else None,
        "decided_at": increase.decided_at.isoformat() if increase.decided_at else None,
        "comment": increase.comment or None,
    }


def _visible_dataset(request, dataset_id: int):
    return get_object_or_404(selectors.dataset_list_visible(user=request.user), pk=dataset_id)


@extend_schema_view(
    get=documented(
        "A dataset's budget ledger, oldest first, with running totals and a summary",
        parameters=PAGE,
        response=responses.LEDGER_PAGE,
    )
)
class DatasetLedgerApi(APIView):
    """The opening budget and every reservation, spend, refund and top-up of one dataset's
    budget, with running totals summed from these rows alone; ``summary`` is the
    dataset's current budget (``total``, ``spent``, ``reserved``, ``remaining``)."""

    permission_classes = [IsCuratorOrCompliance]

    def get(self, request, dataset_id: int):
        dataset = _visible_dataset(request, dataset_id)
        rows = ledger_selectors.dataset_ledger_rows(dataset=dataset)
        epsilon, delta = selectors.dataset_budget(dataset)
        response = paginated(self, request, rows, ledger_row_data)
        response.data["summary"] = {**epsilon.as_dict(), "delta": delta.as_dict()}
        return response


@extend_schema_view(
    get=documented(
        "A dataset's budget increase requests, newest first",
        parameters=PAGE,
        response=responses.BUDGET_INCREASE_PAGE,
        operation_id="dataset_budget_increases_list",
    ),
    post=documented(
        "Ask compliance to raise a dataset's budget: epsilon, optional delta, reason",
        ok=201,
        request=OpenApiTypes.OBJECT,
        response=responses.BudgetIncreaseSerializer,
    ),
)
class DatasetBudgetIncreaseApi(APIView):
    parser_classes = [JSONParser]

    def get_permissions(self):
        return [IsCurator()] if self.request.method == "POST" else [IsCuratorOrCompliance()]

    def get(self, request, dataset_id: int):
        dataset = _visible_dataset(request, dataset_id)
        increases = ledger_selectors.budget_increase_list(user=request.user, dataset=dataset)
        return paginated(self, request, increases, budget_increase_data)

    def post(self, request, dataset_id: int):
        dataset = get_object_or_404(selectors.dataset_list_owned(user=request.user), pk=dataset_id)
        body = json_object_body(request)
        increase = budget_increase_request(
            dataset=dataset,
            user=request.user,
            epsilon=body.get("epsilon"),
            delta=body.get("delta"),
            reason=body.get("reason"),
        )
        return Response(budget_increase_data(increase), status=status.HTTP_201_CREATED)


@extend_schema_view(
    get=documented(
        "Budget increase requests you may see, newest first",
        parameters=[query("status", "pending, approved or rejected"), *PAGE],
        response=responses.BUDGET_INCREASE_PAGE,
        operation_id="budget_increases_list",
    )
)
class BudgetIncreaseListApi(APIView):
    permission_classes = [IsCuratorOrCompliance]

    def get(self, request):
        wanted = request.query_params.get("status") or None
        if wanted is not None and wanted not in BudgetIncrease.Status.values:
            raise ValidationFailed(
                {"status": [f"must be one of {', '.join(BudgetIncrease.Status.values)}"]}
            )
        increases = ledger_selectors.budget_increase_list(user=request.user, status=wanted)
        return paginated(self, request, increases, budget_increase_data)


class _DecisionApi(APIView):
    permission_classes = [IsCompliance]
    parser_classes = [JSONParser]

    def _increase(self, request, increase_id: int) -> BudgetIncrease:
        return get_object_or_404(
            ledger_selectors.budget_increase_list(user=request.user), pk=increase_id
        )


@extend_schema_view(
    post=documented(
        "Approve a budget increase (compliance, not the requester): optional comment",
        request=OpenApiTypes.OBJECT,
        response=responses.BudgetIncreaseSerializer,
    )
)
class BudgetIncreaseApproveApi(_DecisionApi):
    def post(self, request, increase_id: int):
        increase = self._increase(request, increase_id)
        body = json_object_body(request) if request.data else {}
        decided = budget_increase_approve(
            increase=increase, user=request.user, comment=body.get("comment", "")
        )
        return Response(budget_increase_data(decided))


@extend_schema_view(
    post=documented(
        "Reject a budget increase (compliance, not the requester): comment required",
        request=OpenApiTypes.OBJECT,
        response=responses.BudgetIncreaseSerializer,
    )
)
class BudgetIncreaseRejectApi(_DecisionApi):
    def post(self, request, increase_id: int):
        increase = self._increase(request, increase_id)
        body = json_object_body(request)
        decided = budget_increase_reject(
            increase=increase, user=request.user, comment=body.get("comment")
        )
        return Response(budget_increase_data(decided))
