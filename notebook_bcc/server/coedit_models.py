"""Wire models of the co-editing routes (``POST .../documents``, ``.../merge``, ``.../ack``).

Requests refuse unknown keys and bound every list; answers are models too, so ``openapi.json``
describes the routes from the same classes the handlers use.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_PATHS = 200
"""Notebooks one heartbeat may hold."""
MAX_CELLS = 20_000
"""Cells one merge request may list."""

_HOLDER = Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")


class HoldRequest(BaseModel):
    """A heartbeat: the notebooks a browser has open (an empty list releases them)."""

    model_config = ConfigDict(extra="forbid")
    holder: str = _HOLDER
    paths: list[str] = Field(default_factory=list, max_length=MAX_PATHS)
    dirty: list[str] = Field(
        default_factory=list,
        max_length=MAX_PATHS,
        description="the held paths whose document has unsaved edits",
    )


class MergeRequest(BaseModel):
    """A browser's document, as ``[cell id, source]`` pairs in order."""

    model_config = ConfigDict(extra="forbid")
    holder: str = _HOLDER
    path: str
    cells: list[tuple[str | None, str]] = Field(max_length=MAX_CELLS)
    document_modified: str | None = Field(default=None, max_length=64)
    reloaded: bool = Field(
        default=False,
        description=(
            "the document was replaced by its file since this browser's last merge (Lab's"
            " revert: Reload from Disk, Revert to Checkpoint): what it had is what that file"
            " had (document_modified), not what this browser acknowledged before"
        ),
    )


class AckRequest(BaseModel):
    """A merge plan the browser applied and saved (``saved``: the file's new last_modified)."""

    model_config = ConfigDict(extra="forbid")
    path: str
    token: str = Field(min_length=1, max_length=64)
    saved: str | None = Field(default=None, max_length=64)
    detached: list[str] = Field(default_factory=list, max_length=MAX_CELLS)
    deleted: list[str] = Field(default_factory=list, max_length=MAX_CELLS)


class HeldDocument(BaseModel):
    """A held notebook that a workflow writes, with its cells version."""

    path: str
    workflow_id: str
    version: int
    writer: bool = Field(
        default=True,
        description=(
            "this holder is the one window that takes the workflow's cells and saves them; "
            "the others (the notebook open in another window) reload the file while clean"
        ),
    )


class HoldAnswer(BaseModel):
    """The answer to a heartbeat: how long the hold lasts and the held notebooks' workflows."""

    ttl: float = Field(description="Seconds the hold lasts without another heartbeat.")
    collaborative: bool = Field(description="Whether collaboration rooms are used.")
    documents: list[HeldDocument]


class MergeCellOp(BaseModel):
    """One cell operation of a merge plan (indices valid when applied in order)."""

    op: Literal["insert", "update", "replace"]
    index: int
    cell_id: str
    cell: dict[str, Any] = Field(description="The cell's nbformat JSON.")


class MergeAnswer(BaseModel):
    """The operations that put the workflow's cells into the browser's document."""

    version: int
    token: str = Field(description="Acknowledge the plan with this token once saved.")
    ops: list[MergeCellOp]
    metadata: dict[str, Any] = Field(description="The notebook metadata the workflow wrote.")
    detached: list[str]
    deleted: list[str]


class AckAnswer(BaseModel):
    """``acknowledged`` is False when the plan is unknown (superseded): merge again."""

    acknowledged: bool


COEDIT_MODELS: tuple[type[BaseModel], ...] = (
    HoldRequest,
    HoldAnswer,
    MergeRequest,
    MergeAnswer,
    AckRequest,
    AckAnswer,
)
"""The models ``openapi.json`` takes its co-editing schemas from."""
