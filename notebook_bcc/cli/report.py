"""``--report FILE.html|FILE.md``: the executed notebook, rendered with nbconvert, preceded by
a run summary (outcome, stages with status and time, metrics, decisions with who answered,
planner usage): the artifact a reviewer opens from CI.

The summary is a markdown cell put in front of a copy of the notebook, so both exporters
(``HTMLExporter``, ``MarkdownExporter``) render it the same way as the rest.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notebook_bcc.cli.ledger import RunLedger
from notebook_bcc.errors import NotebookBccError

if TYPE_CHECKING:
    from notebook_bcc.models.snapshot import WorkflowSnapshot

REPORT_FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown"}
"""Report file suffixes and the nbconvert exporter each one picks."""
SUMMARY_TAG = "notebook-bcc-summary"
"""The tag of the summary cell in the rendered report."""


def report_format(name: str) -> str:
    """``html`` or ``markdown`` for a report path; a typed error for anything else."""
    suffix = Path(name.split("?", maxsplit=1)[0]).suffix.lower()
    chosen = REPORT_FORMATS.get(suffix)
    if chosen is None:
        raise NotebookBccError(
            f"--report {name}: use a .html or .md file name (got {suffix or 'no suffix'!r})"
        )
    return chosen


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _fmt(seconds: float) -> str:
    return f"{seconds:.1f} s"


def summary_markdown(
    snapshot: WorkflowSnapshot, ledger: RunLedger, *, name: str, exit_code: int | None
) -> str:
    """The run summary as markdown (the report's first cell)."""
    run = snapshot.run
    lines = [
        f"# notebook-bcc run: {name}",
        "",
        f"**Outcome:** {run.status}" + (f" ({_cell(run.reason)})" if run.reason else ""),
        f"· FSM `{snapshot.fsm.state.value}`"
        + (f" · exit code {exit_code}" if exit_code is not None else ""),
        "",
        f"Workflow `{snapshot.workflow_id}` · planner `{snapshot.planner.kind}`"
        + (f" · problem: {_cell(snapshot.problem)}" if snapshot.problem else ""),
        "",
    ]
    if snapshot.parameters:
        lines += ["## Parameters", "", "| name | value |", "|---|---|"]
        lines += [f"| `{k}` | `{_cell(repr(v))}` |" for k, v in snapshot.parameters.items()]
        lines.append("")
    totals = ledger.totals()
    lines += [
        "## Stages",
        "",
        f"Behaviors: {totals['passed']} passed, {totals['failed']} failed, "
        f"{totals['error']} with errors, {totals['skipped']} not run.",
        "",
        "| stage | visit | status | time | behaviors |",
        "|---|---|---|---|---|",
    ]
    for visit in ledger.visits:
        outcomes = [f"{b.behavior_id or b.step_id}: {b.outcome}" for b in visit.behaviors]
        title = visit.title or visit.stage_id
        lines.append(
            f"| {_cell(title)} | {visit.visit or '–'} | {_cell(visit.status)} | "
            f"{_fmt(visit.seconds) if visit.reached else '–'} | {_cell(', '.join(outcomes))} |"
        )
    lines.append("")
    lines += _metrics(snapshot)
    lines += ["## Decisions", ""]
    if ledger.decisions or run.pending:
        lines += ["| at | decision | kind | by | about |", "|---|---|---|---|---|"]
        for decision in ledger.decisions:
            lines.append(
                f"| {decision.at} | {_cell(decision.event)} | {decision.kind} | "
                f"{_cell(decision.actor)} | {_cell(decision.message)} |"
            )
        for pending in run.pending:
            lines.append(
                f"| {pending.created_at} | pending | {pending.kind} | – | "
                f"{_cell(pending.message)} |"
            )
    else:
        lines.append("No human decision was asked.")
    lines.append("")
    lines += _usage(snapshot)
    return "\n".join(lines)


def _metrics(snapshot: WorkflowSnapshot) -> list[str]:
    metrics = snapshot.metrics
    rows = []
    for field in (
        "stage_progress",
        "overall_progress",
        "artifact_completion",
        "acceptance_pass_rate",
        "retry_rate",
        "variable_coverage",
    ):
        value = getattr(metrics, field)
        rows.append(f"| {field} | {'–' if value is None else f'{value:.2f}'} |")
    pcs = metrics.pcs
    rows.append(
        f"| PCS | seeds {pcs.seeds_set}, versions {pcs.library_versions_recorded}, "
        f"holdout {pcs.holdout_split} |"
    )
    return ["## Metrics", "", "| metric | value |", "|---|---|", *rows, ""]


def _usage(snapshot: WorkflowSnapshot) -> list[str]:
    usage = snapshot.usage
    lines = [
        "## Planner usage",
        "",
        f"{usage.calls} call(s), {usage.prompt_tokens} prompt + {usage.completion_tokens} "
        f"completion tokens, {usage.latency_ms / 1000:.1f} s waiting.",
        "",
    ]
    if usage.per_stage:
        lines += ["| stage | calls | tokens | latency |", "|---|---|---|---|"]
        for stage, totals in usage.per_stage.items():
            tokens = totals.prompt_tokens + totals.completion_tokens
            lines.append(
                f"| {_cell(stage)} | {totals.calls} | {tokens} | {totals.latency_ms / 1000:.1f} s |"
            )
        lines.append("")
    return lines


def render_report(
    notebook_path: Path,
    summary: str,
    fmt: str,
) -> str:
    """The notebook at ``notebook_path`` rendered by nbconvert, the summary cell first."""
    import nbformat
    from nbconvert import HTMLExporter, MarkdownExporter

    if notebook_path.exists():
        nb: Any = nbformat.read(str(notebook_path), as_version=4)  # type: ignore[no-untyped-call]
    else:
        nb = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    nb = copy.deepcopy(nb)
    cell = nbformat.v4.new_markdown_cell(summary)  # type: ignore[no-untyped-call]
    cell.metadata["tags"] = [SUMMARY_TAG]
    nb.cells.insert(0, cell)
    exporter: Any = (
        HTMLExporter() if fmt == "html" else MarkdownExporter()  # type: ignore[no-untyped-call]
    )
    body, _resources = exporter.from_notebook_node(nb)
    return str(body)


def write_report(
    path: Path,
    *,
    notebook_path: Path,
    snapshot: WorkflowSnapshot,
    ledger: RunLedger,
    name: str,
    exit_code: int | None,
    fmt: str,
) -> None:
    """Render and write the report to ``path``."""
    summary = summary_markdown(snapshot, ledger, name=name, exit_code=exit_code)
    text = render_report(notebook_path, summary, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
