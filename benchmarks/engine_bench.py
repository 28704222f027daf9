"""Engine benchmarks (issue 7 §4): ``python -m benchmarks.engine_bench`` (``make bench`` runs
them after the kernel-layer rows, in the same process and table).

The blueprints are generated here as YAML text and run through the whole engine (FSM,
contracts, store commits, kernel layer, blueprint planner), headless, as ``notebook-bcc run
--auto-confirm`` would run them:

- one long run of ``--engine-stages`` x ``--engine-steps`` x 1 behavior x
  ``--engine-actions`` trivial ``x = 1`` code actions (default 100 x 2 x 10 = 2000). R, the raw
  jupyter_client ``x=1`` round trip, is measured on the engine's own kernel at the start of
  every behavior (the planner's ``generate_actions`` turn, while the kernel is idle), so it is
  interleaved with the run. From it:

  - a trivial code action: the time between consecutive code cells finishing in the kernel
    inside a behavior (median over the run) / the median R of the run;
  - the per-transition store cost (``Engine.metrics_commit_ms``, every commit) over the code
    actions 1-20 and 1981-2000, the ratio of the medians, with the snapshot parts that grow;

- a 300-code-cell blueprint end to end (load, kernel start, run, notebook written, kernel
  stopped) vs plain nbclient and papermill on the notebook it produced, interleaved rounds.

Target lines end with ``holds`` or ``MISSED``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter, process_time, thread_time
from typing import Any, TypeVar

from benchmarks.kernel_bench import (
    MS,
    Line,
    cell_sources,
    median,
    raw_roundtrip,
    render,
    run_nbclient,
    run_papermill,
    versions,
)
from notebook_bcc.blueprint.loader import load_blueprint_text
from notebook_bcc.engine.engine import Engine
from notebook_bcc.engine.headless import HeadlessRun, close_headless, open_headless
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.engine.parameters import INPUTS_PATH
from notebook_bcc.kernel.cell_ids import ActionPath
from notebook_bcc.models.actions import ExecAction
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.planners.base import PlannerReply, PlannerRequest
from notebook_bcc.planners.blueprint import BlueprintPlanner
from notebook_bcc.store.sqlite import Commit as StoreCommit
from notebook_bcc.store.sqlite import SqliteStore

KB = 1024.0
T = TypeVar("T")

# -- blueprints ------------------------------------------------------------------------------

Stages = list[list[list[list[str]]]]
"""stages -> steps -> behaviors -> code sources."""


def blueprint_yaml(name: str, stages: Stages, acceptance: tuple[str, ...] = ()) -> str:
    """A D14 blueprint: every stage, step and behavior with its own id, one code action each."""
    lines = ["kind: StateMachine", f"name: {name}", "end_states: [done]", "states:"]
    for s, steps in enumerate(stages):
        stage = f"stage_{s:03d}"
        lines += [f"  {stage}:", f"    title: Stage {s}", f"    goal: Part {s} of the run."]
        lines.append("    steps:")
        for t, behaviors in enumerate(steps):
            step = f"{stage}_step_{t}"
            lines += [f"      - id: {step}", f"        title: Step {t}", "        behaviors:"]
            for b, sources in enumerate(behaviors):
                lines += [f"          - id: {step}_behavior_{b}", "            agent: Bench"]
                if acceptance:
                    lines.append(f"            acceptance: {json.dumps(list(acceptance))}")
                lines.append("            actions:")
                lines += [f"              - code: {json.dumps(source)}" for source in sources]
    return "\n".join(lines) + "\n"


def long_run_stages(stages: int, steps: int, actions: int) -> Stages:
    """``stages`` x ``steps`` x 1 behavior x ``actions`` trivial code actions."""
    return [[[["x = 1"] * actions] for _ in range(steps)] for _ in range(stages)]


def e2e_stages(cells: int, per_behavior: int, steps_per_stage: int) -> Stages:
    """The kernel bench's 300 cells (assignments, prints, results) cut into a plan."""
    sources = cell_sources(cells)
    behaviors = [sources[i : i + per_behavior] for i in range(0, len(sources), per_behavior)]
    steps = [[behavior] for behavior in behaviors]
    return [steps[i : i + steps_per_stage] for i in range(0, len(steps), steps_per_stage)]


# -- the long run ----------------------------------------------------------------------------


