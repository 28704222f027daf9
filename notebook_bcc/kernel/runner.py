"""Actions -> cells: makes planner actions real in the notebook and the kernel.

The runner takes the typed notebook actions (``notebook_bcc.models.actions``, parsed by the
protocol layer)
one at a time with the action's path (DESIGN §9 D10) and returns an :class:`ActionOutcome`:
the cell it created or changed, the execution result for ``exec``, events for the caller
(``comment_result``, title, thinking markers, messages) or a refusal. It knows nothing of the
workflow FSM: the engine decides *whether* an action runs; the runner makes it happen.

Semantics (PROTOCOL-NOTES "JSON actions"):
- markdown (``add`` non-code, ``add-text``) merges into the previous cell when that cell is a
  workflow markdown cell of the same behavior run and not a heading; otherwise a new cell;
- ``new_chapter`` / ``new_section`` / ``new_step`` make ``#`` / ``##`` / ``###`` cells;
- ``add`` code makes a cell and runs nothing; a code action marked truncated is kept visible
  but refused, and so is any ``exec`` of it;
- ``exec`` runs the named cell (or ``lastAddedCellId``) exactly once -- a cell that printed
  nothing is not run again;
- ``update_title``, ``update_last_text``, thinking markers and ``communication`` change metadata
  or text in place; ``comment_result`` also makes a markdown cell and is reported as an event,
  because the engine owns effects (D12).
Replaying an action with the same path changes nothing: its cell (same id) is already there,
its merged text already merged. ``exec`` is the exception: each ``exec`` runs its cell once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from nbformat.notebooknode import NotebookNode

from notebook_bcc.kernel.acceptance import evaluate_criteria
from notebook_bcc.kernel.cell_ids import ActionPath
from notebook_bcc.kernel.cells import (
    BCC_KEY,
    HEADING_PREFIX,
    CellKind,
    bcc_metadata,
    bcc_of,
    code_cell,
    is_heading,
    markdown_cell,
)
from notebook_bcc.kernel.checks import behavior_checks
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.effects import DEFAULT_EFFECTS, EffectsConfig
from notebook_bcc.kernel.errors import KernelDeadError
from notebook_bcc.kernel.execution import exec_result
from notebook_bcc.kernel.markers import MarkerBook
from notebook_bcc.kernel.probe import DEFAULT_PROBE, ProbeConfig, probe_variables
from notebook_bcc.kernel.results import (
    ActionOutcome,
    CellChange,
    CellRecord,
    KernelEvent,
    VariablesReport,
)
from notebook_bcc.kernel.session import KernelSession, RawRun
from notebook_bcc.kernel.sinks import CellSink
from notebook_bcc.models.actions import (
    LAST_ADDED_CELL,
    AddAction,
    AddTextAction,
    CommentResultAction,
    CommunicationAction,
    ExecAction,
    FinishThinkingAction,
    IsThinkingAction,
    NewChapterAction,
    NewSectionAction,
    NewStepAction,
    PlannerAction,
    SetEffectAsThinkingAction,
    UpdateLastTextAction,
    UpdateTitleAction,
)
from notebook_bcc.models.base import utc_now_iso
from notebook_bcc.models.snapshot import AcceptanceResult

TRUNCATED_REASON = "the code action was truncated (the planner's stream ended inside it)"

RUN_KEYS = ("started_at", "ended_at", "duration_s", "execution_count", "message")
"""What an execution writes into a cell's ``metadata.notebook_bcc`` (besides its status)."""


def is_truncated(action: PlannerAction) -> bool:
    """True when the protocol layer marked the action as cut short by a truncated stream.

    The mark is read as a field or as an extra key (``truncated``), whichever the protocol
    layer uses.
    """
    if getattr(action, "truncated", False):
        return True
    extra = action.model_extra or {}
    return bool(extra.get("truncated"))


def _same_behavior_run(bcc: dict[str, Any], path: ActionPath) -> bool:
    return (
        bcc.get("stage_id"),
        bcc.get("visit"),
        bcc.get("step_id"),
        bcc.get("behavior_id"),
        bcc.get("iteration"),
    ) == path.behavior_key


def _heading_text(action_type: str, content: str) -> str:
    return HEADING_PREFIX[action_type] + content.strip().lstrip("#").strip()


