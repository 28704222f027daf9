"""The DSLC HTTP planner: a DSLC planning server asked over HTTP (``--planner http``).

Each decision point is one ``POST`` to the endpoint its state calls for (PROTOCOL-NOTES):

| point | endpoint | what may come back |
|---|---|---|
| plan_stages | ``/planning`` | ``<stages>`` / ``<workflow>`` XML, planning JSON |
| plan_steps | ``/planning`` | ``<steps>`` XML, planning JSON |
| plan_behavior | ``/planning`` | ``<behavior>`` XML, planning JSON (204: keep the behavior) |
| generate_actions | ``/generating`` | ``<actions>`` XML, ``{"actions": [...]}``, NDJSON actions |
| reflect_behavior | ``/reflecting`` | ``<reflection>`` XML, NDJSON signals, planning JSON |
| reflect_stage | ``/reflecting`` | ``<stage_reflection>`` XML, NDJSON signals, planning JSON |
| route_stage | ``/reflecting`` | planning JSON (``targetAchieved``) or control signals |

The request is the reference client's (D21): the engine's observation (``observation`` +
``state``, FSM state names upper case unless ``state_case="lower"``), ``options.stream``,
``notebook_id`` and, after a behavior's actions, ``behavior_feedback``. The response's
Content-Type says how to read it: XML, JSON, or NDJSON, which is decoded line by line as the
chunks arrive (a bad line stops the stream at once). A body of another type is sniffed.

Why httpx and not tornado's client: tornado's ``AsyncHTTPClient`` has connect and request
(total) timeouts but no read timeout, and abandoning one of its fetches leaves the connection
open (holding one of its ``max_clients`` slots) until the total timeout fires. httpx has a
per-read timeout (our idle timeout: a stream that stops sending), closes the connection when a
streamed request is abandoned, and is typed and well maintained. The total timeout bounds each
attempt (``asyncio.wait_for``).

Failures:
- connection errors (refused, reset, DNS, connect timeout), idle and total timeouts, 5xx and
  429 are retried with exponential backoff and jitter; ``Retry-After`` (seconds or an HTTP
  date) is honoured on 429 and 5xx, up to ``retry_after_cap``;
- other statuses are refused at once (:class:`HttpPlannerError`, not retried);
- when retries are exhausted, the seed 003 fallback decision (``targetAchieved: false,
  continue_behaviors: false``) answers where D17 gives it a meaning (``plan_behavior`` at
  step_running, ``reflect_behavior`` at behavior_completed), once; anywhere else the error
  goes to the engine, which fails the run with the cause and leaves the FSM where it was (D1);
- a body that is garbage, truncated (the connection closed before its end, or a document cut
  short) or of the wrong root or kind for the point raises :class:`HttpProtocolError`: a
  :class:`~notebook_bcc.protocol.errors.ProtocolError` whose ``details`` keep the body, so the
  engine's trace holds the payload. Never retried, never skipped.

The rooms: :mod:`.http_wire` (endpoints, accepted roots and kinds, reading a body),
:mod:`.http_transport` (client per loop, backoff, ``Retry-After``; shared with the LLM client),
:mod:`.http_settings` (settings, :class:`HttpPlannerError`) and :mod:`.http_routing` (fallback
decision, stage routes); this module asks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from notebook_bcc.models.names import State
from notebook_bcc.planners.base import (
    PlannerError,
    PlannerReply,
    PlannerRequest,
    StageRoute,
    next_remaining_stage,
)
from notebook_bcc.planners.http_routing import (
    FALLBACK_DECISION,
    FALLBACK_POINTS,
    fallback_reply,
    route_from_reply,
)
from notebook_bcc.planners.http_settings import HttpPlannerError, HttpPlannerSettings
from notebook_bcc.planners.http_transport import (
    RETRY_NOTE,
    LoopClient,
    RetryableAttempt,
    backoff_delay,
    charset_of,
    error_excerpt,
    parse_retry_after,
    transport_retry,
)
from notebook_bcc.planners.http_wire import (
    ENDPOINTS,
    JSON_KINDS,
    HttpProtocolError,
    body_format,
    payload_kind,
    recase_states,
)
from notebook_bcc.protocol.action_stream import ActionStreamDecoder
from notebook_bcc.protocol.errors import PayloadTooLargeError, ProtocolError
from notebook_bcc.protocol.ndjson import NdjsonDecoder
from notebook_bcc.protocol.parse import parse_payload
from notebook_bcc.protocol.payloads import Payload
from notebook_bcc.workflow.observation import build_observation

log = logging.getLogger(__name__)

USER_AGENT = "notebook-bcc (DSLC HTTP planner)"

StreamListener = Callable[[str, Any], None]
"""Called with (decision point, decoded value) for each NDJSON line as soon as it arrives."""


@dataclass(frozen=True)
class _Received:
    status: int
    content_type: str | None
    body: str


class HttpPlanner:
    """Answers the engine by asking a DSLC server over HTTP (see the module docstring).

    ``sleep`` and ``rng`` are injectable so tests can watch the backoff; ``listener`` sees
    NDJSON values as they are decoded; ``transport`` replaces httpx's network transport.
    """

    kind = "http"

    def __init__(
        self,
        settings: HttpPlannerSettings,
        *,
        listener: StreamListener | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = settings
        self.listener = listener
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._http = LoopClient(
            connect_timeout=settings.connect_timeout,
            idle_timeout=settings.idle_timeout,
            transport=transport,
        )
        self._fell_back = False
        self.last_route_reply: PlannerReply | None = None
        """The server's answer behind the last :meth:`route_stage` (for recording)."""
        self.attempts = 0
        """HTTP attempts made so far (all points, retries included)."""

    # -- metadata -------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        """The settings for ``snapshot.planner`` (URL, timeouts, retries; never a token)."""
        return self.config.to_json()

    def url_for(self, point: str) -> str:
        """The full URL a decision point posts to."""
        return self.config.url.rstrip("/") + ENDPOINTS[point]

    # -- the decision points --------------------------------------------------------------

    async def plan_stages(self, request: PlannerRequest) -> PlannerReply:
        """``POST /planning`` at idle: the stages."""
        return await self._required(request)

    async def plan_steps(self, request: PlannerRequest) -> PlannerReply:
        """``POST /planning`` at stage_running: the current stage's steps."""
        return await self._required(request)

    async def plan_behavior(self, request: PlannerRequest) -> PlannerReply | None:
        """``POST /planning`` at step_running (or a re-plan at behavior_running; 204: none)."""
        return await self.ask(request)

    async def generate_actions(self, request: PlannerRequest) -> PlannerReply:
        """``POST /generating`` at behavior_running: the behavior's actions."""
        return await self._required(request)

    async def reflect_behavior(self, request: PlannerRequest) -> PlannerReply:
        """``POST /reflecting`` at behavior_completed (with ``behavior_feedback``)."""
        return await self._required(request)

    async def reflect_stage(self, request: PlannerRequest) -> PlannerReply:
        """``POST /reflecting`` at step_completed."""
        return await self._required(request)

    async def route_stage(
        self, request: PlannerRequest, *, decided: Literal["success", "failure"] | None = None
    ) -> StageRoute:
        """The next stage at stage_completed.

        With ``route="server"`` the server is asked (``POST /reflecting``): planning JSON with
        ``targetAchieved: true`` ends the workflow (stages left are skipped), ``false`` goes
        to the next remaining stage (an error when none remains); control signals or no
        decision follow the plan order. A server that cannot answer, or answers garbage, is a
        :class:`PlannerError` (the engine fails the run there, D1). ``route="plan"`` follows
        the plan order without asking.
        """
        self.last_route_reply = None
        planned = next_remaining_stage(request.snapshot)
        if self.config.route == "plan":
            return planned
        try:
            reply = await self._required(request)
        except ProtocolError as exc:
            excerpt = str(exc.details.get("body", ""))[:200]
            raise PlannerError(
                f"the stage_completed reply is malformed: {exc.message}"
                + (f" (body starts: {excerpt!r})" if excerpt else ""),
                details=exc.details,
            ) from exc
        self.last_route_reply = reply
        return route_from_reply(reply.payload, request.snapshot, planned)

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._http.aclose()

    # -- asking ---------------------------------------------------------------------------

    async def _required(self, request: PlannerRequest) -> PlannerReply:
        reply = await self.ask(request)
        if reply is None:
            raise HttpProtocolError(
                ProtocolError(JSON_KINDS[request.point], "empty response (204)", element="body"),
                body="",
                content_type=None,
                url=self.url_for(request.point),
                status=204,
                point=request.point,
            )
        return reply

    def request_body(self, request: PlannerRequest) -> dict[str, Any]:
        """The JSON the server receives for ``request`` (PROTOCOL-NOTES request shape)."""
        observation = request.observation or build_observation(request.snapshot)
        body = dict(recase_states(observation, self.config.state_case))
        body["options"] = {"stream": self.config.stream}
        if request.behavior_feedback is not None:
            body["behavior_feedback"] = request.behavior_feedback
        body["notebook_id"] = request.snapshot.workflow_id
        return body

    def _headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": (
                "application/x-ndjson, application/json, application/xml;q=0.9, "
                "text/xml;q=0.8, */*;q=0.1"
            ),
            "User-Agent": USER_AGENT,
        }
        if self.config.token_env:
            token = os.environ.get(self.config.token_env)
            if not token:
                raise HttpPlannerError(
                    f"environment variable {self.config.token_env} (the planner token) is not set"
                )
            headers["Authorization"] = f"Bearer {token}"
        return headers

    async def ask(self, request: PlannerRequest) -> PlannerReply | None:
        """One decision: post, retry what may pass, fall back where D17 allows, parse."""
        point = request.point
        url = self.url_for(point)
        content = json.dumps(self.request_body(request), ensure_ascii=False).encode("utf-8")
        headers = self._headers()
        state = request.snapshot.fsm.state
        causes: list[str] = []
        last_status: int | None = None
        total_attempts = self.config.max_retries + 1
        for attempt in range(1, total_attempts + 1):
            self.attempts += 1
            try:
                received = await asyncio.wait_for(
                    self._attempt(url, content, headers, point),
                    timeout=self.config.total_timeout,
                )
            except RetryableAttempt as failure:
                causes.append(failure.cause)
                last_status = failure.status
                if attempt == total_attempts:
                    break
                delay = backoff_delay(
                    attempt, self.config.backoff_base, self.config.backoff_cap, self._rng
                )
                if failure.retry_after is not None:
                    delay = min(failure.retry_after, self.config.retry_after_cap)
                log.info(
                    "planner %s: %s failed (%s); attempt %d of %d in %.1f s",
                    point,
                    url,
                    failure.cause,
                    attempt + 1,
                    total_attempts,
                    delay,
                    extra=RETRY_NOTE,
                )
                await self._sleep(delay)
                continue
            except asyncio.TimeoutError:
                causes.append(f"no complete response within {self.config.total_timeout}s")
                last_status = None
                if attempt == total_attempts:
                    break
                delay = backoff_delay(
                    attempt, self.config.backoff_base, self.config.backoff_cap, self._rng
                )
                log.info(
                    "planner %s: %s: %s; attempt %d of %d in %.1f s",
                    point,
                    url,
                    causes[-1],
                    attempt + 1,
                    total_attempts,
                    delay,
                    extra=RETRY_NOTE,
                )
                await self._sleep(delay)
                continue
            self._fell_back = False
            if received.status == 204:
                return None
            return self._reply(received, point, state.value, url)
        return self._exhausted(point, state, url, causes, last_status)

    def _exhausted(
        self, point: str, state: State, url: str, causes: list[str], status: int | None
    ) -> PlannerReply:
        attempts = len(causes)
        summary = f"POST {url}: {causes[-1]} (after {attempts} attempt{'s' * (attempts > 1)})"
        if self.config.fallback and FALLBACK_POINTS.get(point) is state and not self._fell_back:
            self._fell_back = True
            log.warning("%s: planner unreachable, seed 003 fallback decision: %s", point, summary)
            return fallback_reply(summary)
        raise HttpPlannerError(
            summary,
            details={
                "url": url,
                "point": point,
                "attempts": attempts,
                "status": status,
                "retryable": True,
                "causes": causes,
            },
        )

    async def _attempt(
        self, url: str, content: bytes, headers: dict[str, str], point: str
    ) -> _Received:
        client = self._http.get()
        try:
            async with client.stream("POST", url, content=content, headers=headers) as response:
                return await self._read(response, url, point)
        except (RetryableAttempt, ProtocolError, PlannerError):
            raise
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise HttpPlannerError(f"bad planner URL {url}: {exc}") from None
        except httpx.TransportError as exc:
            config = self.config
            raise transport_retry(exc, config.connect_timeout, config.idle_timeout) from None

    async def _read(self, response: httpx.Response, url: str, point: str) -> _Received:
        status = response.status_code
        content_type = response.headers.get("content-type")
        if status == 429 or status >= 500:
            excerpt = await error_excerpt(response)
            raise RetryableAttempt(
                f"HTTP {status}{excerpt}",
                status=status,
                retry_after=parse_retry_after(response.headers.get("retry-after")),
            )
        if not 200 <= status < 300:
            excerpt = await error_excerpt(response)
            raise HttpPlannerError(
                f"POST {url}: the server refused the request: HTTP {status}{excerpt}",
                details={
                    "url": url,
                    "point": point,
                    "attempts": 1,
                    "status": status,
                    "retryable": False,
                },
            )
        if status == 204:
            return _Received(status, content_type, "")
        fmt = body_format(content_type)
        values: NdjsonDecoder | ActionStreamDecoder | None = None
        if fmt == "ndjson":
            kind = JSON_KINDS[point]
            values = (
                NdjsonDecoder(kind=kind) if kind == "planning" else ActionStreamDecoder(kind=kind)
            )
        received = bytearray()
        limit = self.config.max_body_chars

        def refuse(error: ProtocolError) -> HttpProtocolError:
            text = bytes(received).decode(charset_of(content_type), errors="replace")
            return HttpProtocolError(
                error, body=text, content_type=content_type, url=url, status=status, point=point
            )

        try:
            async for chunk in response.aiter_bytes():
                received += chunk
                if len(received) > limit:
                    raise refuse(
                        PayloadTooLargeError(
                            JSON_KINDS[point], f"body larger than {limit} bytes", element="body"
                        )
                    )
                if values is not None:
                    self._notify(point, values.feed(chunk))
            if values is not None:
                self._notify(point, values.close())
        except HttpProtocolError:
            raise
        except ProtocolError as exc:
            raise refuse(exc) from None
        except httpx.ReadTimeout:
            raise RetryableAttempt(
                f"the stream stopped for {self.config.idle_timeout}s after {len(received)} bytes",
                status=status,
            ) from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise refuse(
                ProtocolError(
                    JSON_KINDS[point],
                    f"truncated response: the connection closed after {len(received)} bytes "
                    f"({exc or type(exc).__name__})",
                    element="body",
                )
            ) from None
        charset = charset_of(content_type)
        try:
            text = bytes(received).decode(charset)
        except (UnicodeDecodeError, LookupError) as exc:
            raise refuse(
                ProtocolError(
                    JSON_KINDS[point], f"the body is not valid {charset}: {exc}", element="body"
                )
            ) from None
        return _Received(status, content_type, text)

    def _notify(self, point: str, values: list[Any]) -> None:
        if self.listener is not None:
            for value in values:
                self.listener(point, value)

    def _reply(self, received: _Received, point: str, state: str, url: str) -> PlannerReply:
        text = received.body
        try:
            if not text.strip():
                raise ProtocolError(JSON_KINDS[point], "empty body", line=1, element="body")
            kind = payload_kind(point, state, received.content_type, text)
            payload: Payload = parse_payload(text, kind)
            if getattr(payload, "truncated", False) and not self.config.accept_truncated:
                raise ProtocolError(
                    kind,
                    f"truncated <{kind}> document: it ends before its closing tag",
                    element=kind,
                )
            if getattr(payload, "truncated", False):
                payload = payload.model_copy(update={"truncation_accepted": True})
        except ProtocolError as exc:
            raise HttpProtocolError(
                exc,
                body=text,
                content_type=received.content_type,
                url=url,
                status=received.status,
                point=point,
            ) from None
        return PlannerReply(payload, text, received.content_type or "")


__all__ = [
    "ENDPOINTS",
    "FALLBACK_DECISION",
    "HttpPlanner",
    "HttpPlannerError",
    "HttpPlannerSettings",
    "HttpProtocolError",
    "backoff_delay",
    "body_format",
    "fallback_reply",
    "parse_retry_after",
    "payload_kind",
    "recase_states",
    "route_from_reply",
]
