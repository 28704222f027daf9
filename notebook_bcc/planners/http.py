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
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx

from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.planners.base import (
    PlannerError,
    PlannerReply,
    PlannerRequest,
    StageRoute,
    next_remaining_stage,
)
from notebook_bcc.protocol.action_stream import ActionStreamDecoder
from notebook_bcc.protocol.detect import JSON as DETECTED_JSON
from notebook_bcc.protocol.detect import detect_kind
from notebook_bcc.protocol.errors import PayloadTooLargeError, ProtocolError
from notebook_bcc.protocol.limits import MAX_PAYLOAD_CHARS
from notebook_bcc.protocol.ndjson import NdjsonDecoder
from notebook_bcc.protocol.parse import parse_payload
from notebook_bcc.protocol.payloads import Payload, PlanningPayload, SignalsPayload
from notebook_bcc.protocol.planning import PLANNING_KEYS
from notebook_bcc.protocol.signals import SIGNAL_TYPES
from notebook_bcc.workflow.observation import build_observation

log = logging.getLogger(__name__)

ENDPOINTS: dict[str, str] = {
    "plan_stages": "/planning",
    "plan_steps": "/planning",
    "plan_behavior": "/planning",
    "generate_actions": "/generating",
    "reflect_behavior": "/reflecting",
    "reflect_stage": "/reflecting",
    "route_stage": "/reflecting",
}
"""The endpoint each decision point posts to (PROTOCOL-NOTES "Which endpoint at which state")."""

XML_ROOTS: dict[str, tuple[str, ...]] = {
    "plan_stages": ("stages", "workflow"),
    "plan_steps": ("steps",),
    "plan_behavior": ("behavior",),
    "generate_actions": ("actions",),
    "reflect_behavior": ("reflection",),
    "reflect_stage": ("stage_reflection",),
    "route_stage": (),
}
"""XML roots a point accepts; any other root is a protocol error naming both."""

JSON_KINDS: dict[str, str] = {
    "plan_stages": "planning",
    "plan_steps": "planning",
    "plan_behavior": "planning",
    "generate_actions": "json-actions",
    "reflect_behavior": "signals",
    "reflect_stage": "signals",
    "route_stage": "signals",
}
"""How a point reads JSON / NDJSON that is not a planning decision object."""

NDJSON_TYPES = frozenset(
    {
        "application/x-ndjson",
        "application/ndjson",
        "application/jsonl",
        "application/x-jsonl",
        "application/jsonlines",
        "application/x-jsonlines",
        "application/json-lines",
        "application/stream+json",
    }
)
"""Media types read as NDJSON (one value per line), incrementally."""

BodyFormat = Literal["xml", "json", "ndjson", "unknown"]

TRACE_BODY_CHARS = 100_000
"""How much of a refused body a protocol error keeps in its details (and so in the trace)."""

ERROR_BODY_CHARS = 2_000
"""How much of an error response's body a planner error quotes."""

FALLBACK_POINTS: dict[str, State] = {
    "plan_behavior": State.STEP_RUNNING,
    "reflect_behavior": State.BEHAVIOR_COMPLETED,
}
"""Where the seed 003 fallback decision maps to an event (D17)."""

USER_AGENT = "notebook-bcc (DSLC HTTP planner)"

StreamListener = Callable[[str, Any], None]
"""Called with (decision point, decoded value) for each NDJSON line as soon as it arrives."""


