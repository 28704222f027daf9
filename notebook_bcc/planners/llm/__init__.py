"""The LLM planner: seed 000's six agents asked through an OpenAI-compatible chat API.

:mod:`.agents` (ids, points, XML roots), :mod:`.settings` (what ``snapshot.planner`` keeps;
never the key), :mod:`.sse` and :mod:`.client` (the chat API, streamed or not, with usage),
:mod:`.prompts` (the templates in ``templates/``, overridable) and :mod:`.planner`
(:class:`LlmPlanner`, the Planner protocol).
"""

from notebook_bcc.planners.llm.errors import (
    LlmApiError,
    LlmReplyError,
    LlmResponseError,
    LlmSettingsError,
    TemplateError,
)
from notebook_bcc.planners.llm.planner import LlmPlanner
from notebook_bcc.planners.llm.settings import API_KEY_ENVS, LlmSettings

__all__ = [
    "API_KEY_ENVS",
    "LlmApiError",
    "LlmPlanner",
    "LlmReplyError",
    "LlmResponseError",
    "LlmSettings",
    "LlmSettingsError",
    "TemplateError",
]
