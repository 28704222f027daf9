"""An OpenAI-compatible chat-completions client over httpx, streaming or not, with usage.

``POST {base_url}/chat/completions`` with ``{model, messages, stream, [stream_options],
[temperature], [max_tokens]}``. A streamed answer is read as server-sent events
(:mod:`.sse`): ``choices[0].delta.content`` pieces until ``data: [DONE]``, with the usage of
the final chunk that ``stream_options.include_usage`` asks for. A plain answer is one JSON
document (``choices[0].message.content``, ``usage``). The answer's Content-Type decides how it
is read, so a server that ignores ``stream`` still works.

Failures reuse the DSLC HTTP planner's policy (:mod:`notebook_bcc.planners.http_transport`:
:func:`backoff_delay`, :func:`parse_retry_after`): connection errors, timeouts, a stream cut
short, an error reported mid-stream, 408, 429 and 5xx are retried with exponential backoff and
jitter (``Retry-After`` honoured up to ``retry_after_cap``); any other status is refused at
once; an answer that is not the chat-completions shape is a :class:`LlmResponseError` naming
the SSE event or JSON pointer. The API key is read from the environment for each call and
never kept: error messages built from a server's answer are redacted with it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from time import monotonic
from typing import Any

import httpx

from notebook_bcc.planners.http_transport import (
    RETRY_NOTE,
    LoopClient,
    RetryableAttempt,
    backoff_delay,
    charset_of,
    parse_retry_after,
    transport_retry,
)
from notebook_bcc.planners.llm.errors import LlmApiError, LlmResponseError
from notebook_bcc.planners.llm.settings import LlmSettings, api_key, key_hint
from notebook_bcc.planners.llm.sse import SseDecoder, SseError, SseEvent

log = logging.getLogger(__name__)

ChatMessage = dict[str, str]
"""``{"role": "system" | "user" | "assistant", "content": text}``."""

ERROR_BODY_CHARS = 2_000
"""How much of an error answer a message quotes."""

REDACTED = "[REDACTED]"

USER_AGENT = "notebook-bcc (LLM planner)"

RETRYABLE_STATUSES = frozenset({408, 429})
"""4xx statuses worth another attempt (request timeout, rate limit); 5xx are retried too."""


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced (keys never reach a message)."""
    if not secret:
        return text
    return text.replace(secret, REDACTED)


@dataclass(frozen=True)
class CallUsage:
    """Tokens one call cost, as the API reported them (``reported`` False: it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reported: bool = False


@dataclass(frozen=True)
class ChatResult:
    """One completed call: the assistant's text and what it cost."""

    content: str
    finish_reason: str | None
    usage: CallUsage
    latency_ms: float
    attempts: int


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def read_usage(value: Any, where: str) -> CallUsage | None:
    """A ``usage`` object's token counts; None when absent.

    Usage is informational: a malformed one is logged and counted as not reported rather
    than failing a good answer.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        log.warning("LLM answer %s: usage is not an object; tokens not counted", where)
        return None
    prompt = _count(value.get("prompt_tokens", 0))
    completion = _count(value.get("completion_tokens", 0))
    if prompt is None or completion is None:
        log.warning("LLM answer %s: usage token counts are not integers; not counted", where)
        return None
    return CallUsage(prompt, completion, reported=True)


def _text_of(content: Any, pointer: str) -> str | None:
    """Message content: a string, null, or a list of ``{"type": "text", "text": ...}`` parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for index, part in enumerate(content):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                raise LlmResponseError(
                    f"{pointer}/{index}: expected a text part", details={"pointer": pointer}
                )
        return "".join(parts)
    raise LlmResponseError(
        f"{pointer}: expected a string, got {type(content).__name__}", details={"pointer": pointer}
    )


