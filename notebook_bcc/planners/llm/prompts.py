"""Prompt templates: one Markdown file per agent, rendered with the request's observation.

A template file holds named sections, each opened by a line ``<!-- section: NAME -->``
(text before the first one is a note for readers and is ignored): ``system`` and ``user``
become the two messages, and ``early`` / ``mid`` / ``late`` are the conditional parts a
``{{progress_guidance}}`` placeholder picks by stage progress (seed 000 "Conditional
Complexity"). Placeholders are ``{{name}}`` (spaces inside the braces allowed), replaced in a
single pass, so a value that contains braces is never expanded again; ``$`` and lone braces
are plain text. The system message always starts with ``# notebook-bcc agent: <agent-id>``,
added here, so an override cannot drop it.

The shipped templates live in ``templates/`` beside this module; a folder given as
``templates`` in the settings (``--llm-templates DIR``) may hold any of ``<agent-id>.md`` and
``feedback.md``, which then replace the shipped ones. Anything wrong (an unknown file or
placeholder, a missing section or ``{{observation}}``) is a :class:`TemplateError` naming the
file and line, raised when the planner is built, before any call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import PlanItem
from notebook_bcc.planners.base import PlannerRequest
from notebook_bcc.planners.llm.agents import AGENT_IDS, BY_ID, agent_line
from notebook_bcc.planners.llm.client import ChatMessage
from notebook_bcc.planners.llm.errors import TemplateError
from notebook_bcc.workflow.observation import MORE_KEY, build_observation

FEEDBACK = "feedback"
"""The template of the message that sends an unusable reply's error back."""

TEMPLATE_NAMES: tuple[str, ...] = (*AGENT_IDS, FEEDBACK)
"""Every template a folder may hold (as ``NAME.md``)."""

BANDS: tuple[str, ...] = ("early", "mid", "late")
"""Conditional sections, by stage progress: up to 50 %, up to 80 %, beyond (or no step left)."""

PLACEHOLDERS: dict[str, str] = {
    "agent": "the agent id",
    "agent_title": "the agent's name in seed 000",
    "problem": "the user's problem (user_problem)",
    "files": "the submitted files (user_submit_files), one per line",
    "observation": "the observation (D21: location and state, budgeted) as one-line JSON",
    "location": "a one-line summary: stage > step > behavior, iteration, FSM state",
    "fsm_state": "the FSM state (upper case)",
    "stage_id": "the current stage id",
    "step_id": "the current step id",
    "behavior_id": "the current behavior id",
    "iteration": "the behavior iteration",
    "suggested_behavior_id": "an id for the next behavior of the current step",
    "current_stage": "the current stage as the observation shows it (JSON)",
    "current_step": "the current step (JSON)",
    "current_behavior": "the current behavior (JSON)",
    "variables": "the variables that exist, one per line with their type and value",
    "notebook": "the notebook: title, outline, and the newest cells in full (within the budget)",
    "artifacts": "the artifact specification: what each current level must produce and "
    "needs (name: description), one per line",
    "effects": "effects.current (the outputs of this behavior's code so far; empty on the "
    "first call) and how many older effects there are",
    "messages": "messages other agents sent this agent (empty when none)",
    "feedback": "behavior_feedback (JSON) after a behavior's actions",
    "stage_progress": "steps done out of all in the current stage, with a percentage",
    "progress_band": "early, mid or late",
    "progress_guidance": "the early / mid / late section that matches the progress",
    "remaining_steps": "the ids of the steps still to run",
}
"""Placeholders an agent template may use."""

FEEDBACK_PLACEHOLDERS: dict[str, str] = {
    "error": "what is wrong with the reply (with its line numbers)",
    "root": "the XML root expected",
    "note": "an extra hint (a reply cut off by the token limit), or nothing",
    "agent": "the agent id",
}
"""Placeholders the feedback template may use."""

_SECTION = re.compile(r"^<!--\s*section:\s*([A-Za-z0-9_-]+)\s*-->[ \t]*$", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}\s]*)\s*\}\}")
_JSON_INDENT = 1


