"""Tamper-evidence to the last row: chain heads, change logs of mutable tables, external anchors.

A hash chain alone proves that the rows it holds are unaltered, not that none are missing at
its end: deleting the last row (or every row) leaves a valid, shorter chain. So:

- **Chain heads.** ``chain_heads`` holds, per chain, the row count, the last ``seq`` and the
  last hash. :func:`append_chained` inserts a chained row *and* advances its head in the same
  statement sequence, inside the caller's transaction, and chains each new row to the head
  (not to whatever row is last), so a tail deletion is both a count mismatch and, once the
  run goes on, a broken link.
- **Mutable tables.** ``contracts`` and ``cells`` are upserted (a contract's status moves,
  a cell's outputs change), so they cannot be chained row by row. Every upsert instead
  appends to a chained change log (``contract_log`` / ``cell_log``) the SHA-256 of the row
  *as stored after the upsert*. :func:`verify_chains` folds each log (last state per key,
  keys in order of first appearance) and compares it with the table: a row edited (digest
  differs), deleted (a logged key is missing), inserted (a key no log entry names) or
  reordered (row order differs from the order rows were first written; the store never
  deletes from these tables) is named with its table and key.
- **Outside the file.** :func:`export_anchor` gives the heads as a small JSON document to
  keep elsewhere (``trace --export-anchor FILE``, a notebook's ``metadata.notebook_bcc.
  anchor``); :func:`check_anchor` checks a database against one: every anchored row must
  still be there, with the anchored hash and as many rows up to it. A database that grew
  since passes; one whose anchored prefix was rewritten, truncated or emptied does not.

Out of scope: an attacker who can rewrite the whole file *and* every copy of the anchor can
forge a consistent history (nothing here is secret or signed).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from notebook_bcc.store.errors import ChainBrokenError
from notebook_bcc.store.schema import CHAINED_TABLES, REQUIRED_TABLES

GENESIS = "0" * 64
"""``prev_hash`` of the first row of every chained table."""

ANCHOR_FORMAT = "notebook-bcc-anchor"
ANCHOR_VERSION = 1

CONTRACT_COLUMNS = (
    "execution_id",
    "workflow_id",
    "run_id",
    "action_type",
    "irreversible",
    "idempotency_key",
    "status",
    "body",
    "updated_at",
)
CELL_COLUMNS = (
    "workflow_id",
    "cell_id",
    "position",
    "contract_id",
    "cell",
    "updated_at",
    "sources",
)

LOGGED_TABLES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "contracts": ("contract_log", CONTRACT_COLUMNS, ("execution_id",)),
    "cells": ("cell_log", CELL_COLUMNS, ("workflow_id", "cell_id")),
}
"""Mutable table -> (its change log, the columns its state digest covers, its key columns)."""


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""The canonical JSON of hashed rows, built once (``json.dumps`` with these options builds an
encoder per call: a third of a row hash's time, and a commit hashes about 28 rows)."""


def canonical_json(value: Any) -> str:
    """``value`` as the store's canonical JSON: sorted keys, no spaces, UTF-8 kept."""
    return _CANONICAL.encode(value)


def row_hash(prev_hash: str, values: Sequence[Any]) -> str:
    """SHA-256 over the previous row's hash and the canonical JSON of a row's columns."""
    payload = canonical_json(list(values))
    return hashlib.sha256(f"{prev_hash}\n{payload}".encode()).hexdigest()


def state_digest(values: Sequence[Any]) -> str:
    """SHA-256 of a mutable row's stored columns (what its change-log entry records)."""
    return row_hash("state", values)


# -- writing (inside the caller's transaction) -------------------------------------------------


def head(db: sqlite3.Connection, chain: str) -> tuple[int, int, str] | None:
    """``(rows, last_seq, hash)`` anchored for ``chain``, or None when it has no head row."""
    row = db.execute(
        "SELECT rows, last_seq, head_hash FROM chain_heads WHERE chain = ?", (chain,)
    ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), str(row[2]))


