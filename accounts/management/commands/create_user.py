from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.roles import Role
from accounts.services import user_create_or_reset


class Command(BaseCommand):
    help = "Create a user with a role (or reset an existing one); prints a generated password."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", choices=Role.values, required=True)
        parser.add_argument("--password", help="omit to generate one, printed once")

    def handle(self, *args, username, role, password, **options):
        try:
            _, password_used = user_create_or_reset(
                username=username, role=Role(role), password=password
            )
        except ValidationError as error:
            raise CommandError("Password refused: " + " ".join(error.messages)) from None
        self.stdout.write(f"{role} {username!r} ready; password: {password_used}")
