"""The installation's Ed25519 key, which signs each published version's metadata file.

The private key lives as PEM at ``settings.SIGNING_KEY_PATH`` (mode 0600, outside every served
or storage directory). It is created by the first publication (the worker, before it draws any
noise) or by ``manage.py signing_key --create``, never by a reader: the public key endpoint and
``verify_release`` only read it. A key file that cannot be read, is not an Ed25519 private key,
or that other users may read (any group or other permission bit) is refused with
:class:`SigningKeyProblem`, naming the file and what to do; ``manage.py check`` reports it too
(``releases.checks``).

Creation is atomic: the key is written whole to a file of its own, then hard-linked to its final
name, which fails if another process got there first; that process's key is then read instead.
Two workers starting at once thus never end up signing with two different keys, and no process
ever reads a half-written file.

A signature is Ed25519 over the metadata file's exact bytes (64 raw bytes, published as base64),
so anyone can check it with the public key alone, e.g. with ``openssl pkeyutl -verify -rawin``.
"""

import base64
import binascii
import contextlib
import hashlib
import os
import stat
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from django.conf import settings

from privacy_engine.wording import gettext_noop, phrase

SIGNATURE_BYTES = 64
ALGORITHM = "Ed25519"


class SignatureProblem(ValueError):
    """Why a signature or key cannot be checked, in words fit for a command's output."""


class SigningKeyProblem(ValueError):
    """Why the installation's private key cannot be used, naming its file (``SIGNING_KEY_PATH``)
    and what to do, in words fit for an administrator."""


class SigningKeyExposed(SigningKeyProblem):
    """The key file may be read or written by users other than its owner."""


# Permission bits a key file must not have: any for its group or for others.
SHARED_MODE_BITS = 0o077

# What is wrong with the key: said to an administrator, and stored in a failed release's reason,
# which its status page translates (releases/refusals.py).
KEY_NOT_A_FILE = gettext_noop(
    "the signing key {path} (SIGNING_KEY_PATH) is not a file: restore the key file from a backup"
)
KEY_SHARED = gettext_noop(
    "the signing key {path} (SIGNING_KEY_PATH) is open to other users (mode {mode}); it is not "
    "used until only its owner can read it: chmod 600 {path}"
)
KEY_NOT_CREATED = gettext_noop(
    "the signing key {path} (SIGNING_KEY_PATH) cannot be created: {error}"
)
KEY_UNREADABLE = gettext_noop("the signing key {path} (SIGNING_KEY_PATH) cannot be read: {error}")
KEY_NOT_PEM = gettext_noop(
    "the signing key {path} (SIGNING_KEY_PATH) is not an unencrypted PEM private key (corrupt or "
    "truncated?): restore it from a backup"
)
KEY_NOT_ED25519 = gettext_noop(
    "the signing key {path} (SIGNING_KEY_PATH) is not an Ed25519 key: restore the "
    "installation's Ed25519 key from a backup"
)


def _key_path() -> Path:
    return Path(settings.SIGNING_KEY_PATH)


def _read_key_file(path: Path) -> bytes:
    """The key file's bytes; :class:`SigningKeyProblem` when it cannot be read or others may."""
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):
            raise SigningKeyProblem(phrase(KEY_NOT_A_FILE, path=path))
        if os.name == "posix" and status.st_mode & SHARED_MODE_BITS:
            raise SigningKeyExposed(
                phrase(KEY_SHARED, path=path, mode=f"{status.st_mode & 0o777:04o}")
            )
        return path.read_bytes()
    except OSError as error:
        raise SigningKeyProblem(
            phrase(KEY_UNREADABLE, path=path, error=error.strerror or type(error).__name__)
        ) from None


def _load_private(pem: bytes) -> Ed25519PrivateKey:
    path = _key_path()
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise SigningKeyProblem(phrase(KEY_NOT_PEM, path=path)) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyProblem(phrase(KEY_NOT_ED25519, path=path))
    return key


