"""The transport settings the DSLC HTTP planner and the LLM planner share (``--planner-*``).

Both talk HTTP with the same patience: timeouts, retries with backoff, a cap on
``Retry-After`` and on the body read. :class:`TransportSettings` holds those fields once, with
their checks and the JSON round trip kept in ``snapshot.planner``; each planner's settings
class adds its own fields and names its error class and message prefix.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, asdict, dataclass, fields
from typing import Any, ClassVar, TypeVar
from urllib.parse import SplitResult, urlsplit

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.protocol.limits import MAX_PAYLOAD_CHARS

T = TypeVar("T", bound="TransportSettings")


def http_url_parts(url: str) -> SplitResult | str:
    """``url`` split, or why it is no usable http(s) URL (a malformed host, a port out of
    range or not a number: ``urlsplit`` accepts those and the connect fails deep inside the
    HTTP client, after a kernel started)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"it is malformed ({exc})"
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "it is not an http(s) URL"
    if not parts.hostname:
        return "it names no host"
    if port == 0:
        return "port 0 is not a port a server listens on"
    return parts


@dataclass(frozen=True)
class TransportSettings:
    """Timeouts (seconds), retries and caps shared by the HTTP-speaking planners.

    ``connect_timeout`` opens a connection, ``idle_timeout`` is the longest wait between two
    reads (headers included), ``total_timeout`` bounds one attempt; ``max_retries`` retries
    follow a failed attempt after ``backoff_delay(n, backoff_base, backoff_cap)``;
    ``retry_after_cap`` bounds a server's ``Retry-After``; ``max_body_chars`` bounds a reply.
    The fields are keyword-only, so a subclass's own fields come first in its constructor.
    """

    error: ClassVar[type[NotebookBccError]] = NotebookBccError
    """The error class a bad setting raises (the subclass's own)."""
    label: ClassVar[str] = "planner"
    """How messages name the settings (``planner connect_timeout must be positive``)."""

    _: KW_ONLY
    connect_timeout: float = 10.0
    idle_timeout: float = 300.0
    total_timeout: float = 900.0
    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    retry_after_cap: float = 120.0
    max_body_chars: int = MAX_PAYLOAD_CHARS

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "idle_timeout", "total_timeout"):
            if getattr(self, name) <= 0:
                raise self.error(f"{self.label} {name} must be positive")
        if self.max_retries < 0:
            raise self.error(f"{self.label} max_retries must be 0 or more")
        if self.backoff_base < 0 or self.backoff_cap < 0 or self.retry_after_cap < 0:
            raise self.error(f"{self.label} backoff settings must not be negative")
        if self.max_body_chars < 1:
            raise self.error(f"{self.label} max_body_chars must be positive")

    def to_json(self) -> dict[str, Any]:
        """The settings as plain JSON (subclasses keep secrets out of their fields)."""
        return asdict(self)

    @classmethod
    def from_json(cls: type[T], data: dict[str, Any]) -> T:
        """Settings back from :meth:`to_json` (unknown keys are ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


__all__ = ["TransportSettings", "http_url_parts"]
