"""Check a downloaded version offline: its metadata file's Ed25519 signature and, for the files
that sit beside it (or in --files DIR) under their downloaded names, their SHA-256."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from releases.services.signed_metadata import metadata_files_check, metadata_shape_problems
from releases.services.signing import (
    SignatureProblem,
    SigningKeyProblem,
    installation_public_key_pem,
    public_key_fingerprint,
    signature_check,
)


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise CommandError(
            f"INVALID: cannot read the {what} {path}: {error.strerror or error}"
        ) from None


class Command(BaseCommand):
    help = (
        "Verify a version's metadata file against its signature file, with the installation's "
        "public key or --key PEM, then the SHA-256 of the version's other files found beside "
        "the metadata (or in --files DIR). Exits non-zero, saying why, when anything is wrong."
    )

    def add_arguments(self, parser):
        parser.add_argument("metadata", type=Path, help="the metadata file (…-metadata.json)")
        parser.add_argument("signature", type=Path, help="its signature file (base64)")
        parser.add_argument(
            "--key",
            type=Path,
            help="the signer's public key as PEM (GET /api/v1/signing-key/); default: this "
            "installation's key",
        )
        parser.add_argument(
            "--files",
            type=Path,
            help="a directory holding every file the metadata lists, under its downloaded name "
            "(each must be there); default: check those beside the metadata file",
        )

    def handle(self, *args, metadata: Path, signature: Path, key, files, **options):
        data = _read(metadata, "metadata file")
        signature_b64 = _read(signature, "signature file")
        if key is not None:
            public_pem = _read(key, "key file")
        else:
            try:
                public_pem = installation_public_key_pem()
            except SigningKeyProblem as problem:
                raise CommandError(
                    f"INVALID: {problem}; or pass the signer's key with --key"
                ) from None
            if public_pem is None:
                raise CommandError(
                    "INVALID: this installation has no signing key yet; pass the signer's "
                    "public key with --key"
                )
        try:
            signature_check(data, signature_b64, public_pem)
            fingerprint = public_key_fingerprint(public_pem)
        except SignatureProblem as problem:
            raise CommandError(f"INVALID: {metadata}: {problem}") from None
        try:
            document = json.loads(data)
        except (ValueError, RecursionError):
            raise CommandError(f"INVALID: {metadata} is signed but is not JSON") from None
        # A good signature says who wrote the file, not that it is a metadata document.
        shape = metadata_shape_problems(document)
        if shape:
            raise CommandError(
                f"INVALID: {metadata} is signed but is not a metadata document: " + "; ".join(shape)
            )
        directory = files if files is not None else metadata.parent
        matched, problems = metadata_files_check(
            metadata=document, directory=directory, require_all=files is not None
        )
        if problems:
            raise CommandError(f"INVALID: signature good, but {'; '.join(problems)}")
        listed = len(document["files"])
        self.stdout.write(
            f"VALID: {document.get('slug')} v{document.get('version')} metadata signed by key "
            f"{fingerprint}; {len(matched)} of {listed} listed files found and matching SHA-256"
        )
