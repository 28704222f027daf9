"""Code execution on a real kernel: exactly once, refusals, timeouts, errors and effects."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from pathlib import Path

import pytest

from notebook_bcc.kernel import (
    ActionOutcome,
    ActionRunner,
    CellRecord,
    EffectsConfig,
    NotebookWriter,
)
from notebook_bcc.kernel.cells import bcc_of
from notebook_bcc.models.actions import AddAction, ExecAction
from tests.kernel.conftest import LAST, KernelHarness, path, started

pytestmark = pytest.mark.timeout(60)


def code(source: str, **extra: object) -> AddAction:
    """An ``add`` action making a code cell."""
    return AddAction(content=source, shot_type="action", **extra)


def add_and_run(
    kh: KernelHarness, runner: ActionRunner, source: str, index: int, **kwargs: object
) -> ActionOutcome:
    """``add`` code at ``index`` and ``exec lastAddedCellId`` at ``index + 1``."""
    kh.act(runner, code(source), path(index))
    return kh.act(runner, LAST, path(index + 1), **kwargs)


def test_each_exec_runs_the_cell_exactly_once(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    outcome = add_and_run(kh, runner, "runs_once = globals().get('runs_once', 0) + 1", 0)
    assert outcome.ok
    assert kh.value("runs_once") == "1"
    again = kh.act(runner, ExecAction(codecell_id=outcome.cell_id or ""), path(2))
    assert again.ok
    assert kh.value("runs_once") == "2"


def test_a_cell_without_output_is_not_run_again(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    outcome = add_and_run(kh, runner, "silent_side = globals().get('silent_side', 0) + 1", 0)
    assert outcome.execution is not None
    assert outcome.execution.outputs == []
    assert outcome.execution.effects == []
    assert outcome.execution.status == "ok"
    assert kh.value("silent_side") == "1"


def test_truncated_code_is_kept_visible_but_never_executed(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    add_and_run(kh, runner, "before_truncated = 1", 0)
    added = kh.act(runner, code("truncated_ran = True\nfor i in", truncated=True), path(2))
    assert added.refused
    assert "truncated" in added.refused
    cell = runner.document.get(added.cell_id or "")
    assert cell is not None
    assert bcc_of(cell)["status"] == "refused"  # type: ignore[index]
    ran = kh.act(runner, LAST, path(3))
    assert ran.refused
    assert "truncated" in ran.refused
    assert ran.execution is None
    assert kh.value("'truncated_ran' in globals()") == "False"
    assert runner.document.cells[0]["execution_count"] is not None
    assert cell["execution_count"] is None


def test_timeout_interrupts_and_the_next_cell_runs(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    source = "import time\nprint('started', flush=True)\ntime.sleep(30)\nnot_reached = 1"
    outcome = add_and_run(kh, runner, source, 0, timeout=1.0)
    result = outcome.execution
    assert result is not None
    assert result.status == "timeout"
    assert 1.0 <= result.duration_s < 10
    assert result.kernel_ready
    assert result.effects[0] == "started\n"
    assert result.effects[-1].startswith("TimeoutError: ")
    assert not any("KeyboardInterrupt" in effect for effect in result.effects)
    assert result.error is not None
    assert result.error.ename == "TimeoutError"
    assert bcc_of(runner.document.cells[0])["status"] == "timeout"  # type: ignore[index]
    following = add_and_run(kh, runner, "40 + 2", 2)
    assert following.ok
    assert following.execution is not None
    assert following.execution.effects == ["42"]
    assert kh.value("'not_reached' in globals()") == "False"


def test_an_interrupt_that_is_not_ours_is_reported_as_interrupted(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    added = kh.act(runner, code("import time\nprint('go', flush=True)\ntime.sleep(30)"), path(0))

    async def run_and_interrupt() -> ActionOutcome:
        task = asyncio.ensure_future(runner.run(LAST, path(1)))
        await started(runner, added.cell_id or "")
        await kh.session.interrupt()
        return await task

    outcome = kh.run(run_and_interrupt())
    assert outcome.execution is not None
    assert outcome.execution.status == "interrupted"
    assert add_and_run(kh, runner, "1", 2).ok


def test_error_cell_effects_and_the_next_cell_still_runs(kh: KernelHarness) -> None:
    runner, sink = kh.runner()
    outcome = add_and_run(kh, runner, "print('before')\nraise ValueError('bad value')", 0)
    result = outcome.execution
    assert result is not None
    assert result.status == "error"
    assert not outcome.ok
    assert result.effects[0] == "before\n"
    assert result.effects[1].startswith("ValueError: bad value")
    assert "\x1b" not in result.effects[1]
    assert result.error is not None
    assert (result.error.ename, result.error.evalue) == ("ValueError", "bad value")
    assert result.error.traceback
    cell = sink.cells[outcome.cell_id or ""]
    assert cell["metadata"]["notebook_bcc"]["status"] == "error"
    assert cell["outputs"][-1]["output_type"] == "error"
    assert add_and_run(kh, runner, "'still fine'", 2).ok


def test_image_outputs_are_referenced_not_pasted(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    payload = base64.b64encode(b"\x89PNG\r\n" + bytes(20 * 1024)).decode()
    source = (
        "from IPython.display import display\n"
        f"display({{'image/png': '{payload}', 'text/plain': '<Figure>'}}, raw=True)\n"
        "print('done')"
    )
    kh.act(runner, code("first = 1"), path(0))
    outcome = add_and_run(kh, runner, source, 1)
    result = outcome.execution
    assert result is not None
    assert result.ok
    assert result.effects == ["[image/png 20 KB, cell 2]", "done\n"]
    assert result.outputs[0]["data"]["image/png"] == payload


def test_large_text_is_truncated_at_the_configured_budget(kh: KernelHarness) -> None:
    runner, _ = kh.runner(effects=EffectsConfig(max_chars=1000))
    outcome = add_and_run(kh, runner, "print('A' * 50_000 + 'END')", 0)
    assert outcome.execution is not None
    [effect] = outcome.execution.effects
    assert len(effect) <= 1000
    assert "truncated" in effect
    assert effect.rstrip().endswith("END")
    assert sum(len(out["text"]) for out in outcome.execution.outputs) > 50_000


def test_need_output_false_keeps_outputs_but_no_effects(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    kh.act(runner, code("print('quiet')"), path(0))
    outcome = kh.act(runner, ExecAction(codecell_id="lastAddedCellId", need_output=False), path(1))
    assert outcome.execution is not None
    assert outcome.execution.effects == []
    assert outcome.execution.outputs[0]["text"] == "quiet\n"


def test_a_stream_flushed_in_chunks_is_one_output_and_streams_keep_their_order(
    kh: KernelHarness,
) -> None:
    runner, _ = kh.runner()
    source = (
        "import sys\n"
        "sys.stdout.write('one'); sys.stdout.flush()\n"
        "sys.stdout.write(' two'); sys.stdout.flush()\n"
        "print(' three', flush=True)\n"
        "print('oops', file=sys.stderr, flush=True)\n"
        "print('after', flush=True)\n"
    )
    outcome = add_and_run(kh, runner, source, 0)
    assert outcome.execution is not None
    outputs = outcome.execution.outputs
    assert [(out["name"], out["text"]) for out in outputs] == [
        ("stdout", "one two three\n"),
        ("stderr", "oops\n"),
        ("stdout", "after\n"),
    ]


def test_display_updates_and_deferred_clear_output(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    source = (
        "from IPython.display import display, update_display, clear_output\n"
        "display('first', display_id='shown')\n"
        "update_display('updated', display_id='shown')\n"
        "print('old')\n"
        "clear_output(wait=True)\n"
        "print('new')\n"
    )
    outcome = add_and_run(kh, runner, source, 0)
    assert outcome.execution is not None
    assert outcome.ok
    outputs = outcome.execution.outputs
    assert [out["output_type"] for out in outputs] == ["stream"]
    assert outputs[0]["text"] == "new\n"
    kept = add_and_run(
        kh, runner, "display('a', display_id='d2')\nupdate_display('b', display_id='d2')", 2
    )
    assert kept.execution is not None
    assert kept.execution.outputs[0]["data"]["text/plain"] == "'b'"
    assert kept.execution.effects == ["'b'"]


def test_a_cancelled_caller_interrupts_the_cell_and_the_kernel_stays_usable(
    kh: KernelHarness,
) -> None:
    runner, _ = kh.runner()
    added = kh.act(
        runner,
        code("import time\nprint('go', flush=True)\ntime.sleep(30)\nafter_cancel = 1"),
        path(0),
    )

    async def cancel_midway() -> bool:
        task = asyncio.ensure_future(runner.run(LAST, path(1)))
        await started(runner, added.cell_id or "")
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return task.cancelled()

    assert kh.run(cancel_midway())
    assert add_and_run(kh, runner, "'usable'", 2).ok
    assert kh.value("'after_cancel' in globals()") == "False"


class StatusSink:
    """Notes each cell change with the cell's ``notebook_bcc.status`` at the moment it was
    handed over (a sink serializes later, but what it was told is what it knows)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    def put(self, record: CellRecord) -> None:
        own = bcc_of(record.cell)
        self.seen.append((record.change, None if own is None else own.get("status")))

    def metadata_changed(self, metadata: object) -> None:
        """Not needed here."""


