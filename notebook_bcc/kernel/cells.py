"""Building nbformat cells for actions, without schema validation on the hot path.

``nbformat.v4.new_*_cell`` validate every cell they make (~0.2 ms each); a markdown action must
cost well under 0.1 ms, so cells are built here as plain ``NotebookNode`` dicts of the v4.5
shape and validated once, when the writer first writes them
(:mod:`notebook_bcc.kernel.validation`). Every cell the workflow creates carries
``metadata.notebook_bcc``: workflow id, the action path and its parts, action type, contract id,
status and timings.
"""

from __future__ import annotations

from typing import Any, Literal

from nbformat.notebooknode import NotebookNode

from notebook_bcc.kernel.cell_ids import ActionPath

BCC_KEY = "notebook_bcc"
"""The metadata key notebook-bcc owns, in cells and in the notebook."""

CellKind = Literal["markdown", "heading", "comment", "code"]
"""What a workflow cell is for: merging rules and the panel look at it."""

HEADING_PREFIX = {"new_chapter": "# ", "new_section": "## ", "new_step": "### "}
"""Heading actions and the markdown prefix each one writes."""


def node(data: dict[str, Any]) -> NotebookNode:
    """``data`` as a ``NotebookNode`` (attribute access, which nbclient relies on), unchecked."""
    return NotebookNode(data)  # type: ignore[no-untyped-call]


def bcc_metadata(
    *,
    workflow_id: str | None,
    path: ActionPath,
    action_type: str,
    kind: CellKind,
    status: str,
    contract_id: str | None,
    created_at: str,
) -> dict[str, Any]:
    """The ``metadata.notebook_bcc`` block of a new workflow cell."""
    return {
        "workflow_id": workflow_id,
        "path": path.key,
        "stage_id": path.stage_id,
        "visit": path.visit,
        "step_id": path.step_id,
        "behavior_id": path.behavior_id,
        "iteration": path.iteration,
        "action_index": path.action_index,
        "action_type": action_type,
        "kind": kind,
        "contract_id": contract_id,
        "status": status,
        "created_at": created_at,
    }


def markdown_cell(cell_id: str, source: str, bcc: dict[str, Any]) -> NotebookNode:
    """A v4.5 markdown cell carrying ``bcc`` as its notebook-bcc metadata."""
    return node(
        {
            "id": cell_id,
            "cell_type": "markdown",
            "metadata": node({BCC_KEY: bcc}),
            "source": source,
        }
    )


def code_cell(cell_id: str, source: str, bcc: dict[str, Any]) -> NotebookNode:
    """A v4.5 code cell (not yet executed) carrying ``bcc`` as its notebook-bcc metadata."""
    return node(
        {
            "id": cell_id,
            "cell_type": "code",
            "metadata": node({BCC_KEY: bcc}),
            "source": source,
            "outputs": [],
            "execution_count": None,
        }
    )


def bcc_of(cell: dict[str, Any]) -> dict[str, Any] | None:
    """The notebook-bcc metadata of a cell, or None for a cell the workflow did not create."""
    metadata = cell.get("metadata")
    if not isinstance(metadata, dict):
        return None
    block = metadata.get(BCC_KEY)
    return block if isinstance(block, dict) else None


def is_heading(cell: dict[str, Any]) -> bool:
    """True for a heading cell: made by a heading action, or a one-line ``#`` markdown cell."""
    if cell.get("cell_type") != "markdown":
        return False
    bcc = bcc_of(cell)
    if bcc is not None and bcc.get("kind") == "heading":
        return True
    source = cell.get("source", "")
    text = "".join(source) if isinstance(source, list) else str(source)
    stripped = text.strip()
    return stripped.startswith("#") and "\n" not in stripped
