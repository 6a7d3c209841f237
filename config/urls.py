from django.contrib import admin
from django.urls import include, path

from releases import views

urlpatterns = [
    path("", views.home, name="home"),
    path("api/v1/", include("releases.urls_api")),
    path("admin/", admin.site.urls),
]