@dataclass(frozen=True)
class Template:
    """One parsed template file: its sections (text) and where it came from."""

    name: str
    source: str
    sections: dict[str, str]
    lines: dict[str, int]

    def placeholders(self, section: str) -> list[str]:
        """Placeholder names used in ``section``."""
        return [m.group(1) for m in _PLACEHOLDER.finditer(self.sections.get(section, ""))]


def parse_template(name: str, text: str, source: str) -> Template:
    """Parse and check a template's text (``source`` names the file in errors)."""
    text = text.replace("\r\n", "\n")
    sections: dict[str, str] = {}
    lines: dict[str, int] = {}
    markers = list(_SECTION.finditer(text))
    allowed = {"user"} if name == FEEDBACK else {"system", "user", *BANDS}
    for index, marker in enumerate(markers):
        section = marker.group(1)
        line = text.count("\n", 0, marker.start()) + 1
        if section not in allowed:
            raise TemplateError(
                f"{source}:{line}: unknown section {section!r} "
                f"(expected: {', '.join(sorted(allowed))})",
                details={"file": source, "line": line},
            )
        if section in sections:
            raise TemplateError(
                f"{source}:{line}: section {section!r} appears twice",
                details={"file": source, "line": line},
            )
        end = markers[index + 1].start() if index + 1 < len(markers) else len(text)
        raw = text[marker.end() + 1 : end]
        lead = len(raw) - len(raw.lstrip("\n"))
        sections[section] = raw.strip("\n")
        lines[section] = line + 1 + lead
    template = Template(name, source, sections, lines)
    _check(template)
    return template


_NO_NESTING = frozenset({"progress_guidance"})
"""Placeholders a conditional section may not use (it would include itself)."""


def _check(template: Template) -> None:
    source = template.source
    required = ("user",) if template.name == FEEDBACK else ("system", "user")
    for section in required:
        if section not in template.sections:
            raise TemplateError(
                f"{source}: no '<!-- section: {section} -->' section",
                details={"file": source},
            )
    known = FEEDBACK_PLACEHOLDERS if template.name == FEEDBACK else PLACEHOLDERS
    used: set[str] = set()
    for section, body in template.sections.items():
        for match in _PLACEHOLDER.finditer(body):
            placeholder = match.group(1)
            if placeholder not in known or (section in BANDS and placeholder in _NO_NESTING):
                line = template.lines[section] + body.count("\n", 0, match.start())
                raise TemplateError(
                    f"{source}:{line}: unknown placeholder {{{{{placeholder}}}}} "
                    f"(known: {', '.join(sorted(known))})",
                    details={"file": source, "line": line, "placeholder": placeholder},
                )
            used.add(placeholder)
    if template.name == FEEDBACK:
        if "error" not in used:
            raise TemplateError(
                f"{source}: the feedback template must use {{{{error}}}}",
                details={"file": source, "placeholder": "error"},
            )
        return
    if "observation" not in used:
        raise TemplateError(
            f"{source}: the template must use {{{{observation}}}} (the agent would see nothing)",
            details={"file": source, "placeholder": "observation"},
        )
    if "progress_guidance" in used:
        missing = [band for band in BANDS if band not in template.sections]
        if missing:
            raise TemplateError(
                f"{source}: {{{{progress_guidance}}}} needs the sections "
                + ", ".join(f"'<!-- section: {band} -->'" for band in missing),
                details={"file": source, "missing": missing},
            )


def _substitute(body: str, values: Mapping[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], body)


@dataclass(frozen=True)
class PromptSet:
    """The seven templates in use (six agents and the feedback), ready to render."""

    templates: dict[str, Template]

    def source(self, name: str) -> str:
        """Where template ``name`` was read from."""
        return self.templates[name].source

    def render(self, agent_id: str, values: Mapping[str, str]) -> list[ChatMessage]:
        """The system and user messages of ``agent_id`` with ``values`` filled in."""
        template = self.templates[agent_id]
        filled = dict(values)
        if all(band in template.sections for band in BANDS):
            band = values.get("progress_band", "early")
            filled["progress_guidance"] = _substitute(template.sections[band], values)
        system = _substitute(template.sections["system"], filled)
        user = _substitute(template.sections["user"], filled)
        return [
            {"role": "system", "content": f"{agent_line(agent_id)}\n\n{system}"},
            {"role": "user", "content": user},
        ]

    def feedback(self, values: Mapping[str, str]) -> ChatMessage:
        """The user message that sends an unusable reply's error back."""
        body = _substitute(self.templates[FEEDBACK].sections["user"], values)
        return {"role": "user", "content": body}