class RoundTripPlanner(BlueprintPlanner):
    """The blueprint planner, measuring R on the engine's idle kernel before each behavior."""

    def __init__(self, text: str, trials: int, recorder: RunRecorder) -> None:
        super().__init__(load_blueprint_text(text, "engine-bench-long.yaml"))
        self.trials = trials
        self.recorder = recorder
        self.engine: Engine | None = None

    async def generate_actions(self, request: PlannerRequest) -> PlannerReply:
        """R trials on the engine's kernel (not part of any action), then the actions."""
        assert self.engine is not None
        began = perf_counter()
        kc = self.engine.runtime.session.kernel_client
        for _ in range(self.trials):
            self.recorder.r.append((self.recorder.done + 1, await raw_roundtrip(kc)))
        self.recorder.excluded += perf_counter() - began
        return await super().generate_actions(request)


@dataclass
class Commit:
    """One engine commit: the code action in progress when it began, and its cost."""

    action: int
    ms: float


@dataclass(repr=False)  # asyncio may repr the run's result: keep that cheap
class RunRecorder:
    """Everything the long run records (through wrappers of the kernel runner and commits)."""

    size_at: tuple[int, ...]
    replay_at: tuple[range, ...] = ()
    """Code-action windows whose store commits are kept for :func:`replay_commits`."""
    done: int = 0
    """Code actions completed so far."""
    r: list[tuple[int, float]] = field(default_factory=list)
    """(code action in progress, R seconds)."""
    intervals: list[tuple[int, float]] = field(default_factory=list)
    """(code action, seconds since the previous code cell of its behavior finished)."""
    cpu: dict[int, tuple[float, float]] = field(default_factory=dict)
    """Code action -> CPU seconds of this process (all threads, event-loop thread) in it."""
    clocks: tuple[float, float] = (0.0, 0.0)
    commits: list[Commit] = field(default_factory=list)
    store_calls: dict[int, int] = field(default_factory=dict)
    """Code action -> store-thread round trips (commits, inbox polls, ...) made during it."""
    boundaries: list[float] = field(default_factory=list)
    """Seconds between a behavior's last code cell finishing in the kernel and the next
    behavior's first code cell starting, minus the R trials made in between."""
    boundary_at: list[int] = field(default_factory=list)
    """The code action in progress during each boundary (its R trials carry the same one)."""
    replays: list[tuple[Path, list[StoreCommit]]] = field(default_factory=list)
    """Per :attr:`replay_at` window: a copy of the database as it was before the window's
    first commit, and every store commit the window made, in order."""
    sizes: dict[int, dict[str, tuple[int, int | None]]] = field(default_factory=dict)
    stored: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Bytes of the stored snapshot (parts) and of its item rows at the recorded actions."""
    written: list[tuple[int, int]] = field(default_factory=list)
    """(action, snapshot bytes the commit wrote) of every commit."""
    snapshots: dict[int, WorkflowSnapshot] = field(default_factory=dict)
    excluded: float = 0.0
    behavior: tuple[str, int, str, str, int] | None = None
    """The behavior run (stage, visit, step, behavior, iteration) of the last code cell."""
    last_end: tuple[float, float] | None = None
    """When the last code cell finished in the kernel, and :attr:`excluded` then."""

    def cell_ran(self, path: ActionPath, began: float, ended: float) -> None:
        """A queued code cell ran in the kernel from ``began`` to ``ended``.

        Timed at the kernel runner, not by the events the engine publishes: a commit may
        carry a cell's outcome later (the next cell's RUNNING commit; the behavior's last cell
        rides with a folded boundary), so its ``COMPLETE_ACTION`` event is no completion time.
        """
        if path.stage_id == INPUTS_PATH.stage_id:
            return  # the inputs and parameters cells: setup, not a code action
        behavior = (path.stage_id, path.visit, path.step_id, path.behavior_id, path.iteration)
        self.done += 1
        clocks = (process_time(), thread_time())
        if self.last_end is not None:
            at, excluded = self.last_end
            if behavior != self.behavior:
                self.boundaries.append(began - at - (self.excluded - excluded))
                self.boundary_at.append(self.done)
            else:
                self.intervals.append((self.done, ended - at))
                self.cpu[self.done] = (clocks[0] - self.clocks[0], clocks[1] - self.clocks[1])
        self.behavior = behavior
        self.clocks = clocks
        self.last_end = (ended, self.excluded)

    def watch(self, engine: Engine, folder: Path) -> None:
        """Subscribe, time every commit through ``engine.metrics_commit_ms``, and keep the
        store commits of the :attr:`replay_at` windows (with the database before each)."""
        runner = engine.runtime.runner
        run_cell = runner.run

        async def timed(action: Any, path: ActionPath, **kwargs: Any) -> Any:
            began = perf_counter()
            outcome = await run_cell(action, path, **kwargs)
            if isinstance(action, ExecAction):
                self.cell_ran(path, began, perf_counter())
            return outcome

        runner.run = timed  # type: ignore[method-assign]
        original = engine.commit
        store_commit = engine.store.commit
        self.replays = [(folder / f"replay-{i}.sqlite", []) for i in range(len(self.replay_at))]

        async def capture(change: StoreCommit) -> Any:
            action = self.done + 1
            for actions, (copy, changes) in zip(self.replay_at, self.replays, strict=True):
                if action in actions:
                    if not changes:
                        await store_call(functools.partial(_backup_store, to=copy))
                    changes.append(change)
            return await store_commit(change)

        engine.store.commit = capture  # type: ignore[method-assign]

        async def commit(snapshot: WorkflowSnapshot, **kwargs: Any) -> WorkflowSnapshot:
            action = self.done + 1
            result = await original(snapshot, **kwargs)
            self.commits.append(Commit(action, engine.metrics_commit_ms))
            self.written.append((action, engine.store.last_write.bytes))
            if self.done in self.size_at and self.done not in self.sizes:
                self.sizes[self.done] = snapshot_parts(engine.snapshot)
                self.snapshots[self.done] = engine.snapshot
                workflow_id = engine.snapshot.workflow_id
                self.stored[self.done] = await store_call(lambda s: s.stored_bytes(workflow_id))
            return result

        store_call = engine.store.call
        engine.commit = commit  # type: ignore[method-assign]

        async def call(fn: Callable[[Any], T]) -> T:
            action = self.done + 1
            self.store_calls[action] = self.store_calls.get(action, 0) + 1
            return await store_call(fn)

        engine.store.call = call  # type: ignore[method-assign]


EXPAND = frozenset(
    {
        "fsm",
        "location",
        "location.progress",
        "location.progress.stages",
        "location.progress.steps",
        "location.progress.behaviors",
        "stage_machine",
        "usage",
    }
)


def snapshot_parts(snapshot: WorkflowSnapshot) -> dict[str, tuple[int, int | None]]:
    """JSON size (and item count for lists and maps) of each part of the snapshot."""
    parts: dict[str, tuple[int, int | None]] = {}

    def walk(prefix: str, value: dict[str, Any]) -> None:
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            if path in EXPAND and isinstance(item, dict):
                walk(path, item)
                continue
            size = len(json.dumps(item, separators=(",", ":")))
            count = len(item) if isinstance(item, list | dict) else None
            parts[path] = (size, count)

    walk("", snapshot.model_dump(mode="json", by_alias=True))
    parts["(whole snapshot)"] = (len(snapshot.model_dump_json(by_alias=True)), None)
    return parts


async def long_run(args: argparse.Namespace, folder: Path) -> RunRecorder:
    """The long blueprint run, recorded."""
    last = args.engine_stages * args.engine_steps * args.engine_actions
    window = min(args.engine_window, last)
    recorder = RunRecorder(
        size_at=(min(10, last), last),
        replay_at=(range(1, window + 1), range(last - window + 1, last + 1)),
    )
    text = blueprint_yaml(
        "engine-bench-long",
        long_run_stages(args.engine_stages, args.engine_steps, args.engine_actions),
        acceptance=("x == 1",),
    )
    planner = RoundTripPlanner(text, args.engine_r_trials, recorder)
    engine = await open_headless(
        HeadlessRun(
            planner=planner,
            notebook=folder / "long" / "long.ipynb",
            state_db=folder / "long" / "state.sqlite",
            problem="engine benchmark: trivial code actions",
            options=EngineOptions(auto_confirm=True),
        )
    )
    planner.engine = engine
    recorder.watch(engine, folder)
    try:
        result = await engine.run()
    finally:
        await close_headless(engine)
    if result.exit_code != 0 or recorder.done != last:
        raise RuntimeError(
            f"long run ended with exit code {result.exit_code} after {recorder.done} of {last} "
            f"code actions: {result.snapshot.run.reason}"
        )
    return recorder


def size_text(size: int, count: int | None) -> str:
    """``12.3 KB (45 items)``."""
    items = "" if count is None else f" ({count} items)"
    return f"{size / KB:.1f} KB{items}"


def _backup_store(store: SqliteStore, *, to: Path) -> None:
    """A consistent copy of ``store``'s database at ``to``."""
    _backup(store.connection, to)