def append_chained(
    db: sqlite3.Connection,
    table: str,
    values: Sequence[Any] | Callable[[int], Sequence[Any]],
) -> int:
    """Insert a row (``values`` without ``seq``) into chained ``table``, advance its head.

    ``values`` may be a function of the new row's ``seq`` (an event's body embeds it). The
    new row chains to the head when there is one (a deleted tail then shows as a broken
    link), else to the table's last row. Returns the row's ``seq``.
    """
    chains = ChainWriter(db)
    seq = chains.append(table, values)
    chains.flush()
    return seq


class ChainWriter:
    """The chained rows of one transaction, written together at :meth:`flush`.

    Each chain's head is read once, the rows are hashed in order (each to the one before,
    the first to the head), inserted with one ``executemany`` per chain, and the head is
    advanced once per chain: the same rows and heads as one :func:`append_chained` per row,
    in a few statements instead of three per row. Use inside the caller's transaction.
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._tips: dict[str, tuple[int, str]] = {}
        self._rows: dict[str, list[tuple[Any, ...]]] = {}
        self._heads: dict[str, tuple[int, str]] | None = None

    def _tip(self, table: str) -> tuple[int, str]:
        tip = self._tips.get(table)
        if tip is not None:
            return tip
        if self._heads is None:  # every chain's head in one read, at the first row
            self._heads = {
                str(chain): (int(last_seq), str(digest))
                for chain, last_seq, digest in self._db.execute(
                    "SELECT chain, last_seq, head_hash FROM chain_heads"
                )
            }
        anchored = self._heads.get(table)
        if anchored is not None:
            return anchored
        last = self._db.execute(
            f"SELECT seq, hash FROM {table} ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        return (0, GENESIS) if last is None else (int(last[0]), str(last[1]))

    def append(self, table: str, values: Sequence[Any] | Callable[[int], Sequence[Any]]) -> int:
        """Queue a row of ``table`` (``values`` or a function of its ``seq``); its ``seq``."""
        last_seq, prev = self._tip(table)
        seq = last_seq + 1
        row = (seq, *(values(seq) if callable(values) else values))
        digest = row_hash(prev, row)
        self._rows.setdefault(table, []).append((*row, prev, digest))
        self._tips[table] = (seq, digest)
        return seq

    def log_change(
        self, table: str, key: Sequence[Any], stored: Sequence[Any], workflow_id: str
    ) -> None:
        """Log the digest of ``table``'s row ``key`` as now ``stored`` (an upsert's
        ``RETURNING`` of :data:`LOGGED_TABLES`' columns) in its change log."""
        log, _, _ = LOGGED_TABLES[table]
        row_key = "\x1f".join(str(part) for part in key)
        self.append(log, (workflow_id, row_key, state_digest(stored)))

    def flush(self) -> None:
        """Insert the queued rows and advance each chain's head (one statement for all)."""
        heads: list[tuple[str, int, int, str]] = []
        for table, rows in self._rows.items():
            columns = CHAINED_TABLES[table]
            marks = ", ".join("?" for _ in range(len(columns) + 2))
            self._db.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}, prev_hash, hash) VALUES ({marks})",
                rows,
            )
            last_seq, digest = self._tips[table]
            heads.append((table, len(rows), last_seq, digest))
        if heads:
            self._db.executemany(
                "INSERT INTO chain_heads (chain, rows, last_seq, head_hash) VALUES (?, ?, ?, ?)"
                " ON CONFLICT(chain) DO UPDATE SET rows = chain_heads.rows + excluded.rows,"
                " last_seq = excluded.last_seq, head_hash = excluded.head_hash",
                heads,
            )
        self._rows.clear()
        self._heads = None


def backfill(db: sqlite3.Connection) -> None:
    """Migration step for a database written before the anchors: anchor what is there.

    Every chain gets a head row (a missing one is then always tampering), set from its
    current last row; every existing contract and
    cell gets a change-log entry (in the order the rows were written). Tampering done before
    this migration cannot be detected; everything after it can.
    """
    for table in CHAINED_TABLES:
        if head(db, table) is not None:
            continue
        count, last = db.execute(f"SELECT COUNT(*), MAX(seq) FROM {table}").fetchone()
        digest = GENESIS
        if count:
            digest = db.execute(f"SELECT hash FROM {table} WHERE seq = ?", (last,)).fetchone()[0]
        db.execute(
            "INSERT INTO chain_heads (chain, rows, last_seq, head_hash) VALUES (?, ?, ?, ?)",
            (table, int(count), int(last or 0), str(digest)),
        )
    relog(db, *LOGGED_TABLES)


