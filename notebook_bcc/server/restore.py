"""What a workflow keeps across server restarts: its own run options and its kernel's address.

A server killed with SIGKILL leaves nothing but the store. So that the next server restarts the
workflow *in the same place*, the per-workflow options it was started with (never the next
server's defaults) and the kernel it ran on (to find and end an orphan, see
:mod:`notebook_bcc.server.orphans`) are part of the workflow's snapshot.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
from time import monotonic
from typing import TYPE_CHECKING, Any

from jupyter_core.utils import ensure_async

from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.models.snapshot import KernelRecord

if TYPE_CHECKING:
    from notebook_bcc.engine.engine import Engine
    from notebook_bcc.server.kernels import Kernels
    from notebook_bcc.server.service import LiveWorkflow

RESTARTER_WAIT = 10.0
"""Seconds to let the server's auto-restarter bring a dead kernel back before restarting it."""

PERSISTED_OPTIONS = (
    "auto_confirm",
    "confirm_irreversible",
    "max_hops",
    "cell_timeout",
    "max_iterations",
    "kernel_name",
)
"""EngineOptions a workflow keeps for its whole life (the REST ``options`` and their kin)."""


def persisted_options(options: EngineOptions) -> dict[str, Any]:
    """The per-workflow options as JSON, to store with the workflow."""
    return {name: getattr(options, name) for name in PERSISTED_OPTIONS}


def restored_options(default: EngineOptions, stored: dict[str, Any]) -> EngineOptions:
    """The options a recovered workflow runs with: its own where stored, else ``default``
    (a workflow stored before options were kept); unknown keys are ignored."""
    kept = {name: stored[name] for name in PERSISTED_OPTIONS if name in stored}
    return dataclasses.replace(default, **kept)


def kernel_record(kernel_id: str, session_id: str | None, km: Any) -> KernelRecord:
    """Where the workflow's kernel lives: id, connection file and local process (if any)."""
    provisioner = getattr(km, "provisioner", None)
    pid = getattr(provisioner, "pid", None)
    connection_file = getattr(km, "connection_file", None)
    return KernelRecord(
        kernel_id=kernel_id,
        session_id=session_id,
        connection_file=str(connection_file) if connection_file else None,
        pid=pid if isinstance(pid, int) else None,
        host=socket.gethostname(),
        server_pid=os.getpid(),
    )


async def rebuild_now(engine: Engine) -> None:
    """D11 (revised): a recovered workflow's new kernel gets the earlier state at once, before
    anything runs; a ``kernel_rebuild`` decision left by recovery is answered by ``recovery``
    (a human who answers something else later never asked for an empty kernel)."""
    pending = next((p for p in engine.snapshot.run.pending if p.kind == "kernel_rebuild"), None)
    if pending is not None:
        await engine.recovery.answer_rebuild(pending, "approve", "recovery")


async def replace_kernel(kernels: Kernels, live: LiveWorkflow) -> None:
    """A dead workflow kernel replaced (the engine then rebuilds its state): restarted by the
    server's kernel manager while it still manages it (same id, same session), else -- culled
    or shut down -- a new session kernel for the notebook, so the kernel stays one the server
    knows (listed in Lab, culled, shut down with the server). The snapshot records it."""
    engine = live.engine
    session = engine.runtime.session
    km = kernels.manager_of(live.kernel.kernel_id)
    if km is not None:
        # the server's auto-restarter may be bringing it back right now: a second restart
        # racing it breaks the manager, so wait for it and only reconnect
        deadline = monotonic() + RESTARTER_WAIT
        while not await ensure_async(km.is_alive()) and monotonic() < deadline:
            await asyncio.sleep(0.2)
        if await ensure_async(km.is_alive()):
            await session.rebind(km)
        else:
            await session.restart()
    else:
        name = str(engine.snapshot.options.get("kernel_name") or session.kernel_name)
        live.kernel = await kernels.for_notebook(live.notebook_path, name)
        await session.rebind(live.kernel.km)
    record = kernel_record(live.kernel.kernel_id, live.kernel.session_id, live.kernel.km)
    engine.snapshot = engine.snapshot.model_copy(update={"kernel": record})


async def restart_kernel(kernels: Kernels, live: LiveWorkflow) -> None:
    """Restart a live workflow's kernel through the server's kernel manager (JupyterLab
    shows the restart, as after its own), then drive the new process (D11 init code)."""
    await kernels.restart(live.kernel)
    await live.engine.runtime.session.rebind(live.kernel.km)


__all__ = [
    "PERSISTED_OPTIONS",
    "kernel_record",
    "persisted_options",
    "rebuild_now",
    "replace_kernel",
    "restart_kernel",
    "restored_options",
]
