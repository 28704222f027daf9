"""The in-memory notebook a workflow builds, with O(1) lookups by cell id.

It is the ``nb`` nbclient executes against: cells are only ever appended, so a cell's position
never changes and nbclient's ``cell_index`` stays valid. What the user does to the file on disk
is the writer's business (:mod:`notebook_bcc.kernel.writer`), not this object's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode

from notebook_bcc.kernel.cells import BCC_KEY, bcc_of, node

SCHEMA_VERSION = 1
"""Version of the notebook-level ``metadata.notebook_bcc`` block."""


def new_notebook_node() -> NotebookNode:
    """An empty nbformat 4.5 notebook, built without validation."""
    return node({"nbformat": 4, "nbformat_minor": 5, "metadata": node({}), "cells": []})


def _node_tree(data: dict[str, Any]) -> NotebookNode:
    """A deep copy of JSON data as nested ``NotebookNode`` objects."""
    tree: NotebookNode = nbformat.from_dict(json.loads(json.dumps(data)))  # type: ignore[no-untyped-call]
    return tree


def _ensure_cell_ids(nb: NotebookNode) -> None:
    """Upgrade a 4.0-4.4 notebook to 4.5 in memory: every cell gets an id (D10 needs them)."""
    from nbformat.corpus.words import generate_corpus_id

    if nb.get("nbformat_minor", 0) < 5:
        nb["nbformat_minor"] = 5
    for cell in nb.cells:
        if not cell.get("id"):
            cell["id"] = generate_corpus_id()  # type: ignore[no-untyped-call]


class NotebookDocument:
    """One workflow notebook in memory: cells, kernel metadata, title and last-cell pointers.

    Cells carrying ``metadata.notebook_bcc`` are the workflow's ("ours"); others (an existing
    notebook's cells, D19) are kept, never executed unless an action names them, and never the
    target of ``lastAddedCellId``, a markdown merge or ``update_last_text``.
    """

    def __init__(self, nb: NotebookNode | None = None, *, workflow_id: str | None = None) -> None:
        self.nb: NotebookNode = nb if nb is not None else new_notebook_node()
        _ensure_cell_ids(self.nb)
        self.workflow_id = workflow_id
        self._positions: dict[str, int] = {}
        self._ours: set[str] = set()
        self.last_added_id: str | None = None
        self.last_code_id: str | None = None
        self.last_markdown_id: str | None = None
        self.earlier_sources: dict[str, frozenset[str]] = {}
        """Per cell, digests of sources an earlier process of this workflow gave it (from the
        store, ``from_cells``): a writer finding one of them in the file knows it for the
        workflow's own older write, not a user's edit (models/cell_sources.py)."""
        for position, cell in enumerate(self.nb.cells):
            self._track(cell, position)
        meta = self.nb.metadata.setdefault(BCC_KEY, {})
        meta["schema_version"] = SCHEMA_VERSION
        if workflow_id is not None:
            meta["workflow_id"] = workflow_id

    @classmethod
    def read(cls, path: str | Path, *, workflow_id: str | None = None) -> NotebookDocument:
        """An existing ``.ipynb`` as a document (its cells are kept and not executed, D19)."""
        nb: NotebookNode = nbformat.read(str(path), as_version=4)  # type: ignore[no-untyped-call]
        return cls(nb, workflow_id=workflow_id)

    @classmethod
    def from_cells(
        cls,
        cells: Iterable[Mapping[str, Any]],
        metadata: Mapping[str, Any] | None = None,
        *,
        workflow_id: str | None = None,
        earlier_sources: Mapping[str, frozenset[str]] | None = None,
    ) -> NotebookDocument:
        """A document rebuilt from stored cells (a resumed workflow, D10/D11), in order;
        ``earlier_sources`` the stored source digests per cell (see ``earlier_sources``)."""
        nb = new_notebook_node()
        nb["metadata"] = _node_tree(dict(metadata or {}))
        nb["cells"] = [_node_tree(dict(cell)) for cell in cells]
        document = cls(nb, workflow_id=workflow_id)
        document.earlier_sources = dict(earlier_sources or {})
        return document

    def _track(self, cell: NotebookNode, position: int) -> None:
        cell_id = cell.get("id")
        if not cell_id:
            return
        self._positions[cell_id] = position
        if bcc_of(cell) is None:
            return
        self._ours.add(cell_id)
        self.last_added_id = cell_id
        if cell.get("cell_type") == "code":
            self.last_code_id = cell_id
        elif cell.get("cell_type") == "markdown":
            self.last_markdown_id = cell_id

    @property
    def cells(self) -> list[NotebookNode]:
        """The cells in order (the live list nbclient executes against)."""
        cells: list[NotebookNode] = self.nb.cells
        return cells

    def __len__(self) -> int:
        return len(self.nb.cells)

    def append(self, cell: NotebookNode) -> int:
        """Add ``cell`` at the end and return its position."""
        position = len(self.nb.cells)
        self.nb.cells.append(cell)
        self._track(cell, position)
        return position

    def remove(self, cell_id: str) -> NotebookNode | None:
        """Take the cell with this id out of the document (positions after it move up)."""
        position = self._positions.get(cell_id)
        if position is None:
            return None
        cell: NotebookNode = self.nb.cells.pop(position)
        self._positions = {}
        self._ours.discard(cell_id)
        for index, other in enumerate(self.nb.cells):
            other_id = other.get("id")
            if other_id:
                self._positions[other_id] = index
        return cell

    def blank_trailing_cell(self) -> str | None:
        """The id of a trailing cell a workflow may take over: one the user never wrote in.

        JupyterLab gives every new notebook one empty code cell; a workflow started on it
        writes its inputs cell there instead of below an empty line. A cell with source,
        outputs, or notebook-bcc metadata is never taken.
        """
        last = self.last_cell()
        if last is None or bcc_of(last) is not None or not last.get("id"):
            return None
        source = last.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        if text.strip() or last.get("outputs") or last.get("attachments"):
            return None
        return str(last["id"])

    def get(self, cell_id: str) -> NotebookNode | None:
        """The cell with this id, or None."""
        position = self._positions.get(cell_id)
        return None if position is None else self.nb.cells[position]

    def position(self, cell_id: str) -> int | None:
        """The 0-based position of the cell with this id, or None."""
        return self._positions.get(cell_id)

    def is_ours(self, cell_id: str) -> bool:
        """True when the workflow created this cell."""
        return cell_id in self._ours

    def last_cell(self) -> NotebookNode | None:
        """The last cell, or None in an empty notebook."""
        return self.nb.cells[-1] if self.nb.cells else None

    def set_kernel_metadata(
        self, kernelspec: dict[str, Any], language_info: dict[str, Any]
    ) -> None:
        """Record ``kernelspec`` and the full ``language_info`` (JupyterLab needs both)."""
        self.nb.metadata["kernelspec"] = dict(kernelspec)
        self.nb.metadata["language_info"] = dict(language_info)

    @property
    def title(self) -> str | None:
        """The notebook title (nbformat's ``metadata.title``)."""
        title = self.nb.metadata.get("title")
        return title if isinstance(title, str) else None

    def set_title(self, title: str) -> None:
        """Set the notebook title."""
        self.nb.metadata["title"] = title