def relog(db: sqlite3.Connection, *tables: str) -> None:
    """Log the current state of every row of ``tables`` (in the order they were written).

    The anchoring migration logs what is there; a later one that widens a table's digest
    (schema 6: ``cells.sources``) logs every row again, so each key's last entry is the new
    digest. Columns a table does not have yet (an older schema mid-migration) are left out:
    a later step logs them again.
    """
    chains = ChainWriter(db)
    for table in tables:
        _, wanted, key_columns = LOGGED_TABLES[table]
        present = {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}
        columns = [c for c in wanted if c in present]
        rows = db.execute(
            f"SELECT {', '.join(columns)}, {', '.join(key_columns)}, workflow_id FROM {table}"
            " ORDER BY rowid"
        ).fetchall()
        for row in rows:
            stored, key = row[: len(columns)], row[len(columns) : -1]
            chains.log_change(table, key, stored, str(row[-1]))
    chains.flush()


# -- verifying ----------------------------------------------------------------------------------


@dataclass
class Verification:
    """What :func:`verify_chains` checked."""

    rows: dict[str, int] = field(default_factory=dict)
    """Rows walked per chain."""
    tables: dict[str, int] = field(default_factory=dict)
    """Rows of each mutable table matched against its change log."""

    @property
    def total(self) -> int:
        """Chained rows checked in all chains."""
        return sum(self.rows.values())


def _broken(message: str, table: str, **details: Any) -> ChainBrokenError:
    return ChainBrokenError(message, details={"table": table, **details})


def _walk(db: sqlite3.Connection, table: str) -> tuple[int, int, str]:
    """Check ``table``'s links; ``(rows, last_seq, last_hash)``."""
    columns = CHAINED_TABLES[table]
    prev, count, last_seq = GENESIS, 0, 0
    query = f"SELECT {', '.join(columns)}, prev_hash, hash FROM {table} ORDER BY seq"
    for row in db.execute(query):
        values, prev_hash, digest = row[: len(columns)], row[-2], row[-1]
        if prev_hash != prev or _digest(table, f"seq={values[0]}", prev, values) != digest:
            raise _broken(
                f"{table} row seq={values[0]} does not match its hash chain: the row was "
                "edited, inserted or deleted after it was written",
                table,
                seq=values[0],
            )
        prev, count, last_seq = digest, count + 1, int(values[0])
    return count, last_seq, prev


def _digest(table: str, where: str, prev: str, values: Sequence[Any]) -> str:
    """``row_hash``, or a located break when a column holds what the store never writes
    (a BLOB where it writes text: JSON cannot encode it)."""
    try:
        return row_hash(prev, values)
    except (TypeError, ValueError) as exc:
        raise _broken(
            f"{table} row {where} holds a value of a type the store never writes ({exc}): "
            "the row was edited after it was written",
            table,
            row=where,
        ) from None


def _check_head(db: sqlite3.Connection, table: str, walked: tuple[int, int, str]) -> None:
    count, last_seq, last_hash = walked
    try:
        anchored = head(db, table)
    except (TypeError, ValueError) as exc:
        raise _broken(
            f"chain_heads row {table!r} holds a value of a type the store never writes "
            f"({exc}): the chain head was edited",
            table,
        ) from None
    if anchored is None:
        raise _broken(
            f"{table}: {count} rows but no chain head in chain_heads (the anchor row was deleted)",
            table,
            rows=count,
        )
    rows, anchored_seq, anchored_hash = anchored
    if (rows, anchored_seq, anchored_hash) != (count, last_seq, last_hash):
        if count < rows:
            what = f"{rows - count} row(s) deleted from the end (or the whole table)"
        else:
            what = "rows or the chain head changed after they were written"
        raise _broken(
            f"{table}: the chain holds {count} rows ending at seq={last_seq} but its head "
            f"records {rows} rows ending at seq={anchored_seq}: {what}",
            table,
            rows=count,
            anchored_rows=rows,
            last_seq=last_seq,
            anchored_seq=anchored_seq,
        )


