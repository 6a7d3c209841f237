"""DRF permissions: anonymous → 401 (via authentication), wrong role → 403."""

from rest_framework.permissions import BasePermission

from accounts.roles import Role, user_has_role


class IsCurator(BasePermission):
    message = "This needs the curator role."

    def has_permission(self, request, view) -> bool:
        return user_has_role(request.user, Role.CURATOR)


class IsCompliance(BasePermission):
    message = "This needs the compliance role."

    def has_permission(self, request, view) -> bool:
        return user_has_role(request.user, Role.COMPLIANCE)


class IsCuratorOrCompliance(BasePermission):
    message = "This needs the curator or the compliance role."

    def has_permission(self, request, view) -> bool:
        return user_has_role(request.user, Role.CURATOR) or user_has_role(
            request.user, Role.COMPLIANCE
        )