def shipped_template_dir() -> Any:
    """The folder of the shipped templates (a :mod:`importlib.resources` traversable)."""
    return resources.files("notebook_bcc.planners.llm").joinpath("templates")


def load_templates(override: str | Path | None = None) -> PromptSet:
    """The shipped templates, each replaced by ``override/NAME.md`` when that file exists.

    An override folder that does not exist, or that holds a ``.md`` file with another name,
    is a :class:`TemplateError`.
    """
    replaced: dict[str, Path] = {}
    if override is not None:
        folder = Path(override)
        if folder.is_file():
            # a user who copied one shipped template names that file: the folder is meant
            raise TemplateError(
                f"{folder}: a file, not a folder of templates; name the folder that holds the "
                f"<agent-id>.md and feedback.md files (this file's folder is {folder.parent})",
                details={"file": str(folder), "folder": str(folder.parent)},
            )
        if not folder.is_dir():
            raise TemplateError(
                f"{folder}: the templates folder does not exist", details={"file": str(folder)}
            )
        for path in sorted(folder.glob("*.md")):
            if path.stem not in TEMPLATE_NAMES:
                raise TemplateError(
                    f"{path}: unknown template {path.name!r} "
                    f"(expected: {', '.join(f'{name}.md' for name in TEMPLATE_NAMES)})",
                    details={"file": str(path)},
                )
            replaced[path.stem] = path
    shipped = shipped_template_dir()
    templates: dict[str, Template] = {}
    for name in TEMPLATE_NAMES:
        if name in replaced:
            path = replaced[name]
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise TemplateError(
                    f"{path}: cannot read the template: {exc}", details={"file": str(path)}
                ) from None
            templates[name] = parse_template(name, text, str(path))
        else:
            resource = shipped.joinpath(f"{name}.md")
            source = f"notebook_bcc/planners/llm/templates/{name}.md"
            templates[name] = parse_template(name, resource.read_text(encoding="utf-8"), source)
    return PromptSet(templates)


# ---------------------------------------------------------------- values


@dataclass(frozen=True)
class AgentMessage:
    """A ``<communication>`` waiting for its addressee's next prompt."""

    to: str
    sender: str
    content: str
    behavior_id: str | None = None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=_JSON_INDENT, default=str)


def _compact(value: Any) -> str:
    """One-line JSON: the observation can be large, and indentation costs tokens."""
    return json.dumps(value, ensure_ascii=False, default=str)


def _state_block(observation: Mapping[str, Any]) -> dict[str, Any]:
    state = observation.get("state")
    if isinstance(state, dict):
        return state
    context = (observation.get("observation") or {}).get("context")
    return context if isinstance(context, dict) else {}


def _current_view(observation: Mapping[str, Any], level: str) -> str:
    location = (observation.get("observation") or {}).get("location") or {}
    current = ((location.get("progress") or {}).get(level) or {}).get("current")
    return "(none)" if current is None else _json(current)


_VALUE_CHARS = 300
"""Longest variable value shown on its line of ``{{variables}}`` (the observation has more)."""


def _value_text(view: Any) -> str:
    text = view if isinstance(view, str) else _compact(view)
    text = " ".join(text.split())
    return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS] + "…"


def _variables(request: PlannerRequest, observation: Mapping[str, Any]) -> str:
    shown = _state_block(observation).get("variables") or {}
    lines: list[str] = []
    for name, view in shown.items():
        if name == MORE_KEY:
            lines.append(f"- ({view})")
            continue
        info = request.snapshot.variables.get(name)
        if info is not None:
            kind = info.type
            if info.shape:
                kind += f", shape {tuple(info.shape)}"
        elif isinstance(view, dict) and isinstance(view.get("type"), str):
            kind = view["type"]
        else:
            kind = type(view).__name__
        lines.append(f"- {name} ({kind}) = {_value_text(view)}")
    return "\n".join(lines) if lines else "(none yet)"


