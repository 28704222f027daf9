"""Progress metrics refreshed after every apply (seed 000 "Metrics and Monitoring", D20).

Only what the plan and outputs tracking determine is computed here; the acceptance pass rate and
the PCS signals come from the kernel probes and are left as they are. Cost: O(items of the
current stage), independent of notebook length.
"""

from __future__ import annotations

from notebook_bcc.models.snapshot import LevelProgress, Metrics, WorkflowSnapshot
from notebook_bcc.workflow.context import known_variables


def _ratio(part: int, whole: int) -> float | None:
    return None if whole == 0 else round(part / whole, 6)


def _total(progress: LevelProgress) -> int:
    return len(progress.completed) + len(progress.remaining) + (progress.current is not None)


def _finished(progress: LevelProgress) -> int:
    current = progress.current
    return int(current is not None and current.completion_status is not None)


def stage_counts(snapshot: WorkflowSnapshot) -> tuple[set[str], set[str]]:
    """(stages completed without failing, stages planned) by id: what ``overall_progress``
    divides, and what a summary's "stages: n/m completed" must say too. A current stage that
    already has its completion status (``stage_completed``) counts as completed."""
    stages = snapshot.location.progress.stages
    completed = {item.id for item in stages.completed if item.completion_status != "failed"}
    if stages.current is not None and stages.current.completion_status not in (None, "failed"):
        completed.add(stages.current.id)
    planned = completed | {item.id for item in stages.completed}
    planned |= {item.id for item in stages.remaining}
    if stages.current is not None:
        planned.add(stages.current.id)
    return completed, planned


def compute_metrics(snapshot: WorkflowSnapshot) -> Metrics:
    """The D20 progress metrics of ``snapshot`` (acceptance and PCS carried over).

    - ``stage_progress``: completed steps / planned steps of the current stage.
    - ``overall_progress``: distinct stages completed without failing / planned stages (a
      stage whose only visits failed does not count as progress).

    A current step or stage that already has its completion status (``step_completed``,
    ``stage_completed``) counts as completed.
    - ``artifact_completion``: produced / expected artifacts of the current stage.
    - ``retry_rate``: behavior retries / behaviors run, over the current stage's steps. A
      step's next iteration is a retry when the behavior before it did not succeed (seed 000
      "Behavior Retry"; a step that needed 3 behaviors because two failed counts 2 retries);
      after a successful one it is the step's next behavior (a blueprint step lists several).
    - ``variable_coverage``: required variables of the current stage and step that exist.
    """
    progress = snapshot.location.progress
    stages, steps, behaviors = progress.stages, progress.steps, progress.behaviors
    stage_outputs = stages.current_outputs
    produced = [name for name in stage_outputs.produced if name in stage_outputs.expected]
    runs: list[int] = []
    retries: list[int] = []
    for step in steps.completed:
        if step.completion_status and step.completion_status != "skipped":
            runs.append(step.iteration or 1)
            counted = step.extra.get(RETRIES_KEY)
            retries.append(counted if isinstance(counted, int) else (step.iteration or 1) - 1)
    if steps.current is not None:
        current_runs = behaviors.iteration or len(behaviors.completed)
        if current_runs:
            runs.append(current_runs)
            retries.append(behavior_retries(behaviors))
    required: list[str] = []
    for item in (stages.current, steps.current):
        if item is not None:
            required.extend(item.required_variables)
    needed = set(required)
    known = known_variables(snapshot)
    completed_stages, planned_stages = stage_counts(snapshot)
    steps_done = len(steps.completed) + _finished(steps)
    return snapshot.metrics.model_copy(
        update={
            "stage_progress": _ratio(steps_done, _total(steps)),
            "overall_progress": _ratio(len(completed_stages), len(planned_stages)),
            "artifact_completion": _ratio(len(set(produced)), len(set(stage_outputs.expected))),
            "retry_rate": _ratio(sum(retries), sum(runs)),
            "variable_coverage": _ratio(len(needed & known), len(needed)),
        }
    )


RETRIES_KEY = "behavior_retries"
"""A completed step's ``extra`` key: how many of its behavior iterations were retries."""


def behavior_retries(behaviors: LevelProgress) -> int:
    """The retries among the current step's behavior iterations: each one that followed a
    behavior that did not succeed (the current one too, once it runs)."""
    done = list(behaviors.completed)
    count = sum(1 for before in done[:-1] if before.completion_status != "success")
    if behaviors.current is not None and done and done[-1].completion_status != "success":
        count += 1
    return count


def refresh_metrics(snapshot: WorkflowSnapshot) -> WorkflowSnapshot:
    """``snapshot`` with :func:`compute_metrics` applied (the same object if nothing changed)."""
    metrics = compute_metrics(snapshot)
    if metrics == snapshot.metrics:
        return snapshot
    return snapshot.model_copy(update={"metrics": metrics})