def _backup(db: sqlite3.Connection, path: Path) -> None:
    """A consistent copy of the open database ``db`` at ``path`` (SQLite's backup API)."""
    target = sqlite3.connect(path)
    try:
        db.backup(target)
    finally:
        target.close()


def replay_commits(
    replays: list[tuple[Path, list[StoreCommit]]], folder: Path, rounds: int
) -> list[list[float]]:
    """Seconds of each ``SqliteStore.commit`` the engine made in each window, replayed side by
    side: every round copies each window's database as it was before the window, opens a
    store on the copy and makes the window's commits again, windows interleaved. The first
    commit of a replay (which reads the store's layout back) is not timed.

    The run's own commit times come from windows minutes apart; on a shared machine the
    load differs between them more than the cost does. Here both windows meet the same load.
    """
    took: list[list[float]] = [[] for _ in replays]
    for _ in range(rounds):
        for i, (source, changes) in enumerate(replays):
            scratch = folder / f"replaying-{i}.sqlite"
            for stale in folder.glob(f"replaying-{i}.sqlite*"):
                stale.unlink()
            shutil.copyfile(source, scratch)
            store = SqliteStore(scratch)
            try:
                for n, change in enumerate(changes):
                    began = perf_counter()
                    store.commit(change)
                    if n:
                        took[i].append(perf_counter() - began)
            finally:
                store.close()
    return took