def _check_logged(db: sqlite3.Connection, table: str) -> int:
    """Compare a mutable table with the fold of its change log; rows matched."""
    log, columns, key_columns = LOGGED_TABLES[table]
    latest: dict[str, str] = {}
    for key, state in db.execute(f"SELECT row_key, state FROM {log} ORDER BY seq"):
        latest[str(key)] = str(state)
    order = list(latest)
    seen: list[str] = []
    query = f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid"
    index = {name: i for i, name in enumerate(columns)}
    for row in db.execute(query):
        key = "\x1f".join(str(row[index[c]]) for c in key_columns)
        shown = " ".join(f"{c}={row[index[c]]}" for c in key_columns)
        if key not in latest:
            raise _broken(
                f"{table} row {shown} has no entry in {log}: it was inserted outside the store",
                table,
                key=shown,
            )
        if _digest(table, shown, "state", row) != latest[key]:
            raise _broken(
                f"{table} row {shown} differs from its last logged state in {log}: the row "
                "was edited after it was written",
                table,
                key=shown,
            )
        seen.append(key)
    missing = [key for key in order if key not in set(seen)]
    if missing:
        shown = missing[0].replace("\x1f", " ")
        raise _broken(
            f"{table}: {len(missing)} logged row(s) missing, first {shown!r}: rows were deleted",
            table,
            key=shown,
            missing=len(missing),
        )
    if seen != order:
        first = next(i for i, (a, b) in enumerate(zip(seen, order, strict=True)) if a != b)
        shown = seen[first].replace("\x1f", " ")
        raise _broken(
            f"{table}: rows are not in the order they were written (first out of place: "
            f"{shown!r}): rows were reordered or re-inserted",
            table,
            key=shown,
        )
    return len(seen)


