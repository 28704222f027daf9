"""Where the workflow's cells go in an *open* notebook document (pure, no I/O).

While a notebook is open in JupyterLab the document there is the one copy that must not be
overwritten: its model (or, with jupyter-collaboration, the shared room document) holds the
user's unsaved edits. The workflow's cells are therefore applied *into* that document, as
cell-level operations, instead of into the file under it. :func:`plan_merge` computes those
operations with the same rules as the file writer (:mod:`notebook_bcc.kernel.writer`, D10):

- a workflow cell already in the document is updated in place while the user has not changed
  its source since it was last written (``baseline``); once they have, it is *detached*: kept
  as the user left it and never updated again;
- a workflow cell that was placed in the document (or the file) before and is gone now was
  deleted by the user: it stays deleted;
- a new workflow cell is inserted right after the previous workflow cell that is still in the
  document (so a user's scratch cell at the bottom stays at the bottom), or at the end when
  there is none;
- cells the workflow did not create are never touched, with one exception: the blank cell
  JupyterLab gives a new notebook (last in the document, no source, and no workflow cell in
  the document yet) is replaced by the first workflow cell, as the file writer does
  (``NotebookDocument.blank_trailing_cell``).

Operations carry indices valid when applied one after the other, in order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class WorkflowCell:
    """One workflow cell as the workflow holds it now."""

    cell_id: str
    source: str
    digest: str
    """A digest of the whole cell (source, outputs, metadata): equal digests, nothing to do."""


@dataclass(frozen=True, slots=True)
class CellOp:
    """Insert a workflow cell at ``index``, update the workflow cell there (``update``), or put
    it in place of the user's blank cell there (``replace``: delete, then insert)."""

    op: Literal["insert", "update", "replace"]
    index: int
    cell_id: str


@dataclass(slots=True)
class MergePlan:
    """The operations to apply and what the document tells about the user's intent."""

    ops: list[CellOp] = field(default_factory=list)
    detached: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)


def plan_merge(
    document: Sequence[tuple[str | None, str]],
    workflow: Sequence[WorkflowCell],
    *,
    baseline: Mapping[str, str],
    placed: Set[str],
    applied: Mapping[str, str],
    detached: Set[str] = frozenset(),
    deleted: Set[str] = frozenset(),
) -> MergePlan:
    """The operations that bring ``workflow``'s cells into ``document``.

    ``document`` is the open document's cells in order as ``(cell id, source)``;
    ``workflow`` the workflow's cells in workflow order; ``baseline`` the source last
    written for each cell (to the file or the document); ``placed`` the cells known to have
    been in the document or the file; ``applied`` the digest last applied to *this* document
    per cell; ``detached``/``deleted`` what earlier merges decided (kept).
    """
    plan = MergePlan(detached=set(detached), deleted=set(deleted))
    ids: list[str | None] = [cell_id for cell_id, _ in document]
    sources: dict[str, str] = {}
    for cell_id, source in document:
        if cell_id is not None:
            sources.setdefault(cell_id, source)
    previous: int | None = None
    blank: int | None = None
    if document and not any(cell.cell_id in sources for cell in workflow):
        last_id, last_source = document[-1]
        if not last_source.strip() and last_id not in {cell.cell_id for cell in workflow}:
            blank = len(document) - 1
    for cell in workflow:
        cid = cell.cell_id
        if cid in plan.deleted:
            continue
        if cid in sources:
            index = ids.index(cid)
            previous = index
            if cid in plan.detached:
                continue
            base = baseline.get(cid)
            if base is not None and cid in placed and sources[cid] != base:
                plan.detached.add(cid)
                continue
            if applied.get(cid) != cell.digest:
                plan.ops.append(CellOp("update", index, cid))
                sources[cid] = cell.source
            continue
        if cid in placed or cid in plan.detached:
            plan.deleted.add(cid)
            plan.detached.discard(cid)
            continue
        if blank is not None:
            ids[blank] = cid
            sources[cid] = cell.source
            plan.ops.append(CellOp("replace", blank, cid))
            previous, blank = ids.index(cid), None
            continue
        index = len(ids) if previous is None else previous + 1
        ids.insert(index, cid)
        sources[cid] = cell.source
        plan.ops.append(CellOp("insert", index, cid))
        previous = index
    return plan


def apply_ops(
    document: list[tuple[str | None, str]], ops: Sequence[CellOp], cells: Mapping[str, str]
) -> list[tuple[str | None, str]]:
    """``document`` after ``ops`` (``cells`` maps a cell id to its new source); for tests and
    for checking a plan before it is sent."""
    result = list(document)
    for op in ops:
        entry = (op.cell_id, cells[op.cell_id])
        if op.op == "insert":
            result.insert(op.index, entry)
        elif op.op == "replace":
            result[op.index] = entry
        else:
            if result[op.index][0] != op.cell_id:
                raise ValueError(f"update at {op.index} names {op.cell_id}, not the cell there")
            result[op.index] = entry
    return result


__all__ = ["CellOp", "MergePlan", "WorkflowCell", "apply_ops", "plan_merge"]
