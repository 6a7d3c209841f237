"""Show the installation's public signing key, or create the key before the first publication
(``--create``), e.g. to hand the public key out, or to copy the key to other machines, first."""

from django.core.management.base import BaseCommand, CommandError

from releases.services.signing import (
    SigningKeyProblem,
    installation_public_key_pem,
    public_key_fingerprint,
    public_key_pem,
)


class Command(BaseCommand):
    help = (
        "Print the installation's Ed25519 public key (PEM) and its fingerprint. The key is "
        "created by the first publication; --create creates it now if there is none yet (an "
        "existing key is never replaced). Exits non-zero, saying why, when the key file cannot "
        "be used."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--create",
            action="store_true",
            help="create the key at SIGNING_KEY_PATH if there is none yet",
        )

    def handle(self, *args, create: bool, **options):
        try:
            public_pem = public_key_pem() if create else installation_public_key_pem()
        except SigningKeyProblem as problem:
            raise CommandError(str(problem)) from None
        if public_pem is None:
            raise CommandError(
                "This installation has no signing key yet: the first publication creates it, "
                "or run this command with --create."
            )
        self.stdout.write(public_pem.decode(), ending="")
        self.stdout.write(f"SHA-256 of the raw public key: {public_key_fingerprint(public_pem)}")
