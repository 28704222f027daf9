"""What a person reads at the end of a command: what is being decided, and what to type next.

The end-of-run summary used to stop at "pending decision X"; a user then had to open the
notebook to see the metrics a review is about, ``status --json`` to see the code an
irreversible action would run, and guess the ``resume`` flags. These lines say it:
each pending decision with what it is about (the code, the stage's latest output), and the
exact commands that go on from here.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from notebook_bcc.models.snapshot import PendingDecision, WorkflowSnapshot

CODE_LINES = 12
"""Lines of an irreversible action's code shown with its decision."""


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        text = value.get("text") or value.get("text/plain") or value.get("output")
        if isinstance(text, str):
            return text
    return json.dumps(value, ensure_ascii=False)


def decision_lines(snapshot: WorkflowSnapshot, pending: PendingDecision) -> list[str]:
    """The decision and what it is about, indented below its headline."""
    lines = [f"pending decision {pending.id} ({pending.kind}): {pending.message}"]
    details = pending.details or {}
    code = details.get("code")
    if isinstance(code, str) and code.strip():
        source = code.rstrip("\n").splitlines()
        lines.append("  code it would run:")
        lines += [f"    | {line}" for line in source[:CODE_LINES]]
        if len(source) > CODE_LINES:
            lines.append(f"    | ... ({len(source) - CODE_LINES} more lines)")
    if pending.kind == "stage_confirmation":
        own = details.get("outputs")
        if isinstance(own, list):  # this stage visit's own outputs, carried by the decision
            latest = "\n".join(str(text).rstrip("\n") for text in own).strip()
            if not latest:
                lines.append("  the stage printed no output")
        else:  # a decision asked before decisions carried them
            latest = _text(snapshot.notebook.last_output).strip()
        if latest:
            shown = latest.splitlines()[-6:]
            lines.append("  the stage's latest output:")
            lines += [f"    | {line}" for line in shown]
    error = details.get("error")
    if isinstance(error, str) and error:
        lines.append(f"  error: {error}")
    return lines


def next_commands(
    snapshot: WorkflowSnapshot, state_db: Path | str | None, *, auto_confirm: bool = False
) -> list[str]:
    """``next: ...`` lines with the commands that continue this run (none when it is over).

    ``auto_confirm``: the run was driven with ``--auto-confirm``; the command that continues
    it says so too (a resume without it stops at the first decision, which an unattended user
    did not expect). A run started with it keeps that in its stored options, so ``status``
    after a crash says it as well. A decision pending then is one it never answers (an action
    in doubt, a budget): the command answers it explicitly *and* keeps ``--auto-confirm`` for
    what follows, or the run would stop again at the next stage review.
    """
    if state_db is None:
        return []
    auto_confirm = auto_confirm or snapshot.options.get("auto_confirm") is True
    base = f"notebook-bcc resume --state-db {shlex.quote(str(state_db))}"
    status = snapshot.run.status
    pending = snapshot.run.pending
    if auto_confirm:
        base += " --auto-confirm"
    if pending:
        if len(pending) == 1:
            return [f"next: {base} --approve   (or --reject)"]
        return [f"next: {base} --decision {p.id} --approve|--reject" for p in pending]
    if status in ("interrupted", "paused", "running"):
        return [f"next: {base}   (continues where it stopped)"]
    if status == "failed":
        return [
            f"next: {base}   (retries from the failure, once its cause is fixed)",
            f"  or: {base} --restart   (starts over from the first stage)",
        ]
    return []
