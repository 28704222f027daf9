"""Kernel-layer benchmarks (issue 5): ``python -m benchmarks.kernel_bench`` (``make bench``
runs them first, then the engine rows of :mod:`benchmarks.engine_bench`, in one table).

Everything is measured in one process run, on the same machine state, against R = the raw
jupyter_client ``x=1`` execute round trip (send, wait for iopub idle and the shell reply) on
the same kernel, interleaved with the measured operation so drift hits both alike:

- a trivial code action through the kernel layer (``add`` + ``exec``: execute, effects, sink);
- a markdown action;
- the per-action cost at the 2000th action vs the 10th on one growing notebook (each window's
  ratio is taken against R measured in that same window);
- a 300-cell notebook end to end (start kernel, run every cell, write the ``.ipynb``, stop):
  this layer vs plain nbclient and papermill;
- the variables probe over 100 names including a 1e6-row DataFrame: probe time minus R.

Prints a table whose target lines end with ``holds`` or ``MISSED``. Exit status is 0 unless
``--strict`` is given and a target was missed (a noisy machine should not fail a build).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import platform
import signal
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

from notebook_bcc.kernel import (
    ActionPath,
    ActionRunner,
    KernelSession,
    MemorySink,
    NotebookDocument,
    NotebookWriter,
    probe_variables,
)
from notebook_bcc.models.actions import AddAction, ExecAction

LAST = ExecAction(codecell_id="lastAddedCellId")
MS = 1000.0


@dataclass(frozen=True, slots=True)
class Line:
    """One row of the table: a target line (with a verdict) or an information line."""

    label: str
    value: str
    target: str = ""
    holds: bool | None = None


def median(values: list[float]) -> float:
    """The median of ``values``."""
    return statistics.median(values)


def at(behavior: str, index: int) -> ActionPath:
    """An action path in a benchmark behavior."""
    return ActionPath("bench", 1, "step", behavior, 0, index)


async def raw_roundtrip(kc: Any) -> float:
    """Seconds for one raw ``x=1`` execute: iopub idle and the shell reply both received."""
    began = perf_counter()
    msg_id = kc.execute("x=1")
    while True:
        msg = await kc.get_iopub_msg()
        if (
            msg["parent_header"].get("msg_id") == msg_id
            and msg["msg_type"] == "status"
            and msg["content"]["execution_state"] == "idle"
        ):
            break
    while True:
        reply = await kc.get_shell_msg()
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    return perf_counter() - began


def new_runner(session: KernelSession, *sinks: Any) -> ActionRunner:
    """A runner with a fresh document and a memory sink (plus ``sinks``)."""
    document = NotebookDocument(workflow_id="bench")
    return ActionRunner(session, document, sinks=[MemorySink(), *sinks])


async def code_action(runner: ActionRunner, behavior: str, index: int, add: AddAction) -> float:
    """Seconds for ``add`` code + ``exec lastAddedCellId`` through the runner."""
    began = perf_counter()
    await runner.run(add, at(behavior, 2 * index))
    outcome = await runner.run(LAST, at(behavior, 2 * index + 1))
    elapsed = perf_counter() - began
    assert outcome.ok, outcome
    return elapsed


async def bench_round_trip(session: KernelSession, trials: int, lines: list[Line]) -> float:
    """R and the trivial code action, interleaved; returns R in seconds."""
    runner = new_runner(session)
    await runner.start()
    kc = session.kernel_client
    add = AddAction(content="x=1", shot_type="action")
    for i in range(20):  # warm-up
        await raw_roundtrip(kc)
        await code_action(runner, "warm", i, add)
    raw: list[float] = []
    layer: list[float] = []
    for i in range(trials):
        raw.append(await raw_roundtrip(kc))
        layer.append(await code_action(runner, "code", i, add))
    r = median(raw)
    ratio = median(layer) / r
    lines.append(
        Line(f"R: raw jupyter_client x=1 round trip (median of {trials})", f"{r * MS:.3f} ms")
    )
    lines.append(
        Line("code action: add+exec+effects+sink / R", f"{ratio:.2f} R", "<= 1.3 R", ratio <= 1.3)
    )
    return r


async def bench_markdown(session: KernelSession, trials: int, lines: list[Line]) -> None:
    """A markdown action (new cell) and a merged one, medians."""
    runner = new_runner(session)
    actions = [AddAction(content=f"Paragraph {i}.", shot_type="markdown") for i in range(trials)]
    created: list[float] = []
    merged: list[float] = []
    for i, action in enumerate(actions):
        began = perf_counter()
        await runner.run(action, at(f"m{i}", 0))
        created.append(perf_counter() - began)
        began = perf_counter()
        await runner.run(action, at(f"m{i}", 1))
        merged.append(perf_counter() - began)
    value = median(created) * MS
    lines.append(Line("markdown action (new cell)", f"{value:.4f} ms", "<= 0.1 ms", value <= 0.1))
    lines.append(
        Line("markdown action merged into the previous cell", f"{median(merged) * MS:.4f} ms")
    )


async def bench_growth(
    session: KernelSession, actions: int, window: int, folder: Path, lines: list[Line]
) -> None:
    """Per-action cost early vs late on one growing notebook, each against R in its window."""
    runner = new_runner(session)
    writer = NotebookWriter(folder / "growth.ipynb", runner.document, debounce=1.0, fsync=False)
    runner.sinks.append(writer)
    await runner.start()
    kc = session.kernel_client
    add = AddAction(content="x=1", shot_type="action")
    raw: list[float] = []
    layer: list[float] = []
    for i in range(actions):
        raw.append(await raw_roundtrip(kc))
        layer.append(await code_action(runner, "grow", i, add))
    early = slice(0, window)
    late = slice(actions - window, actions)
    early_ratio = median(layer[early]) / median(raw[early])
    late_ratio = median(layer[late]) / median(raw[late])
    growth = late_ratio / early_ratio
    lines.append(
        Line(
            f"per action, actions 1-{window} (x R in window)",
            f"{early_ratio:.2f} R  ({median(layer[early]) * MS:.3f} ms)",
        )
    )
    lines.append(
        Line(
            f"per action, actions {actions - window + 1}-{actions} (x R in window)",
            f"{late_ratio:.2f} R  ({median(layer[late]) * MS:.3f} ms)",
        )
    )
    lines.append(
        Line(
            f"per-action cost at action {actions} / at action 10",
            f"{growth:.3f}x",
            "<= 1.1x",
            growth <= 1.1,
        )
    )
    report = await writer.aclose()
    lines.append(
        Line(
            f"notebook write of {report.cells} cells (debounced, off the action path)",
            f"{report.duration_s * MS:.1f} ms",
        )
    )


PROBE_SETUP = """
get_ipython().run_line_magic('reset', '-f')
import numpy as np
import pandas as pd
big = pd.DataFrame({
    'a': np.arange(1_000_000),
    'b': np.random.default_rng(0).random(1_000_000),
    'c': np.arange(1_000_000) % 7,
})
arr = np.zeros(1_000_000)
x = 1
for i in range(97):
    globals()[f'v{i}'] = [i, float(i), f's{i}', list(range(i)), {'k': i}][i % 5]
