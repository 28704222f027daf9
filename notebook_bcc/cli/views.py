"""What ``notebook-bcc run`` shows while it works: JSON events, plain lines, or a live tree."""

from __future__ import annotations

import json
import sys
from time import monotonic
from typing import TYPE_CHECKING, Any, Protocol

from notebook_bcc.cli.next_steps import decision_lines
from notebook_bcc.workflow.metrics import stage_counts

if TYPE_CHECKING:
    from notebook_bcc.engine.engine import Engine, RunResult
    from notebook_bcc.models.event import WorkflowEvent
    from notebook_bcc.models.snapshot import ActionQueue, WorkflowSnapshot


class View(Protocol):
    """A run's display: started with the engine, told of notices, stopped with the result."""

    def start(self, engine: Engine) -> None:
        """Subscribe to the engine's events."""

    def notice(self, text: str) -> None:
        """A message for the user (signals)."""

    def stop(self, engine: Engine, result: RunResult | None) -> None:
        """The run ended (``result`` None when it was stopped at once)."""


def choose_view(*, json_lines: bool) -> View:
    """``--json`` -> JSON lines; a terminal -> the live view; otherwise plain lines."""
    if json_lines:
        return JsonView()
    if sys.stdout.isatty():
        return RichView()
    return PlainView()


def summary_lines(snapshot: WorkflowSnapshot, result: RunResult | None) -> list[str]:
    """The end-of-run summary: outcome, stages, cells, metrics, time, where things are."""
    done, planned = stage_counts(snapshot)  # what overall_progress divides, below
    metrics = snapshot.metrics
    lines = [
        f"workflow {snapshot.workflow_id}: {snapshot.run.status}"
        + (f" ({snapshot.run.reason})" if snapshot.run.reason else "")
        + f", FSM {snapshot.fsm.state.value}",
        f"stages: {len(done)}/{len(planned)} completed; hops {snapshot.stage_machine.hops}; "
        f"visits {dict(snapshot.stage_machine.visits)}",
    ]
    if result is not None:
        # the run's cells so far, but this command's time from its start: a resume that
        # answered a decision is not the run's time, and its kernel start and silent replay
        # of the earlier cells are part of what the user waited for
        from notebook_bcc.cli import command_seconds

        lines.append(f"cells: {result.cells}; time in this command: {command_seconds():.1f} s")
        if result.raised and snapshot.run.status == "completed":
            lines.append(
                f"warning: {result.raised} cell(s) raised an error and the planner went on past "
                "them (the notebook and --junit-xml show each)"
            )
    parts = []
    for name in ("overall_progress", "acceptance_pass_rate", "retry_rate", "variable_coverage"):
        value = getattr(metrics, name)
        if value is not None:
            parts.append(f"{name} {value:.2f}")
    pcs = metrics.pcs
    parts.append(
        f"PCS seeds={pcs.seeds_set} versions={pcs.library_versions_recorded} "
        f"holdout={pcs.holdout_split}"
    )
    lines.append("metrics: " + ", ".join(parts))
    usage = snapshot.usage
    if snapshot.planner.kind != "blueprint" and usage.calls:
        lines.append(
            f"planner ({snapshot.planner.kind}): {usage.calls} calls, "
            f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens, "
            f"{usage.latency_ms / 1000:.1f} s waiting"
        )
    unverified = unverified_steps(snapshot)
    if unverified:
        lines.append(
            f"unverified: {len(unverified)} step(s) completed without the planner's check "
            f"(it could not be asked; the fallback went on): {', '.join(unverified)}; "
            "`notebook-bcc trace --exchanges` says why"
        )
    for pending in snapshot.run.pending:
        lines += decision_lines(snapshot, pending)
    lines.append(f"notebook: {snapshot.notebook_path}")
    return lines