def verify_chains(db: sqlite3.Connection) -> Verification:
    """Check every chain's links and head, and contracts/cells against their logs.

    Run inside one read transaction (:func:`read_consistently`) when a workflow may be
    writing: read piecemeal, a commit landing between a chain's walk and its head read looks
    like deleted rows.
    """
    report = Verification()
    try:
        present = {
            str(row[0]) for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        missing = [table for table in REQUIRED_TABLES if table not in present]
        if missing:
            raise _broken(
                f"the store's table(s) {', '.join(missing)} are missing: the file was altered "
                "(tables were dropped)",
                missing[0],
                missing=missing,
            )
        for table in CHAINED_TABLES:
            walked = _walk(db, table)
            _check_head(db, table, walked)
            report.rows[table] = walked[0]
        for table in LOGGED_TABLES:
            report.tables[table] = _check_logged(db, table)
    except sqlite3.DatabaseError as exc:
        raise ChainBrokenError(
            f"the store's tables are missing or malformed ({exc}): the file was altered",
            details={"table": None, "cause": str(exc)},
        ) from None
    return report


# -- anchors outside the database -------------------------------------------------------------


@contextmanager
def read_consistently(db: sqlite3.Connection) -> Iterator[None]:
    """One read transaction around the block (WAL: a snapshot no concurrent commit moves);
    an autocommit connection outside a transaction only."""
    if db.in_transaction:
        yield
        return
    db.execute("BEGIN")
    try:
        yield
    finally:
        db.execute("ROLLBACK")


def export_anchor(db: sqlite3.Connection) -> dict[str, Any]:
    """The chain heads as a JSON document to keep outside the database."""
    chains: dict[str, dict[str, Any]] = {}
    for table in CHAINED_TABLES:
        anchored = head(db, table) or (0, 0, GENESIS)
        chains[table] = {"rows": anchored[0], "last_seq": anchored[1], "hash": anchored[2]}
    return {"format": ANCHOR_FORMAT, "version": ANCHOR_VERSION, "chains": chains}


def check_anchor(db: sqlite3.Connection, anchor: Any) -> None:
    """Refuse (:class:`ChainBrokenError`) a database whose anchored prefix is not intact."""
    try:
        _check_anchor(db, anchor)
    except sqlite3.DatabaseError as exc:
        raise ChainBrokenError(
            f"the store's tables are missing or malformed ({exc}): the file was altered",
            details={"table": None, "cause": str(exc)},
        ) from None


def _check_anchor(db: sqlite3.Connection, anchor: Any) -> None:
    if (
        not isinstance(anchor, dict)
        or anchor.get("format") != ANCHOR_FORMAT
        or not isinstance(anchor.get("chains"), dict)
    ):
        raise ChainBrokenError(
            "the anchor is not a notebook-bcc anchor document", details={"table": None}
        )
    if not anchor["chains"]:
        raise ChainBrokenError(
            "the anchor names no chain: it cannot vouch for anything", details={"table": None}
        )
    for table, expected in anchor["chains"].items():
        if table not in CHAINED_TABLES or not isinstance(expected, dict):
            raise _broken(f"the anchor names an unknown chain {table!r}", str(table))
        rows, last_seq, digest = (
            expected.get("rows"),
            expected.get("last_seq"),
            expected.get("hash"),
        )
        if (
            not isinstance(rows, int)
            or not isinstance(last_seq, int)
            or not isinstance(digest, str)
            or isinstance(rows, bool)
            or isinstance(last_seq, bool)
            or rows < 0
            or last_seq < 0
        ):
            raise _broken(
                f"the anchor's entry for {table} is malformed (rows and last_seq must be "
                f"counts, hash a string: {expected!r})",
                str(table),
            )
        if rows == 0:
            continue  # the chain was empty when anchored: nothing to vouch for
        found = db.execute(f"SELECT hash FROM {table} WHERE seq = ?", (last_seq,)).fetchone()
        count = db.execute(f"SELECT COUNT(*) FROM {table} WHERE seq <= ?", (last_seq,)).fetchone()
        if found is None or int(count[0]) != rows:
            raise _broken(
                f"{table}: the anchor records {rows} rows up to seq={last_seq}; the database "
                f"holds {int(count[0])} and {'no' if found is None else 'a'} row seq={last_seq}: "
                "anchored rows were deleted",
                table,
                anchored_rows=rows,
                rows=int(count[0]),
            )
        if str(found[0]) != digest:
            raise _broken(
                f"{table}: row seq={last_seq} differs from the anchor's hash: the anchored "
                "history was rewritten",
                table,
                seq=last_seq,
            )


def notebook_anchor(db: sqlite3.Connection) -> dict[str, Any]:
    """What a notebook writer puts in ``metadata.notebook_bcc.anchor`` at each flush."""
    return export_anchor(db)


def carried_anchor(notebook: Any) -> Any:
    """The anchor a notebook document carries (``metadata.notebook_bcc.anchor``), or None:
    the reader of :func:`put_anchor`."""
    metadata = notebook.get("metadata") if isinstance(notebook, dict) else None
    own = metadata.get("notebook_bcc") if isinstance(metadata, dict) else None
    return own.get("anchor") if isinstance(own, dict) else None


def put_anchor(
    metadata: dict[str, Any], anchor: dict[str, Any], workflow_id: str | None = None
) -> None:
    """Set ``metadata["notebook_bcc"]["anchor"]`` (creating the ``notebook_bcc`` key),
    naming the workflow whose store it mirrors (see :func:`anchor_workflow`)."""
    own = metadata.setdefault("notebook_bcc", {})
    if isinstance(own, dict):
        own["anchor"] = anchor if workflow_id is None else {**anchor, "workflow_id": workflow_id}


def anchor_workflow(anchor: Any) -> str | None:
    """The workflow whose store wrote a notebook's anchor, or None (an anchor file, or a
    notebook written before anchors named it). A notebook can carry another database's
    anchor -- run first with another ``--state-db``, copied from another project -- and its
    heads then say nothing about this database: a check must not read them as cut rows."""
    owner = anchor.get("workflow_id") if isinstance(anchor, dict) else None
    return owner if isinstance(owner, str) and owner else None
