"""The DSLC HTTP planner's settings (kept in ``snapshot.planner``) and its planner error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit, urlunsplit

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.planners.base import PlannerError
from notebook_bcc.planners.transport_settings import TransportSettings, http_url_parts


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@dataclass(frozen=True)
class HttpPlannerSettings(TransportSettings):
    """How to reach a DSLC server and how patient to be (kept in ``snapshot.planner``).

    The timeouts, retries and caps are :class:`TransportSettings` (shared with the LLM
    planner). ``route`` says whether stage routing asks the server at stage_completed
    (``server``) or follows the plan order (``plan``). ``token_env`` names an environment
    variable holding a bearer token (the token itself is never stored). ``accept_truncated``
    takes XML documents the parser had to close at the end.
    """

    error: ClassVar[type[NotebookBccError]] = PlannerError
    label: ClassVar[str] = "planner"

    url: str
    state_case: Literal["upper", "lower"] = "upper"
    stream: bool = False
    route: Literal["server", "plan"] = "server"
    fallback: bool = True
    accept_truncated: bool = False
    token_env: str | None = None

    def __post_init__(self) -> None:
        parts = http_url_parts(self.url)
        if isinstance(parts, str):
            raise PlannerError(f"planner URL {self.url!r}: {parts}")
        if parts.username is not None or parts.password is not None:
            raise PlannerError(
                "planner URL carries credentials; put a token in an environment variable "
                "and name it with token_env (--planner-token-env) instead"
            )
        super().__post_init__()

    def to_json(self) -> dict[str, Any]:
        """The settings as plain JSON (no secrets: the URL has no credentials)."""
        data = super().to_json()
        data["url"] = _without_credentials(self.url)
        return data


class HttpPlannerError(PlannerError):
    """The DSLC server could not answer: unreachable after retries, or it refused.

    ``details``: ``url``, ``point``, ``attempts``, ``status`` (of the last response, if any),
    ``retryable`` (False for a refusal such as 400/401/404) and ``causes`` (one line per
    attempt).
    """

    code = "planner_unreachable"


__all__ = ["HttpPlannerError", "HttpPlannerSettings"]
