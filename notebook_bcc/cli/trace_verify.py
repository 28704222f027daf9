"""``notebook-bcc trace --verify [--anchor FILE]`` and ``trace --export-anchor FILE``.

``--verify`` checks every hash chain up to its anchored head, ``contracts`` and ``cells``
against their change logs, and, with ``--anchor FILE``, that the anchored prefix exported
earlier is still intact (see :mod:`notebook_bcc.store.anchor`). Exit 0 when all hold, 1
naming the first tampered table and row, 2 for an anchor file that cannot be read. With
``--json`` the outcome is one JSON document on stdout: ``{"ok", "rows", "chains", "tables",
"anchor", "problems": [{"code", "message", "details"}]}`` (and ``exported_anchor``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from notebook_bcc.store.anchor import anchor_workflow, carried_anchor
from notebook_bcc.store.errors import ChainBrokenError
from notebook_bcc.store.sqlite import SqliteStore


def _read_anchor(path: Path) -> tuple[Any, str | None]:
    """``(document, None)``: an anchor document, or the one a notebook carries
    (``metadata.notebook_bcc.anchor``: a copy of the notebook is an anchor too); else
    ``(None, why)`` with the error line to print."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return None, f"{path}: cannot read the anchor: {reason}"
    if isinstance(document, dict) and "cells" in document and "metadata" in document:
        carried = carried_anchor(document)
        if carried is None:
            return None, (
                f"{path} is a notebook without an anchor (no metadata.notebook_bcc."
                "anchor: a workflow writes one at each behavior's end)"
            )
        return carried, None
    return document, None


def export_anchor_file(store: SqliteStore, path: Path) -> None:
    """Write the store's chain heads to ``path`` (atomically: a temp file then rename)."""
    document = store.export_anchor()
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    temp.replace(path)


def verify_store(store: SqliteStore, args: argparse.Namespace) -> int:
    """Run the checks the flags ask for; the exit code.

    With ``--json`` what was checked is printed as one JSON document (see
    :func:`_verify`) instead of the sentences, so a script reads the verdict and its
    counts; the exit codes and the ``error:`` lines on stderr are the same.
    """
    if args.anchor is not None and not args.verify:
        print("error: --anchor FILE goes with --verify", file=sys.stderr)
        return 2
    as_json = bool(getattr(args, "json", False))
    checked = dict.fromkeys(("rows", "chains", "tables", "anchor")) if args.verify else {}
    document: dict[str, Any] = {"ok": True, **checked, "problems": []}
    code = _verify(store, args, document, as_json=as_json) if args.verify else 0
    if code == 0 and args.export_anchor is not None:
        code = _export(store, args.export_anchor, document, as_json=as_json)
    if as_json:
        print(json.dumps(document, indent=2, ensure_ascii=False, default=str))
    return code


def _problem(document: dict[str, Any], code: str, message: str, **details: Any) -> None:
    """Record a problem in the JSON document and print it as an error line on stderr."""
    document["ok"] = False
    document["problems"].append({"code": code, "message": message, "details": details})
    print(f"error: {message}", file=sys.stderr)


def _verify(
    store: SqliteStore, args: argparse.Namespace, document: dict[str, Any], *, as_json: bool
) -> int:
    """``--verify``: fill ``document`` with ``rows`` (chained rows checked), ``chains`` and
    ``tables`` (rows per chain, per table matched against its change log; all None when a
    check failed: the walk stops at the first problem) and ``anchor`` (the file checked
    against, or None); 1 for a tampered store, 2 for an unreadable anchor."""
    external = None
    if args.anchor is not None:
        external, why = _read_anchor(args.anchor)
        if why is not None:
            _problem(document, "anchor_unreadable", why, path=str(args.anchor))
            return 2
        owner = anchor_workflow(external)
        if owner is not None and owner not in store.workflow_ids():
            _problem(
                document,
                "anchor_of_another_database",
                f"{args.anchor} carries the anchor of workflow {owner}, which "
                f"{store.path} does not hold: it vouches for another database, not this one "
                "(the notebook was run with another --state-db); nothing was checked against it",
                path=str(args.anchor),
                workflow_id=owner,
            )
            return 2
    try:
        report = store.verification(external)
    except ChainBrokenError as exc:
        _problem(document, exc.code, exc.message, **exc.details)
        return 1
    document.update(
        rows=report.total,
        chains=dict(report.rows),
        tables=dict(report.tables),
        anchor=str(args.anchor) if external is not None else None,
    )
    if not as_json:
        chains = ", ".join(f"{table} {count}" for table, count in report.rows.items())
        tables = ", ".join(f"{table} {count}" for table, count in report.tables.items())
        print(
            f"chain verified: {report.total} rows in {len(report.rows)} chains"
            f" ({chains}); every chain ends at its anchored head; contracts and cells match"
            f" their change logs ({tables})"
            + (f"; the anchored prefix of {args.anchor} is intact" if external else "")
        )
    return 0


def _export(store: SqliteStore, path: Path, document: dict[str, Any], *, as_json: bool) -> int:
    """``--export-anchor FILE``: write it; ``exported_anchor`` in ``document`` (2 on failure)."""
    try:
        export_anchor_file(store, path)
    except OSError as exc:
        _problem(document, "anchor_not_written", f"{path}: {exc.strerror or exc}", path=str(path))
        return 2
    document["exported_anchor"] = str(path)
    if not as_json:
        print(f"anchor written to {path}")
    return 0
