"""``notebook-bcc trace --exchanges [--behavior ID]``: what the AI planner was asked and answered.

Text: one block per exchange (decision point, where, latency, tokens, the request summary's
first lines, repair notes, then the raw reply indented); ``--json``: one
``{"table": "exchanges", ...}`` line per :class:`~notebook_bcc.models.exchanges.PlannerExchange`.
A blueprint run says it has no planner exchange.
"""

from __future__ import annotations

import json
import textwrap

from notebook_bcc.models.exchanges import PlannerExchange
from notebook_bcc.store.exchanges import list_exchanges
from notebook_bcc.store.sqlite import SqliteStore

SUMMARY_LINES = 4
"""Request-summary lines printed per exchange in text mode (the rest: ``--json``)."""


def _tokens(row: PlannerExchange) -> str:
    if row.prompt_tokens is None and row.completion_tokens is None:
        return "tokens not reported"
    return f"tokens {row.prompt_tokens or 0} in / {row.completion_tokens or 0} out"


def _where(row: PlannerExchange) -> str:
    parts = [
        f"{name} {value}"
        for name, value in (("stage", row.stage_id), ("step", row.step_id))
        if value
    ]
    if row.behavior_id:
        iteration = f" #{row.iteration}" if row.iteration else ""
        parts.append(f"behavior {row.behavior_id}{iteration}")
    return " / ".join(parts) or "workflow"


def exchange_text(row: PlannerExchange) -> str:
    """One exchange as the text view prints it."""
    lines = [
        f"#{row.seq}  {row.point} at {row.fsm_state}  [{_where(row)}]  "
        f"{row.latency_ms:.0f} ms  {_tokens(row)}  {row.at}"
    ]
    summary = row.request_summary.splitlines()
    lines.append("  request:")
    lines.extend(f"    {line}" for line in summary[:SUMMARY_LINES])
    if len(summary) > SUMMARY_LINES:
        lines.append(f"    … ({row.request_bytes} bytes in all; --json shows the summary)")
    lines.extend(f"  note: {note}" for note in row.notes)
    if row.error:
        lines.append(f"  error: {row.error}")
    if row.reply is None:
        lines.append("  reply: none")
    else:
        cut = ", truncated" if row.reply_truncated else ""
        lines.append(f"  reply ({row.content_type or 'text'}, {row.reply_bytes} bytes{cut}):")
        lines.append(textwrap.indent(row.reply.rstrip("\n"), "    ", lambda _line: True))
    return "\n".join(lines)


def print_exchanges(
    store: SqliteStore, workflow_id: str, *, behavior: str | None, as_json: bool
) -> int:
    """Print the exchanges of ``workflow_id`` (only ``behavior``'s when given); exit code."""
    kind = store.load(workflow_id).planner.kind
    rows, more = list_exchanges(store, workflow_id, behavior=behavior)
    if as_json:
        for row in rows:
            print(json.dumps({"table": "exchanges", **row.model_dump(mode="json")}))
        return 0
    scope = f" for behavior {behavior}" if behavior else ""
    if not rows:
        if kind == "blueprint":
            print(f"{workflow_id}: no planner exchange (planned by a blueprint)")
        else:
            print(f"{workflow_id}: no planner exchange{scope} recorded ({kind} planner)")
        return 0
    newest = " (the newest)" if more else ""
    print(f"planner exchanges of {workflow_id}{scope} ({kind}, {len(rows)}{newest}):")
    for row in rows:
        print(exchange_text(row))
    return 0


__all__ = ["exchange_text", "print_exchanges"]
