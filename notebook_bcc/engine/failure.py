"""Why a stage failed, in the words a user looks for: where, what, and which line.

A run that ends in a failure end state used to say only "stage model failed"; the cause
(a ``TypeError`` in one cell, or an acceptance criterion that did not hold) was left in the
notebook. :func:`failure_cause` finds it in the store and the snapshot: the last failed
code cell of the failing stage's visit — its behavior path, ``ename: evalue`` and the line
in the cell — or else the last failed or erroring acceptance criterion there.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineHost

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_LINE = re.compile(r"(?:Cell In\s*\[\d*\]|<cell line: \d+>|File \"<[^>]*>\")?,?\s*line (\d+)")
_STATUS = re.compile(r"^(?:error|timeout|dead_kernel|refused): ")


def _where(path_key: str) -> str:
    """``stage/visit/step/behavior/iteration/index`` -> ``stage / step / behavior``."""
    parts = path_key.split("/")
    if len(parts) >= 6:
        return f"{parts[0]} / {parts[2]} / {parts[3]}"
    return path_key


def error_line(outputs: list[dict[str, Any]]) -> int | None:
    """The line of the cell an error output's traceback points at (the innermost in the cell)."""
    for output in outputs:
        if output.get("output_type") != "error":
            continue
        frames = [_ANSI.sub("", str(frame)) for frame in output.get("traceback") or []]
        for frame in reversed(frames):
            if "Cell In" in frame or "<cell line" in frame or 'File "<' in frame:
                match = _LINE.search(frame)
                if match:
                    return int(match.group(1))
    return None


def describe_contract(contract: ExecutionContract, cell: dict[str, Any] | None) -> str:
    """``in stage / step / behavior: TypeError: ... (line 3 of cell ID)``."""
    path = str(contract.metadata.get("path") or contract.action_detail.get("path") or "")
    message = _STATUS.sub("", contract.error_message or "failed")
    cell_id = contract.metadata.get("cell_id")
    line = error_line(list(cell.get("outputs") or [])) if cell else None
    where = (
        f" (line {line} of cell {cell_id})"
        if line and cell_id
        else (f" (cell {cell_id})" if cell_id else "")
    )
    return f"in {_where(path)}: {message}{where}"


async def failure_cause(engine: EngineHost) -> str | None:
    """The cause of the current stage's failure, or None when nothing recorded one."""
    snap = engine.snapshot
    stage = snap.location.progress.stages.current
    if stage is None:
        return None
    visit = snap.stage_machine.visits.get(stage.id, 1)
    prefix = f"{stage.id}/{visit}/"
    workflow_id, run_id = snap.workflow_id, snap.run_id
    rejected = await _rejected_review(engine, stage.id)
    if rejected is not None:
        return rejected
    failed = await engine.store.call(
        lambda s: s.contracts(workflow_id, run_id=run_id, statuses=[ExecutionStatus.FAILED])
    )
    mine = [
        c
        for c in failed
        if c.action_type == "cell_execution"
        and str(c.metadata.get("path") or "").startswith(prefix)
        and c.metadata.get("recovery") is None
        # a cell the user interrupted (Ctrl-C) is not the cause; one that ran past its
        # timeout (interrupted by the engine) is, and says so
        and not (c.error_message or "").startswith("interrupted")
    ]
    if mine:
        last = max(mine, key=lambda c: c.updated_at)
        cell_id = last.metadata.get("cell_id")
        cell = engine.runtime.document.get(str(cell_id)) if cell_id else None
        return describe_contract(last, dict(cell) if cell is not None else None)
    return _failed_criterion(engine, stage.id)


async def _rejected_review(engine: EngineHost, stage_id: str) -> str | None:
    """``its review was rejected by human``: the stage's latest confirmation in this run
    was rejected (a human's decision is the cause; nothing in the notebook says so)."""
    snap = engine.snapshot
    workflow_id, run_id = snap.workflow_id, snap.run_id
    contracts = await engine.store.call(lambda s: s.contracts(workflow_id, run_id=run_id))
    reviews = [
        c
        for c in contracts
        if c.action_type == "confirmation"
        and c.metadata.get("kind") == "stage_confirmation"
        and c.metadata.get("stage") == stage_id
    ]
    if not reviews:
        return None
    last = max(reviews, key=lambda c: c.updated_at)
    if last.status is not ExecutionStatus.REJECTED:
        return None
    by = last.transitions[-1].actor if last.transitions else "a human"
    return f"its review was rejected by {by}"


def _failed_criterion(engine: EngineHost, stage_id: str) -> str | None:
    snap = engine.snapshot
    stage_key = f"stage:{stage_id}"
    groups = list(snap.acceptance.items())
    # the stage's own acceptance first, then its behaviors' (newest last in the dict)
    ordered = [g for g in groups if g[0] == stage_key] + [
        g for g in reversed(groups) if g[0] != stage_key and not g[0].startswith("stage:")
    ]
    for owner, results in ordered:
        for criterion, result in results.items():
            if result.status != "passed":
                detail = f": {result.message}" if result.message else ""
                who = "stage acceptance" if owner == stage_key else f"acceptance of {owner}"
                return f"{who} {result.status}: {criterion}{detail}"
    return None