def unverified_steps(snapshot: WorkflowSnapshot) -> list[str]:
    """``stage/step`` of every step the D17 fallback completed unverified, in run order."""
    progress = snapshot.location.progress
    found: list[str] = []
    stages = [*progress.stages.completed]
    if progress.stages.current is not None:
        stages.append(progress.stages.current)
    for stage in stages:
        for result in stage.extra.get("step_results", []) or []:
            if isinstance(result, dict) and result.get("completion_status") == "unverified":
                found.append(f"{stage.id}/{result.get('id')}")
    current = progress.stages.current
    if current is not None and not current.extra.get("step_results"):
        found += [
            f"{current.id}/{step.id}"
            for step in progress.steps.completed
            if step.completion_status == "unverified"
        ]
    return list(dict.fromkeys(found))


class JsonView:
    """One JSON line per :class:`WorkflowEvent` on stdout (and nothing else there)."""

    def start(self, engine: Engine) -> None:
        """Print every event as it is published."""
        engine.subscribe(self._print)

    @staticmethod
    def _print(event: WorkflowEvent) -> None:
        sys.stdout.write(event.model_dump_json(by_alias=True) + "\n")
        sys.stdout.flush()

    def notice(self, text: str) -> None:
        """Notices go to stderr, keeping stdout pure JSON."""
        print(text, file=sys.stderr)

    def stop(self, engine: Engine, result: RunResult | None) -> None:
        """The summary goes to stderr."""
        for line in summary_lines(engine.snapshot, result):
            print(line, file=sys.stderr)


def _where(snapshot: WorkflowSnapshot) -> str:
    current = snapshot.location.current
    parts = [p for p in (current.stage_id, current.step_id, current.behavior_id) if p]
    if current.behavior_id and current.behavior_iteration > 1:
        parts[-1] += f" (iteration {current.behavior_iteration})"
    return " / ".join(parts)


class PlainView:
    """A line per stage, step and behavior started, per decision and per run change."""

    def __init__(self) -> None:
        self.began = monotonic()
        self.engine: Engine | None = None

    def start(self, engine: Engine) -> None:
        """Subscribe to the engine's events."""
        self.engine = engine
        engine.subscribe(self._event)

    def _line(self, text: str) -> None:
        print(f"[{monotonic() - self.began:7.1f}s] {text}", flush=True)

    def _event(self, event: WorkflowEvent) -> None:
        if self.engine is None:
            return
        snapshot = self.engine.snapshot
        if event.kind == "transition" and event.to in (
            "stage_running",
            "step_running",
            "behavior_running",
        ):
            self._line(f"{event.event:<16} {_where(snapshot)}")
        elif event.kind == "transition" and event.to == "workflow_completed":
            self._line("COMPLETE_WORKFLOW")
        elif event.kind == "decision":
            detail = event.detail
            self._line(
                f"decision {event.event}: {detail.get('kind')} "
                f"{detail.get('message') or detail.get('stage') or ''}".rstrip()
            )
        elif event.kind == "run" and event.event == "route":
            detail = event.detail
            self._line(
                f"route {detail.get('stage')} ({detail.get('outcome')}) -> "
                f"{detail.get('end') or 'end'} [{detail.get('rule')}]"
            )
        elif event.kind == "run" and event.event == "kernel_restored":
            detail = event.detail
            failed = f", replay failed at {detail['failed']}" if detail.get("failed") else ""
            skipped = f", {detail['skipped']} irreversible skipped" if detail.get("skipped") else ""
            self._line(
                f"kernel restored: {detail.get('replayed', 0)} cells replayed{skipped}{failed}"
            )
        elif event.kind == "run" and event.to is None:  # a note on the run, not a status
            what = str(event.event or "note").replace("_", " ")
            said = event.detail.get("reason") or event.detail.get("message")
            where = f" (stage {event.detail['stage']})" if event.detail.get("stage") else ""
            self._line(f"run: {what}{where}" + (f": {said}" if said else ""))
        elif event.kind == "run":
            reason = event.detail.get("reason")
            self._line(f"run {event.to}" + (f": {reason}" if reason else ""))

    def notice(self, text: str) -> None:
        """Print a notice line."""
        self._line(text)

    def stop(self, engine: Engine, result: RunResult | None) -> None:
        """Print the summary."""
        for line in summary_lines(engine.snapshot, result):
            print(line, flush=True)


