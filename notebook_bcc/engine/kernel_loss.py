"""A kernel lost under a running workflow: replaced, its state rebuilt, the run goes on (D11).

Two ways a kernel is lost while its workflow lives on:
- it dies while a cell runs (killed, out of memory): the cell's contract is settled the way a
  crash settles it — a reversible action FAILED (actor ``recovery``) and run again at the same
  queue position, an irreversible one WAITING as an ``in_doubt`` decision, never re-run by
  itself — then the kernel is restarted and the completed reversible cells are replayed;
- it was restarted behind the workflow's back between two cells (the server's auto-restarter
  after the process died while idle): the kernel process changed, so before the next cell runs
  it is restarted cleanly (the session's init code again) and replayed.

Either way an irreversible cell is never replayed; when its state is lost the run waits on a
``lost_state`` decision (:mod:`notebook_bcc.engine.lost_state`) before the next cell runs.

A cell that keeps killing its kernel is not run forever: after :data:`MAX_KERNEL_DEATHS` deaths
at the same action the old rule applies (the contract fails, the FSM FAILs).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from notebook_bcc.engine import lost_state
from notebook_bcc.engine.routing import with_run
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.contract import fire
from notebook_bcc.kernel.watch import RESTARTED_OUTSIDE, SHUT_DOWN_OUTSIDE
from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus
from notebook_bcc.store.sqlite import EventDraft
from notebook_bcc.workflow.effects import add_current

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineHost
    from notebook_bcc.engine.runtime import KernelRuntime
    from notebook_bcc.kernel.cell_ids import ActionPath

MAX_KERNEL_DEATHS = 2
"""Deaths of the kernel at one action before the run gives up on replacing it."""

KERNEL_DIED = (
    "the kernel stopped while the cell ran (it died or was restarted): the kernel's state was "
    "lost; it was replaced and the action runs again"
)
"""``error_message`` of a reversible contract whose kernel died under it (nbclient may see a
restarted kernel's old process gone before the new one is up: the words cover both)."""

KERNEL_RESTARTED = (
    "the kernel was restarted while the cell ran (from JupyterLab or the kernels API): the "
    "cell was interrupted and the kernel's state lost; the action runs again on the new kernel"
)
"""``error_message`` of a reversible contract whose kernel someone else restarted under it."""

KERNEL_SHUT_DOWN = (
    "the kernel was shut down while the cell ran (from JupyterLab or the kernels API): the "
    "cell was interrupted and the kernel's state lost; the action runs again on a new kernel"
)
"""``error_message`` of a reversible contract whose kernel someone else shut down under it."""


def _how_lost(why: str | None) -> tuple[str, str, str]:
    """What happened to the kernel, from a cell's ``dead_kernel`` message: the contract's
    marker, words for effects and questions, and the failed contract's ``error_message``."""
    if why is not None and why.startswith(RESTARTED_OUTSIDE):
        return "restarted", "was restarted (from JupyterLab or the kernels API)", KERNEL_RESTARTED
    if why is not None and why.startswith(SHUT_DOWN_OUTSIDE):
        return "shut_down", "was shut down (from JupyterLab or the kernels API)", KERNEL_SHUT_DOWN
    return "died", "stopped (it died or was restarted)", KERNEL_DIED


_known_pid: weakref.WeakKeyDictionary[KernelRuntime, int] = weakref.WeakKeyDictionary()


def _kernel_pid(runtime: KernelRuntime) -> int | None:
    session = runtime.session
    km: Any = getattr(session, "_km", None)
    pid = getattr(getattr(km, "provisioner", None), "pid", None)
    return pid if isinstance(pid, int) else None


def note_kernel(runtime: KernelRuntime) -> None:
    """Remember the kernel process the runtime's state lives in."""
    pid = _kernel_pid(runtime)
    if pid is not None:
        _known_pid[runtime] = pid


def unchanged(runtime: KernelRuntime) -> bool:
    """Whether the kernel is the process the runtime's state was built in (so
    :func:`before_cell` has nothing to do); a cheap check, no message to the kernel."""
    if not runtime.session.started:
        return True
    pid = _kernel_pid(runtime)
    return pid is None or _known_pid.get(runtime) in (None, pid)


async def before_cell(engine: EngineHost) -> bool:
    """Rebuild first when the kernel process changed since the state was built (see above);
    False when the rebuild lost an irreversible cell's state and the run now waits on the
    human (a ``lost_state`` decision): the cell must not run yet."""
    runtime = engine.runtime
    if not runtime.session.started:
        return True
    pid = _kernel_pid(runtime)
    known = _known_pid.get(runtime)
    if pid is None or known is None:
        if pid is not None:
            _known_pid[runtime] = pid
        return True
    if pid == known:
        return True
    try:
        await _replace(runtime)
    except NotebookBccError:
        return True  # the cell then fails on the dead kernel, and after_death takes over
    note_kernel(runtime)
    await _rebuild(
        engine,
        "WARN: the kernel was restarted outside the workflow; its state was "
        "rebuilt from the completed cells",
    )
    return lost_state.pending_decision(engine) is None


async def after_death(
    engine: EngineHost, running: ExecutionContract, path: ActionPath, *, why: str | None = None
) -> bool:
    """The kernel died under ``running`` (or was restarted under it: ``why`` says so): settle
    it, replace the kernel, rebuild; False when the kernel cannot be replaced (or died too
    often here) and the caller fails the run."""
    how, lost, failed_why = _how_lost(why)
    restarted = how == "restarted"
    workflow_id = engine.snapshot.workflow_id
    earlier = await engine.store.call(lambda s: s.contracts(workflow_id))
    deaths = sum(
        1
        for c in earlier
        if c.metadata.get("path") == path.key
        and c.metadata.get("kernel_died")
        and c.status in (ExecutionStatus.FAILED, ExecutionStatus.WAITING, ExecutionStatus.COMPLETED)
    )
    if deaths >= MAX_KERNEL_DEATHS:
        return False
    try:
        await _replace(engine.runtime)
    except NotebookBccError:
        return False
    note_kernel(engine.runtime)
    snap = engine.snapshot
    events: list[EventDraft] = []
    marker = {"kernel_died": True, "kernel_lost": how}
    if running.irreversible:
        settled, records = fire(running, "suspend", actor="recovery", metadata=marker)
        snap, decision = engine.new_decision(
            "in_doubt",
            f"The kernel {lost} while the irreversible action at {path.key} ran: did it "
            "happen? "
            "Approve if it did NOT (it runs now); reject if it did (it is not repeated).",
            {
                "contract_id": running.execution_id,
                "path": path.key,
                "cell_id": running.metadata.get("cell_id"),
                "code": running.action_detail.get("code"),
            },
        )
        snap = with_run(snap, "waiting", "an irreversible action is in doubt")
        events.append(
            EventDraft(
                "decision",
                event="created",
                actor="recovery",
                detail={"id": decision.id, "kind": "in_doubt", "path": path.key},
            )
        )
    else:
        settled, records = fire(
            running, "fail", actor="recovery", error_message=failed_why, metadata=marker
        )
    await engine.commit(
        snap,
        records=list(records),
        contracts=[settled],
        cells=engine.runtime.collector.drain(),
        events=events,
        kinds=frozenset({"decision", "contract_terminal"}),
    )
    await _rebuild(
        engine,
        f"WARN: the kernel {lost} while running {path.key}; "
        + ("" if restarted else "it was replaced and ")
        + "its state was rebuilt from the completed cells",
    )
    return True


async def _replace(runtime: KernelRuntime) -> None:
    if runtime.kernel_replacer is not None:
        await runtime.kernel_replacer()
    else:
        await runtime.session.restart()


async def _rebuild(engine: EngineHost, effect: str) -> None:
    # a rebuild replays the completed cells the store holds: the last one may still ride
    # with a folded boundary (Committer.stage_outcome)
    await engine.commit_staged()
    snap = engine.snapshot
    engine.snapshot = snap.model_copy(update={"effects": add_current(snap.effects, [effect])})
    await engine.recovery.rebuild(actor="recovery")


__all__ = [
    "KERNEL_DIED",
    "KERNEL_RESTARTED",
    "KERNEL_SHUT_DOWN",
    "MAX_KERNEL_DEATHS",
    "after_death",
    "before_cell",
    "note_kernel",
]
