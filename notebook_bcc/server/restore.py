"""What a workflow keeps across server restarts: its own run options and its kernel's address.

A server killed with SIGKILL leaves nothing but the store. So that the next server restarts the
workflow *in the same place*, the per-workflow options it was started with (never the next
server's defaults) and the kernel it ran on (to find and end an orphan, see
:mod:`notebook_bcc.server.orphans`) are part of the workflow's snapshot.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from typing import Any

from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.models.snapshot import KernelRecord

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


__all__ = ["PERSISTED_OPTIONS", "kernel_record", "persisted_options", "restored_options"]
