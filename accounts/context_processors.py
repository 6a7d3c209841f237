from accounts.roles import Role, user_roles


def roles(request) -> dict:
    names = user_roles(getattr(request, "user", None))
    return {
        "user_roles": names,
        "is_curator": Role.CURATOR.value in names,
        "is_compliance": Role.COMPLIANCE.value in names,
    }
