"""The LLM planner (``--planner llm``): seed 000's six agents asked through a chat API.

Each decision point is one agent (:mod:`.agents`): its template (:mod:`.prompts`) is
rendered with the request's observation (D21, already filtered and budgeted by the protocol
layer, with the engine's notebook digest) and sent to an OpenAI-compatible chat API
(:mod:`.client`). The reply's XML is read by the protocol layer (prose and code fences
around the root are dropped there) and tried on the request's snapshot (a dry run of
:func:`~notebook_bcc.workflow.apply_payload`, pure), so a reply that does not parse or
does not fit the state (a ``<behavior>`` for another step, a next step when none remains) is
sent back with the error, as a user message, up to ``max_parse_retries`` times; after that
the run fails (D1: :class:`LlmReplyError`, FSM unchanged, ``resume`` asks again).
``route_stage`` makes no call: the next stage is the plan's (no LLM decides routing).

``<communication to=...>`` actions of the Action-Generator wait in an outbox per addressed
agent and are put into that agent's next prompt, then dropped. The outbox lives in the
process; a planner rebuilt by ``resume`` refills it from the snapshot's action queue (the
current behavior's actions) at its first request.

Usage: every call's prompt and completion tokens (from the API's ``usage``; zero when it
reports none) are summed into the reply's :class:`~notebook_bcc.models.snapshot.UsageTotals`
(``calls`` = chat calls behind the decision); the engine adds the tokens to
``snapshot.usage`` and its ``per_stage`` entry, and counts the decision and its latency.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from notebook_bcc.models.actions import CommunicationAction
from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import UsageTotals, WorkflowSnapshot
from notebook_bcc.planners.base import (
    PlannerReply,
    PlannerRequest,
    RejectedReply,
    StageRoute,
    next_remaining_stage,
)
from notebook_bcc.planners.llm.agents import (
    AGENT_IDS,
    ANY_AGENT,
    BY_POINT,
    Agent,
    agent_for_address,
)
from notebook_bcc.planners.llm.client import ChatClient, ChatMessage, ChatResult
from notebook_bcc.planners.llm.errors import LlmReplyError
from notebook_bcc.planners.llm.prompts import (
    AgentMessage,
    PromptSet,
    load_templates,
    prompt_values,
)
from notebook_bcc.planners.llm.settings import LlmSettings
from notebook_bcc.protocol.errors import ProtocolError
from notebook_bcc.protocol.parse import parse_payload
from notebook_bcc.protocol.payloads import JsonActionsPayload, Payload
from notebook_bcc.protocol.text import line_of
from notebook_bcc.protocol.xml_actions import ActionsPayload
from notebook_bcc.protocol.xml_parse import find_root
from notebook_bcc.workflow import ApplyError, apply_payload

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/xml"
"""The Content-Type recorded with a reply (its body is the model's text, XML inside)."""

MESSAGES_PER_AGENT = 20
"""Messages kept per addressee; older ones are dropped first."""

MESSAGE_CHARS = 2_000
"""Longest message kept (longer ones are clipped)."""

CALL_LOG = 1_000
"""Chat calls kept in :attr:`LlmPlanner.calls`."""

ERROR_DETAIL_CHARS = 20_000
"""How much of the last unusable reply an :class:`LlmReplyError` keeps."""

TRUNCATED_NOTE = (
    "Your reply was cut off by the token limit (finish_reason: length): write a shorter document."
)

_EVERYONE = frozenset({*AGENT_IDS, ANY_AGENT})

_RESUME_SEEDS: dict[State, frozenset[str]] = {
    State.BEHAVIOR_COMPLETED: _EVERYONE,
    State.STEP_COMPLETED: _EVERYONE - {"behavior-reflection"},
}
"""At a rebuilt planner's first request: the addressees whose messages in the action queue
may still wait (at step_completed the behavior reflection has already been asked)."""


@dataclass(frozen=True)
class CallRecord:
    """One chat call: which agent, which reply of the decision, its cost and outcome."""

    agent: str
    point: str
    reply: int
    prompt_tokens: int
    completion_tokens: int
    usage_reported: bool
    latency_ms: float
    http_attempts: int
    finish_reason: str | None
    error: str | None = None


def read_reply(agent: Agent, text: str, snapshot: WorkflowSnapshot) -> Payload:
    """The payload of a reply, checked: one of the agent's XML roots, complete, and legal on
    ``snapshot`` (a dry run of the apply layer). Raises ProtocolError or ApplyError."""
    kind = agent.roots[0]
    expected = " or ".join(f"<{root}>" for root in agent.roots)
    match = find_root(text)
    if match is None:
        raise ProtocolError(
            kind,
            f"the reply holds no {expected} XML document",
            line=1 if text.strip() else None,
            element=kind,
        )
    found = match.group(1)
    if found not in agent.roots:
        raise ProtocolError(
            kind,
            f"expected a {expected} document, found <{found}>",
            line=line_of(text, match.start()),
            element=found,
        )
    payload = parse_payload(text, found)
    if getattr(payload, "truncated", False):
        raise ProtocolError(
            found,
            f"the <{found}> document ends before its closing tag </{found}>",
            element=found,
        )
    apply_payload(snapshot, payload)
    return payload


def describe_error(exc: ProtocolError | ApplyError) -> str:
    """The error as the model is told it: one line per issue, lines of its reply."""
    if isinstance(exc, ProtocolError):
        return "\n".join(f"- {line}" for line in exc.format_lines("reply"))
    return f"- the document parsed, but does not fit the workflow: {exc.message}"


def communications(payload: Payload) -> list[CommunicationAction]:
    """The ``<communication>`` actions of an actions payload."""
    if isinstance(payload, ActionsPayload):
        actions: list[Any] = list(payload.json_actions)
    elif isinstance(payload, JsonActionsPayload):
        actions = list(payload.actions)
    else:
        return []
    return [action for action in actions if isinstance(action, CommunicationAction)]


class LlmPlanner:
    """Answers the engine with seed 000's agents over a chat API (see the module docstring).

    ``sleep``, ``rng`` and ``transport`` are handed to the :class:`ChatClient` (tests).
    Templates are loaded and checked here, so a bad override fails before any call.
    """

    kind = "llm"

    def __init__(
        self,
        settings: LlmSettings,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = settings
        self.prompts: PromptSet = load_templates(settings.templates)
        self.client = ChatClient(settings, sleep=sleep, rng=rng, transport=transport)
        self.outbox: dict[str, list[AgentMessage]] = {}
        """Messages waiting for their addressee's next prompt, by agent id."""
        self.calls: deque[CallRecord] = deque(maxlen=CALL_LOG)
        """The latest chat calls (for tests and diagnostics; never their prompts)."""
        self._first_request = True

    # -- metadata -------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        """The settings for ``snapshot.planner`` (never the API key)."""
        return self.config.to_json()

    # -- the decision points --------------------------------------------------------------

    async def plan_stages(self, request: PlannerRequest) -> PlannerReply:
        """The Stage-Planner's ``<stages>`` at idle."""
        return await self.ask(request)

    async def plan_steps(self, request: PlannerRequest) -> PlannerReply:
        """The Step-Planner's ``<steps>`` at stage_running."""
        return await self.ask(request)

    async def plan_behavior(self, request: PlannerRequest) -> PlannerReply | None:
        """Behavior Arrangement's ``<behavior>`` at step_running (or a re-plan of the next
        iteration at behavior_running)."""
        return await self.ask(request)

    async def generate_actions(self, request: PlannerRequest) -> PlannerReply:
        """The Action-Generator's ``<actions>`` at behavior_running."""
        return await self.ask(request)

    async def reflect_behavior(self, request: PlannerRequest) -> PlannerReply:
        """Behavior Reflection's ``<reflection>`` at behavior_completed."""
        return await self.ask(request)

    async def reflect_stage(self, request: PlannerRequest) -> PlannerReply:
        """Stage Reflection's ``<stage_reflection>`` at step_completed."""
        return await self.ask(request)

    async def route_stage(
        self, request: PlannerRequest, *, decided: Literal["success", "failure"] | None = None
    ) -> StageRoute:
        """The next stage of the plan (no call: the stage reflection already decided)."""
        return next_remaining_stage(request.snapshot)

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self.client.aclose()

    # -- prompts --------------------------------------------------------------------------

    def prompt(self, request: PlannerRequest) -> list[ChatMessage]:
        """The messages the agent of ``request.point`` is sent first (its waiting messages
        included, not consumed)."""
        agent = BY_POINT[request.point]
        waiting = self._waiting(agent.id)
        return self.prompts.render(agent.id, prompt_values(request, agent.id, waiting))

    def _waiting(self, agent_id: str) -> list[AgentMessage]:
        return [*self.outbox.get(agent_id, []), *self.outbox.get(ANY_AGENT, [])]

    def _post(self, message: AgentMessage) -> None:
        box = self.outbox.setdefault(message.to, [])
        box.append(message)
        del box[:-MESSAGES_PER_AGENT]

    def _delivered(self, agent_id: str, messages: list[AgentMessage]) -> None:
        for key in (agent_id, ANY_AGENT):
            box = self.outbox.get(key)
            if box:
                self.outbox[key] = [m for m in box if m not in messages]
                if not self.outbox[key]:
                    del self.outbox[key]

    def _collect(self, agent: Agent, request: PlannerRequest, payload: Payload) -> None:
        behavior = request.snapshot.location.current.behavior_id
        for action in communications(payload):
            self._post(
                AgentMessage(
                    to=agent_for_address(action.to),
                    sender=agent.id,
                    content=action.content[:MESSAGE_CHARS],
                    behavior_id=behavior,
                )
            )

    def _refill(self, snapshot: WorkflowSnapshot) -> None:
        """At the first request of a rebuilt planner: messages of the queued actions."""
        self._first_request = False
        wanted = _RESUME_SEEDS.get(snapshot.fsm.state)
        queue = snapshot.action_queue
        if wanted is None or queue.behavior_id is None:
            return
        behaviors = snapshot.location.progress.behaviors
        recent = {item.id for item in behaviors.completed}
        recent.add(snapshot.location.current.behavior_id or "")
        if behaviors.current is not None:
            recent.add(behaviors.current.id)
        if queue.behavior_id not in recent:
            return  # the queue is older than the current step: its messages were delivered
        for action in queue.actions:
            if not isinstance(action, CommunicationAction):
                continue
            to = agent_for_address(action.to)
            if to in wanted:
                self._post(
                    AgentMessage(
                        to=to,
                        sender="action-generator",
                        content=action.content[:MESSAGE_CHARS],
                        behavior_id=queue.behavior_id,
                    )
                )

    # -- asking ---------------------------------------------------------------------------

    async def ask(self, request: PlannerRequest) -> PlannerReply:
        """One decision: render, call, read; send an unusable reply back with its error."""
        agent = BY_POINT[request.point]
        if self._first_request:
            self._refill(request.snapshot)
        waiting = self._waiting(agent.id)
        conversation = self.prompts.render(agent.id, prompt_values(request, agent.id, waiting))
        errors: list[str] = []
        rejected: list[RejectedReply] = []
        results: list[ChatResult] = []
        last = ""
        for reply_number in range(1, self.config.max_parse_retries + 2):
            result = await self.client.complete(conversation, agent=agent.id)
            results.append(result)
            last = result.content
            try:
                payload = read_reply(agent, result.content, request.snapshot)
            except (ProtocolError, ApplyError) as exc:
                error = describe_error(exc)
                errors.append(error)
                rejected.append(RejectedReply(result.content, error))
                self._record(agent, reply_number, result, error)
                log.warning(
                    "%s: reply %d could not be used: %s", agent.id, reply_number, exc.message
                )
                note = TRUNCATED_NOTE if result.finish_reason == "length" else ""
                conversation = [
                    *conversation,
                    {"role": "assistant", "content": result.content},
                    self.prompts.feedback(
                        {
                            "error": error,
                            "root": agent.roots[0],
                            "note": f"\n{note}\n" if note else "",
                            "agent": agent.id,
                        }
                    ),
                ]
                continue
            self._record(agent, reply_number, result, None)
            self._delivered(agent.id, waiting)
            self._collect(agent, request, payload)
            return PlannerReply(
                payload, result.content, CONTENT_TYPE, _usage(results), tuple(rejected)
            )
        replies = len(errors)
        raise LlmReplyError(
            f"{agent.id}: no usable <{agent.roots[0]}> reply after {replies} "
            f"repl{'ies' if replies > 1 else 'y'} (the last error: "
            f"{errors[-1].removeprefix('- ').splitlines()[0]})",
            details={
                "agent": agent.id,
                "point": request.point,
                "attempts": replies,
                "errors": errors,
                "last_reply": last[:ERROR_DETAIL_CHARS],
            },
            usage=_usage(results),
        )

    def _record(self, agent: Agent, reply: int, result: ChatResult, error: str | None) -> None:
        self.calls.append(
            CallRecord(
                agent=agent.id,
                point=agent.point,
                reply=reply,
                prompt_tokens=result.usage.prompt_tokens,
                completion_tokens=result.usage.completion_tokens,
                usage_reported=result.usage.reported,
                latency_ms=result.latency_ms,
                http_attempts=result.attempts,
                finish_reason=result.finish_reason,
                error=error,
            )
        )
        log.info(
            "%s: reply %d, %d prompt + %d completion tokens%s, %.0f ms, %d HTTP attempt(s)",
            agent.id,
            reply,
            result.usage.prompt_tokens,
            result.usage.completion_tokens,
            "" if result.usage.reported else " (not reported)",
            result.latency_ms,
            result.attempts,
        )


def _usage(results: list[ChatResult]) -> UsageTotals:
    return UsageTotals(
        calls=len(results),
        prompt_tokens=sum(r.usage.prompt_tokens for r in results),
        completion_tokens=sum(r.usage.completion_tokens for r in results),
        latency_ms=round(sum(r.latency_ms for r in results), 3),
    )


__all__ = ["CONTENT_TYPE", "CallRecord", "LlmPlanner", "communications", "read_reply"]
