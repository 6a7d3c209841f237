"""Organisations in the admin. A slug never changes once made (events record it, and a reused
slug would inherit another's history); memberships move only as create_user moves them: never
a user who owns datasets."""

from django.contrib import admin, messages

from organisations.models import Membership, Organisation
from organisations.services import membership_set


@admin.register(Organisation)
class OrganisationAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")

    def get_readonly_fields(self, request, obj=None):
        return ("slug",) if obj is not None else ()

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "organisation")
    list_select_related = ("user", "organisation")

    def get_readonly_fields(self, request, obj=None):
        return ("user",) if obj is not None else ()

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change) -> None:
        try:
            membership_set(user=obj.user, organisation=obj.organisation)
        except ValueError as refusal:
            messages.error(request, str(refusal))
