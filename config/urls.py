from django.contrib import admin
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.i18n import set_language
from drf_spectacular.views import SpectacularSwaggerSplitView

from accounts import views as account_views
from releases import (
    approval_views,
    card_views,
    curator_views,
    ledger_views,
    raw_data_views,
    report_views,
    version_views,
    views,
)
from releases.apis.schema import SchemaView
from releases.apis.versions import catalog_diff_cache_key
from releases.feeds import NewVersionsFeed, feed_cache_key
from releases.public_cache import public_cache

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", account_views.login_page, name="login"),
    path("accounts/logout/", account_views.logout_page, name="logout"),
    # The language switcher of every page (templates/base.html). No CSRF token: the form sits on
    # public pages kept in the shared cache, which must hold no reader's token; a forged post can
    # only change the language its sender's victim reads, and redirects only within the site.
    path("i18n/setlang/", csrf_exempt(set_language), name="set_language"),
    path("catalog/", public_cache(views.catalog_list), name="catalog"),
    path(
        "catalog/feed/",
        public_cache(NewVersionsFeed(), key=feed_cache_key),
        name="catalog-feed",
    ),
    path(
        "catalog/<slug:slug>/v<int:version>/",
        public_cache(views.catalog_version, key=views.catalog_version_cache_key),
        name="catalog-version",
    ),
    path(
        "catalog/<slug:slug>/v<int:version>/card/",
        public_cache(card_views.release_card, key=card_views.release_card_cache_key),
        name="catalog-version-card",
    ),
    path(
        "catalog/<slug:slug>/diff/",
        public_cache(version_views.catalog_diff, key=catalog_diff_cache_key),
        name="catalog-diff",
    ),
    path("audit/", views.audit_page, name="audit"),
    path("audit/export.csv", report_views.audit_export, name="audit-export"),
    path(
        "audit/datasets/<int:pk>/report/",
        report_views.dataset_privacy_report,
        name="audit-dataset-report",
    ),
    path(
        "audit/datasets/<int:pk>/approval/",
        approval_views.dataset_approval_requirement,
        name="audit-dataset-approval",
    ),
    path("audit/approvals/", approval_views.approvals_list, name="approvals"),
    path("audit/approvals/<int:pk>/", approval_views.approval_review, name="approval-review"),
    path(
        "audit/approvals/<int:pk>/approve/",
        approval_views.approval_decide,
        {"decision": "approve"},
        name="approval-approve",
    ),
    path(
        "audit/approvals/<int:pk>/reject/",
        approval_views.approval_decide,
        {"decision": "reject"},
        name="approval-reject",
    ),
    path("datasets/", curator_views.dataset_list, name="datasets"),
    path("datasets/new/", curator_views.dataset_upload, name="dataset-upload"),
    path("datasets/<int:pk>/", curator_views.dataset_detail, name="dataset-detail"),
    path(
        "datasets/<int:pk>/delete-raw-data/",
        raw_data_views.dataset_raw_delete_view,
        name="dataset-raw-delete",
    ),
    path("datasets/<int:pk>/ledger/", ledger_views.dataset_ledger, name="dataset-ledger"),
    path(
        "datasets/<int:pk>/ledger/request/",
        ledger_views.budget_increase_request_view,
        name="budget-increase-request",
    ),
    path(
        "budget-increases/<int:pk>/approve/",
        ledger_views.budget_increase_decide_view,
        {"decision": "approve"},
        name="budget-increase-approve",
    ),
    path(
        "budget-increases/<int:pk>/reject/",
        ledger_views.budget_increase_decide_view,
        {"decision": "reject"},
        name="budget-increase-reject",
    ),
    path(
        "datasets/<int:dataset_pk>/releases/new/", curator_views.wizard_start, name="wizard-start"
    ),
    path(
        "datasets/<int:dataset_pk>/blowfish-explanation/",
        curator_views.wizard_blowfish_explanation,
        name="wizard-blowfish-explanation",
    ),
    path(
        "datasets/<int:dataset_pk>/risk-card/",
        curator_views.wizard_risk_card,
        name="wizard-risk-card",
    ),
    path("releases/<int:pk>/privacy/", curator_views.wizard_privacy, name="wizard-privacy"),
    path(
        "releases/<int:pk>/statistics/", curator_views.wizard_statistics, name="wizard-statistics"
    ),
    path("releases/<int:pk>/preview/", curator_views.wizard_preview, name="wizard-preview"),
    path("releases/<int:pk>/confirm/", curator_views.wizard_confirm, name="wizard-confirm"),
    path("releases/<int:pk>/", curator_views.release_status, name="release-status"),
    path(
        "releases/<int:pk>/publish-again/",
        curator_views.release_publish_again_view,
        name="release-publish-again",
    ),
    path(
        "releases/<int:pk>/withdraw/",
        version_views.release_withdraw_view,
        name="release-withdraw",
    ),
    path(
        "releases/<int:pk>/new-version/",
        version_views.release_new_version_view,
        name="release-new-version",
    ),
    path("api/v1/", include("releases.urls_api")),
    # The OpenAPI 3 schema generated from the views, and its documentation page (its script is
    # a file of its own, so the page has no inline script).
    path("api/schema/", SchemaView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("admin/", admin.site.urls),
]

handler404 = "releases.apis.errors.not_found"
