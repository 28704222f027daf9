"""The DSLC HTTP planner's settings (kept in ``snapshot.planner``) and its planner error."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from notebook_bcc.planners.base import PlannerError
from notebook_bcc.protocol.limits import MAX_PAYLOAD_CHARS


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


__all__ = ["HttpPlannerError", "HttpPlannerSettings"]
