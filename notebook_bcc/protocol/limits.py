"""Bounds that keep hostile or runaway payloads cheap to refuse."""

from __future__ import annotations

MAX_PAYLOAD_CHARS = 10 * 1024 * 1024
"""Largest payload accepted, in characters (and in bytes for byte input): 10 MiB."""

MAX_DEPTH = 64
"""Deepest nesting accepted, for XML elements and for JSON arrays/objects alike."""

MAX_REPAIR_NOTES = 100
"""Repair notes kept per document; later ones are counted in a final summary note."""
