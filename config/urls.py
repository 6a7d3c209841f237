from django.contrib import admin
from django.urls import include, path

from accounts import views as account_views
from releases import views

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", account_views.login_page, name="login"),
    path("accounts/logout/", account_views.logout_page, name="logout"),
    path("catalog/", views.catalog_list, name="catalog"),
    path("catalog/<slug:slug>/v<int:version>/", views.catalog_version, name="catalog-version"),
    path("audit/", views.audit_page, name="audit"),
    path("api/v1/", include("releases.urls_api")),
    path("admin/", admin.site.urls),
]