_SPEC_FIELDS = (
    ("behaviors", "behavior", (("outputs", "outputs"), ("inputs", "inputs"))),
    (
        "steps",
        "step",
        (
            ("verified_artifacts", "verified_artifacts"),
            ("required_variables", "required_variables"),
        ),
    ),
    (
        "stages",
        "stage",
        (
            ("verified_artifacts", "verified_artifacts"),
            ("required_variables", "required_variables"),
        ),
    ),
)


def _artifacts(observation: Mapping[str, Any]) -> str:
    """Innermost level first: each current item's artifacts and inputs with descriptions."""
    location = (observation.get("observation") or {}).get("location") or {}
    progress = location.get("progress") or {}
    lines: list[str] = []
    for level, label, fields in _SPEC_FIELDS:
        current = (progress.get(level) or {}).get("current")
        if not isinstance(current, dict):
            continue
        item_id = current.get(f"{label}_id", "")
        for key, title in fields:
            entries = current.get(key)
            if not isinstance(entries, dict) or not entries:
                continue
            lines.append(f"{label} `{item_id}` {title}:")
            for name, text in entries.items():
                lines.append(f"- {name}: {text}" if text else f"- {name}")
    return "\n".join(lines) if lines else "(no artifacts specified)"


def _effects(observation: Mapping[str, Any]) -> str:
    effects = _state_block(observation).get("effects") or {}
    current = effects.get("current") or []
    history = effects.get("history") or []
    if not current:
        lines = ["effects.current is empty: no code of this behavior has run yet (first call)."]
    else:
        lines = ["effects.current (outputs of this behavior's code so far, oldest first):"]
        lines += [f"[{number}] {entry}" for number, entry in enumerate(current, start=1)]
    if history:
        lines.append(f"({len(history)} older effects in effects.history, see the observation)")
    return "\n".join(lines)


def _cell_text(cell: Mapping[str, Any]) -> list[str]:
    number = cell.get("index")
    head = f"[{number}] {cell.get('cell_type', 'code')}" if number else str(cell.get("cell_type"))
    lines = [f"--- {head}", str(cell.get("source", "")).rstrip("\n")]
    for output in cell.get("outputs") or []:
        text = output if isinstance(output, str) else _compact(output)
        lines.append(f"    -> {text.rstrip()}")
    return lines


def _notebook(observation: Mapping[str, Any]) -> str:
    notebook = _state_block(observation).get("notebook") or {}
    digest = notebook.get("digest")
    cells = notebook.get("cells")
    count = notebook.get("cell_count") or 0
    if not isinstance(digest, dict) and not cells:
        return f"{count} cells" if count else "(no cells yet)"
    digest = digest if isinstance(digest, dict) else {}
    title = notebook.get("title") or digest.get("title") or "(none)"
    lines = [f"title: {title}", f"cells: {max(count, digest.get('cell_count', 0))}"]
    omitted = notebook.get("cells_omitted") or 0
    if digest.get("headings"):
        lines.append("headings:")
        lines += [f"  {entry}" for entry in digest["headings"]]
    if not cells:
        if digest.get("code"):
            lines.append("code cells (first lines, latest):")
            lines += [f"  {entry}" for entry in digest["code"]]
        if digest.get("more"):
            lines.append(str(digest["more"]))
        return "\n".join(lines)
    if omitted:
        lines.append(f"({omitted} older cells not shown; the newest {len(cells)} follow in full)")
    else:
        lines.append("all cells, in order:")
    for cell in cells:
        if isinstance(cell, Mapping):
            lines += _cell_text(cell)
    return "\n".join(lines)


def _messages(messages: list[AgentMessage]) -> str:
    if not messages:
        return ""
    lines = ["", "Messages to you from other agents:"]
    for message in messages:
        where = f" (behavior {message.behavior_id})" if message.behavior_id else ""
        lines.append(f"- from {message.sender}{where}: {message.content}")
    return "\n".join(lines) + "\n"