def test_the_sinks_are_told_a_cell_runs_before_it_ends(kh: KernelHarness, tmp_path: Path) -> None:
    """A sink that wrote the added cell (``pending``) before the exec began had no news of it
    running until it ended: a browser holding the notebook, merged in that moment, kept a
    cell waiting in the kernel for minutes at ``[ ]`` (CI, single-user Lab under load), and a
    file written during the run said ``pending``."""
    statuses = StatusSink()
    runner, _ = kh.runner(sinks=[statuses])
    writer = NotebookWriter(tmp_path / "n.ipynb", runner.document, fsync=False)
    runner.sinks.append(writer)
    added = kh.act(
        runner, code("import time\nprint('started', flush=True)\ntime.sleep(1.5)"), path(0)
    )
    assert statuses.seen == [("created", "pending")]
    writer.flush()  # the cell as added is written (a merge, a debounced write): pending

    async def while_it_runs() -> str:
        task = asyncio.ensure_future(runner.run(LAST, path(1)))
        await started(runner, added.cell_id or "")
        writer.flush()
        on_disk = json.loads((tmp_path / "n.ipynb").read_text())
        await task
        return str(on_disk["cells"][0]["metadata"]["notebook_bcc"]["status"])

    assert kh.run(while_it_runs()) == "running"
    assert statuses.seen[1:] == [("updated", "running"), ("executed", "ok")]
