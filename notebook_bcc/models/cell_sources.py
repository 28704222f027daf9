"""Digests of the sources the workflow gave a cell: how a new process knows its own writes.

The store keeps, per cell, the digests of the last :data:`SOURCES_KEPT` sources the workflow
gave it. A writer started after a crash reads the file an earlier process wrote: a cell whose
source there is one of those is the workflow's own older version (the crash came before the
newer one reached the file), not a user's edit, and takes the stored version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

SOURCES_KEPT = 8
"""How many of a cell's latest workflow sources the store remembers (a file lags the store
by the writes of one debounce, so one or two are what a resume ever needs)."""

DIGEST_CHARS = 16
"""Hex characters of a source digest (64 bits: a collision is not a practical concern)."""


def source_digest(source: str | Sequence[str]) -> str:
    """The digest of a cell source (nbformat's list-of-lines form reads as its joined text)."""
    text = source if isinstance(source, str) else "".join(source)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def kept_digests(stored: str) -> frozenset[str]:
    """The digests a store column holds (comma separated, oldest first)."""
    return frozenset(part for part in stored.split(",") if part)
