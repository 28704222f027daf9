"""The stored snapshot in parts: bounded rows written only when they change (issue 23).

A :class:`WorkflowSnapshot` is stored as

- one ``snapshot_parts`` row per top-level field (``fsm``, ``run``, ``location``, ...), each
  serialized *without* the collections that grow with the run, and
- one ``snapshot_items`` row per item of those collections (:data:`LIST_PATHS`: completed and
  remaining plan items, the FSM history tail, the running behavior's effects and the effects
  history; :data:`MAP_PATHS`: acceptance results, usage per stage, stage visits).

A commit writes the parts whose JSON changed and the items added, dropped or changed, so its
cost does not grow with the run; :func:`read_full` materializes the full view (the same
snapshot, field for field) for every reader. ``version`` lives in ``workflows.version`` only.

:class:`Layout` is the writer's memory of what is stored, for one workflow at one version; a
writer that finds no layout, or one of another version, rebuilds it from the rows.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from notebook_bcc.models.snapshot import WorkflowSnapshot

Path = tuple[str, ...]

LIST_PATHS: tuple[Path, ...] = (
    ("location", "progress", "stages", "completed"),
    ("location", "progress", "stages", "remaining"),
    ("location", "progress", "steps", "completed"),
    ("location", "progress", "steps", "remaining"),
    ("location", "progress", "behaviors", "completed"),
    ("location", "progress", "behaviors", "remaining"),
    ("fsm", "history"),
    ("effects", "current"),
    ("effects", "history"),
    ("action_queue", "actions"),
)
"""Lists kept as item rows (appended at the end, dropped from the front). The current
behavior's queued actions are among them: they change once a behavior, while the queue's
cursor moves at every action. So are the running behavior's effects: every code action adds
its outputs (up to 4,000 characters a cell), and a behavior of many printing cells rewrote
them all at every commit (a 300-cell behavior: a 900 KB part, an 80 MB write-ahead log)."""

MAP_PATHS: tuple[Path, ...] = (
    ("acceptance",),
    ("usage", "per_stage"),
    ("stage_machine", "visits"),
)
"""Maps kept as one row per key."""

SPLIT: tuple[Path, ...] = LIST_PATHS + MAP_PATHS
NOT_PARTS = frozenset({"version"})
"""Top-level fields not stored as parts (``version`` is the ``workflows.version`` column)."""

PART_NAMES: tuple[str, ...] = tuple(
    name for name in WorkflowSnapshot.model_fields if name not in NOT_PARTS
)


@dataclass
class Layout:
    """What is stored for one workflow: part texts, list items with their first seq, map keys
    with their seq, at ``version``."""

    version: int
    parts: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    """The field values the part texts were made from: an identical value is not serialized
    again (snapshot models are replaced, never changed in place)."""
    lists: dict[Path, tuple[int, list[Any] | None]] = field(default_factory=dict)
    """Per split list, its first row's seq and the items its rows hold (None: the rows are not
    known to match the list, e.g. items still held in the part by an older store: rewrite)."""
    maps: dict[Path, tuple[int, dict[str, tuple[int, Any]]]] = field(default_factory=dict)
    raw: dict[Path, Any] = field(default_factory=dict)
    """The map objects last written, to skip an unchanged map without looking inside."""


@dataclass
class WriteStats:
    """Rows one commit wrote (parts and items), and their bytes (benchmarks read them)."""

    rows: int = 0
    bytes: int = 0


def _get(model: Any, path: Path) -> Any:
    value = model
    for name in path:
        value = getattr(value, name)
    return value


def _strip(model: BaseModel, paths: list[Path]) -> BaseModel:
    """``model`` with the collections at ``paths`` (relative to it) emptied (shallow copies)."""
    update: dict[str, Any] = {}
    nested: dict[str, list[Path]] = {}
    for path in paths:
        if len(path) == 1:
            update[path[0]] = {} if path in MAP_PATHS or path[0] in _MAP_LEAVES else []
        else:
            nested.setdefault(path[0], []).append(path[1:])
    for name, rest in nested.items():
        update[name] = _strip(getattr(model, name), rest)
    return model.model_copy(update=update)


_MISSING = object()
_MAP_LEAVES = frozenset(path[-1] for path in MAP_PATHS)
_BY_PART: dict[str, list[Path]] = {}
for _path in SPLIT:
    _BY_PART.setdefault(_path[0], []).append(_path[1:])


def part_texts(snapshot: WorkflowSnapshot, known: Layout | None = None) -> dict[str, str]:
    """Each part's JSON (``{"name": value}``), its growing collections emptied; parts whose
    value is the very object ``known`` made its text from are not serialized again."""
    texts: dict[str, str] = {}
    for name in PART_NAMES:
        if known is not None and name in known.parts:
            before = known.values.get(name, _MISSING)
            if before is getattr(snapshot, name):
                texts[name] = known.parts[name]
                continue
        inner = _BY_PART.get(name)
        if inner is None:
            texts[name] = snapshot.model_dump_json(by_alias=True, include={name})
            continue
        if inner == [()]:
            empty: Any = {}
            texts[name] = json.dumps({name: empty})
            continue
        value = _strip(getattr(snapshot, name), inner)
        texts[name] = '{"' + name + '":' + value.model_dump_json(by_alias=True) + "}"
    return texts


def _item_json(value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json(by_alias=True)
    if isinstance(value, dict):
        return json.dumps(
            {
                k: v.model_dump(mode="json", by_alias=True) if isinstance(v, BaseModel) else v
                for k, v in value.items()
            },
            separators=(",", ":"),
        )
    return json.dumps(value, separators=(",", ":"))


def write(
    db: sqlite3.Connection, workflow_id: str, snapshot: WorkflowSnapshot, layout: Layout
) -> tuple[Layout, WriteStats]:
    """Write what differs from ``layout``; returns the new layout (version not yet set)."""
    stats = WriteStats()
    new = Layout(layout.version)
    for name, text in part_texts(snapshot, layout).items():
        new.parts[name] = text
        new.values[name] = getattr(snapshot, name)
        if layout.parts.get(name) != text:
            db.execute(
                "INSERT INTO snapshot_parts (workflow_id, part, body) VALUES (?, ?, ?)"
                " ON CONFLICT(workflow_id, part) DO UPDATE SET body = excluded.body",
                (workflow_id, name, text),
            )
            stats.rows += 1
            stats.bytes += len(text)
    rows = _Rows(db, workflow_id, stats)
    for path in LIST_PATHS:
        new.lists[path] = _write_list(rows, path, _get(snapshot, path), layout.lists.get(path))
    for path in MAP_PATHS:
        values = _get(snapshot, path)
        if layout.raw.get(path) is values and path in layout.maps:
            new.maps[path] = layout.maps[path]  # the very dict written last time
        else:
            new.maps[path] = _write_map(rows, path, values, layout.maps.get(path))
        new.raw[path] = values
    return new, stats


@dataclass
class _Rows:
    """The item rows of one workflow, written in the current transaction."""

    db: sqlite3.Connection
    workflow_id: str
    stats: WriteStats

    def put(self, key: str, seq: int, item_key: str | None, value: Any) -> None:
        """Insert or replace the item at ``(key, seq)``."""
        body = _item_json(value)
        self.db.execute(
            "INSERT INTO snapshot_items (workflow_id, path, seq, item_key, body)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT(workflow_id, path, seq) DO UPDATE SET"
            " item_key = excluded.item_key, body = excluded.body",
            (self.workflow_id, key, seq, item_key, body),
        )
        self.stats.rows += 1
        self.stats.bytes += len(body)

    def drop(self, key: str, before: int | None = None) -> None:
        """Delete the items of ``key`` (those with ``seq < before`` when given)."""
        if before is None:
            self.db.execute(
                "DELETE FROM snapshot_items WHERE workflow_id = ? AND path = ?",
                (self.workflow_id, key),
            )
        else:
            self.db.execute(
                "DELETE FROM snapshot_items WHERE workflow_id = ? AND path = ? AND seq < ?",
                (self.workflow_id, key, before),
            )
        self.stats.rows += 1


def _write_list(
    rows: _Rows,
    path: Path,
    items: list[Any],
    stored: tuple[int, list[Any] | None] | None,
) -> tuple[int, list[Any]]:
    """Write what changed of the list at ``path`` as item rows; ``stored`` is what the rows
    hold (its first sequence number and items), its items None when the rows are not known
    to match the list (then every row is rewritten)."""
    key = ".".join(path)
    first, old = stored if stored is not None else (0, [])
    if old is None:
        rows.drop(key)
        for offset, item in enumerate(items):
            rows.put(key, first + offset, None, item)
        return first, items
    if items is old or items == old:
        return first, old
    dropped = _dropped_front(old, items)
    if dropped is None:
        rows.drop(key)
        first = first + len(old)
        for offset, item in enumerate(items):
            rows.put(key, first + offset, None, item)
        return first, items
    if dropped:
        rows.drop(key, first + dropped)
    kept = len(old) - dropped
    start = first + dropped
    for offset in range(kept, len(items)):
        rows.put(key, start + offset, None, items[offset])
    return start, items


def _dropped_front(old: list[Any], new: list[Any]) -> int | None:
    """How many items ``new`` dropped from the front of ``old`` before appending, if that is
    all that happened (None: something else changed)."""
    if not old:
        return 0
    if new[: len(old)] == old:
        return 0
    if not new:
        return len(old)
    head = new[0]
    for start in range(1, len(old)):
        if old[start] is head or old[start] == head:
            tail = old[start:]
            if new[: len(tail)] == tail:
                return start
            return None
    return len(old)


def _write_map(
    rows: _Rows,
    path: Path,
    values: dict[str, Any],
    stored: tuple[int, dict[str, tuple[int, Any]]] | None,
) -> tuple[int, dict[str, tuple[int, Any]]]:
    key = ".".join(path)
    next_seq, old = stored if stored is not None else (0, {})
    kept: dict[str, tuple[int, Any]] = {}
    names = list(values)
    if names[: len(old)] != list(old):
        # keys dropped or reordered: rewrite the map so that its order stays
        rows.drop(key)
        for name, value in values.items():
            rows.put(key, next_seq, name, value)
            kept[name] = (next_seq, value)
            next_seq += 1
        return next_seq, kept
    for name, value in values.items():
        stored_item = old.get(name)
        if stored_item is None:
            rows.put(key, next_seq, name, value)
            kept[name] = (next_seq, value)
            next_seq += 1
            continue
        seq, before = stored_item
        if before is not value and before != value:
            rows.put(key, seq, name, value)
        kept[name] = (seq, value)
    return next_seq, kept


def read_layout(db: sqlite3.Connection, workflow_id: str, snapshot: WorkflowSnapshot) -> Layout:
    """The layout of what is stored for ``workflow_id`` (``snapshot`` is its full view)."""
    layout = Layout(snapshot.version)
    for name, body in db.execute(
        "SELECT part, body FROM snapshot_parts WHERE workflow_id = ?", (workflow_id,)
    ):
        layout.parts[name] = body
    firsts: dict[str, int] = {}
    seqs: dict[str, dict[str, int]] = {}
    top: dict[str, int] = {}
    counts: dict[str, int] = {}
    for key, seq, item_key in db.execute(
        "SELECT path, seq, item_key FROM snapshot_items WHERE workflow_id = ? ORDER BY path, seq",
        (workflow_id,),
    ):
        firsts.setdefault(key, seq)
        top[key] = seq + 1
        counts[key] = counts.get(key, 0) + 1
        if item_key is not None:
            seqs.setdefault(key, {})[item_key] = seq
    for path in LIST_PATHS:
        key = ".".join(path)
        view = list(_get(snapshot, path))
        if counts.get(key, 0) != len(view):
            # Items held in the part itself (written before this list was split out), or
            # rows and view disagree: the next write rewrites the list as rows.
            layout.lists[path] = (top.get(key, 0), None)
            continue
        layout.lists[path] = (firsts.get(key, 0), view)
    for path in MAP_PATHS:
        key = ".".join(path)
        values = dict(_get(snapshot, path))
        known = seqs.get(key, {})
        if set(known) != set(values):
            # rows and view disagree (should not happen): force a rewrite of the map
            layout.maps[path] = (top.get(key, 0), {})
            continue
        layout.maps[path] = (top.get(key, 0), {k: (known[k], v) for k, v in values.items()})
    return layout


def read_full(db: sqlite3.Connection, workflow_id: str, version: int) -> WorkflowSnapshot | None:
    """The full view assembled from the parts and items (None when none are stored)."""
    doc: dict[str, Any] = {}
    for (body,) in db.execute(
        "SELECT body FROM snapshot_parts WHERE workflow_id = ?", (workflow_id,)
    ):
        doc.update(json.loads(body))
    if not doc:
        return None
    containers: dict[str, Any] = {}
    for path in SPLIT:
        target: Any = doc
        for name in path:
            target = target[name]
        containers[".".join(path)] = target
    for key, item_key, body in db.execute(
        "SELECT path, item_key, body FROM snapshot_items WHERE workflow_id = ? ORDER BY path, seq",
        (workflow_id,),
    ):
        container = containers.get(key)
        if isinstance(container, list):
            container.append(json.loads(body))
        elif isinstance(container, dict) and item_key is not None:
            container[item_key] = json.loads(body)
    doc["version"] = version
    return WorkflowSnapshot.model_validate(doc)


def stored_bytes(db: sqlite3.Connection, workflow_id: str) -> tuple[int, int]:
    """Bytes of the stored snapshot (its parts) and of its item rows."""
    part = db.execute(
        "SELECT COALESCE(SUM(LENGTH(body)), 0) FROM snapshot_parts WHERE workflow_id = ?",
        (workflow_id,),
    ).fetchone()[0]
    items = db.execute(
        "SELECT COALESCE(SUM(LENGTH(body)), 0) FROM snapshot_items WHERE workflow_id = ?",
        (workflow_id,),
    ).fetchone()[0]
    return int(part), int(items)


def delete(db: sqlite3.Connection, workflow_id: str) -> None:
    """Remove a workflow's parts and items."""
    db.execute("DELETE FROM snapshot_parts WHERE workflow_id = ?", (workflow_id,))
    db.execute("DELETE FROM snapshot_items WHERE workflow_id = ?", (workflow_id,))
