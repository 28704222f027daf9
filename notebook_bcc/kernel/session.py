"""One warm kernel per workflow, driven the DESIGN §9 D22 way.

``NotebookClient(nb, km=km)`` + ``async_start_new_kernel_client()`` + ``async_execute_cell`` per
cell: never nbclient's ``setup_kernel`` / ``execute`` helpers, which replace the process's
SIGINT/SIGTERM handlers and restore the defaults afterwards. The session either starts its own
kernel (and then owns it: shutdown is immediate) or drives one it is given (a jupyter_server
session kernel: the session only closes its channels).

Everything that talks to the kernel goes through one lock: a cell, a silent probe and an
acceptance request never interleave on the shell channel. Timeouts, interrupts and a dead kernel
become a typed status from our own bookkeeping (:class:`RawRun`), not a parsed string.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from time import monotonic
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbformat.notebooknode import NotebookNode

from notebook_bcc.kernel.aio import cancel_alive_pollers, consume, kernel_client_of, maybe_await
from notebook_bcc.kernel.client import BccNotebookClient, OutputListener
from notebook_bcc.kernel.document import new_notebook_node
from notebook_bcc.kernel.errors import KernelBusyError, KernelDeadError, KernelStartError
from notebook_bcc.kernel.launch import default_cwd, ipc_settings
from notebook_bcc.kernel.probe_install import install_code
from notebook_bcc.kernel.results import ExecStatus
from notebook_bcc.kernel.session_types import (
    TIMEOUT_ENAME,
    KernelInfo,
    RawRun,
    SilentReply,
    reply_status,
)
from notebook_bcc.kernel.silent import SilentRequests
from notebook_bcc.kernel.watch import (
    NO_REPLY,
    PROCESS_POLL_S,
    RESTARTED_BY_MANAGER,
    RESTARTED_OUTSIDE,
    ReplyWatch,
    process_id,
    restarted_since,
    settled,
)
from notebook_bcc.kernel.wire import use_fast_dates
from notebook_bcc.models.base import utc_now_iso

START_ATTEMPTS = 3
"""How many times a kernel we own is started before giving up (port races at start)."""


class KernelSession(SilentRequests):
    """A live kernel, its nbclient client and the bookkeeping around them.

    ``km``: an existing kernel manager (the server passes a session kernel's; the session never
    shuts it down), or None to start a kernel of ``kernel_name`` in ``cwd``. ``init_code``
    snippets run silently once per kernel (at start and after a restart) -- the variables probe
    installs itself this way; the first one is also the pre-warm throw-away cell.
    ``transport="ipc"`` starts an owned kernel on Unix domain sockets in Jupyter's runtime
    directory (no TCP ports, so no "running over TCP without encryption" warning).
    ``output_listener`` sees each output of a running cell as it arrives.
    """

    def __init__(
        self,
        km: Any | None = None,
        *,
        kernel_name: str = "python3",
        cwd: str | Path | None = None,
        init_code: Sequence[str] | None = None,
        startup_timeout: float = 60.0,
        iopub_timeout: int = 4,
        interrupt_grace: float = 5.0,
        transport: str | None = None,
        output_listener: OutputListener | None = None,
    ) -> None:
        self._km: Any | None = km
        self.transport = transport
        self.output_listener = output_listener
        self._owns_kernel = km is None
        self.kernel_name = str(getattr(km, "kernel_name", None) or kernel_name)
        self.cwd = Path(cwd) if cwd is not None else None
        self.init_code: tuple[str, ...] = (
            (install_code(),) if init_code is None else tuple(init_code)
        )
        self.startup_timeout = startup_timeout
        self.iopub_timeout = iopub_timeout
        self.interrupt_grace = interrupt_grace
        self._client: NotebookClient | None = None
        self._info: KernelInfo | None = None
        self._lock = asyncio.Lock()
        self._start_task: asyncio.Task[KernelInfo] | None = None
        self._inflight: asyncio.Future[Any] | None = None
        self._cell_timeout: float | None = None
        self._last_reply: dict[str, Any] | None = None
        self._dead = False
        self._closing = False
        self._lost = False
        self._lost_why = RESTARTED_BY_MANAGER
        self._watched: set[int] = set()
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def owns_kernel(self) -> bool:
        """True when this session started the kernel (and so shuts it down)."""
        return self._owns_kernel

    @property
    def km(self) -> Any:
        """The kernel manager (after :meth:`start`)."""
        if self._km is None:
            raise KernelStartError("the kernel session has not been started")
        return self._km

    @property
    def info(self) -> KernelInfo:
        """``kernelspec`` and ``language_info`` from the kernel (after :meth:`start`)."""
        if self._info is None:
            raise KernelStartError("the kernel session has not been started")
        return self._info

    @property
    def kernel_client(self) -> Any:
        """The connected ``AsyncKernelClient`` (benchmarks, diagnostics; do not interleave
        requests with the session's own)."""
        return kernel_client_of(self._ready_client())

    @property
    def started(self) -> bool:
        """True once the kernel answered ``kernel_info`` and the warm-up cell ran."""
        return self._info is not None

    @property
    def dead(self) -> bool:
        """True once the kernel was found dead (or the session was shut down)."""
        return self._dead or self._closed

    def start_soon(self) -> asyncio.Task[KernelInfo]:
        """Pre-warm: start the kernel in the background; :meth:`start` then awaits it."""
        if self._start_task is None:
            self._start_task = asyncio.ensure_future(self._start())
        return self._start_task

    async def start(self) -> KernelInfo:
        """Start (or attach to) the kernel, ask ``kernel_info`` once, run the warm-up cell."""
        if self._info is not None:
            return self._info
        return await asyncio.shield(self.start_soon())

    async def _start(self) -> KernelInfo:
        """Start (or connect to) the kernel; a kernel we own that dies while starting — two
        processes can race for the same free port — is started again, at most twice."""
        for attempt in range(START_ATTEMPTS):
            try:
                return await self._start_once()
            except KernelStartError:
                if not self._owns_kernel or attempt == START_ATTEMPTS - 1 or self._closed:
                    raise
                with contextlib.suppress(Exception):
                    await maybe_await(self.km.shutdown_kernel(now=True))
                # the manager's shutdown destroyed the zmq context it made: the next attempt
                # needs a manager of its own (and picks new ports)
                self._km = None
                self._stop_channels()
                self._client = None
                self._dead = False
        raise KernelStartError("unreachable")  # pragma: no cover

    async def _start_once(self) -> KernelInfo:
        if self._closed:
            raise KernelDeadError("the kernel session was shut down")
        try:
            if self._km is None:
                self._km = AsyncKernelManager(
                    kernel_name=self.kernel_name, **ipc_settings(self.transport)
                )
            if not self._km.has_kernel:
                await self._launch()
            return await self._connect()
        except (KernelStartError, KernelDeadError):
            raise
        except Exception as exc:
            raise KernelStartError(
                f"kernel {self.kernel_name!r} did not start: {type(exc).__name__}: {exc}",
                details={"kernel_name": self.kernel_name},
            ) from exc

    async def _launch(self) -> None:
        km = self.km
        kwargs: dict[str, Any] = {}
        if self.cwd is not None:
            kwargs["cwd"] = str(self.cwd)
        if getattr(km, "ipykernel", False):
            # A per-process SQLite history file is a lock-contention hazard with many kernels.
            kwargs["extra_arguments"] = ["--HistoryManager.hist_file=:memory:"]
        await maybe_await(km.start_kernel(**kwargs))

    def _watch_restarts(self) -> None:
        """Hear the kernel manager's auto-restarter: a kernel it restarts (or gives up on) under
        a running cell never answers that cell, so the cell ends ``dead_kernel`` at once
        instead of waiting for a reply that cannot come."""
        km = self._km
        add = getattr(km, "add_restart_callback", None)
        if km is None or add is None or id(km) in self._watched:
            return
        self._watched.add(id(km))
        for event in ("restart", "dead"):
            add(self._on_restart, event)

    def _on_restart(self, why: str = RESTARTED_BY_MANAGER) -> None:
        inflight = self._inflight
        self._dead = True
        if inflight is not None and not inflight.done():
            self._lost = True
            self._lost_why = why
            inflight.cancel()

    async def _watch_process(self, task: asyncio.Future[Any], before: int | None) -> None:
        """A kernel restarted by someone else while a cell runs (JupyterLab's Restart, the
        REST API: no restart callback fires for those) never answers that cell, and the new
        process is alive, so nbclient would wait for the reply forever: a new process id
        ends the cell ``dead_kernel`` like an auto-restart does."""
        if before is None:
            return
        while not task.done():
            await asyncio.sleep(PROCESS_POLL_S)
            now = process_id(self._km)
            if now is not None and now != before:
                self._on_restart(RESTARTED_OUTSIDE)
                return

    async def _connect(self) -> KernelInfo:
        self._watch_restarts()
        client = BccNotebookClient(
            new_notebook_node(),
            km=self.km,
            kernel_name=self.kernel_name,
            timeout_func=self._timeout_for,
            interrupt_on_timeout=True,
            error_on_timeout={
                "ename": TIMEOUT_ENAME,
                "evalue": "cell timed out; kernel interrupted",
                "traceback": [],
            },
            allow_errors=True,
            record_timing=False,
            # nbclient's stream coalescing runs a regex that is quadratic in the line length
            # (a 50,000-character line costs 1.4 s); effects merge adjacent streams instead.
            coalesce_streams=False,
            iopub_timeout=self.iopub_timeout,
            startup_timeout=max(1, int(-(-self.startup_timeout // 1))),
            on_cell_executed=self._on_cell_executed,
        )
        client.output_listener = self._on_output
        await client.async_start_new_kernel_client()
        use_fast_dates(kernel_client_of(client).session)
        self._client = client
        self._dead = False
        reply = await self._shell_request(
            kernel_client_of(client).kernel_info(), self.startup_timeout, 0
        )
        self._info = self._kernel_info(reply.content)
        for code in self.init_code or ("pass",):
            await self._silent(code, None, self.startup_timeout, 0)
        return self._info

    def _kernel_info(self, content: dict[str, Any]) -> KernelInfo:
        language_info = dict(content.get("language_info") or {})
        spec: Any = None
        try:
            spec = self.km.kernel_spec
        except Exception:
            spec = None
        kernelspec = {
            "name": self.kernel_name,
            "display_name": str(getattr(spec, "display_name", None) or self.kernel_name),
            "language": str(getattr(spec, "language", None) or language_info.get("name", "")),
        }
        implementation = content.get("implementation")
        version = content.get("protocol_version")
        return KernelInfo(
            kernelspec=kernelspec,
            language_info=language_info,
            protocol_version=str(version) if version is not None else None,
            implementation=str(implementation) if implementation is not None else None,
        )

    async def restart(self) -> KernelInfo:
        """Restart the kernel (fresh namespace), reconnect and re-run the init code (D11)."""
        async with self._lock:
            self._stop_channels()
            await settled(self.km, self.startup_timeout)  # one someone else began ends first
            await maybe_await(self.km.restart_kernel(now=True))
            self._info = None
            return await self._connect()

    async def rebind(self, km: Any) -> KernelInfo:
        """Drive another (borrowed) kernel from now on: the old one is gone for good (culled,
        shut down); connect to ``km`` and run the init code there (D11)."""
        async with self._lock:
            self._stop_channels()
            self._km = km
            self._owns_kernel = False
            self._info = None
            return await self._connect()

    async def shutdown(self) -> None:
        """Close the session without waiting for a running cell.

        An owned kernel is killed at once (a running cell ends ``dead_kernel``, outputs so far
        kept); a borrowed kernel is interrupted if busy, given ``interrupt_grace`` seconds, and
        left running: only our channels close.
        """
        if self._closed:
            return
        self._closing = True
        if self._start_task is not None and not self._start_task.done():
            self._start_task.cancel()
        inflight = self._inflight
        try:
            if self._owns_kernel and self._km is not None:
                if self._km.has_kernel:
                    await maybe_await(self._km.shutdown_kernel(now=True))
                if inflight is not None and not inflight.done():
                    inflight.cancel()
            elif inflight is not None and not inflight.done():
                await maybe_await(self.km.interrupt_kernel())
                await asyncio.wait([inflight], timeout=self.interrupt_grace)
                if not inflight.done():
                    inflight.cancel()
                    if self._client is not None:
                        cancel_alive_pollers(self._client)
            if inflight is not None:
                await asyncio.wait([inflight], timeout=self.interrupt_grace)
        finally:
            self._stop_channels()
            self._closed = True
            self._dead = True

    def _stop_channels(self) -> None:
        client = self._client
        if client is not None and client.kc is not None:
            client.kc.stop_channels()
        self._client = None

    async def __aenter__(self) -> KernelSession:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def is_alive(self) -> bool:
        """Ask the kernel manager whether the kernel process still runs."""
        if self._closed or self._km is None:
            return False
        alive = bool(await maybe_await(self._km.is_alive()))
        if not alive:
            self._dead = True
        return alive

    async def interrupt(self) -> None:
        """Send an interrupt to the kernel (a running cell ends ``interrupted``)."""
        await maybe_await(self.km.interrupt_kernel())

    # -- execution ------------------------------------------------------------------------

    def _timeout_for(self, cell: Any) -> float | None:
        return self._cell_timeout

    def _on_output(self, cell_id: str, output: NotebookNode) -> None:
        listener = self.output_listener
        if listener is not None:
            with contextlib.suppress(Exception):  # a display problem never stops a cell
                listener(cell_id, output)

    def _on_cell_executed(self, **kwargs: Any) -> None:
        reply = kwargs.get("execute_reply")
        self._last_reply = reply if isinstance(reply, dict) else None

    def _ready_client(self) -> NotebookClient:
        if self._closed or self._closing:
            raise KernelDeadError("the kernel session was shut down")
        if self._dead:
            raise KernelDeadError("the kernel is dead")
        if self._client is None:
            raise KernelStartError("the kernel session has not been started")
        return self._client

    async def execute(
        self,
        nb: NotebookNode,
        cell: NotebookNode,
        index: int,
        *,
        timeout: float | None = None,
        store_history: bool = True,
    ) -> RawRun:
        """Run ``cell`` (``nb.cells[index]``) exactly once; outputs land in the cell.

        ``timeout`` (seconds, None = no limit) interrupts the kernel when exceeded; the kernel
        stays usable and the status is ``timeout``. A kernel that dies mid-cell gives
        ``dead_kernel`` with the outputs received so far.
        """
        if self._info is None:
            await self.start()
        async with self._lock:
            client = self._ready_client()
            client.nb = nb
            self._cell_timeout = timeout if timeout and timeout > 0 else None
            self._last_reply = None
            started_at = utc_now_iso()
            began = monotonic()
            before = process_id(self._km)
            status, message = await self._run_cell(client, cell, index, store_history, before)
            duration = monotonic() - began
            if status == "ok":
                status, message = reply_status(self._last_reply, timeout)
            if status == "interrupted" and not self._closing and restarted_since(self._km, before):
                # jupyter_client interrupts a kernel before it restarts or shuts it down: the
                # interrupt was the restart's, the cell was lost with its kernel
                self._dead = True
                status, message = "dead_kernel", await settled(self._km, self.startup_timeout)
            kernel_ready = await self._settle_after_timeout() if status == "timeout" else True
            count = cell.get("execution_count")
            return RawRun(
                status=status,
                execution_count=count if isinstance(count, int) else None,
                started_at=started_at,
                ended_at=utc_now_iso(),
                duration_s=duration,
                message=message,
                kernel_ready=kernel_ready,
            )

    async def _run_cell(
        self,
        client: NotebookClient,
        cell: NotebookNode,
        index: int,
        store_history: bool,
        before: int | None,
    ) -> tuple[ExecStatus, str | None]:
        """nbclient's ``async_execute_cell`` in a task of its own, so that neither a cancelled
        caller nor :meth:`shutdown` leaves the shell channel in an unknown state."""
        task = asyncio.ensure_future(
            client.async_execute_cell(cell, index, store_history=store_history)
        )
        self._inflight = task
        watcher = asyncio.ensure_future(self._watch_process(task, before))
        replies = ReplyWatch(task)
        if isinstance(client, BccNotebookClient):
            client.on_idle = replies.idle
        try:
            await asyncio.shield(task)
        except DeadKernelError:
            if replies.lost:
                cancel_alive_pollers(client)
                return "interrupted", NO_REPLY
            # nbclient turns a cancel of the cell task (ours, on a restart) into this too, and
            # then leaves its liveness poller running: it is ours to stop
            cancel_alive_pollers(client)
            self._dead = True
            if self._lost:
                self._lost = False
                return "dead_kernel", self._lost_why
            return self._lost_kernel_status()
        except asyncio.CancelledError:
            if self._lost:
                cancel_alive_pollers(client)
                self._lost = False
                self._dead = True
                return "dead_kernel", self._lost_why
            if self._closing:
                return self._lost_kernel_status()
            await self._abandon(client, task)
            raise
        except Exception as exc:
            if not (self._closing or not await self.is_alive()):
                raise
            self._dead = True
            return "dead_kernel", f"{type(exc).__name__}: {exc}"
        finally:
            self._inflight = None
            watcher.cancel()
            replies.close()
            if isinstance(client, BccNotebookClient):
                client.on_idle = None
        return "ok", None

    async def _abandon(self, client: NotebookClient, task: asyncio.Future[Any]) -> None:
        """The caller was cancelled mid-cell: interrupt the cell and give it a moment to end
        before the lock is released; past that, stop waiting for it."""
        with contextlib.suppress(Exception):
            await self.interrupt()
        await asyncio.wait([task], timeout=self.interrupt_grace)
        if not task.done():
            task.cancel()
            cancel_alive_pollers(client)
        task.add_done_callback(consume)

    def _lost_kernel_status(self) -> tuple[ExecStatus, str]:
        if self._closing and not self._owns_kernel:
            return "interrupted", "the session was closed while the cell ran"
        if self._closing:
            return "dead_kernel", "the kernel was shut down while the cell ran"
        return "dead_kernel", "the kernel died while the cell ran"

    async def _settle_after_timeout(self) -> bool:
        """After an interrupt: is the kernel idle again? One more interrupt if not."""
        for attempt in range(2):
            try:
                client = self._ready_client()
                await self._shell_request(
                    kernel_client_of(client).kernel_info(), self.interrupt_grace, 0
                )
                return True
            except KernelBusyError:
                if attempt == 0:
                    await self.interrupt()
            except KernelDeadError:
                return False
        return False


__all__ = [
    "NO_REPLY",
    "RESTARTED_OUTSIDE",
    "START_ATTEMPTS",
    "TIMEOUT_ENAME",
    "KernelInfo",
    "KernelSession",
    "RawRun",
    "SilentReply",
    "default_cwd",
]
