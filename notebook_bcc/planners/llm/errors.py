"""Typed errors of the LLM planner.

All are :class:`~notebook_bcc.planners.base.PlannerError` s: the engine sets the run ``failed``
with the message and leaves the FSM where it was (D1), and ``resume`` asks again. None of them
ever carries the API key: messages built from a server's answer are redacted first.
"""

from __future__ import annotations

from notebook_bcc.planners.base import PlannerError


class LlmSettingsError(PlannerError):
    """Settings that cannot work (a base URL that is not http(s), a negative timeout, ...)."""

    code = "llm_settings_error"


class LlmApiError(PlannerError):
    """The chat API could not answer: unreachable after retries, or it refused the request.

    ``details``: ``url``, ``agent``, ``attempts``, ``status`` (of the last response, if any),
    ``retryable`` (False for a refusal such as 400/401/404) and ``causes`` (one per attempt).
    """

    code = "llm_unavailable"


class LlmResponseError(LlmApiError):
    """The chat API answered, but not in the OpenAI chat-completions shape.

    The message names where: the SSE event number or the JSON pointer of the bad field.
    """

    code = "llm_bad_response"


class LlmReplyError(PlannerError):
    """The model's reply stayed unusable after the feedback retries (D1: the run fails).

    ``details``: ``agent``, ``point``, ``attempts``, ``errors`` (one per reply) and
    ``last_reply`` (its first characters).
    """

    code = "llm_reply_unusable"


class TemplateError(PlannerError):
    """A prompt template that cannot be used; the message names the file (and line)."""

    code = "llm_template_error"


__all__ = [
    "LlmApiError",
    "LlmReplyError",
    "LlmResponseError",
    "LlmSettingsError",
    "TemplateError",
]
