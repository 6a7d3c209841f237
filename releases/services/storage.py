"""Files in a Django storage (a directory or S3-compatible object storage) as local paths, for the
libraries that read and write files by path (the CSV reader, pyarrow, DuckDB)."""

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

from django.core.files import File
from django.core.files.storage import Storage

COPY_CHUNK_BYTES = 1 << 20
# What the app's own files and folders allow: their owner (the service's user) only.
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIRECTORY_MODE = 0o700


def private_directory(path: Path) -> None:
    """Create ``path`` (and its parents) if needed, and make it its owner's only."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(PRIVATE_DIRECTORY_MODE)


def private_opener(path: str, flags: int) -> int:
    """An ``open(..., opener=)`` that creates the file readable by its owner only, from the
    first byte."""
    return os.open(path, flags, PRIVATE_FILE_MODE)


def storage_local_path(storage: Storage) -> bool:
    """Whether the storage's files are on this machine's file system."""
    try:
        storage.path("probe")
    except NotImplementedError:
        return False
    return True


@contextmanager
def local_copy(storage: Storage, name: str) -> Iterator[str]:
    """A local path holding the stored file ``name``: the file itself on a file system storage,
    else a temporary download, removed afterwards."""
    if storage_local_path(storage):
        yield storage.path(name)
        return
    with tempfile.TemporaryDirectory() as folder:
        local = Path(folder) / Path(name).name
        with storage.open(name, "rb") as source, open(local, "wb") as target:
            shutil.copyfileobj(source, target, COPY_CHUNK_BYTES)
        yield str(local)


def store_local_file(storage: Storage, local: str | Path, name: str) -> str:
    """Store the local file at ``name``, replacing what was there; returns the stored name."""
    storage.delete(name)
    if storage_local_path(storage) and Path(storage.path(name)) == Path(local):
        return name
    with open(local, "rb") as handle:
        return storage.save(name, File(handle, name=Path(name).name))


def object_storage_uri(storage: Storage, name: str) -> str | None:
    """The stored file ``name`` as an ``s3://`` URI that pyarrow opens (with the endpoint, scheme
    and region of a non-AWS store), or None for a file system storage. It carries no credentials:
    each process that opens it uses its own (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``)."""
    if storage_local_path(storage):
        return None
    key = storage._normalize_name(name)  # the object key, with the storage's location prefix
    query: dict[str, str] = {}
    endpoint = getattr(storage, "endpoint_url", None)
    if endpoint:
        parsed = urlsplit(endpoint)
        # Host and port only: credentials written into the endpoint must not travel with the
        # location (Dask logs a failed task's arguments).
        query["endpoint_override"] = (
            f"{parsed.hostname}:{parsed.port}" if parsed.port else str(parsed.hostname)
        )
        query["scheme"] = parsed.scheme
    region = getattr(storage, "region_name", None)
    if region:
        query["region"] = region
    suffix = f"?{urlencode(query)}" if query else ""
    return f"s3://{storage.bucket_name}/{quote(key)}{suffix}"