def isolated_commits(
    snapshots: list[WorkflowSnapshot], path: Path, trials: int
) -> list[list[float]]:
    """Seconds of a bare ``SqliteStore.commit`` of each snapshot, interleaved, in one file.

    Each snapshot is committed again and again under its own workflow (no history, trace,
    contracts or cells), so the only difference between them is the snapshot itself.
    """
    store = SqliteStore(path)
    try:
        current = [
            store.create(
                snapshot.model_copy(
                    update={
                        "workflow_id": f"isolated-{i}",
                        "notebook_path": f"isolated-{i}.ipynb",
                        "version": 0,
                    }
                )
            )
            for i, snapshot in enumerate(snapshots)
        ]
        took: list[list[float]] = [[] for _ in snapshots]
        for trial in range(trials + 20):
            for i, snapshot in enumerate(current):
                began = perf_counter()
                result = store.commit(StoreCommit(snapshot, snapshot.version))
                if trial >= 20:  # warm-up
                    took[i].append(perf_counter() - began)
                current[i] = result.snapshot
        return took
    finally:
        store.close()


def report_long_run(
    args: argparse.Namespace,
    rec: RunRecorder,
    replayed: list[list[float]],
    lines: list[Line],
) -> None:
    """The trivial-action row and the store-cost row (``replayed``: the early and late
    windows' store commits, :func:`replay_commits`), with what explains them."""
    last = rec.done
    window = args.engine_window
    early = range(1, window + 1)
    late = range(last - window + 1, last + 1)
    r_all = median([r for _, r in rec.r])
    per_action = median([s for _, s in rec.intervals])
    label = f"R: raw x=1 round trip on the engine's kernel (median of {len(rec.r)})"
    lines.append(Line(label, f"{r_all * MS:.3f} ms"))
    ratio = per_action / r_all
    lines.append(
        Line(
            f"code action through the engine / R (median of {len(rec.intervals)})",
            f"{ratio:.2f} R  ({per_action * MS:.3f} ms)",
            "<= 1.3 R",
            ratio <= 1.3,
        )
    )
    # What the steady-state code action spends in store commits.
    commits_by_action: dict[int, list[float]] = {}
    for commit in rec.commits:
        commits_by_action.setdefault(commit.action, []).append(commit.ms)
    timed = [a for a, _ in rec.intervals]
    counts = [len(commits_by_action.get(a, [])) for a in timed]
    spent = [sum(commits_by_action.get(a, [])) for a in timed]
    calls = [rec.store_calls.get(a, 0) for a in timed]
    lines.append(
        Line(
            "  of which engine commits (count x metrics_commit_ms, median)",
            f"{median(spent):.3f} ms = {median(spent) / (r_all * MS):.2f} R  "
            f"({statistics.median_low(counts)} commits)",
        )
    )
    lines.append(
        Line(
            "  store-thread round trips per code action (commits + others)",
            f"{statistics.median_low(calls)}",
        )
    )
    lines.append(
        Line(
            "  CPU of this process per code action (all threads / event loop)",
            f"{median([c for c, _ in rec.cpu.values()]) * MS:.3f} ms / "
            f"{median([c for _, c in rec.cpu.values()]) * MS:.3f} ms",
        )
    )
    for actions in (early, late):
        took = median([s for a, s in rec.intervals if a in actions])
        # R is measured at the start of each behavior: take the behaviors the window touches.
        reach = range(actions.start - args.engine_actions + 1, actions.stop)
        r_window = median([r for a, r in rec.r if a in reach])
        cpu = median([rec.cpu[a][0] for a in actions if a in rec.cpu]) * MS
        loop = median([rec.cpu[a][1] for a in actions if a in rec.cpu]) * MS
        lines.append(
            Line(
                f"  code action, actions {actions.start}-{actions.stop - 1} (x R in window)",
                f"{took / r_window:.2f} R  ({took * MS:.3f} ms; CPU {cpu:.1f} ms, loop {loop:.1f})",
            )
        )
    boundary = median(rec.boundaries) * MS
    lines.append(
        Line(
            "behavior boundary (probe, acceptance, planner turns, flush; excluded)",
            f"{boundary:.2f} ms",
            "<= 10 ms",
            boundary <= 10,
        )
    )
    edge = max(1, min(20, len(rec.boundaries) // 2))
    first_b = median(rec.boundaries[:edge])
    last_b = median(rec.boundaries[-edge:])
    lines.append(
        Line(
            f"  behavior boundary, last {edge} / first {edge} behaviors (ms)",
            f"{last_b / first_b:.2f}x  ({first_b * MS:.2f} ms -> {last_b * MS:.2f} ms)",
        )
    )
    # Each boundary in R measured inside it (the planner's R trials), as the code action is:
    # the two ends of a run are minutes apart, and the machine's load differs between them.
    r_at: dict[int, list[float]] = {}
    for action, r in rec.r:
        r_at.setdefault(action, []).append(r)
    in_r = [b / median(r_at[a]) for a, b in zip(rec.boundary_at, rec.boundaries, strict=True)]
    first_r, last_r = median(in_r[:edge]), median(in_r[-edge:])
    lines.append(
        Line(
            f"  behavior boundary in its R, last {edge} / first {edge} (flat)",
            f"{last_r / first_r:.2f}x  ({first_r:.2f} R -> {last_r:.2f} R)",
            "<= 1.2x",
            last_r / first_r <= 1.2,
        )
    )
    behaviors = len(rec.boundaries) + 1
    lines.append(
        Line(
            "  engine commits per behavior, whole run (code actions per behavior: "
            f"{args.engine_actions})",
            f"{len(rec.commits) / behaviors:.2f}  ({len(rec.commits)} for {behaviors})",
        )
    )
    every = sorted(c.ms for c in rec.commits)
    lines.append(
        Line(
            f"  engine commit, whole run: median / mean / p99 / slowest (of {len(every)})",
            f"{median(every):.3f} / {statistics.fmean(every):.3f} / "
            f"{every[min(len(every) - 1, int(len(every) * 0.99))]:.3f} / {every[-1]:.3f} ms",
        )
    )
    # Store cost per transition, early vs late.
    early_ms = [c.ms for c in rec.commits if c.action in early]
    late_ms = [c.ms for c in rec.commits if c.action in late]
    lines.append(
        Line(
            f"commit, actions 1-{window} (median of {len(early_ms)})",
            f"{median(early_ms):.3f} ms",
        )
    )
    lines.append(
        Line(
            f"commit, actions {late.start}-{last} (median of {len(late_ms)})",
            f"{median(late_ms):.3f} ms",
        )
    )
    lines.append(
        Line(
            "  the same, in the run (windows minutes apart; load differs)",
            f"{median(late_ms) / median(early_ms):.3f}x",
        )
    )
    early_r, late_r = replayed
    growth = median(late_r) / median(early_r)
    lines.append(
        Line(
            f"store cost per transition at action {last} / at action 10 (replayed)",
            f"{growth:.3f}x  ({median(early_r) * MS:.3f} ms -> {median(late_r) * MS:.3f} ms)",
            "<= 1.1x",
            growth <= 1.1,
        )
    )
    early_w = [float(b) for a, b in rec.written if a in early]
    late_w = [float(b) for a, b in rec.written if a in late]
    lines.append(
        Line(
            "  snapshot bytes a commit writes, actions 1-20 / last 20 (median)",
            f"{median(early_w):.0f} B / {median(late_w):.0f} B",
        )
    )
    report_stored(rec, lines)
    report_growth(rec, lines)


def report_stored(rec: RunRecorder, lines: list[Line]) -> None:
    """The stored snapshot (its parts) at the two recorded points: the issue 23 bound."""
    first, last = min(rec.stored), max(rec.stored)
    (part_a, items_a), (part_b, items_b) = rec.stored[first], rec.stored[last]
    ratio = part_b / part_a
    lines.append(
        Line(
            f"stored snapshot at action {last} / at action {first}",
            f"{ratio:.2f}x  ({part_a / KB:.1f} KB -> {part_b / KB:.1f} KB)",
            "<= 1.1x",
            ratio <= 1.1,
        )
    )
    lines.append(
        Line(
            "  item rows read on demand (completed, acceptance, usage, visits, tails)",
            f"{items_a / KB:.1f} KB -> {items_b / KB:.1f} KB",
        )
    )


def report_growth(rec: RunRecorder, lines: list[Line]) -> None:
    """Snapshot parts that grow between the two recorded points (D6 says none should)."""
    first, last = min(rec.sizes), max(rec.sizes)
    before, after = rec.sizes[first], rec.sizes[last]
    whole = "(whole snapshot)"
    lines.append(
        Line(
            f"snapshot full view (JSON) at action {first} -> {last}",
            f"{size_text(before[whole][0], None)} -> {size_text(after[whole][0], None)}",
        )
    )
    empty: tuple[int, int | None] = (0, None)
    changed = sorted(
        (after.get(path, empty)[0] - before.get(path, empty)[0], path)
        for path in {*before, *after} - {whole}
    )
    for delta, path in reversed(changed):
        if abs(delta) < 512:
            continue
        was, now = before.get(path, empty), after.get(path, empty)
        verb = "grows" if delta > 0 else "shrinks"
        lines.append(Line(f"  {verb}: {path}", f"{size_text(*was)} -> {size_text(*now)}"))


# -- end to end ------------------------------------------------------------------------------


async def run_engine(text: str, folder: Path) -> tuple[float, Path]:
    """Load the blueprint, run it headless to the end, close; seconds and the notebook."""
    notebook = folder / "engine.ipynb"
    began = perf_counter()
    planner = BlueprintPlanner(load_blueprint_text(text, "engine-bench-e2e.yaml"))
    engine = await open_headless(
        HeadlessRun(
            planner=planner,
            notebook=notebook,
            state_db=folder / "state.sqlite",
            problem="engine benchmark: end to end",
            options=EngineOptions(auto_confirm=True),
        )
    )
    try:
        result = await engine.run()
    finally:
        await close_headless(engine)
    elapsed = perf_counter() - began
    if result.exit_code != 0:
        raise RuntimeError(f"end-to-end run failed: {result.snapshot.run.reason}")
    return elapsed, notebook


def code_cells(path: Path) -> int:
    """Code cells with outputs or an execution count in a notebook file."""
    cells = json.loads(path.read_text())["cells"]
    return sum(1 for c in cells if c["cell_type"] == "code" and c.get("execution_count"))


def end_to_end(args: argparse.Namespace, folder: Path, lines: list[Line]) -> None:
    """The N-code-cell blueprint through the engine, then nbclient and papermill, interleaved."""
    text = blueprint_yaml(
        "engine-bench-e2e", e2e_stages(args.engine_cells, args.engine_actions, steps_per_stage=3)
    )
    source = folder / "e2e-engine-result.ipynb"
    rounds = iter(range(10**6))

    def engine_round() -> float:
        run_folder = folder / f"e2e-engine-{next(rounds)}"
        took, notebook = asyncio.run(run_engine(text, run_folder))
        if not source.exists():
            shutil.copyfile(notebook, source)
        return took

    ours: list[float] = []
    plain: list[float] = []
    paper: list[float] = []
    runs: list[tuple[list[float], Callable[[], float | None]]] = [
        (ours, engine_round),
        (plain, lambda: run_nbclient(source, folder / "e2e-nbclient.ipynb", folder)),
        (paper, lambda: run_papermill(source, folder / "e2e-papermill.ipynb", folder)),
    ]
    for round_index in range(args.engine_rounds):
        for bucket, run in runs:
            if bucket is paper and round_index >= args.engine_papermill_rounds:
                continue
            took = run()
            if took is not None:
                bucket.append(took)
    cells = code_cells(source)
    mine = median(ours)
    lines.append(
        Line(
            f"{args.engine_cells}-code-cell blueprint end to end, engine ({cells} cells run)",
            f"{mine:.2f} s",
        )
    )
    lines.append(
        Line("same notebook end to end, plain nbclient", f"{median(plain):.2f} s"),
    )
    ratio = mine / median(plain)
    lines.append(
        Line("end to end: engine / plain nbclient", f"{ratio:.2f}x", "<= 1.2x", ratio <= 1.2)
    )
    if not paper:
        lines.append(Line("end to end vs papermill", "skipped (not installed, or 0 rounds)"))
        return
    runs_text = f" (median of {len(paper)})" if len(paper) > 1 else " (1 run)"
    lines.append(Line(f"same notebook end to end, papermill{runs_text}", f"{median(paper):.2f} s"))
    ratio = mine / median(paper)
    verdict = ratio <= 0.25
    lines.append(Line("end to end: engine / papermill", f"{ratio:.2f}x", "<= 0.25x", verdict))


# -- entry points ----------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The engine benchmark's options (defaults are the issue's sizes)."""
    group = parser.add_argument_group("engine benchmarks")
    group.add_argument("--engine-stages", type=int, default=100, help="long run: stages")
    group.add_argument("--engine-steps", type=int, default=2, help="long run: steps per stage")
    group.add_argument(
        "--engine-actions", type=int, default=10, help="code actions per behavior (both runs)"
    )
    group.add_argument(
        "--engine-window", type=int, default=20, help="code actions per early/late window"
    )
    group.add_argument(
        "--engine-r-trials", type=int, default=5, help="R round trips before each behavior"
    )
    group.add_argument(
        "--engine-replay-rounds",
        type=int,
        default=15,
        help="rounds of the early and late windows' store commits replayed side by side",
    )
    group.add_argument("--engine-cells", type=int, default=300, help="end-to-end code cells")
    group.add_argument(
        "--engine-rounds", type=int, default=3, help="end-to-end rounds (engine, nbclient)"
    )
    group.add_argument(
        "--engine-papermill-rounds",
        type=int,
        default=1,
        help="end-to-end papermill rounds (the first ones; papermill is slow)",
    )


def collect(args: argparse.Namespace, folder: Path, lines: list[Line]) -> None:
    """Run every engine benchmark, appending table lines."""
    recorder = asyncio.run(long_run(args, folder))
    replayed = replay_commits(recorder.replays, folder, args.engine_replay_rounds)
    report_long_run(args, recorder, replayed, lines)
    first, last = min(recorder.snapshots), max(recorder.snapshots)
    early, late = isolated_commits(
        [recorder.snapshots[first], recorder.snapshots[last]], folder / "isolated.sqlite", 200
    )
    lines.append(
        Line(
            f"bare SqliteStore.commit of the snapshot at action {first} / {last}",
            f"{median(early) * MS:.3f} ms / {median(late) * MS:.3f} ms "
            f"({median(late) / median(early):.2f}x)",
        )
    )
    end_to_end(args, folder, lines)


def main(argv: list[str] | None = None) -> int:
    """Run the engine benchmarks alone and print their table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engine_bench", description=__doc__)
    add_arguments(parser)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    lines: list[Line] = []
    print(f"notebook-bcc engine benchmarks ({versions()})", flush=True)
    with tempfile.TemporaryDirectory(prefix="nbbcc-engine-bench-") as tmp:
        collect(args, Path(tmp), lines)
    print(render(lines))
    missed = any(line.holds is False for line in lines)
    return 1 if (missed and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
