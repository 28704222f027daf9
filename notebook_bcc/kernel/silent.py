"""Silent requests on a session's shell channel: probes, acceptance checks, init code.

A silent ``execute_request`` runs code without history, outputs or an execution count; its
reply is matched by message id (stale replies of earlier requests are skipped), and a kernel
that does not answer in time is interrupted, then given up on with :class:`KernelBusyError`.
:class:`SilentRequests` is the part of :class:`~notebook_bcc.kernel.session.KernelSession`
that does this, under the session's one lock like every other use of the kernel.
"""

from __future__ import annotations

import asyncio
from queue import Empty
from time import monotonic

from nbclient import NotebookClient

from notebook_bcc.kernel.aio import kernel_client_of
from notebook_bcc.kernel.errors import KernelBusyError, KernelDeadError
from notebook_bcc.kernel.session_types import KernelInfo, SilentReply

_ALIVE_SLICE = 1.0
"""How often a silent request checks that the kernel is still alive while it waits."""


class SilentRequests:
    """Silent ``execute_request`` s; the session provides the kernel, its lock and its client."""

    _lock: asyncio.Lock
    _info: KernelInfo | None

    async def start(self) -> KernelInfo:
        """Start (or connect to) the kernel (the session's)."""
        raise NotImplementedError

    def _ready_client(self) -> NotebookClient:
        raise NotImplementedError

    async def interrupt(self) -> None:
        """Interrupt the kernel (the session's)."""
        raise NotImplementedError

    async def is_alive(self) -> bool:
        """Whether the kernel still runs (the session's)."""
        raise NotImplementedError

    async def silent(
        self,
        code: str = "",
        *,
        user_expressions: dict[str, str] | None = None,
        timeout: float = 10.0,
        interrupts: int = 1,
    ) -> SilentReply:
        """A silent ``execute_request`` (no history, no outputs, no execution count).

        ``user_expressions`` are evaluated by the kernel after ``code``, each one guarded on
        its own. When no reply comes within ``timeout`` the kernel is interrupted and waited for
        again, at most ``interrupts`` times; then :class:`KernelBusyError`.
        """
        if self._info is None:
            await self.start()
        async with self._lock:
            self._ready_client()
            return await self._silent(code, user_expressions, timeout, interrupts)

    async def _silent(
        self,
        code: str,
        user_expressions: dict[str, str] | None,
        timeout: float,
        interrupts: int,
    ) -> SilentReply:
        client = self._ready_client()
        msg_id = kernel_client_of(client).execute(
            code,
            silent=True,
            store_history=False,
            user_expressions=user_expressions or {},
            allow_stdin=False,
            stop_on_error=False,
        )
        return await self._shell_request(msg_id, timeout, interrupts)

    async def _shell_request(self, msg_id: str, timeout: float, interrupts: int) -> SilentReply:
        """Wait for the shell reply to ``msg_id``, skipping stale replies of earlier requests."""
        kc = kernel_client_of(self._ready_client())
        deadline = monotonic() + timeout
        used = 0
        while True:
            remaining = deadline - monotonic()
            if remaining <= 0:
                if used >= interrupts:
                    raise KernelBusyError(
                        f"no reply from the kernel within {timeout:g} s",
                        details={"timeout": timeout, "interrupts": used},
                    )
                used += 1
                await self.interrupt()
                deadline = monotonic() + timeout
                continue
            try:
                msg = await kc.get_shell_msg(timeout=min(remaining, _ALIVE_SLICE))
            except Empty:
                if not await self.is_alive():
                    raise KernelDeadError("the kernel died during a silent request") from None
                continue
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return SilentReply(content=dict(msg.get("content") or {}), interrupts=used)