def stage_progress(request: PlannerRequest) -> tuple[int, int]:
    """``(steps done, steps in all)`` of the current stage (the current step counts as done
    once it completed, at step_completed)."""
    steps = request.snapshot.location.progress.steps
    done = len(steps.completed)
    current = 1 if steps.current is not None else 0
    if request.snapshot.fsm.state is State.STEP_COMPLETED:
        done += current
    return done, len(steps.completed) + current + len(steps.remaining)


def progress_band(done: int, total: int, remaining: int) -> str:
    """``early`` up to 50 %, ``mid`` up to 80 %, ``late`` beyond or when no step remains."""
    if remaining == 0 or total == 0:
        return "late"
    share = done / total
    if share <= 0.5:
        return "early"
    return "mid" if share < 0.8 else "late"


def _suggested_behavior_id(request: PlannerRequest) -> str:
    snapshot = request.snapshot
    step = snapshot.location.current.step_id or "step"
    taken = {item.id for item in snapshot.location.progress.behaviors.completed}
    current: PlanItem | None = snapshot.location.progress.behaviors.current
    if current is not None:
        taken.add(current.id)
    number = len(snapshot.location.progress.behaviors.completed) + 1
    while f"{step}_b{number}" in taken:
        number += 1
    return f"{step}_b{number}"


def _location(request: PlannerRequest) -> str:
    snapshot = request.snapshot
    current = snapshot.location.current
    progress = snapshot.location.progress
    parts: list[str] = []
    for level, item_id, item in (
        ("stage", current.stage_id, progress.stages.current),
        ("step", current.step_id, progress.steps.current),
        ("behavior", current.behavior_id, progress.behaviors.current),
    ):
        if item_id:
            title = f" ({item.title})" if item is not None and item.title else ""
            parts.append(f"{level} `{item_id}`{title}")
    where = " > ".join(parts) if parts else "the start of the workflow"
    if current.behavior_id:
        where += f", iteration {current.behavior_iteration or 1}"
    return f"{where}; FSM state {snapshot.fsm.state.value.upper()}"


def prompt_values(
    request: PlannerRequest, agent_id: str, messages: list[AgentMessage] | None = None
) -> dict[str, str]:
    """Every placeholder's value for ``agent_id`` answering ``request``."""
    snapshot = request.snapshot
    observation = request.observation or build_observation(snapshot)
    current = snapshot.location.current
    done, total = stage_progress(request)
    remaining = [item.id for item in snapshot.location.progress.steps.remaining]
    share = f" ({round(100 * done / total)}%)" if total else ""
    files = "\n".join(f"- {path}" for path in snapshot.files) or "(none)"
    return {
        "agent": agent_id,
        "agent_title": BY_ID[agent_id].title,
        "problem": snapshot.problem or "(no problem statement given)",
        "files": files,
        "observation": _compact(observation),
        "location": _location(request),
        "fsm_state": snapshot.fsm.state.value.upper(),
        "stage_id": current.stage_id or "(none)",
        "step_id": current.step_id or "(none)",
        "behavior_id": current.behavior_id or "(none)",
        "iteration": str(current.behavior_iteration or 1),
        "suggested_behavior_id": _suggested_behavior_id(request),
        "current_stage": _current_view(observation, "stages"),
        "current_step": _current_view(observation, "steps"),
        "current_behavior": _current_view(observation, "behaviors"),
        "variables": _variables(request, observation),
        "notebook": _notebook(observation),
        "artifacts": _artifacts(observation),
        "effects": _effects(observation),
        "messages": _messages(messages or []),
        "feedback": "(none)"
        if request.behavior_feedback is None
        else _json(request.behavior_feedback),
        "stage_progress": f"{done}/{total} steps{share}",
        "progress_band": progress_band(done, total, len(remaining)),
        "remaining_steps": ", ".join(remaining) or "none (this was the last step)",
    }


__all__ = [
    "BANDS",
    "FEEDBACK",
    "PLACEHOLDERS",
    "TEMPLATE_NAMES",
    "AgentMessage",
    "PromptSet",
    "Template",
    "load_templates",
    "parse_template",
    "progress_band",
    "prompt_values",
    "stage_progress",
]
