"""The one place planners are built: from a REST spec, CLI arguments or stored settings.

Each kind registers a builder that takes the kind's *settings* (the same keys the planner
records in ``snapshot.planner.settings``); the three front doors only translate their own
spelling into those keys and ask :data:`REGISTRY`:

- the server (``POST /workflows``): a ``planner`` spec, its paths confined to the server root
  and its blueprint read through the contents manager first (``blueprint=`` argument);
- the CLI (``notebook-bcc run --planner KIND``): the ``--planner-*`` / ``--llm-*`` flags;
- ``resume`` and a restarted server: :meth:`PlannerRegistry.from_stored` rebuilds the planner
  a stored workflow was started with, a recording wrapped around it again.

Building a planner never starts I/O beyond reading its local files (a blueprint, a
transcript); bad settings raise the kind's typed error (a :class:`PlannerError` or
:class:`~notebook_bcc.blueprint.issues.BlueprintError`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.planners.base import Planner

if TYPE_CHECKING:
    from notebook_bcc.blueprint.loader import LoadedBlueprint

Builder = Callable[[Mapping[str, Any], "LoadedBlueprint | None"], Planner]
"""Builds one kind's planner from its settings (and a blueprint the caller loaded already)."""


class UnknownPlannerError(NotebookBccError):
    """A planner kind this installation does not have, or stored settings it cannot resume."""

    code = "planner_unavailable"


@dataclass(frozen=True)
class PlannerKind:
    """One registered kind: its builder and the settings a stored run needs to rebuild it."""

    kind: str
    build: Builder
    resume_keys: tuple[str, ...]


class PlannerRegistry:
    """Planner kinds by name (see the module docstring)."""

    def __init__(self) -> None:
        self._kinds: dict[str, PlannerKind] = {}

    def register(self, kind: str, build: Builder, *, resume_keys: tuple[str, ...]) -> None:
        """Add (or replace) a kind; ``resume_keys`` must be set in stored settings to resume."""
        self._kinds[kind] = PlannerKind(kind, build, resume_keys)

    def kinds(self) -> tuple[str, ...]:
        """The registered kinds, in registration order."""
        return tuple(self._kinds)

    def build(
        self,
        kind: str,
        settings: Mapping[str, Any],
        *,
        blueprint: LoadedBlueprint | None = None,
    ) -> Planner:
        """A new planner of ``kind`` from its settings (unknown keys are ignored)."""
        entry = self._kinds.get(kind)
        if entry is None:
            raise UnknownPlannerError(
                f"planner kind {kind!r} is not available in this installation "
                f"(available: {', '.join(self._kinds)})",
                details={"kind": kind, "available": list(self._kinds)},
            )
        return entry.build(settings, blueprint)

    def from_stored(self, snapshot_planner: Mapping[str, Any]) -> Planner:
        """The planner a stored workflow was started with (``snapshot.planner`` as JSON).

        ``blueprint`` reloads its file, ``http`` reconnects with the recorded settings (a
        token comes from the environment variable they name), ``llm`` likewise (the API key
        is read from the environment at each call), ``replay`` reopens its transcript; a
        ``record`` setting wraps the planner again so the recording continues in the same
        directory.
        """
        kind = snapshot_planner.get("kind")
        raw = snapshot_planner.get("settings") or {}
        settings: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}
        record = settings.pop("record", None)
        entry = self._kinds.get(kind) if isinstance(kind, str) else None
        if entry is None or not all(settings.get(key) for key in entry.resume_keys):
            raise UnknownPlannerError(
                f"cannot resume a workflow planned by {kind!r} in this installation",
                details={"kind": kind},
            )
        planner = entry.build(settings, None)
        if isinstance(record, str) and record:
            planner = recording(planner, Path(record), append=True)
        return planner


def recording(planner: Planner, directory: Path, *, append: bool = False) -> Planner:
    """``planner`` with every answer recorded to ``directory`` (``--record DIR``)."""
    from notebook_bcc.planners.recording import RecordingPlanner

    return RecordingPlanner(planner, directory, append=append)


def _blueprint(settings: Mapping[str, Any], loaded: LoadedBlueprint | None) -> Planner:
    from notebook_bcc.blueprint.loader import load_blueprint_file
    from notebook_bcc.planners.blueprint import BlueprintPlanner

    if loaded is None:
        path = settings.get("path")
        if not path:
            raise UnknownPlannerError("a blueprint planner needs a blueprint path")
        loaded = load_blueprint_file(str(path))
    return BlueprintPlanner(loaded)


def _http(settings: Mapping[str, Any], _: LoadedBlueprint | None) -> Planner:
    from notebook_bcc.planners.http import HttpPlanner, HttpPlannerSettings

    return HttpPlanner(HttpPlannerSettings.from_json(dict(settings)))


def _llm(settings: Mapping[str, Any], _: LoadedBlueprint | None) -> Planner:
    from notebook_bcc.planners.llm import LlmPlanner, LlmSettings

    return LlmPlanner(LlmSettings.from_json(dict(settings)))


def _replay(settings: Mapping[str, Any], _: LoadedBlueprint | None) -> Planner:
    from notebook_bcc.planners.replay import ReplayPlanner

    return ReplayPlanner(Path(str(settings["transcript"])))


def default_registry() -> PlannerRegistry:
    """The kinds shipped with notebook-bcc: blueprint, replay, http, llm."""
    registry = PlannerRegistry()
    registry.register("blueprint", _blueprint, resume_keys=("path",))
    registry.register("replay", _replay, resume_keys=("transcript",))
    registry.register("http", _http, resume_keys=("url",))
    registry.register("llm", _llm, resume_keys=("base_url", "model"))
    return registry


REGISTRY = default_registry()
"""The registry the server, the CLI and ``resume`` build planners with."""


def planner_for(snapshot_planner: Mapping[str, Any]) -> Planner:
    """:meth:`PlannerRegistry.from_stored` on :data:`REGISTRY` (``resume``, server restart)."""
    return REGISTRY.from_stored(snapshot_planner)


__all__ = [
    "REGISTRY",
    "PlannerKind",
    "PlannerRegistry",
    "UnknownPlannerError",
    "default_registry",
    "planner_for",
    "recording",
]
