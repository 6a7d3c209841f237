"""Uniform random bits from the operating system (DESIGN.md rule 2), for the engine's exact
integer sampling outside OpenDP's samplers (randomized response's reports, a synthetic table's
rows), never a seeded pseudo-random generator (Python's or numpy's).

A :data:`ByteSource` is one small function, injected where tests substitute deterministic bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

ByteSource = Callable[[int], bytes]
"""``source(count)`` returns ``count`` uniformly random bytes."""


def system_random_bytes(count: int) -> bytes:
    """``count`` bytes from the operating system's CSPRNG (``os.urandom``)."""
    return os.urandom(count)


def random_words(count: int, source: ByteSource, dtype: str) -> np.ndarray:
    """``count`` uniform unsigned integers of ``dtype`` (little-endian, e.g. ``"<u4"``)."""
    size = np.dtype(dtype).itemsize * count
    data = source(size)
    if len(data) != size:
        raise RuntimeError(f"the byte source returned {len(data)} bytes, not {size}")
    return np.frombuffer(data, dtype=dtype)
