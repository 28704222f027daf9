"""A ``POST /workflows`` planner spec made into a planner, by the planner registry.

The spec is merged with the server's ``default_planner``, checked against
``allowed_planners``, its paths confined to the server root (a blueprint read through the
contents manager, size-capped; a template folder and its files; a transcript folder), and
translated into the kind's settings keys; :data:`~notebook_bcc.planners.registry.REGISTRY`
builds the planner, as it does for the CLI and for ``resume``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Set
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from notebook_bcc.planners.base import Planner
from notebook_bcc.planners.registry import REGISTRY
from notebook_bcc.server.contents import (
    Contents,
    folder_of,
    join_api,
)
from notebook_bcc.server.errors import (
    BadRequestError,
    PlannerUnavailableError,
)
from notebook_bcc.server.live import AVAILABLE_PLANNERS, ServiceSettings
from notebook_bcc.server.models import (
    BlueprintPlannerSpec,
    HttpPlannerSpec,
    LlmPlannerSpec,
    PlannerKind,
    PlannerList,
    PlannerSpec,
    ReplayPlannerSpec,
)
from notebook_bcc.server.request_paths import ROOT, PathBase

log = logging.getLogger(__name__)

_PLANNER_SPEC: TypeAdapter[PlannerSpec] = TypeAdapter(PlannerSpec)


def _validation_problems(exc: ValidationError) -> list[str]:
    return [
        "/" + "/".join(str(part) for part in error["loc"]) + ": " + error["msg"]
        for error in exc.errors()
    ]


class PlannerSpecs:
    """Turns REST planner specs into planners for one server (its defaults and allow-list)."""

    def __init__(self, settings: ServiceSettings, contents: Contents) -> None:
        self.settings = settings
        self.contents = contents

    def kinds(self) -> PlannerList:
        """Every planner kind, whether this server runs it and why not, with its defaults."""
        default = self.settings.default_planner
        rows: list[PlannerKind] = []
        for kind in AVAILABLE_PLANNERS:
            reason = self.unavailable(kind)
            defaults = (
                {key: value for key, value in default.items() if key != "kind"}
                if default.get("kind") == kind
                else {}
            )
            rows.append(
                PlannerKind.model_validate(
                    {
                        "kind": kind,
                        "available": reason is None,
                        "reason": reason,
                        "defaults": defaults,
                    }
                )
            )
        return PlannerList(planners=rows)

    def unavailable(self, kind: str) -> str | None:
        """Why ``kind`` cannot start here, or None."""
        if kind not in AVAILABLE_PLANNERS:
            return f"the {kind} planner is not part of this installation"
        if kind not in self.settings.allowed_planners:
            allowed = ", ".join(self.settings.allowed_planners) or "none"
            return (
                f"the {kind} planner is turned off on this server "
                f"(NotebookBccApp.allowed_planners: {allowed})"
            )
        return None

    def spec(self, given: PlannerSpec | None) -> PlannerSpec:
        """The request's spec merged with the server's ``default_planner`` (400 when invalid)."""
        default = self.settings.default_planner
        if given is None:
            if not default:
                raise BadRequestError(
                    "planner: required (this server has no default planner configured)",
                    details={"field": "planner"},
                )
            data = dict(default)
        elif default and default.get("kind") == given.kind:
            data = {**default, **given.model_dump(exclude_unset=True)}
        else:
            return given
        try:
            return _PLANNER_SPEC.validate_python(data)
        except ValidationError as exc:
            problems = _validation_problems(exc)
            raise BadRequestError(
                "planner (with the server's default_planner): " + "; ".join(problems),
                details={"errors": problems},
            ) from None

    async def _template_folder(self, raw: str, base: PathBase = ROOT) -> tuple[str, str]:
        """An llm planner's template folder: (API path, OS path), confined to the root.

        Each ``.md`` file in it is checked too: a symlink out of the root would send a file
        of the server's into the prompts.
        """
        what = "planner.templates"
        folder = base.resolve(raw, what=what)
        self.contents.check_inside_root(folder, what=what)
        if not await self.contents.dir_exists(folder):
            raise BadRequestError(
                base.missing(what, raw, folder, noun="folder"),
                details={"field": what, "path": folder},
            )
        os_folder = self.contents.os_path(folder)
        if os_folder is None:
            raise BadRequestError(
                "planner.templates: prompt templates need a file-backed contents manager",
                details={"path": folder},
            )
        for entry in sorted(Path(os_folder).glob("*.md")):
            self.contents.check_inside_root(f"{folder}/{entry.name}", what="planner.templates")
        return folder, os_folder

    async def build(
        self, spec: PlannerSpec, base: PathBase = ROOT, given: Set[str] = frozenset()
    ) -> tuple[Planner, list[str]]:
        """The planner a spec names and the input files it declares (API paths).

        ``base``: the folder the request's own paths (the fields in ``given``) are relative
        to; a path from the server's ``default_planner`` is always an API path.
        """

        def base_of(field: str) -> PathBase:
            return base if field in given else ROOT

        if isinstance(spec, ReplayPlannerSpec):
            return await self._replay_planner(spec, base_of("path"))
        if isinstance(spec, HttpPlannerSpec):
            settings: dict[str, Any] = {"url": spec.url, "state_case": spec.state_case or "upper"}
            if spec.timeout:
                settings["total_timeout"] = spec.timeout
            return REGISTRY.build("http", settings), []
        if isinstance(spec, LlmPlannerSpec):
            return await self._llm_planner(spec, base_of("templates")), []
        if not isinstance(spec, BlueprintPlannerSpec):
            raise PlannerUnavailableError(
                f"planner kind {spec.kind!r} is not available in this installation "
                f"(available: {', '.join(AVAILABLE_PLANNERS)})",
                details={"kind": spec.kind, "available": list(AVAILABLE_PLANNERS)},
            )
        from notebook_bcc.server.blueprints import load_blueprint_api

        path = base_of("path").resolve(spec.path, what="planner.path")
        self.contents.check_inside_root(path, what="planner.path")
        if not await self.contents.exists(path):
            raise BadRequestError(
                base_of("path").missing("planner.path", spec.path, path),
                details={"field": "planner.path", "path": path},
            )
        loaded = await load_blueprint_api(self.contents, path)  # size-capped, off the loop
        os_path = self.contents.os_path(path)
        if os_path is not None:
            # recorded in snapshot.planner.settings: what a later server needs to reload it
            loaded = dataclasses.replace(loaded, path=Path(os_path))
        planner = REGISTRY.build("blueprint", {}, blueprint=loaded)
        folder = folder_of(path)
        files = [join_api(folder, name, what=f"{path} files") for name in loaded.blueprint.files]
        return planner, files

    async def _llm_planner(self, spec: LlmPlannerSpec, base: PathBase = ROOT) -> Planner:
        """An llm planner; its template folder confined to the root, its key variable set."""
        from notebook_bcc.planners.llm import LlmSettings, LlmSettingsError
        from notebook_bcc.planners.llm.errors import TemplateError
        from notebook_bcc.planners.llm.settings import api_key

        if not spec.base_url:
            raise BadRequestError(
                "planner.base_url: required for an llm planner (the API root with its "
                "version, e.g. http://127.0.0.1:11434/v1)",
                details={"field": "planner.base_url"},
            )
        allowed = self.settings.llm_key_envs
        if spec.api_key_env is not None and spec.api_key_env not in allowed:
            raise BadRequestError(
                f"planner.api_key_env: {spec.api_key_env!r} is not a key variable this server "
                f"lends to a planner (allowed: {', '.join(allowed) or 'none'}; the server's "
                "NotebookBccApp.llm_key_envs setting)",
                details={"field": "planner.api_key_env", "allowed": list(allowed)},
            )
        options = spec.model_dump(
            include={"api_key_env", "temperature", "stream", "max_tokens", "max_parse_retries"},
            exclude_none=True,
        )
        options.update(base_url=spec.base_url, model=spec.model)
        templates: tuple[str, str] | None = None
        if spec.templates is not None:
            templates = await self._template_folder(spec.templates, base)
            options["templates"] = templates[1]
        try:
            api_key(LlmSettings.from_json(options))  # a named variable missing here: 400 now
            return REGISTRY.build("llm", options)
        except (LlmSettingsError, TemplateError) as exc:
            message = exc.message
            if templates is not None:  # name files by API path, never the server OS path
                message = message.replace(templates[1], templates[0])
            raise BadRequestError(f"planner: {message}", details={"kind": "llm"}) from None

    async def _replay_planner(
        self, spec: ReplayPlannerSpec, base: PathBase = ROOT
    ) -> tuple[Planner, list[str]]:
        """A recorded transcript folder under the root, played back with its inputs."""
        from notebook_bcc.server.transcripts import open_replay_api

        folder = base.resolve(spec.path, what="planner.path")
        return await open_replay_api(self.contents, folder)  # every path confined, off-loop
