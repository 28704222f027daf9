"""Kernel session lifecycle: metadata, pre-warm, cwd, dead kernels, shutdown, signal handlers.

Tests here that kill or shut down a kernel start their own; the rest share the module kernel.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import AsyncKernelManager

from notebook_bcc.kernel import (
    ActionOutcome,
    ActionRunner,
    KernelDeadError,
    KernelSession,
    MemorySink,
    NotebookDocument,
    VariablesReport,
    default_cwd,
    open_notebook_kernel,
    probe_variables,
)
from notebook_bcc.kernel.session import NO_REPLY
from notebook_bcc.models.actions import AddAction
from tests.kernel.conftest import LAST, KernelHarness, LoopThread, path, started

pytestmark = pytest.mark.timeout(60)

LANGUAGE_INFO_KEYS = {"name", "version", "mimetype", "file_extension", "codemirror_mode"}


def test_kernel_info_gives_kernelspec_and_full_language_info(kh: KernelHarness) -> None:
    runner, sink = kh.runner()
    metadata = runner.document.nb.metadata
    assert metadata["kernelspec"]["name"] == "python3"
    assert metadata["kernelspec"]["language"] == "python"
    assert metadata["kernelspec"]["display_name"]
    assert set(metadata["language_info"]) >= LANGUAGE_INFO_KEYS
    assert sink.metadata["language_info"] == metadata["language_info"]


def test_kernel_runs_in_the_configured_directory(kh: KernelHarness) -> None:
    assert kh.value("__import__('os').getcwd()") == repr(str(kh.cwd))


def test_default_cwd_is_the_notebook_folder(tmp_path: Path) -> None:
    assert default_cwd(tmp_path / "sub" / "analysis.ipynb") == tmp_path / "sub"
    assert default_cwd(None) is None


def new_runner(session: KernelSession) -> ActionRunner:
    """A runner with a fresh document on ``session``."""
    return ActionRunner(session, NotebookDocument(workflow_id="wf"), sinks=[MemorySink()])


def test_prewarm_then_a_killed_kernel_is_dead_with_partial_outputs_then_restart(
    loop_thread: LoopThread,
) -> None:
    session = KernelSession()
    runner = new_runner(session)

    async def scenario() -> tuple[ActionOutcome, ActionOutcome, VariablesReport, ActionOutcome]:
        warming = session.start_soon()
        assert session.start_soon() is warming
        info = await session.start()
        assert warming.done()
        assert warming.result() is info
        await runner.start()
        await runner.run(AddAction(content="import os\nos.getpid()", shot_type="action"), path(0))
        pid_outcome = await runner.run(LAST, path(1))
        assert pid_outcome.execution is not None
        pid = int(pid_outcome.execution.effects[0])
        source = "import time\nprint('partial', flush=True)\ntime.sleep(30)"
        added = await runner.run(AddAction(content=source, shot_type="action"), path(2))
        task = asyncio.ensure_future(runner.run(LAST, path(3)))
        await started(runner, added.cell_id or "")
        os.kill(pid, signal.SIGKILL)
        killed = await asyncio.wait_for(task, 15)
        after = await runner.run(LAST, path(4))
        report = await probe_variables(session)
        await session.restart()
        await runner.run(AddAction(content="'back'", shot_type="action"), path(5))
        back = await runner.run(LAST, path(6))
        fresh = await probe_variables(session)
        assert fresh.error is None
        assert "os" not in fresh.variables  # a fresh namespace, probe reinstalled
        await session.shutdown()
        return killed, after, report, back

    killed, after, report, back = loop_thread.run(scenario())
    assert killed.execution is not None
    assert killed.execution.status == "dead_kernel"
    assert killed.execution.outputs[0]["text"] == "partial\n"
    assert killed.execution.effects[0] == "partial\n"
    assert killed.execution.effects[-1].startswith("DeadKernelError")
    assert after.execution is not None
    assert after.execution.status == "dead_kernel"
    assert report.error is not None
    assert "dead_kernel" in report.error
    assert back.ok  # the restarted kernel runs cells again


def test_a_kernel_restarted_by_its_manager_mid_cell_ends_the_cell(loop_thread: LoopThread) -> None:
    """A manual restart (JupyterLab's Restart calls the manager's ``restart_kernel``) fires no
    restart callback and leaves a live process: the cell still ends instead of waiting for a
    reply the new kernel never sends (nbclient notices only if it polls in the dead window)."""
    session = KernelSession()
    runner = new_runner(session)

    async def scenario() -> ActionOutcome:
        await runner.start()
        source = "import time\nprint('go', flush=True)\ntime.sleep(60)"
        added = await runner.run(AddAction(content=source, shot_type="action"), path(0))
        task = asyncio.ensure_future(runner.run(LAST, path(1)))
        await started(runner, added.cell_id or "")
        await session.km.restart_kernel(now=True)
        try:
            return await asyncio.wait_for(task, 15)
        finally:
            await session.shutdown()

    ended = loop_thread.run(scenario())
    assert ended.execution is not None
    assert ended.execution.status == "dead_kernel"
    assert ended.execution.outputs[0]["text"] == "go\n"


LOSE_NEXT_REPLY = """\
kernel = get_ipython().kernel
handler = kernel.shell_handlers["execute_request"]
def interrupted_before_the_code(*args):
    kernel.shell_handlers["execute_request"] = handler
    raise KeyboardInterrupt