class ActionRunner:
    """Applies actions to one notebook document on one kernel session.

    ``sinks`` receive every cell change (the engine's store, a :class:`NotebookWriter`,
    a :class:`JsonlSink`, ...). ``cell_timeout`` is the default per-cell limit in seconds.
    """

    def __init__(
        self,
        session: KernelSession,
        document: NotebookDocument,
        *,
        sinks: Sequence[CellSink] = (),
        workflow_id: str | None = None,
        cell_timeout: float | None = None,
        effects: EffectsConfig = DEFAULT_EFFECTS,
        probe: ProbeConfig = DEFAULT_PROBE,
    ) -> None:
        self.session = session
        self.document = document
        self.sinks: list[CellSink] = list(sinks)
        self.workflow_id = workflow_id if workflow_id is not None else document.workflow_id
        self.cell_timeout = cell_timeout
        self.effects_config = effects
        self.probe_config = probe
        self._markers = MarkerBook(document, self._emit)
        self.executing: str | None = None
        """The id of the cell whose code the kernel runs now, None between cells (a
        collaboration room shows it as running: JupyterLab's ``[*]``)."""
        self._merged: dict[str, str] = {}

    async def start(self) -> None:
        """Start (or await the pre-warmed) kernel and write its kernelspec/language_info."""
        info = await self.session.start()
        self.document.set_kernel_metadata(info.kernelspec, info.language_info)
        self._metadata_changed()

    # -- sinks ----------------------------------------------------------------------------

    def _emit(self, cell: NotebookNode, change: CellChange) -> None:
        cell_id = str(cell["id"])
        position = self.document.position(cell_id)
        bcc = bcc_of(cell)
        contract = bcc.get("contract_id") if bcc else None
        record = CellRecord(
            cell_id=cell_id,
            index=position if position is not None else -1,
            change=change,
            cell=cell,
            path=str(bcc["path"]) if bcc and "path" in bcc else None,
            contract_id=str(contract) if contract is not None else None,
        )
        for sink in self.sinks:
            sink.put(record)

    def _metadata_changed(self) -> None:
        for sink in self.sinks:
            sink.metadata_changed(self.document.nb.metadata)

    # -- dispatch -------------------------------------------------------------------------

    async def run(
        self,
        action: PlannerAction,
        path: ActionPath,
        *,
        contract_id: str | None = None,
        timeout: float | None = None,
    ) -> ActionOutcome:
        """Apply one action; ``exec`` runs its cell (``timeout`` overrides the default)."""
        if isinstance(action, ExecAction):
            return await self._exec(action, path, contract_id, timeout)
        return self.apply(action, path, contract_id=contract_id)

    def apply(
        self, action: PlannerAction, path: ActionPath, *, contract_id: str | None = None
    ) -> ActionOutcome:
        """Apply an action that runs no code (everything but ``exec``), synchronously."""
        if isinstance(action, AddAction):
            if action.is_code:
                return self._add_code(action, path, contract_id)
            return self._add_markdown(action, action.content, path, contract_id)
        if isinstance(action, AddTextAction):
            return self._add_markdown(action, action.content, path, contract_id)
        if isinstance(action, (NewChapterAction, NewSectionAction, NewStepAction)):
            text = _heading_text(action.type, action.content)
            return self._new_cell(action, path, contract_id, kind="heading", text=text)
        if isinstance(action, CommentResultAction):
            outcome = self._new_cell(action, path, contract_id, kind="comment", text=action.content)
            outcome.events.append(
                KernelEvent(
                    "comment_result", {"content": action.content, "cell_id": outcome.cell_id}
                )
            )
            return outcome
        if isinstance(action, UpdateTitleAction):
            self.document.set_title(action.value)
            self._metadata_changed()
            return ActionOutcome(
                action.type, events=[KernelEvent("title", {"title": action.value})]
            )
        if isinstance(action, UpdateLastTextAction):
            return self._markers.update_last_text(action)
        if isinstance(action, IsThinkingAction):
            return self._markers.start_thinking(action)
        if isinstance(action, FinishThinkingAction):
            return self._markers.finish_thinking(action)
        if isinstance(action, SetEffectAsThinkingAction):
            return self._markers.effect_as_thinking(action)
        if isinstance(action, CommunicationAction):
            return self._markers.communication(action)
        if isinstance(action, ExecAction):
            return ActionOutcome(action.type, refused="exec runs code: use `await run(...)`")
        return ActionOutcome(action.type, refused=f"{action.type!r} is not a notebook action")

    # -- cells ----------------------------------------------------------------------------

    def _metadata(
        self,
        action: PlannerAction,
        path: ActionPath,
        contract_id: str | None,
        kind: CellKind,
        status: str,
    ) -> dict[str, Any]:
        bcc = bcc_metadata(
            workflow_id=self.workflow_id,
            path=path,
            action_type=action.type,
            kind=kind,
            status=status,
            contract_id=contract_id,
            created_at=utc_now_iso(),
        )
        if action.irreversible:
            bcc["irreversible"] = True
        return bcc

    def _place(self, cell: NotebookNode) -> bool:
        """Append a new cell; False when a cell of that id exists (a replayed action)."""
        if self.document.position(str(cell["id"])) is not None:
            return False
        self.document.append(cell)
        self._markers.attach_pending(cell)
        return True

    def _new_cell(
        self,
        action: PlannerAction,
        path: ActionPath,
        contract_id: str | None,
        *,
        kind: CellKind,
        text: str,
        extra_metadata: dict[str, Any] | None = None,
    ) -> ActionOutcome:
        cell_id = path.cell_id()
        bcc = self._metadata(action, path, contract_id, kind, "done")
        cell = markdown_cell(cell_id, text, bcc)
        if not self._place(cell):
            return ActionOutcome(action.type, cell_id=cell_id)
        if extra_metadata:
            self._user_metadata(cell, extra_metadata)
        self._emit(cell, "created")
        return ActionOutcome(action.type, cell_id=cell_id, change="created")

    def _add_markdown(
        self, action: PlannerAction, content: str, path: ActionPath, contract_id: str | None
    ) -> ActionOutcome:
        merged_into = self._merged.get(path.key)
        if merged_into is not None:
            return ActionOutcome(action.type, cell_id=merged_into)
        last = self.document.last_cell()
        bcc = bcc_of(last) if last is not None else None
        if (
            last is not None
            and bcc is not None
            and last.get("cell_type") == "markdown"
            and bcc.get("kind") == "markdown"
            and bcc.get("path") != path.key
            and _same_behavior_run(bcc, path)
            and not is_heading(last)
        ):
            bcc.setdefault("merged", []).append(path.key)
            last["source"] = str(last.get("source", "")).rstrip("\n") + "\n\n" + content
            self._merged[path.key] = str(last["id"])
            self._emit(last, "updated")
            return ActionOutcome(action.type, cell_id=str(last["id"]), change="updated")
        extra = action.metadata if isinstance(action, AddAction) else None
        return self._new_cell(
            action, path, contract_id, kind="markdown", text=content, extra_metadata=extra
        )

    @staticmethod
    def _user_metadata(cell: NotebookNode, metadata: dict[str, Any]) -> None:
        """Planner-supplied cell metadata, never overriding notebook-bcc's own block."""
        for key, value in metadata.items():
            if key != BCC_KEY:
                cell["metadata"][key] = value

    def _add_code(
        self, action: AddAction, path: ActionPath, contract_id: str | None
    ) -> ActionOutcome:
        cell_id = path.cell_id()
        truncated = is_truncated(action)
        bcc = self._metadata(
            action, path, contract_id, "code", "refused" if truncated else "pending"
        )
        if truncated:
            bcc["refused"] = TRUNCATED_REASON
        cell = code_cell(cell_id, action.content, bcc)
        refused = TRUNCATED_REASON if truncated else None
        if not self._place(cell):
            return ActionOutcome(action.type, cell_id=cell_id, refused=refused)
        if action.metadata:
            self._user_metadata(cell, action.metadata)
        self._emit(cell, "created")
        return ActionOutcome(action.type, cell_id=cell_id, change="created", refused=refused)

    # -- exec -----------------------------------------------------------------------------

    def clear_run(self, cell_id: str) -> bool:
        """Empty a code cell an earlier execution filled (outputs, execution count, that
        run's status, times and message) before it runs again: after a lost kernel, a crash
        or an in-doubt action, the new run's cell holds only its own. False (and nothing
        emitted) when there was nothing to clear."""
        cell = self.document.get(cell_id)
        if cell is None or cell.get("cell_type") != "code":
            return False
        bcc = bcc_of(cell)
        stale = [key for key in RUN_KEYS if bcc is not None and key in bcc]
        ran = bcc is not None and bcc.get("status") not in (None, "pending", "refused")
        if not (cell.get("outputs") or cell.get("execution_count") is not None or stale or ran):
            return False
        cell["outputs"] = []
        cell["execution_count"] = None
        if bcc is not None:
            for key in stale:
                del bcc[key]
            if ran:
                bcc["status"] = "pending"
        self._emit(cell, "updated")
        return True

    def _exec_target(self, action: ExecAction) -> tuple[NotebookNode | None, str | None]:
        target = action.codecell_id
        cell_id = self.document.last_added_id if target == LAST_ADDED_CELL else target
        if cell_id is None:
            return None, "no cell has been added yet (exec lastAddedCellId)"
        cell = self.document.get(cell_id)
        if cell is None:
            return None, f"no cell with id {cell_id!r} in the notebook"
        if cell.get("cell_type") != "code":
            return None, f"cell {cell_id!r} is a {cell.get('cell_type')} cell, not code"
        bcc = bcc_of(cell)
        if bcc is not None and bcc.get("status") == "refused":
            return None, f"cell {cell_id!r} is refused: {bcc.get('refused', 'refused')}"
        return cell, None

    async def _exec(
        self,
        action: ExecAction,
        path: ActionPath,
        contract_id: str | None,
        timeout: float | None,
    ) -> ActionOutcome:
        cell, problem = self._exec_target(action)
        if cell is None:
            return ActionOutcome(action.type, refused=problem)
        cell_id = str(cell["id"])
        position = self.document.position(cell_id)
        assert position is not None
        self.clear_run(cell_id)
        bcc = bcc_of(cell)
        if bcc is not None:
            bcc["status"] = "running"
            bcc["exec_path"] = path.key
            if contract_id is not None:
                bcc["contract_id"] = contract_id
            # told, not only changed in place: a sink that wrote the cell as added (a held
            # notebook's merge, a debounced write) would show it pending until it ends
            self._emit(cell, "updated")
        limit = timeout if timeout is not None else self.cell_timeout
        self.executing = cell_id
        try:
            raw = await self.session.execute(self.document.nb, cell, position, timeout=limit)
        except KernelDeadError as exc:
            # Not run at all: the session's kernel was already gone.
            now = utc_now_iso()
            raw = RawRun("dead_kernel", None, now, now, 0.0, f"not run: {exc.message}", False)
            result = exec_result(
                cell_id,
                [],
                position,
                raw,
                need_output=action.need_output,
                config=self.effects_config,
            )
            if bcc is not None:
                bcc.update(status="dead_kernel", message=raw.message)
            self._emit(cell, "updated")
            return ActionOutcome(action.type, cell_id=cell_id, change="updated", execution=result)
        except asyncio.CancelledError:
            # stopped at once (a second Ctrl-C): what the cell printed so far still reaches the
            # notebook with the writer's last write; the store settles the cell on resume
            self._emit(cell, "updated")
            raise
        finally:
            self.executing = None
        result = exec_result(
            cell_id,
            cell.get("outputs", []),
            position,
            raw,
            need_output=action.need_output,
            config=self.effects_config,
        )
        if bcc is not None:
            bcc.update(
                status=raw.status,
                started_at=raw.started_at,
                ended_at=raw.ended_at,
                duration_s=round(raw.duration_s, 6),
                execution_count=raw.execution_count,
            )
            if raw.message and raw.status != "ok":
                bcc["message"] = raw.message
        self._emit(cell, "executed")
        return ActionOutcome(action.type, cell_id=cell_id, change="executed", execution=result)

    # -- probes ---------------------------------------------------------------------------

    async def probe(self, check: Sequence[str] = ()) -> VariablesReport:
        """The variables probe (run it after a behavior, not per cell)."""
        return await probe_variables(self.session, list(check), self.probe_config)

    async def behavior_checks(
        self, check: Sequence[str], criteria: Sequence[str]
    ) -> tuple[VariablesReport, dict[str, AcceptanceResult]]:
        """The probe and a behavior's acceptance criteria in one kernel round trip."""
        return await behavior_checks(self.session, list(check), criteria, self.probe_config)

    async def acceptance(
        self, criteria: Sequence[str], *, timeout: float = 10.0
    ) -> dict[str, AcceptanceResult]:
        """Evaluate acceptance criteria silently: ``{criterion: passed | failed | error}``."""
        return await evaluate_criteria(self.session, criteria, timeout=timeout)
