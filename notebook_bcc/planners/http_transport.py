"""HTTP transport policy shared by the DSLC HTTP planner and the LLM chat client.

One ``httpx.AsyncClient`` per event loop (:class:`LoopClient`), exponential backoff with jitter
(:func:`backoff_delay`), ``Retry-After`` (:func:`parse_retry_after`), the retryable attempt a
transport failure, a 5xx or a 429 is (:class:`RetryableAttempt`, :func:`transport_retry`), and
the charset of a Content-Type.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time

import httpx

RETRY_NOTE = {"planner_retry": True}
"""``extra`` of the log record a planner writes before it retries (what failed, the attempt
and the wait): the CLI shows those records as notices, so a rate-limited or slow planner is
never a silent minute."""

ERROR_BODY_CHARS = 2_000
"""How much of an error response's body a planner error quotes."""


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


async def error_excerpt(response: httpx.Response) -> str:
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


__all__ = [
    "ERROR_BODY_CHARS",
    "LoopClient",
    "RetryableAttempt",
    "backoff_delay",
    "charset_of",
    "error_excerpt",
    "parse_retry_after",
    "transport_retry",
]