kernel.shell_handlers["execute_request"] = interrupted_before_the_code
"""


def test_an_interrupt_that_loses_the_reply_ends_the_cell_and_the_next_one_runs(
    loop_thread: LoopThread,
) -> None:
    """An interrupt that lands in ipykernel's execute handler outside the cell's code (a
    DELETE's interrupt arriving between two cells did, in CI) ends the handler with
    ``KeyboardInterrupt caught in kernel``: idle is published, no execute_reply ever comes.
    Here the kernel's handler raises it once, deterministically. The cell ends
    ``interrupted`` instead of waiting forever, and the kernel runs the next cell."""
    session = KernelSession()
    runner = new_runner(session)

    async def scenario() -> tuple[ActionOutcome, ActionOutcome]:
        await runner.start()
        await runner.run(AddAction(content=LOSE_NEXT_REPLY, shot_type="action"), path(0))
        assert (await runner.run(LAST, path(1))).ok
        await runner.run(AddAction(content="lost = 1", shot_type="action"), path(2))
        lost = await asyncio.wait_for(runner.run(LAST, path(3)), 20)
        await runner.run(AddAction(content="print('next')", shot_type="action"), path(4))
        following = await asyncio.wait_for(runner.run(LAST, path(5)), 20)
        await session.shutdown()
        return lost, following

    lost, following = loop_thread.run(scenario())
    assert lost.execution is not None
    assert (lost.execution.status, lost.execution.message) == ("interrupted", NO_REPLY)
    assert lost.execution.kernel_ready
    assert following.ok
    assert following.execution is not None
    assert following.execution.outputs[0]["text"] == "next\n"


def test_shutdown_does_not_wait_for_a_running_cell(loop_thread: LoopThread) -> None:
    session = KernelSession()
    runner = new_runner(session)

    async def scenario() -> tuple[ActionOutcome, float]:
        await runner.start()
        source = "import time\nprint('go', flush=True)\ntime.sleep(60)"
        added = await runner.run(AddAction(content=source, shot_type="action"), path(0))
        task = asyncio.ensure_future(runner.run(LAST, path(1)))
        await started(runner, added.cell_id or "")
        began = time.monotonic()
        await session.shutdown()
        outcome = await asyncio.wait_for(task, 10)
        return outcome, time.monotonic() - began

    outcome, took = loop_thread.run(scenario())
    assert outcome.execution is not None
    assert outcome.execution.status == "dead_kernel"
    assert took < 5
    assert session.dead
    with pytest.raises(KernelDeadError):
        loop_thread.run(session.silent("1"))


def test_a_borrowed_kernel_is_not_shut_down(loop_thread: LoopThread) -> None:
    async def scenario() -> tuple[bool, bool]:
        km = AsyncKernelManager(kernel_name="python3")
        await km.start_kernel()
        try:
            session = KernelSession(km)
            assert not session.owns_kernel
            runner = new_runner(session)
            await runner.start()
            await runner.run(AddAction(content="shared = 1", shot_type="action"), path(0))
            ran = (await runner.run(LAST, path(1))).ok
            await session.shutdown()
            return ran, bool(await km.is_alive())
        finally:
            await km.shutdown_kernel(now=True)

    ran, alive = loop_thread.run(scenario())
    assert ran
    assert alive


def test_a_swallowed_interrupt_is_retried_and_the_kernel_comes_back(
    loop_thread: LoopThread,
) -> None:
    session = KernelSession(iopub_timeout=1, interrupt_grace=1.0)
    runner = new_runner(session)
    source = (
        "import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    time.sleep(30)\n"
    )

    async def scenario() -> tuple[ActionOutcome, ActionOutcome]:
        await runner.start()
        await runner.run(AddAction(content=source, shot_type="action"), path(0))
        stubborn = await runner.run(LAST, path(1), timeout=1.0)
        await runner.run(AddAction(content="'alive'", shot_type="action"), path(2))
        following = await runner.run(LAST, path(3))
        await session.shutdown()
        return stubborn, following

    stubborn, following = loop_thread.run(scenario())
    assert stubborn.execution is not None
    assert stubborn.execution.status == "timeout"
    assert stubborn.execution.kernel_ready
    assert following.ok


async def test_a_kernel_that_dies_while_starting_is_started_again_on_a_new_manager(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two processes can race for the same free port and the kernel dies before it answers.
    The session starts it again; the failed manager's shutdown destroyed its zmq context, so
    the next attempt must not reuse that manager (it failed with "Operation not supported")."""
    real_connect = KernelSession._connect
    managers: list[Any] = []

    async def dies_the_first_time(self: KernelSession) -> Any:
        managers.append(self.km)
        if len(managers) == 1:
            os.kill(self.km.provisioner.pid, signal.SIGKILL)  # dead before kernel_info
        return await real_connect(self)

    monkeypatch.setattr(KernelSession, "_connect", dies_the_first_time)
    async with KernelSession() as session:
        runner = new_runner(session)
        await runner.start()
        await runner.run(AddAction(content="print('alive')", shot_type="action"), path(0))
        ran = await runner.run(LAST, path(1))
        assert ran.ok, ran
    assert len(managers) == 2
    assert managers[0] is not managers[1]
    assert managers[0].context.closed
    assert not managers[0].has_kernel


async def test_signal_handlers_are_unchanged_after_a_run() -> None:
    def mine(signum: int, frame: FrameType | None) -> None:
        """A handler the test installs and expects to find afterwards."""

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, mine)
    try:
        async with KernelSession() as session:
            runner = new_runner(session)
            await runner.start()
            await runner.run(AddAction(content="print('x')", shot_type="action"), path(0))
            assert (await runner.run(LAST, path(1))).ok
            await runner.run(
                AddAction(content="import time; time.sleep(5)", shot_type="action"), path(2)
            )
            timed = await runner.run(LAST, path(3), timeout=0.5)
            assert timed.execution is not None
            assert timed.execution.status == "timeout"
            await runner.probe()
            await runner.acceptance(["True"])
            assert signal.getsignal(signal.SIGINT) is mine
        assert signal.getsignal(signal.SIGINT) is mine
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