def body_format(content_type: str | None) -> BodyFormat:
    """How a body of this Content-Type is read: XML, JSON, NDJSON, or unknown (sniffed)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in NDJSON_TYPES:
        return "ndjson"
    if media in ("application/xml", "text/xml") or media.endswith("+xml"):
        return "xml"
    if media in ("application/json", "text/json") or media.endswith("+json"):
        return "json"
    return "unknown"


def charset_of(content_type: str | None) -> str:
    """The ``charset`` parameter of a Content-Type (UTF-8 when absent)."""
    for part in (content_type or "").split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


class LoopClient:
    """One ``httpx.AsyncClient`` per event loop, with the planners' timeouts (connect, idle).

    A planner outlives the loop it was first used on (the CLI's ``resume``, tests), and an
    httpx client is bound to its loop: a new loop gets a new client. ``transport`` replaces
    httpx's network transport (tests).
    """

    def __init__(
        self,
        *,
        connect_timeout: float,
        idle_timeout: float,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.timeout = httpx.Timeout(
            connect=connect_timeout, read=idle_timeout, write=idle_timeout, pool=connect_timeout
        )
        self.transport = transport
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> httpx.AsyncClient:
        """The client of the running loop (made on first use)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = httpx.AsyncClient(
                timeout=self.timeout, follow_redirects=False, transport=self.transport
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the connections."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with jitter: a delay in ``[d/2, d]``, ``d = min(cap, base * 2**(n-1))``.

    ``attempt`` counts the failed attempts so far (1 after the first failure).
    """
    ceiling = min(cap, base * 2.0 ** max(attempt - 1, 0))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def recase_states(observation: dict[str, Any], case: Literal["upper", "lower"]) -> dict[str, Any]:
    """The observation with FSM state names in ``case`` (D21: DSLC servers expect upper case).

    The engine builds observations upper case; only ``lower`` needs a copy.
    """
    if case == "upper":
        return observation
    doc: dict[str, Any] = json.loads(json.dumps(observation))
    holders = [doc.get("state"), (doc.get("observation") or {}).get("context")]
    for holder in holders:
        if not isinstance(holder, dict) or not isinstance(holder.get("FSM"), dict):
            continue
        fsm = holder["FSM"]
        if isinstance(fsm.get("state"), str):
            fsm["state"] = fsm["state"].lower()
        for entry in fsm.get("history") or []:
            for key in ("from", "to"):
                if isinstance(entry, dict) and isinstance(entry.get(key), str):
                    entry[key] = entry[key].lower()
    return doc


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@dataclass(frozen=True)
class HttpPlannerSettings:
    """How to reach a DSLC server and how patient to be (kept in ``snapshot.planner``).

    Timeouts are seconds: ``connect_timeout`` to open a connection, ``idle_timeout`` between
    two reads (waiting for the headers included: a server that stops sending), and
    ``total_timeout`` for one attempt. ``max_retries`` retries follow a failed attempt, after
    ``backoff_delay(n, backoff_base, backoff_cap)``. ``route`` says whether stage routing asks
    the server at stage_completed (``server``) or follows the plan order (``plan``).
    ``token_env`` names an environment variable holding a bearer token (the token itself is
    never stored). ``accept_truncated`` takes XML documents the parser had to close at the end.
    """

    url: str
    connect_timeout: float = 10.0
    idle_timeout: float = 300.0
    total_timeout: float = 900.0
    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    retry_after_cap: float = 120.0
    state_case: Literal["upper", "lower"] = "upper"
    stream: bool = False
    route: Literal["server", "plan"] = "server"
    fallback: bool = True
    accept_truncated: bool = False
    token_env: str | None = None
    max_body_chars: int = MAX_PAYLOAD_CHARS

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise PlannerError(f"planner URL {self.url!r} is not an http(s) URL")
        if parts.username is not None or parts.password is not None:
            raise PlannerError(
                "planner URL carries credentials; put a token in an environment variable "
                "and name it with token_env (--planner-token-env) instead"
            )
        for name in ("connect_timeout", "idle_timeout", "total_timeout"):
            if getattr(self, name) <= 0:
                raise PlannerError(f"planner {name} must be positive")
        if self.max_retries < 0:
            raise PlannerError("planner max_retries must be 0 or more")
        if self.backoff_base < 0 or self.backoff_cap < 0 or self.retry_after_cap < 0:
            raise PlannerError("planner backoff settings must not be negative")

    def to_json(self) -> dict[str, Any]:
        """The settings as plain JSON (no secrets: the URL has no credentials)."""
        data = asdict(self)
        data["url"] = _without_credentials(self.url)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HttpPlannerSettings:
        """Settings back from :meth:`to_json` (unknown keys are ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


class HttpPlannerError(PlannerError):
    """The DSLC server could not answer: unreachable after retries, or it refused.

    ``details``: ``url``, ``point``, ``attempts``, ``status`` (of the last response, if any),
    ``retryable`` (False for a refusal such as 400/401/404) and ``causes`` (one line per
    attempt).
    """

    code = "planner_unreachable"


class HttpProtocolError(ProtocolError):
    """A response the protocol layer refused; ``details`` keep the body and where it came from.

    ``details["body"]`` is the body as received (the first :data:`TRACE_BODY_CHARS`
    characters; ``body_truncated`` says when more was cut), with ``content_type``, ``url``,
    ``status`` and ``point``.
    """

    code = "planner_protocol_error"

    def __init__(
        self,
        error: ProtocolError,
        *,
        body: str,
        content_type: str | None,
        url: str,
        status: int | None,
        point: str,
    ) -> None:
        head = error.issues[0]
        super().__init__(
            error.kind,
            head.message,
            line=head.line,
            pointer=head.pointer,
            element=head.element,
            issues=error.issues,
        )
        self.body = body
        self.details.update(
            {
                "point": point,
                "url": url,
                "status": status,
                "content_type": content_type,
                "body": body[:TRACE_BODY_CHARS],
                "body_truncated": len(body) > TRACE_BODY_CHARS,
            }
        )


class RetryableAttempt(Exception):
    """An attempt that may succeed if tried again (transport failure, 5xx, 429): ``cause``
    says why, ``retry_after`` is the server's wish in seconds. Shared with the LLM client."""

    def __init__(
        self, cause: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(cause)
        self.cause = cause
        self.status = status
        self.retry_after = retry_after


def transport_retry(
    exc: httpx.TransportError, connect_timeout: float, idle_timeout: float
) -> RetryableAttempt:
    """The retryable attempt a transport failure (timeouts, refused or lost connections) is,
    with a cause a user can act on."""
    cause: str
    if isinstance(exc, httpx.ConnectTimeout):
        cause = f"connect timeout ({connect_timeout}s)"
    elif isinstance(exc, httpx.ConnectError):
        cause = f"cannot connect: {exc or type(exc).__name__}"
    elif isinstance(exc, httpx.PoolTimeout):
        cause = "no free connection in the pool"
    elif isinstance(exc, httpx.ReadTimeout):
        cause = f"no data within the idle timeout ({idle_timeout}s)"
    elif isinstance(exc, httpx.TimeoutException):
        cause = f"timeout: {type(exc).__name__}"
    else:
        cause = f"connection lost: {exc or type(exc).__name__}"
    return RetryableAttempt(cause)


@dataclass(frozen=True)
class _Received:
    status: int
    content_type: str | None
    body: str


def _kind_error(point: str, state: str, found: str, fmt: BodyFormat) -> ProtocolError:
    roots = XML_ROOTS.get(point, ())
    expected = [f"<{root}>" for root in roots]
    expected.append("planning JSON" if JSON_KINDS[point] == "planning" else JSON_KINDS[point])
    kind = roots[0] if roots else JSON_KINDS[point]
    where = f"{point} at {state}"
    if fmt == "xml" and found == DETECTED_JSON:
        message = f"the Content-Type says XML but the body is JSON ({where})"
    else:
        shown = "JSON" if found == DETECTED_JSON else f"<{found}>"
        message = f"wrong root {shown} for {where}: expected {' or '.join(expected)}"
    return ProtocolError(kind, message, line=1, element=found)


def _is_planning_object(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return (
        isinstance(value, dict)
        and "type" not in value
        and "action" not in value
        and bool(PLANNING_KEYS & value.keys())
    )


def payload_kind(point: str, state: str, content_type: str | None, text: str) -> str:
    """The payload kind to parse ``text`` as, from the point and the Content-Type.

    A root or kind the point does not accept raises :class:`ProtocolError`.
    """
    fmt = body_format(content_type)
    if fmt == "unknown":
        found = detect_kind(text)
        fmt = "json" if found == DETECTED_JSON else "xml"
    if fmt == "xml":
        found = detect_kind(text)
        if found not in XML_ROOTS[point]:
            raise _kind_error(point, state, found, "xml")
        return found
    if fmt == "json" and _is_planning_object(text):
        return "planning"
    return JSON_KINDS[point]


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
                log.info("%s %s failed (%s); retry in %.3fs", point, url, failure.cause, delay)
                await self._sleep(delay)
                continue
            except asyncio.TimeoutError:
                causes.append(f"no complete response within {self.config.total_timeout}s")
                last_status = None
                if attempt == total_attempts:
                    break
                await self._sleep(
                    backoff_delay(
                        attempt, self.config.backoff_base, self.config.backoff_cap, self._rng
                    )
                )
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
            excerpt = await _excerpt(response)
            raise RetryableAttempt(
                f"HTTP {status}{excerpt}",
                status=status,
                retry_after=parse_retry_after(response.headers.get("retry-after")),
            )
        if not 200 <= status < 300:
            excerpt = await _excerpt(response)
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


async def _excerpt(response: httpx.Response) -> str:
    """`: <start of the body>` of an error response, or nothing."""
    try:
        raw = b""
        async for chunk in response.aiter_bytes():
            raw += chunk
            if len(raw) >= ERROR_BODY_CHARS:
                break
    except httpx.HTTPError:
        return ""
    text = raw[:ERROR_BODY_CHARS].decode("utf-8", errors="replace").strip()
    return f": {text}" if text else ""


FALLBACK_DECISION: dict[str, Any] = {
    "targetAchieved": False,
    "transition": {"continue_behaviors": False, "target_achieved": False},
}
"""Seed 003's fallback planning response when the planner is unreachable (D17)."""


def fallback_reply(reason: str) -> PlannerReply:
    """The fallback decision as a reply; ``fallback.reason`` (kept by the model) says why."""
    body = json.dumps({**FALLBACK_DECISION, "fallback": {"reason": reason}})
    return PlannerReply(parse_payload(body, "planning"), body, "application/json")


def route_from_reply(
    payload: Payload, snapshot: WorkflowSnapshot, planned: StageRoute
) -> StageRoute:
    """A stage route from the server's stage_completed answer (see ``HttpPlanner.route_stage``)."""
    remaining = snapshot.location.progress.stages.remaining
    warnings: list[str] = []
    extra = []
    if isinstance(payload, SignalsPayload | PlanningPayload):
        extra = [a.type for a in payload.actions if a.type not in SIGNAL_TYPES]
    if extra:
        warnings.append(
            f"stage_completed: {len(extra)} action(s) in the server's answer were not run "
            f"(no actions run at stage_completed): {', '.join(extra)}"
        )
    if isinstance(payload, PlanningPayload) and payload.response is not None:
        response = payload.response
        achieved = response.target_achieved
        if achieved is None and response.transition is not None:
            achieved = response.transition.target_achieved
        if achieved is True:
            if remaining:
                warnings.append(
                    "targetAchieved at stage_completed: stage(s) left are skipped: "
                    + ", ".join(item.id for item in remaining)
                )
            return StageRoute(
                planned.outcome, None, rule="planner: targetAchieved", warnings=tuple(warnings)
            )
        if achieved is False:
            if not remaining:
                raise PlannerError(
                    "the server asks for the next stage (targetAchieved: false) at "
                    "stage_completed, but no stage remains"
                )
            return StageRoute(
                planned.outcome,
                remaining[0].id,
                rule="planner: next stage",
                warnings=tuple(warnings),
            )
    elif not isinstance(payload, SignalsPayload | PlanningPayload):
        raise PlannerError(f"a {payload.kind} payload cannot route a stage")
    return StageRoute(
        planned.outcome,
        planned.target,
        end_state=planned.end_state,
        failed=planned.failed,
        rule=planned.rule,
        warnings=tuple(warnings),
    )


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
