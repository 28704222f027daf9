"""Every AI-planner call written down as a :class:`~notebook_bcc.models.exchanges.PlannerExchange`.

:class:`ExchangeLoggingPlanner` wraps an LLM, HTTP or replay planner (a blueprint answers
nothing worth showing and is never wrapped). Around each decision it measures the wall time,
summarizes the request -- the chat messages an LLM is sent, the JSON body and URL an HTTP
planner posts, the observation a replay is matched against; the whole of it when small, its
head otherwise -- and hands the bounded exchange (raw reply, tokens, repairs, refusals, or
the error) to ``sink`` before the engine sees the answer. A failing sink is logged, never
allowed to fail the decision. The wrapper is transparent like
:class:`~notebook_bcc.planners.recording.RecordingPlanner`: ``kind`` is the wrapped planner's
and other attributes are forwarded.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import Any, Literal

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.models.base import utc_now_iso
from notebook_bcc.models.exchanges import (
    MAX_NOTES_BYTES,
    MAX_REPLY_BYTES,
    MAX_SUMMARY_BYTES,
    PlannerExchange,
    clip,
)
from notebook_bcc.planners.base import Planner, PlannerReply, PlannerRequest, StageRoute
from notebook_bcc.planners.wrapper import PlannerWrapper
from notebook_bcc.protocol.plans import BehaviorPayload
from notebook_bcc.workflow.damage import repair_lines

log = logging.getLogger(__name__)

ExchangeSink = Callable[[PlannerExchange], Awaitable[None]]
"""Where exchanges go (the engine stores them)."""

REFUSED_BODY_CHARS = 400
"""How much of a refused reply a note quotes."""


def _json_text(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, default=str)


def _summary_text(full: str, head: str) -> tuple[str, int, bool]:
    """(summary, full size in bytes, cut?): ``full`` when it fits, else ``head`` clipped."""
    size = len(full.encode("utf-8"))
    if size <= MAX_SUMMARY_BYTES:
        return full, size, False
    text, _ = clip(head, MAX_SUMMARY_BYTES)
    return text, size, True


def summarize_request(planner: Any, request: PlannerRequest) -> tuple[str, int, bool]:
    """A bounded, human-readable summary of what ``planner`` is sent for ``request``."""
    snapshot = request.snapshot
    where = snapshot.location.current
    lines = [
        f"decision: {request.point} at {snapshot.fsm.state.value}",
        "location: "
        + " / ".join(
            f"{name} {value}"
            for name, value in (
                ("stage", where.stage_id),
                ("step", where.step_id),
                ("behavior", where.behavior_id),
            )
            if value
        ),
    ]
    prompt = getattr(planner, "prompt", None)
    body = getattr(planner, "request_body", None)
    try:
        if callable(prompt):  # the LLM planner: its chat messages
            messages = list(prompt(request))
            lines.append(f"chat messages: {len(messages)}")
            full = "\n".join(
                [*lines, *(f"--- {m.get('role')} ---\n{m.get('content', '')}" for m in messages)]
            )
            head = [*lines]
            if messages:
                first, last = messages[0], messages[-1]
                opening = str(first.get("content", ""))[:1500]
                head.append(f"--- {first.get('role')} (start) ---\n{opening}")
                if len(messages) > 1:
                    text = str(last.get("content", ""))
                    head.append(f"--- {last.get('role')} (end) ---\n…{text[-5000:]}")
            return _summary_text(full, "\n".join(head))
        if callable(body):  # the HTTP planner: URL and JSON body
            url_for = getattr(planner, "url_for", None)
            if callable(url_for):
                lines.append(f"POST {url_for(request.point)}")
            full = "\n".join([*lines, _json_text(body(request))])
            return _summary_text(full, full)
    except Exception as exc:  # a summary is informational: never fail the call over it
        lines.append(f"(request not rendered: {type(exc).__name__}: {exc})")
    doc: dict[str, Any] = {"observation": request.observation}
    if request.behavior_feedback is not None:
        doc["behavior_feedback"] = request.behavior_feedback
    full = "\n".join([*lines, _json_text(doc)])
    return _summary_text(full, full)


class ExchangeLoggingPlanner(PlannerWrapper):
    """Hands every answer (or failure) of ``inner`` to ``sink`` (see the module docstring)."""

    def __init__(self, inner: Planner, sink: ExchangeSink) -> None:
        super().__init__(inner)
        self.sink = sink

    # -- building rows --------------------------------------------------------------------

    def _exchange(
        self,
        request: PlannerRequest,
        began: float,
        summary: tuple[str, int, bool],
        reply: PlannerReply | None,
        *,
        error: NotebookBccError | None = None,
    ) -> PlannerExchange:
        snapshot = request.snapshot
        where = snapshot.location.current
        behavior, iteration = where.behavior_id, where.behavior_iteration or None
        if reply is not None and isinstance(reply.payload, BehaviorPayload):
            if reply.payload.id != behavior:
                iteration = 1
            behavior = reply.payload.id
        notes: list[str] = []
        raw: str | None = None
        content_type: str | None = None
        prompt_tokens: int | None = None
        completion_tokens: int | None = None
        calls = 1
        if reply is not None:
            raw, content_type = reply.body, reply.content_type
            notes.extend(repair_lines(reply.payload))
            for number, refused in enumerate(reply.rejected, start=1):
                notes.append(
                    f"reply {number} refused ({refused.error}): {refused.body[:REFUSED_BODY_CHARS]}"
                )
            if reply.usage is not None:
                prompt_tokens = reply.usage.prompt_tokens
                completion_tokens = reply.usage.completion_tokens
                calls = max(1, reply.usage.calls)
        if error is not None:
            details = error.details
            kept = details.get("last_reply") or details.get("body")
            raw = kept if isinstance(kept, str) else None
            usage = getattr(error, "usage", None)
            if usage is not None:
                prompt_tokens = usage.prompt_tokens
                completion_tokens = usage.completion_tokens
                calls = max(1, usage.calls)
            notes.extend(str(e) for e in details.get("errors", []) if isinstance(e, str))
        reply_text, reply_cut = clip(raw, MAX_REPLY_BYTES) if raw is not None else (None, False)
        note_text, _ = clip("\n".join(notes), MAX_NOTES_BYTES)
        error_text = clip(error.message, 2_000)[0] if error is not None else None
        text, size, cut = summary
        return PlannerExchange(
            workflow_id=snapshot.workflow_id,
            planner_kind=self.kind,
            point=request.point,
            fsm_state=snapshot.fsm.state.value,
            stage_id=where.stage_id,
            step_id=where.step_id,
            behavior_id=behavior,
            iteration=iteration,
            at=utc_now_iso(),
            latency_ms=round((perf_counter() - began) * 1000, 3),
            calls=calls,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            request_summary=text,
            request_bytes=size,
            request_truncated=cut,
            reply=reply_text,
            content_type=content_type,
            reply_bytes=len(raw.encode("utf-8")) if raw is not None else 0,
            reply_truncated=reply_cut,
            notes=note_text.splitlines() if note_text else [],
            error=error_text,
        )

    async def _emit(self, exchange: PlannerExchange) -> None:
        try:
            await self.sink(exchange)
        except Exception as exc:
            log.warning(
                "notebook-bcc: the %s exchange of %s was not recorded: %s",
                exchange.point,
                exchange.workflow_id,
                exc,
            )

    async def _around(
        self,
        request: PlannerRequest,
        call: Callable[[PlannerRequest], Awaitable[PlannerReply | None]],
    ) -> PlannerReply | None:
        summary = summarize_request(self.inner, request)
        began = perf_counter()
        try:
            reply = await call(request)
        except NotebookBccError as exc:
            await self._emit(self._exchange(request, began, summary, None, error=exc))
            raise
        await self._emit(self._exchange(request, began, summary, reply))
        return reply

    async def route_stage(
        self, request: PlannerRequest, *, decided: Literal["success", "failure"] | None = None
    ) -> StageRoute:
        """The wrapped planner's route; logged when it asked a server (no call, no row)."""
        summary = summarize_request(self.inner, request)
        began = perf_counter()
        route = await self.inner.route_stage(request, decided=decided)
        reply = getattr(self.inner, "last_route_reply", None)
        if isinstance(reply, PlannerReply):
            await self._emit(self._exchange(request, began, summary, reply))
        return route


__all__ = ["ExchangeLoggingPlanner", "ExchangeSink", "summarize_request"]