async def test_a_jupyter_server_session_kernel_is_driven_and_left_alive(
    jp_serverapp: Any, jp_root_dir: Path
) -> None:
    sessions = jp_serverapp.session_manager
    model = await sessions.create_session(
        path="work/analysis.ipynb", name="analysis.ipynb", type="notebook", kernel_name="python3"
    )
    kernel_id = model["kernel"]["id"]
    km = jp_serverapp.kernel_manager.get_kernel(kernel_id)
    try:
        async with KernelSession(km) as session:
            assert not session.owns_kernel
            runner = new_runner(session)
            await runner.start()
            await runner.run(AddAction(content="from_server = 21 * 2", shot_type="action"), path(0))
            assert (await runner.run(LAST, path(1))).ok
            report = await runner.probe(["from_server"])
            assert report.variables["from_server"].value == 42
        assert kernel_id in jp_serverapp.kernel_manager.list_kernel_ids()
        assert await km.is_alive()
    finally:
        await sessions.delete_session(model["id"])


async def test_open_notebook_kernel_runs_in_the_notebook_folder_and_writes_it(
    tmp_path: Path,
) -> None:
    target = tmp_path / "project" / "analysis.ipynb"
    target.parent.mkdir()
    (target.parent / "data.csv").write_text("a\n1\n")
    wired = open_notebook_kernel(target, workflow_id="wf-open")
    try:
        await wired.runner.start()
        await wired.runner.run(
            AddAction(content="open('data.csv').read()", shot_type="action"), path(0)
        )
        outcome = await wired.runner.run(LAST, path(1))
        assert outcome.execution is not None
        assert outcome.execution.effects == ["'a\\n1\\n'"]
    finally:
        await wired.close()
    written = nbformat.read(str(target), as_version=4)
    nbformat.validate(written)
    assert written.metadata.kernelspec.name == "python3"
    assert written.cells[0].outputs[0]["data"]["text/plain"] == "'a\\n1\\n'"
