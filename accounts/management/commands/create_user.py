import re

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.roles import Role
from accounts.services import user_create_or_reset
from organisations.services import DEFAULT_ORGANISATION_SLUG, organisation_of

SLUG = re.compile(r"[-a-z0-9_]{1,60}")


class Command(BaseCommand):
    help = "Create a user with a role (or reset an existing one); prints a generated password."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", choices=Role.values, required=True)
        parser.add_argument("--password", help="omit to generate one, printed once")
        parser.add_argument(
            "--organisation",
            help="the organisation's slug, created if it does not exist (a new user without it "
            f"joins {DEFAULT_ORGANISATION_SLUG!r}; an existing one stays where it is)",
        )

    def handle(self, *args, username, role, password, organisation, **options):
        if organisation is not None and not SLUG.fullmatch(organisation):
            raise CommandError(
                "--organisation: lower-case letters, digits, - and _ only, at most 60."
            )
        try:
            user, password_used = user_create_or_reset(
                username=username, role=Role(role), password=password, organisation=organisation
            )
        except ValidationError as error:
            raise CommandError("Password refused: " + " ".join(error.messages)) from None
        except ValueError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"{role} {username!r} of organisation {organisation_of(user).slug!r} ready; "
            f"password: {password_used}"
        )
