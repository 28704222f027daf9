"""Kernels for workflows, from the server's own session and kernel managers (D19, §8).

A workflow's kernel is the *session kernel of its notebook*: when the user already has the
notebook open, its session is found by path and reused (the user's variables are visible to the
planner); otherwise a ``notebook`` session is created for the path, so JupyterLab opening the
notebook attaches to the very kernel the workflow drives, it shows in the Running panel, and
culling, kernel-gateway and kernel-spec settings apply with no code here.

The workflow's :class:`~notebook_bcc.kernel.session.KernelSession` only borrows the kernel
manager: closing the workflow closes its channels and never shuts the kernel down.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import posixpath
from dataclasses import dataclass
from datetime import datetime, timezone
from time import monotonic
from typing import Any

from jupyter_core.utils import ensure_async

from notebook_bcc.server.errors import KernelUnavailableError

TOUCH_EVERY = 1.0
"""Seconds between two activity marks of one kernel by its workflow."""


@dataclass(frozen=True)
class NotebookKernel:
    """The session kernel a workflow runs on."""

    session_id: str
    kernel_id: str
    km: Any
    created: bool
    """True when the workflow created the session (nobody had the notebook open)."""


async def _ready(km: Any) -> None:
    """Wait for a kernel that is still starting (``use_pending_kernels``).

    Only called when the server starts kernels as pending: otherwise ``start_kernel`` has
    returned a started kernel, and some managers (a kernel gateway's) never resolve the
    ``ready`` future their base class creates on first access.
    """
    ready = getattr(km, "ready", None)
    if isinstance(ready, concurrent.futures.Future):
        await asyncio.wrap_future(ready)
    elif isinstance(ready, asyncio.Future):
        await ready


class Kernels:
    """Finds or creates the session kernel of a notebook; knows whether a kernel still exists."""

    def __init__(self, session_manager: Any, kernel_manager: Any) -> None:
        self.session_manager = session_manager
        self.kernel_manager = kernel_manager
        self._touched: dict[str, float] = {}

    async def session_for(self, path: str) -> dict[str, Any] | None:
        """The session model of notebook ``path`` (an API path), if the server has one."""
        for model in await ensure_async(self.session_manager.list_sessions()):
            kernel = model.get("kernel") or {}
            if model.get("path") == path and kernel.get("id"):
                return dict(model)
        return None

    async def for_notebook(self, path: str, kernel_name: str) -> NotebookKernel:
        """The live kernel of ``path``'s session, creating the session when there is none."""
        existing = await self.session_for(path)
        if existing is not None:
            kernel_id = str(existing["kernel"]["id"])
            km = self.manager_of(kernel_id)
            if km is None:
                raise KernelUnavailableError(
                    f"the session of {path} names kernel {kernel_id}, which the server no "
                    "longer has",
                    details={"path": path, "kernel_id": kernel_id},
                )
            await self._ready(km)
            if not await ensure_async(km.is_alive()):
                raise KernelUnavailableError(
                    f"the kernel of {path}'s session is not running; restart it in JupyterLab "
                    "or shut the session down, then start the workflow again",
                    details={"path": path, "kernel_id": kernel_id},
                )
            return NotebookKernel(str(existing["id"]), kernel_id, km, created=False)
        try:
            model = await self.session_manager.create_session(
                path=path,
                name=posixpath.basename(path),
                type="notebook",
                kernel_name=kernel_name,
            )
        except Exception as exc:
            raise KernelUnavailableError(
                f"could not start a {kernel_name!r} kernel for {path}: {type(exc).__name__}: {exc}",
                details={"path": path, "kernel_name": kernel_name},
            ) from exc
        kernel_id = str(model["kernel"]["id"])
        km = self.manager_of(kernel_id)
        if km is None:
            raise KernelUnavailableError(
                f"the kernel started for {path} is already gone", details={"path": path}
            )
        await self._ready(km)
        return NotebookKernel(str(model["id"]), kernel_id, km, created=True)

    async def restart(self, kernel: NotebookKernel) -> None:
        """Restart ``kernel`` through the server's kernel manager (JupyterLab sees it restart,
        as after its own Restart): its namespace is empty afterwards."""
        try:
            await ensure_async(self.kernel_manager.restart_kernel(kernel.kernel_id))
        except Exception as exc:
            raise KernelUnavailableError(
                f"could not restart kernel {kernel.kernel_id}: {type(exc).__name__}: {exc}",
                details={"kernel_id": kernel.kernel_id},
            ) from exc
        await self._ready(kernel.km)

    async def _ready(self, km: Any) -> None:
        if getattr(self.kernel_manager, "use_pending_kernels", False):
            await _ready(km)

    def manager_of(self, kernel_id: str) -> Any | None:
        """The kernel manager of ``kernel_id``, or None when the server no longer has it."""
        if kernel_id not in self.kernel_manager:
            return None
        return self.kernel_manager.get_kernel(kernel_id)

    def touch(self, kernel_id: str) -> None:
        """Mark a kernel active: a workflow driving it is activity, so idle culling skips it.

        The kernel reports no websocket connections while only a workflow uses it; without
        this, a long planner call between two cells would look like an idle kernel. A kernel
        touched less than :data:`TOUCH_EVERY` seconds ago is left as it is (culling counts in
        minutes; a busy workflow publishes many events a second).
        """
        now_s = monotonic()
        if now_s - self._touched.get(kernel_id, -TOUCH_EVERY) < TOUCH_EVERY:
            return
        self._touched[kernel_id] = now_s
        km = self.manager_of(kernel_id)
        if km is None:
            return
        now = datetime.now(timezone.utc)
        km.last_activity = now
        self.kernel_manager.last_kernel_activity = now

    async def discard(self, kernel: NotebookKernel) -> None:
        """Undo :meth:`for_notebook` when the workflow could not start: a session this call
        created is deleted (with its kernel); a session the user had is left alone."""
        if not kernel.created:
            return
        try:
            await ensure_async(self.session_manager.delete_session(kernel.session_id))
        except Exception:  # the session may already be gone; nothing else to undo
            return