def _create(path: Path) -> None:
    """Write a new key to ``path`` unless one is there; never replaces an existing file."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    pem = Ed25519PrivateKey.generate().private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.PKCS8,
        encryption_algorithm=serialization.NoEncryption(),
    )
    # A name no other process uses, created with O_EXCL and mode 0600 from the start (never
    # readable by others, not even for an instant).
    partial = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(8).hex()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(pem)
            out.flush()
            os.fsync(out.fileno())
        # link() is atomic and fails when the name exists: the first process wins, whole.
        with contextlib.suppress(FileExistsError):
            os.link(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def signing_key() -> Ed25519PrivateKey:
    """The installation's private key, created if there is none yet (publication only: a
    reader uses :func:`installation_public_key_pem`); :class:`SigningKeyProblem` when it cannot
    be used."""
    path = _key_path()
    if not os.path.lexists(path):
        try:
            _create(path)
        except OSError as error:
            raise SigningKeyProblem(
                phrase(KEY_NOT_CREATED, path=path, error=error.strerror or type(error).__name__)
            ) from None
    return _load_private(_read_key_file(path))


def sign(data: bytes) -> bytes:
    """The raw 64-byte Ed25519 signature of ``data``."""
    return signing_key().sign(data)


def _public_pem(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PublicFormat.SubjectPublicKeyInfo,
    )


def public_key_pem() -> bytes:
    """The installation's public key as PEM (SubjectPublicKeyInfo), the key being created if
    there is none yet (publication only)."""
    return _public_pem(signing_key().public_key())


def installation_public_key_pem() -> bytes | None:
    """The public key as PEM if this installation has a key yet, without creating one (serving
    or checking a signature must not mint the key it is checked against: on a web server that
    does not share the worker's key file, that key would sign nothing);
    :class:`SigningKeyProblem` when the key file cannot be used."""
    path = _key_path()
    if not os.path.lexists(path):
        return None
    return _public_pem(_load_private(_read_key_file(path)).public_key())


def load_public_key(public_pem: bytes) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM; :class:`SignatureProblem` says what is wrong."""
    try:
        key = serialization.load_pem_public_key(public_pem)
    except ValueError:
        raise SignatureProblem("the key is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise SignatureProblem("the key is not an Ed25519 public key")
    return key


def public_key_fingerprint(public_pem: bytes) -> str:
    """SHA-256 (hex) of the raw 32-byte public key: what the release card prints."""
    raw = load_public_key(public_pem).public_bytes(
        encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw
    )
    return hashlib.sha256(raw).hexdigest()


def signature_decode(signature_b64: str | bytes) -> bytes:
    """The raw signature from its base64 text (surrounding whitespace allowed);
    :class:`SignatureProblem` if it is not base64 or not 64 bytes."""
    text = signature_b64.strip() if isinstance(signature_b64, bytes | str) else b""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureProblem("the signature is not base64") from None
    if len(raw) != SIGNATURE_BYTES:
        raise SignatureProblem(
            f"the signature has the wrong length: {len(raw)} bytes, an Ed25519 signature has "
            f"{SIGNATURE_BYTES}"
        )
    return raw


def signature_check(data: bytes, signature_b64: str | bytes, public_pem: bytes) -> None:
    """Raise :class:`SignatureProblem` naming what is wrong unless ``signature_b64`` is a valid
    signature of exactly ``data`` by the key in ``public_pem``."""
    key = load_public_key(public_pem)
    raw = signature_decode(signature_b64)
    try:
        key.verify(raw, data)
    except InvalidSignature:
        raise SignatureProblem(
            "bad signature: the file is not exactly what this key signed"
        ) from None


def signature_text(data: bytes) -> bytes:
    """The published signature file's content: base64 of the signature, and a newline."""
    return base64.b64encode(sign(data)) + b"\n"