del i
"""


async def bench_probe(session: KernelSession, r: float, trials: int, lines: list[Line]) -> None:
    """The variables probe over 100 names with a 1e6-row DataFrame, against R."""
    runner = new_runner(session)
    await runner.run(AddAction(content=PROBE_SETUP, shot_type="action"), at("probe", 0))
    setup = await runner.run(LAST, at("probe", 1))
    if not setup.ok:
        lines.append(Line("variables probe", "skipped: numpy/pandas not importable in the kernel"))
        return
    kc = session.kernel_client
    first = await probe_variables(session)
    assert first.error is None, first.error
    raw: list[float] = []
    probes: list[float] = []
    for _ in range(trials):
        raw.append(await raw_roundtrip(kc))
        report = await probe_variables(session)
        probes.append(report.duration_s)
    r_window = median(raw)
    extra = (median(probes) - r_window) / r_window
    lines.append(
        Line(
            f"variables probe, {first.total} names incl. 1e6-row DataFrame",
            f"{median(probes) * MS:.3f} ms",
        )
    )
    lines.append(
        Line("variables probe: (probe - R) / R", f"{extra:.2f} R", "<= 0.5 R", extra <= 0.5)
    )


async def live_benchmarks(args: argparse.Namespace, folder: Path, lines: list[Line]) -> None:
    """Everything that runs on one warm kernel."""
    async with KernelSession(cwd=folder) as session:
        r = await bench_round_trip(session, args.trials, lines)
        await bench_markdown(session, args.markdown, lines)
        await bench_growth(session, args.actions, args.window, folder, lines)
        await bench_probe(session, r, args.probe_trials, lines)


def cell_sources(count: int) -> list[str]:
    """The cells of the end-to-end notebook: small assignments, prints and results."""
    shapes = ["v = {i}", "print({i})", "v * {i}"]
    return [shapes[i % 3].format(i=i) for i in range(count)]


async def run_this_layer(sources: list[str], out: Path, folder: Path) -> float:
    """Start a kernel, run every cell as add+exec, write the notebook, stop; seconds."""
    actions = [AddAction(content=source, shot_type="action") for source in sources]
    began = perf_counter()
    document = NotebookDocument(workflow_id="bench")
    writer = NotebookWriter(out, document, debounce=1.0)
    async with KernelSession(cwd=folder) as session:
        runner = ActionRunner(session, document, sinks=[writer])
        await runner.start()
        for i, action in enumerate(actions):
            await runner.run(action, at("e2e", 2 * i))
            await runner.run(LAST, at("e2e", 2 * i + 1))
        await writer.aclose()
    return perf_counter() - began


@contextlib.contextmanager
def kept_signal_handlers() -> Iterator[None]:
    """nbclient's and papermill's helpers reset SIGINT/SIGTERM: put ours back afterwards."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def run_nbclient(source: Path, out: Path, folder: Path) -> float:
    """Plain nbclient ``execute()`` over the notebook, then ``nbformat.write``; seconds."""
    import nbformat
    from nbclient import NotebookClient

    began = perf_counter()
    with kept_signal_handlers():
        nb = nbformat.read(str(source), as_version=4)
        NotebookClient(
            nb, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
        ).execute()
        nbformat.write(nb, str(out))
    return perf_counter() - began


