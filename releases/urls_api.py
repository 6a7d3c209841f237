from django.urls import path

from releases.apis import approvals, ledger, raw_data, signing, versions, views
from releases.public_cache import public_cache

urlpatterns = [
    path("auth/token/", views.TokenObtainApi.as_view(), name="api-token"),
    path("auth/logout/", views.TokenLogoutApi.as_view(), name="api-logout"),
    path("datasets/", views.DatasetListApi.as_view(), name="api-datasets"),
    path("datasets/<int:dataset_id>/", views.DatasetDetailApi.as_view(), name="api-dataset"),
    path(
        "datasets/<int:dataset_id>/schema/",
        views.DatasetSchemaApi.as_view(),
        name="api-dataset-schema",
    ),
    path(
        "datasets/<int:dataset_id>/accuracy/",
        views.AccuracySolverApi.as_view(),
        name="api-dataset-accuracy",
    ),
    path(
        "datasets/<int:dataset_id>/delete-raw-data/",
        raw_data.DatasetRawDataDeleteApi.as_view(),
        name="api-dataset-raw-delete",
    ),
    path("releases/", views.ReleaseListApi.as_view(), name="api-releases"),
    path("releases/<int:release_id>/", views.ReleaseDetailApi.as_view(), name="api-release"),
    path(
        "releases/<int:release_id>/submit/",
        views.ReleaseSubmitApi.as_view(),
        name="api-release-submit",
    ),
    path(
        "releases/<int:release_id>/publish-again/",
        views.ReleasePublishAgainApi.as_view(),
        name="api-release-publish-again",
    ),
    path(
        "releases/<int:release_id>/approve/",
        approvals.ReleaseApproveApi.as_view(),
        name="api-release-approve",
    ),
    path(
        "releases/<int:release_id>/reject/",
        approvals.ReleaseRejectApi.as_view(),
        name="api-release-reject",
    ),
    path("approvals/", approvals.ApprovalListApi.as_view(), name="api-approvals"),
    path(
        "datasets/<int:dataset_id>/approval/",
        approvals.DatasetApprovalRequirementApi.as_view(),
        name="api-dataset-approval",
    ),
    path("catalog/", public_cache(views.CatalogListApi.as_view()), name="api-catalog"),
    path(
        "catalog/<slug:slug>/versions/<int:version>/",
        public_cache(views.CatalogVersionApi.as_view(), key=views.catalog_version_api_cache_key),
        name="api-catalog-version",
    ),
    path(
        "catalog/<slug:slug>/versions/<int:version>/statistics/<int:position>/range/",
        public_cache(views.CatalogRangeApi.as_view(), key=views.catalog_range_cache_key),
        name="api-catalog-range",
    ),
    path(
        "catalog/<slug:slug>/versions/<int:version>/files/<str:file_format>/",
        views.CatalogFileApi.as_view(),
        name="api-catalog-file",
    ),
    path(
        "catalog/<slug:slug>/versions/<int:version>/withdraw/",
        versions.CatalogWithdrawApi.as_view(),
        name="api-catalog-withdraw",
    ),
    path(
        "catalog/<slug:slug>/diff/",
        public_cache(versions.CatalogDiffApi.as_view(), key=versions.catalog_diff_cache_key),
        name="api-catalog-diff",
    ),
    path("audit/events/", views.AuditEventListApi.as_view(), name="api-audit-events"),
    path("translate/", views.TranslateApi.as_view(), name="api-translate"),
    path("guidance/starting-point/", views.StartingPointApi.as_view(), name="api-starting-point"),
    path(
        "releases/<int:release_id>/simulated-preview/",
        views.ReleaseSimulatedPreviewApi.as_view(),
        name="api-release-simulated-preview",
    ),
    path("audit/verify/", views.AuditVerifyApi.as_view(), name="api-audit-verify"),
    path("audit/anchor/", views.AuditAnchorApi.as_view(), name="api-audit-anchor"),
    path("signing-key/", signing.SigningKeyApi.as_view(), name="api-signing-key"),
    path(
        "datasets/<int:dataset_id>/ledger/",
        ledger.DatasetLedgerApi.as_view(),
        name="api-dataset-ledger",
    ),
    path(
        "datasets/<int:dataset_id>/budget-increases/",
        ledger.DatasetBudgetIncreaseApi.as_view(),
        name="api-dataset-budget-increases",
    ),
    path("budget-increases/", ledger.BudgetIncreaseListApi.as_view(), name="api-budget-increases"),
    path(
        "budget-increases/<int:increase_id>/approve/",
        ledger.BudgetIncreaseApproveApi.as_view(),
        name="api-budget-increase-approve",
    ),
    path(
        "budget-increases/<int:increase_id>/reject/",
        ledger.BudgetIncreaseRejectApi.as_view(),
        name="api-budget-increase-reject",
    ),
]
