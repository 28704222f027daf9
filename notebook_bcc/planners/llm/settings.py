"""Settings of the LLM planner, kept in ``snapshot.planner`` so ``resume`` can reconnect.

They never hold the API key: it is read from the environment at request time only
(:func:`api_key`), from the variable ``api_key_env`` names, else ``NOTEBOOK_BCC_LLM_API_KEY``,
else ``OPENAI_API_KEY``; with none set, requests go without ``Authorization`` (local servers).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import ClassVar

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.planners.llm.errors import LlmSettingsError
from notebook_bcc.planners.transport_settings import TransportSettings, http_url_parts

API_KEY_ENVS: tuple[str, ...] = ("NOTEBOOK_BCC_LLM_API_KEY", "OPENAI_API_KEY")
"""Where the API key is looked for, in order, when ``api_key_env`` is not set."""

MAX_PARSE_RETRIES_LIMIT = 10
"""Most feedback retries a setting may ask for."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class LlmSettings(TransportSettings):
    """How to reach an OpenAI-compatible chat API and how patient to be.

    ``base_url`` includes the API version (``http://127.0.0.1:11434/v1``); requests go to
    ``{base_url}/chat/completions``. ``stream`` asks for server-sent events (with
    ``stream_options.include_usage``); ``max_parse_retries`` is how many times a reply that
    does not parse is sent back with the error before the run fails (D1). Timeouts, retries,
    backoff and caps are the :class:`TransportSettings` shared with the DSLC HTTP planner
    (``--planner-*`` flags); :meth:`to_json` never holds a key, only the name of its variable.
    ``templates`` is a folder whose ``<agent-id>.md`` files replace the shipped ones.
    """

    error: ClassVar[type[NotebookBccError]] = LlmSettingsError
    label: ClassVar[str] = "LLM"

    base_url: str
    model: str
    stream: bool = True
    temperature: float | None = None
    max_tokens: int | None = None
    max_parse_retries: int = 2
    api_key_env: str | None = None
    templates: str | None = None

    def __post_init__(self) -> None:
        parts = http_url_parts(self.base_url)
        if isinstance(parts, str):
            raise LlmSettingsError(
                f"LLM base URL {self.base_url!r}: {parts} "
                "(give the API root with its version, e.g. http://127.0.0.1:11434/v1)"
            )
        if parts.username is not None or parts.password is not None:
            raise LlmSettingsError(
                "LLM base URL carries credentials; put the key in NOTEBOOK_BCC_LLM_API_KEY "
                "(or the variable api_key_env names) instead"
            )
        if parts.query or parts.fragment:
            raise LlmSettingsError(f"LLM base URL {self.base_url!r} must not have a query")
        if not self.model.strip():
            raise LlmSettingsError("LLM model: a model name is required")
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise LlmSettingsError("LLM temperature must be between 0 and 2")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise LlmSettingsError("LLM max_tokens must be at least 1")
        if not 0 <= self.max_parse_retries <= MAX_PARSE_RETRIES_LIMIT:
            raise LlmSettingsError(
                f"LLM max_parse_retries must be between 0 and {MAX_PARSE_RETRIES_LIMIT}"
            )
        super().__post_init__()
        if self.api_key_env is not None and not _ENV_NAME.match(self.api_key_env):
            raise LlmSettingsError(
                f"LLM api_key_env {self.api_key_env!r} is not an environment variable name"
            )

    @property
    def endpoint(self) -> str:
        """The chat-completions URL."""
        return self.base_url.rstrip("/") + "/chat/completions"


def api_key(settings: LlmSettings) -> str | None:
    """The API key from the environment, read now (never stored); None: send no key.

    A variable named by ``api_key_env`` that is unset or empty is an error: the user asked
    for a key and would otherwise get a confusing 401.
    """
    if settings.api_key_env:
        value = os.environ.get(settings.api_key_env)
        if not value:
            raise LlmSettingsError(
                f"environment variable {settings.api_key_env} (the LLM API key) is not set"
            )
        return value
    for name in API_KEY_ENVS:
        value = os.environ.get(name)
        if value:
            return value
    return None


def key_hint(settings: LlmSettings) -> str:
    """Where the API key was read from, for a refused request (401/403): what to check."""
    if settings.api_key_env:
        return f"the API key comes from ${settings.api_key_env}"
    for name in API_KEY_ENVS:
        if os.environ.get(name):
            return f"the API key comes from ${name} (--llm-api-key-env NAME reads another)"
    names = " or ".join(f"${name}" for name in API_KEY_ENVS)
    return f"no API key was sent: set {names} (or name one with --llm-api-key-env)"


__all__ = ["API_KEY_ENVS", "LlmSettings", "api_key", "key_hint"]