class RichView(PlainView):
    """A live stage -> step -> behavior tree with the current action and elapsed time."""

    def __init__(self) -> None:
        super().__init__()
        self._live: Any = None

    def start(self, engine: Engine) -> None:
        """Start the live display."""
        from rich.live import Live

        self.engine = engine
        self._live = Live(get_renderable=self._render, refresh_per_second=4, transient=False)
        self._live.start()

    def _render(self) -> Any:
        from rich.text import Text
        from rich.tree import Tree

        if self.engine is None:
            return Text("starting...")
        snap = self.engine.snapshot
        progress = snap.location.progress
        tree = Tree(
            f"[bold]{snap.workflow_id}[/] · {snap.fsm.state.value} · run {snap.run.status} · "
            f"{monotonic() - self.began:.0f}s"
        )
        marks = {"success": "[green]✔[/]", "failed": "[red]✘[/]", "skipped": "[dim]–[/]"}
        for stage in progress.stages.completed:
            tree.add(f"{marks.get(stage.completion_status or '', '✔')} {stage.title or stage.id}")
        if progress.stages.current is not None:
            stage = progress.stages.current
            node = tree.add(f"[bold yellow]▶ {stage.title or stage.id}[/] (visit {stage.visits})")
            for step in progress.steps.completed:
                node.add(f"{marks.get(step.completion_status or '', '✔')} {step.title or step.id}")
            if progress.steps.current is not None:
                step = progress.steps.current
                step_node = node.add(f"[yellow]▶ {step.title or step.id}[/]")
                behavior = progress.behaviors.current
                if behavior is not None:
                    done, total = action_progress(snap.action_queue)
                    step_node.add(
                        f"{behavior.agent or ''} {behavior.id} · iteration "
                        f"{snap.location.current.behavior_iteration} · action {done}/{total}"
                    )
            for step in progress.steps.remaining:
                node.add(f"[dim]· {step.title or step.id}[/]")
        for stage in progress.stages.remaining:
            tree.add(f"[dim]· {stage.title or stage.id}[/]")
        for pending in snap.run.pending:
            tree.add(f"[magenta]? {pending.kind}: {pending.message}[/]")
        return tree

    def notice(self, text: str) -> None:
        """Print above the live display."""
        if self._live is not None:
            self._live.console.print(text)

    def stop(self, engine: Engine, result: RunResult | None) -> None:
        """Stop the live display and print the summary."""
        if self._live is not None:
            self._live.stop()
        for line in summary_lines(engine.snapshot, result):
            print(line, flush=True)


def print_json(data: Any) -> None:
    """Pretty JSON on stdout."""
    print(json.dumps(data, indent=2, ensure_ascii=False))


def action_progress(queue: ActionQueue) -> tuple[int, int]:
    """(the action running or next, how many) as a person counts them: a code cell added and
    then run (``add`` followed by ``exec lastAddedCellId``, what one blueprint ``code:`` action
    becomes) is one action, not two."""
    from notebook_bcc.models.actions import LAST_ADDED_CELL, AddAction, ExecAction

    actions = queue.actions
    group: list[int] = []
    for index, action in enumerate(actions):
        runs_the_added = (
            index > 0
            and isinstance(action, ExecAction)
            and action.codecell_id == LAST_ADDED_CELL
            and isinstance(actions[index - 1], AddAction)
        )
        group.append(group[-1] if runs_the_added else (group[-1] + 1 if group else 1))
    if not group:
        return 0, 0
    return group[min(queue.index, len(group) - 1)], group[-1]
