"""Planner exchanges: what an AI planner was asked and what it answered, one row per call.

An exchange is recorded for every decision an LLM, HTTP or replay planner answers (a blueprint
answers nothing: it records none). The row says where the workflow was (decision point, FSM
state, stage / step / behavior and iteration), a bounded summary of the request (not the whole
prompt unless it is small), the raw reply text as received, tokens and latency, and the notes
of what the parser repaired or refused. Each row is bounded (:data:`MAX_ROW_BYTES`); a cut
field says so (``*_truncated`` and the original size in bytes).
"""

from __future__ import annotations

from pydantic import Field

from notebook_bcc.models.base import WireModel

MAX_ROW_BYTES = 64_000
"""Upper bound of one exchange's text fields together, in UTF-8 bytes."""

MAX_REPLY_BYTES = 52_000
"""Largest raw reply kept (the rest is cut, ``reply_truncated`` set)."""

MAX_SUMMARY_BYTES = 8_000
"""Largest request summary kept."""

MAX_NOTES_BYTES = 3_500
"""Largest repair / error notes kept (together)."""

TRUNCATION_MARK = "\n… [truncated by notebook-bcc]"
"""Appended to a field that was cut."""


def clip(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` UTF-8 bytes (mark included) on a character boundary;
    the flag says whether it was cut."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text, False
    mark = TRUNCATION_MARK.encode("utf-8")
    kept = raw[: max(0, limit - len(mark))].decode("utf-8", errors="ignore")
    return kept + TRUNCATION_MARK, True


class PlannerExchange(WireModel):
    """One planner call as the panel, REST and ``trace --exchanges`` show it."""

    seq: int = Field(default=0, description="Position among the workflow's exchanges (1-based).")
    workflow_id: str
    planner_kind: str = Field(description="llm, http or replay.")
    point: str = Field(description="The decision point (plan_stages ... route_stage).")
    fsm_state: str
    stage_id: str | None = None
    step_id: str | None = None
    behavior_id: str | None = Field(
        default=None,
        description="The behavior the call was for; for plan_behavior, the behavior it planned.",
    )
    iteration: int | None = Field(default=None, description="The behavior's iteration.")
    at: str = Field(description="When the reply arrived (ISO 8601 UTC).")
    latency_ms: float = Field(description="Wall time of the call, retries included.")
    calls: int = Field(default=1, description="Chat/HTTP replies it took (parse retries count).")
    prompt_tokens: int | None = Field(default=None, description="None when not reported.")
    completion_tokens: int | None = None
    request_summary: str = ""
    request_bytes: int = Field(default=0, description="Size of the full request, when known.")
    request_truncated: bool = False
    reply: str | None = Field(default=None, description="The raw reply text (None: no reply).")
    content_type: str | None = None
    reply_bytes: int = Field(default=0, description="Size of the reply as received.")
    reply_truncated: bool = False
    notes: list[str] = Field(
        default_factory=list, description="Repairs made, replies refused, the error if it failed."
    )
    error: str | None = Field(default=None, description="Why the call failed, if it did.")


class ExchangeList(WireModel):
    """``GET /workflows/{id}/exchanges``: a workflow's exchanges, oldest first."""

    workflow_id: str
    planner_kind: str = Field(description="The workflow's planner (blueprint: never any).")
    behavior: str | None = Field(default=None, description="The behavior filter, if given.")
    exchanges: list[PlannerExchange] = Field(default_factory=list)
    truncated: bool = Field(default=False, description="More rows matched than the limit.")


__all__ = [
    "MAX_NOTES_BYTES",
    "MAX_REPLY_BYTES",
    "MAX_ROW_BYTES",
    "MAX_SUMMARY_BYTES",
    "TRUNCATION_MARK",
    "ExchangeList",
    "PlannerExchange",
    "clip",
]
