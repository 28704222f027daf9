"""``notebook-bcc trace --verify [--anchor FILE]`` and ``trace --export-anchor FILE``.

``--verify`` checks every hash chain up to its anchored head, ``contracts`` and ``cells``
against their change logs, and, with ``--anchor FILE``, that the anchored prefix exported
earlier is still intact (see :mod:`notebook_bcc.store.anchor`). Exit 0 when all hold, 1
naming the first tampered table and row, 2 for an anchor file that cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from notebook_bcc.store.anchor import carried_anchor
from notebook_bcc.store.errors import ChainBrokenError
from notebook_bcc.store.sqlite import SqliteStore


def _read_anchor(path: Path) -> Any:
    """An anchor document, or the one a notebook carries (``metadata.notebook_bcc.anchor``):
    a copy of the notebook is an anchor too."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        print(f"error: {path}: cannot read the anchor: {reason}", file=sys.stderr)
        return None
    if isinstance(document, dict) and "cells" in document and "metadata" in document:
        carried = carried_anchor(document)
        if carried is None:
            print(
                f"error: {path} is a notebook without an anchor (no metadata.notebook_bcc."
                "anchor: a workflow writes one at each behavior's end)",
                file=sys.stderr,
            )
        return carried
    return document


def export_anchor_file(store: SqliteStore, path: Path) -> None:
    """Write the store's chain heads to ``path`` (atomically: a temp file then rename)."""
    document = store.export_anchor()
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    temp.replace(path)


def verify_store(store: SqliteStore, args: argparse.Namespace) -> int:
    """Run the checks the flags ask for; the exit code."""
    if args.anchor is not None and not args.verify:
        print("error: --anchor FILE goes with --verify", file=sys.stderr)
        return 2
    if args.verify:
        external = None
        if args.anchor is not None:
            external = _read_anchor(args.anchor)
            if external is None:
                return 2
        try:
            report = store.verification(external)
        except ChainBrokenError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            return 1
        chains = ", ".join(f"{table} {count}" for table, count in report.rows.items())
        tables = ", ".join(f"{table} {count}" for table, count in report.tables.items())
        print(
            f"chain verified: {report.total} rows in {len(report.rows)} chains"
            f" ({chains}); every chain ends at its anchored head; contracts and cells match"
            f" their change logs ({tables})"
            + (f"; the anchored prefix of {args.anchor} is intact" if external else "")
        )
    if args.export_anchor is not None:
        try:
            export_anchor_file(store, args.export_anchor)
        except OSError as exc:
            print(f"error: {args.export_anchor}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"anchor written to {args.export_anchor}")
    return 0
