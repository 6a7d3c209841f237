"""System checks (``manage.py check``, and every command that runs them, e.g. ``migrate`` and
the servers): the installation's signing key, which every worker needs to publish.

A key file that cannot be read, is not an Ed25519 private key (releases.E002) or that users
other than its owner may read (releases.E003) is an error: the worker refuses to use it, so every
release would fail before drawing noise. No key at all is normal (a fresh installation, or a web
server that does not hold the worker's key): the first publication creates it.
"""

from django.core.checks import Error

from releases.services.signing import (
    SigningKeyExposed,
    SigningKeyProblem,
    installation_public_key_pem,
)


def signing_key_check(app_configs=None, **kwargs) -> list[Error]:
    try:
        installation_public_key_pem()
    except SigningKeyExposed as problem:
        return [
            Error(
                str(problem),
                hint="Only the account that runs the worker may read the key: chmod 600 it.",
                id="releases.E003",
            )
        ]
    except SigningKeyProblem as problem:
        return [
            Error(
                str(problem),
                hint="Restore the key file from a backup. Without a backup, move it away: the "
                "next publication creates a new key, and versions signed with the old one can "
                "then only be checked with its public key (which the API no longer serves).",
                id="releases.E002",
            )
        ]
    return []
