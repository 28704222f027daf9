"""Where finished cells go: the ``CellSink`` protocol and two library sinks.

The engine's store is a sink (it persists each cell in its contract's transaction, DESIGN §9
D10); the notebook writer is one too. Here: an in-memory sink (tests, embedding) and an
append-only JSONL file sink (library use without a database). Sinks are called synchronously
on the event loop, so they must be quick; they copy what they keep, because the runner changes
cells in place later.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

from notebook_bcc.kernel.results import CellChange, CellRecord


@runtime_checkable
class CellSink(Protocol):
    """Receives every cell the runner creates, changes or executes, and notebook metadata."""

    def put(self, record: CellRecord) -> None:
        """A cell was created, updated in place, or finished executing."""

    def metadata_changed(self, metadata: Mapping[str, Any]) -> None:
        """The notebook-level metadata changed (kernel info, title)."""


def _frozen(cell: Mapping[str, Any]) -> dict[str, Any]:
    """A deep, JSON-only copy of a cell (faster than ``copy.deepcopy`` for JSON data)."""
    copied: dict[str, Any] = json.loads(json.dumps(cell))
    return copied


class MemorySink:
    """Keeps the latest state of each cell (in creation order) and the list of changes.

    Each cell is kept as its JSON text (one ``json.dumps`` per change, no shared references);
    :attr:`cells` decodes them when read.
    """

    def __init__(self) -> None:
        self._cells: dict[str, str] = {}
        self.changes: list[tuple[str, CellChange]] = []
        self.metadata: dict[str, Any] = {}

    def put(self, record: CellRecord) -> None:
        """Store the cell's current JSON and note the change."""
        self._cells[record.cell_id] = json.dumps(record.cell)
        self.changes.append((record.cell_id, record.change))

    def metadata_changed(self, metadata: Mapping[str, Any]) -> None:
        """Store a copy of the notebook metadata."""
        self.metadata = _frozen(metadata)

    @property
    def cells(self) -> dict[str, dict[str, Any]]:
        """Every cell received, by id, decoded (a fresh copy on each read)."""
        return {cell_id: json.loads(text) for cell_id, text in self._cells.items()}

    def cell(self, cell_id: str) -> dict[str, Any]:
        """One cell, decoded."""
        decoded: dict[str, Any] = json.loads(self._cells[cell_id])
        return decoded


class JsonlSink:
    """Appends one JSON line per cell change (and per metadata change) to a file.

    Lines are ``{"kind": "cell", "cell_id", "index", "change", "path", "cell"}`` or
    ``{"kind": "metadata", "metadata"}``; the last line for a cell id is its current state.
    Each line is flushed; ``fsync=True`` also forces it to disk.
    """

    def __init__(self, path: str | Path, *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._file: IO[str] | None = None

    def _out(self) -> IO[str]:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        return self._file

    def _write(self, line: dict[str, Any]) -> None:
        out = self._out()
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        out.flush()
        if self.fsync:
            os.fsync(out.fileno())

    def put(self, record: CellRecord) -> None:
        """Append the cell's current state."""
        self._write(
            {
                "kind": "cell",
                "cell_id": record.cell_id,
                "index": record.index,
                "change": record.change,
                "path": record.path,
                "cell": record.cell,
            }
        )

    def metadata_changed(self, metadata: Mapping[str, Any]) -> None:
        """Append the notebook metadata."""
        self._write({"kind": "metadata", "metadata": dict(metadata)})

    def close(self) -> None:
        """Close the file (a later ``put`` reopens it in append mode)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_jsonl_cells(path: str | Path) -> dict[str, dict[str, Any]]:
    """The current cells recorded by a :class:`JsonlSink`, by id, in first-seen order."""
    cells: dict[str, dict[str, Any]] = {}
    with Path(path).open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            entry = json.loads(line)
            if entry.get("kind") == "cell":
                cells[str(entry["cell_id"])] = entry["cell"]
    return cells