def _first_choice(doc: dict[str, Any], where: str) -> dict[str, Any] | None:
    choices = doc.get("choices")
    if choices is None:
        return None
    if not isinstance(choices, list):
        raise LlmResponseError(f"{where}/choices: expected a list", details={"where": where})
    for index, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise LlmResponseError(
                f"{where}/choices/{index}: expected an object", details={"where": where}
            )
        if choice.get("index", 0) == 0:
            return choice
    return None


def _finish_reason(choice: dict[str, Any], pointer: str) -> str | None:
    reason = choice.get("finish_reason")
    if reason is None or isinstance(reason, str):
        return reason
    raise LlmResponseError(f"{pointer}/finish_reason: expected a string or null")


def _error_text(value: Any) -> str | None:
    """The message of an ``error`` member (an object with ``message``, or a string)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        message = value.get("message")
        if isinstance(message, str):
            kind = value.get("type") or value.get("code")
            return f"{message} ({kind})" if isinstance(kind, str) and kind else message
        return json.dumps(value, ensure_ascii=False)[:ERROR_BODY_CHARS]
    return None


def read_completion(raw: bytes, charset: str = "utf-8") -> tuple[str, str | None, CallUsage | None]:
    """``(content, finish_reason, usage)`` of a non-streamed chat-completions body."""
    try:
        doc = json.loads(raw.decode(charset))
    except (UnicodeDecodeError, LookupError, ValueError) as exc:
        raise LlmResponseError(f"the answer is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise LlmResponseError("the answer is not a JSON object")
    if "error" in doc and "choices" not in doc:
        raise LlmResponseError(f"the answer is an error: {_error_text(doc['error'])}")
    choice = _first_choice(doc, "")
    if choice is None:
        raise LlmResponseError("/choices: no choice in the answer")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise LlmResponseError("/choices/0/message: expected an object")
    content = _text_of(message.get("content"), "/choices/0/message/content")
    if content is None:
        refusal = message.get("refusal")
        detail = f" (refusal: {refusal})" if isinstance(refusal, str) else ""
        raise LlmResponseError(f"/choices/0/message/content: the answer has no text{detail}")
    return content, _finish_reason(choice, "/choices/0"), read_usage(doc.get("usage"), "body")


class StreamAssembler:
    """Joins streamed chunks (SSE events) into one answer (see the module docstring)."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.finish_reason: str | None = None
        self.usage: CallUsage | None = None
        self.done = False
        self.events = 0

    def feed(self, event: SseEvent) -> None:
        """Take one event; ``[DONE]`` ends the answer; an ``error`` event raises."""
        self.events += 1
        where = f"stream event {self.events} (line {event.line})"
        data = event.data.strip()
        if data == "[DONE]":
            self.done = True
            return
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise LlmResponseError(f"{where}: not JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise LlmResponseError(f"{where}: expected a JSON object")
        if event.event == "error" or ("error" in doc and "choices" not in doc):
            message = _error_text(doc.get("error", doc)) or "an error event"
            raise RetryableAttempt(f"the API reported an error mid-stream: {message}")
        usage = read_usage(doc.get("usage"), where)
        if usage is not None:
            self.usage = usage
        choice = _first_choice(doc, where)
        if choice is None:
            return
        delta = choice.get("delta")
        if delta is not None:
            if not isinstance(delta, dict):
                raise LlmResponseError(f"{where}: /choices/0/delta: expected an object")
            piece = _text_of(delta.get("content"), f"{where}: /choices/0/delta/content")
            if piece:
                self.pieces.append(piece)
        reason = _finish_reason(choice, f"{where}: /choices/0")
        if reason is not None:
            self.finish_reason = reason

    @property
    def content(self) -> str:
        """The text so far."""
        return "".join(self.pieces)


@dataclass(frozen=True)
class _Answer:
    content: str
    finish_reason: str | None
    usage: CallUsage | None


def is_event_stream(content_type: str | None) -> bool:
    """True for ``text/event-stream`` (whatever its parameters)."""
    return (content_type or "").split(";", 1)[0].strip().lower() == "text/event-stream"


class ChatClient:
    """Calls the chat-completions endpoint (see the module docstring).

    ``sleep`` and ``rng`` are injectable so tests can watch the backoff; ``transport``
    replaces httpx's network transport.
    """

    def __init__(
        self,
        settings: LlmSettings,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = settings
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._http = LoopClient(
            connect_timeout=settings.connect_timeout,
            idle_timeout=settings.idle_timeout,
            transport=transport,
        )
        self.attempts = 0
        """HTTP attempts made so far (retries included)."""

    def request_body(self, messages: list[ChatMessage]) -> dict[str, Any]:
        """The JSON body of a call with ``messages``."""
        config = self.config
        body: dict[str, Any] = {"model": config.model, "messages": messages}
        body["stream"] = config.stream
        if config.stream:
            body["stream_options"] = {"include_usage": True}
        if config.temperature is not None:
            body["temperature"] = config.temperature
        if config.max_tokens is not None:
            body["max_tokens"] = config.max_tokens
        return body

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def complete(self, messages: list[ChatMessage], *, agent: str) -> ChatResult:
        """One chat completion, retried as the module docstring says."""
        config = self.config
        url = config.endpoint
        secret = api_key(config)
        accept = "text/event-stream, application/json" if config.stream else "application/json"
        headers = {
            "Content-Type": "application/json",
            "Accept": accept,
            "User-Agent": USER_AGENT,
        }
        if secret:
            headers["Authorization"] = f"Bearer {secret}"
        content = json.dumps(self.request_body(messages), ensure_ascii=False).encode("utf-8")
        causes: list[str] = []
        last_status: int | None = None
        total = config.max_retries + 1
        began = monotonic()
        for attempt in range(1, total + 1):
            self.attempts += 1
            retry_after: float | None = None
            try:
                answer = await asyncio.wait_for(
                    self._attempt(url, content, headers, secret, agent),
                    timeout=config.total_timeout,
                )
            except RetryableAttempt as failure:
                causes.append(redact(failure.cause, secret))
                last_status = failure.status
                retry_after = failure.retry_after
            except asyncio.TimeoutError:
                causes.append(f"no complete answer within {config.total_timeout}s")
                last_status = None
            except LlmResponseError as exc:
                raise LlmResponseError(
                    f"{agent}: POST {url}: {redact(exc.message, secret)}",
                    details={"url": url, "agent": agent, "attempts": attempt, "retryable": False},
                ) from None
            else:
                return ChatResult(
                    content=redact(answer.content, secret),
                    finish_reason=answer.finish_reason,
                    usage=answer.usage or CallUsage(),
                    latency_ms=round((monotonic() - began) * 1000, 3),
                    attempts=attempt,
                )
            if attempt == total:
                break
            delay = backoff_delay(attempt, config.backoff_base, config.backoff_cap, self._rng)
            if retry_after is not None:
                delay = min(retry_after, config.retry_after_cap)
            log.info(
                "%s: POST %s failed (%s); attempt %d of %d in %.1f s",
                agent,
                url,
                causes[-1],
                attempt + 1,
                total,
                delay,
                extra=RETRY_NOTE,
            )
            await self._sleep(delay)
        attempts = len(causes)
        raise LlmApiError(
            f"{agent}: POST {url}: {causes[-1]} (after {attempts} attempt{'s' * (attempts > 1)})",
            details={
                "url": url,
                "agent": agent,
                "attempts": attempts,
                "status": last_status,
                "retryable": True,
                "causes": causes,
            },
        )

    async def _attempt(
        self, url: str, content: bytes, headers: dict[str, str], secret: str | None, agent: str
    ) -> _Answer:
        client = self._http.get()
        try:
            async with client.stream("POST", url, content=content, headers=headers) as response:
                return await self._read(response, url, secret, agent)
        except (RetryableAttempt, LlmApiError):
            raise
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise LlmApiError(f"{agent}: bad LLM URL {url}: {exc}") from None
        except httpx.TransportError as exc:
            config = self.config
            raise transport_retry(exc, config.connect_timeout, config.idle_timeout) from None

    async def _read(
        self, response: httpx.Response, url: str, secret: str | None, agent: str
    ) -> _Answer:
        status = response.status_code
        content_type = response.headers.get("content-type")
        if status >= 500 or status in RETRYABLE_STATUSES:
            excerpt = redact(await _error_excerpt(response), secret)
            raise RetryableAttempt(
                f"HTTP {status}{excerpt}",
                status=status,
                retry_after=parse_retry_after(response.headers.get("retry-after")),
            )
        if not 200 <= status < 300:
            excerpt = redact(await _error_excerpt(response), secret)
            hint = f" ({key_hint(self.config)})" if status in (401, 403) else ""
            raise LlmApiError(
                f"{agent}: POST {url}: the API refused the request: HTTP {status}{excerpt}{hint}",
                details={
                    "url": url,
                    "agent": agent,
                    "attempts": 1,
                    "status": status,
                    "retryable": False,
                },
            )
        limit = self.config.max_body_chars
        if is_event_stream(content_type):
            return await self._read_stream(response, limit)
        raw = bytearray()
        async for chunk in response.aiter_bytes():
            raw += chunk
            if len(raw) > limit:
                raise LlmResponseError(f"the answer is larger than {limit} bytes")
        content, finish, usage = read_completion(bytes(raw), charset_of(content_type))
        return _Answer(content, finish, usage)

    async def _read_stream(self, response: httpx.Response, limit: int) -> _Answer:
        decoder = SseDecoder(max_line_bytes=limit)
        assembler = StreamAssembler()
        size = 0
        try:
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise LlmResponseError(f"the streamed answer is larger than {limit} bytes")
                for event in decoder.feed(chunk):
                    assembler.feed(event)
                    if assembler.done:
                        break
                if assembler.done:
                    break
            if not assembler.done:
                for event in decoder.close():
                    assembler.feed(event)
        except SseError as exc:
            raise LlmResponseError(f"the event stream is malformed: {exc}") from None
        except httpx.ReadTimeout:
            raise RetryableAttempt(
                f"the stream stopped for {self.config.idle_timeout}s after {size} bytes"
            ) from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise RetryableAttempt(
                f"the stream was cut after {size} bytes ({exc or type(exc).__name__})"
            ) from None
        if not assembler.done and assembler.finish_reason is None:
            raise RetryableAttempt(f"the stream ended after {size} bytes without its end ([DONE])")
        return _Answer(assembler.content, assembler.finish_reason, assembler.usage)


async def _error_excerpt(response: httpx.Response) -> str:
    """``: <the error's message>`` of an error answer (its JSON ``error.message`` if any)."""
    raw = b""
    try:
        async for chunk in response.aiter_bytes():
            raw += chunk
            if len(raw) >= ERROR_BODY_CHARS * 4:
                break
    except httpx.HTTPError:
        return ""
    return _format_error(error_body_message(raw))


def error_body_message(raw: bytes) -> str:
    """The readable message of an error body: ``error.message`` (or ``detail``, ``message``)
    of a JSON body, else its text; clipped to :data:`ERROR_BODY_CHARS`."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        for key in ("error", "detail", "message"):
            if key in doc:
                found = _error_text(doc[key])
                if found:
                    text = found
                    break
    return text[:ERROR_BODY_CHARS].strip()


def _format_error(message: str) -> str:
    return f": {message}" if message else ""


__all__ = [
    "CallUsage",
    "ChatClient",
    "ChatMessage",
    "ChatResult",
    "StreamAssembler",
    "error_body_message",
    "read_completion",
    "read_usage",
    "redact",
]