def run_papermill(source: Path, out: Path, folder: Path) -> float | None:
    """papermill ``execute_notebook``; seconds, or None when papermill is not installed."""
    try:
        import papermill  # type: ignore[import-untyped]
    except ImportError:
        return None
    logging.getLogger("papermill").setLevel(logging.WARNING)
    began = perf_counter()
    with kept_signal_handlers():
        papermill.execute_notebook(
            str(source), str(out), kernel_name="python3", progress_bar=False, cwd=str(folder)
        )
    return perf_counter() - began


def end_to_end(args: argparse.Namespace, folder: Path, lines: list[Line]) -> None:
    """The 300-cell notebook through this layer, plain nbclient and papermill, interleaved."""
    import nbformat

    sources = cell_sources(args.cells)
    source = folder / "e2e-input.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(text) for text in sources]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(source))
    outputs = iter(range(10**6))

    def next_out(tool: str) -> Path:
        return folder / f"e2e-{tool}-{next(outputs)}.ipynb"

    ours: list[float] = []
    plain: list[float] = []
    paper: list[float] = []
    runs: list[tuple[list[float], Callable[[], float | None]]] = [
        (ours, lambda: asyncio.run(run_this_layer(sources, next_out("ours"), folder))),
        (plain, lambda: run_nbclient(source, folder / "e2e-nbclient.ipynb", folder)),
        (paper, lambda: run_papermill(source, folder / "e2e-papermill.ipynb", folder)),
    ]
    for _ in range(args.rounds):
        for bucket, run in runs:
            took = run()
            if took is not None:
                bucket.append(took)
    mine = median(ours)
    lines.append(Line(f"{args.cells}-cell notebook end to end, this layer", f"{mine:.2f} s"))
    lines.append(
        Line(f"{args.cells}-cell notebook end to end, plain nbclient", f"{median(plain):.2f} s")
    )
    ratio = mine / median(plain)
    lines.append(
        Line("end to end: this layer / plain nbclient", f"{ratio:.2f}x", "<= 1.1x", ratio <= 1.1)
    )
    if not paper:
        lines.append(Line("end to end vs papermill", "skipped: papermill is not installed"))
        return
    lines.append(
        Line(f"{args.cells}-cell notebook end to end, papermill", f"{median(paper):.2f} s")
    )
    ratio = mine / median(paper)
    lines.append(
        Line("end to end: this layer / papermill", f"{ratio:.2f}x", "<= 0.2x", ratio <= 0.2)
    )


def versions() -> str:
    """Python, core count and the Jupyter packages measured."""
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"python {platform.python_version()}", f"{os.cpu_count()} cores"]
    for package in ("jupyter_client", "nbclient", "ipykernel", "papermill"):
        try:
            parts.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            parts.append(f"{package} absent")
    return ", ".join(parts)


def render(lines: list[Line]) -> str:
    """The table: label, value, target and verdict columns."""
    width = max(len(line.label) for line in lines)
    value_width = max(len(line.value) for line in lines)
    rows = [f"{'measure'.ljust(width)}  {'value'.ljust(value_width)}  target      verdict"]
    for line in lines:
        row = f"{line.label.ljust(width)}  {line.value.ljust(value_width)}"
        if line.holds is not None:
            row += f"  {line.target.ljust(10)}  {'holds' if line.holds else 'MISSED'}"
        rows.append(row.rstrip())
    return "\n".join(rows)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The kernel-layer benchmark's options (defaults are the issue's sizes)."""
    group = parser.add_argument_group("kernel-layer benchmarks")
    group.add_argument("--trials", type=int, default=300, help="R / code action pairs")
    group.add_argument("--markdown", type=int, default=2000, help="markdown actions")
    group.add_argument("--actions", type=int, default=2000, help="growing-notebook actions")
    group.add_argument("--window", type=int, default=20, help="actions per early/late window")
    group.add_argument("--probe-trials", type=int, default=100, help="probe / R pairs")
    group.add_argument("--cells", type=int, default=300, help="end-to-end notebook cells")
    group.add_argument("--rounds", type=int, default=3, help="end-to-end rounds per tool")


def collect(args: argparse.Namespace, folder: Path, lines: list[Line]) -> None:
    """Run every kernel-layer benchmark in ``folder``, appending table lines."""
    asyncio.run(live_benchmarks(args, folder, lines))
    end_to_end(args, folder, lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kernel_bench", description=__doc__)
    add_arguments(parser)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run every kernel-layer benchmark and print the table."""
    args = parse_args(argv)
    lines: list[Line] = []
    print(f"notebook-bcc kernel layer benchmarks ({versions()})", flush=True)
    with tempfile.TemporaryDirectory(prefix="nbbcc-bench-") as tmp:
        collect(args, Path(tmp), lines)
    print(render(lines))
    missed = any(line.holds is False for line in lines)
    return 1 if (missed and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
