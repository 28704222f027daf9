"""Load a blueprint (D14) or a bare seed 004 state machine from YAML, with line numbers.

Loading = YAML syntax -> structure (pydantic models) -> rule checks
(:func:`notebook_bcc.fsm.rules.check_machine`). Every problem found is collected and raised
together in one :class:`BlueprintError`, each with the line it is on. Accepted top levels: a
mapping, or seed 004's one-item list ``- kind: StateMachine ...``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from notebook_bcc.blueprint.code_check import code_issues
from notebook_bcc.blueprint.issues import BlueprintError, Issue, sort_issues
from notebook_bcc.blueprint.models import (
    Blueprint,
    StateMachineSpec,
    duplicate_behaviors_message,
    duplicate_ids,
    duplicate_steps_message,
)
from notebook_bcc.blueprint.yaml_source import YamlDocument, parse_yaml
from notebook_bcc.fsm.rules import RuleIssue, RuleMachine, TransitionRule, check_machine

MAX_FILE_BYTES = 2_000_000
"""Largest blueprint file read."""

_STEP_KEYS = frozenset({"id", "title", "goal", "behaviors", "required_variables"})


@dataclass(frozen=True)
class LoadedBlueprint:
    """A loaded, checked document: the model, its rule machine, warnings and the line map."""

    filename: str
    document: Blueprint | StateMachineSpec
    machine: RuleMachine
    warnings: tuple[Issue, ...]
    source: YamlDocument
    path: Path | None = None

    @property
    def kind(self) -> Literal["blueprint", "state machine"]:
        """``blueprint`` for the D14 form, ``state machine`` for a bare seed 004 machine."""
        return "blueprint" if isinstance(self.document, Blueprint) else "state machine"

    @property
    def blueprint(self) -> Blueprint:
        """The D14 blueprint; a bare state machine has no runnable stages and is refused."""
        if not isinstance(self.document, Blueprint):
            raise BlueprintError(
                self.filename,
                [Issue(None, "this is a bare seed 004 state machine, not a runnable blueprint")],
            )
        return self.document

    def resolved_files(self) -> list[Path]:
        """The blueprint's ``files``, resolved relative to its folder (D14)."""
        if not isinstance(self.document, Blueprint):
            return []
        base = self.path.parent if self.path is not None else Path.cwd()
        return [(base / name).resolve() for name in self.document.files]


def load_blueprint_file(path: str | os.PathLike[str]) -> LoadedBlueprint:
    """Read and load ``path``; an unreadable file is a :class:`BlueprintError` too."""
    filename = os.fspath(path)
    text = read_blueprint_text(path)
    loaded = load_blueprint_text(text, filename)
    return LoadedBlueprint(
        loaded.filename,
        loaded.document,
        loaded.machine,
        loaded.warnings,
        loaded.source,
        Path(filename).resolve(),
    )


def read_blueprint_text(path: str | os.PathLike[str]) -> str:
    """The UTF-8 text of ``path``, or a one-issue :class:`BlueprintError` saying why not."""
    filename = os.fspath(path)
    try:
        size = os.stat(filename).st_size
        if size > MAX_FILE_BYTES:
            raise BlueprintError(
                filename, [Issue(None, f"file is larger than {MAX_FILE_BYTES} bytes")]
            )
        raw = Path(filename).read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise BlueprintError(filename, [Issue(None, f"cannot read the file: {reason}")]) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise BlueprintError(filename, [Issue(line, "the file is not UTF-8 text")]) from None


def load_blueprint_text(text: str, filename: str = "<string>") -> LoadedBlueprint:
    """Load YAML ``text``; raises :class:`BlueprintError` carrying every error with its line."""
    source = parse_yaml(text, filename)
    data, top = _top_mapping(source, filename)
    model: type[Blueprint] | type[StateMachineSpec] = (
        Blueprint if looks_like_blueprint(data) else StateMachineSpec
    )
    errors: list[Issue] = []
    warnings = list(source.warnings)
    document: Blueprint | StateMachineSpec | None = None
    try:
        document = model.model_validate(data)
    except ValidationError as exc:
        errors.extend(_pydantic_issue(error, source, top) for error in exc.errors())
    if isinstance(document, Blueprint):
        errors.extend(code_issues(document, source, top, text))
    machine: RuleMachine | None
    if document is not None:
        machine, numbers = document.rule_machine(), list(range(len(document.transitions)))
    else:
        errors.extend(_duplicate_id_issues(data, source, top))
        machine, numbers = _partial_machine(data)
    if machine is not None:
        for found in check_machine(machine, rule_numbers=numbers):
            if found.severity == "error":
                errors.append(_rule_issue(found, machine, source, top))
            elif document is not None:
                warnings.append(_rule_issue(found, machine, source, top))
    if errors or document is None or machine is None:
        raise BlueprintError(filename, errors, warnings)
    lined = [
        rule.at_line(source.line_of((*top, "transitions", index)))
        for index, rule in enumerate(document.transitions)
    ]
    document = document.model_copy(update={"transitions": lined})
    return LoadedBlueprint(
        filename, document, document.rule_machine(), tuple(sort_issues(warnings)), source
    )


def looks_like_blueprint(data: dict[str, Any]) -> bool:
    """Whether ``data`` is the D14 form rather than a bare seed 004 machine.

    Bare means: every state body is empty or only ``{steps: [...]}``, at least one step exists,
    and no step is a D14 step (a mapping with ``id``, ``title``, ``goal``, ``behaviors`` or
    ``required_variables``). Anything else is checked as a blueprint.
    """
    states = data.get("states")
    if "files" in data or not isinstance(states, dict):
        return True
    any_steps = False
    for body in states.values():
        if body is None:
            continue
        if not isinstance(body, dict) or set(body) - {"steps"}:
            return True
        steps = body.get("steps")
        if steps is None:
            continue
        if not isinstance(steps, list):
            return True
        for step in steps:
            any_steps = True
            if isinstance(step, dict) and _STEP_KEYS & set(step):
                return True
    return not any_steps


def _top_mapping(source: YamlDocument, filename: str) -> tuple[dict[str, Any], tuple[int, ...]]:
    data = source.data
    top: tuple[int, ...] = ()
    if isinstance(data, list):
        if len(data) != 1 or not isinstance(data[0], dict):
            raise BlueprintError(
                filename,
                [
                    Issue(
                        source.line_of(()),
                        f"the top level is a list of {len(data)} item(s); expected one state "
                        "machine mapping (or a single-item list holding one)",
                    )
                ],
            )
        data, top = data[0], (0,)
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise BlueprintError(
            filename,
            [Issue(source.line_of(()), f"the top level is {kind}; expected a mapping")],
        )
    return data, top


def _partial_machine(data: dict[str, Any]) -> tuple[RuleMachine | None, list[int]]:
    """A rule machine from structurally broken data, so rule errors are reported too."""
    states = data.get("states")
    names = [name for name in states if isinstance(name, str)] if isinstance(states, dict) else []
    if not names:
        return None, []
    ends = data.get("end_states")
    ends = [ends] if isinstance(ends, str) else ends
    end_states = [e for e in ends if isinstance(e, str)] if isinstance(ends, list) else []
    start = data.get("start_state")
    rules: list[TransitionRule] = []
    origin: list[int] = []
    raw_rules = data.get("transitions")
    for index, item in enumerate(raw_rules if isinstance(raw_rules, list) else []):
        try:
            rules.append(TransitionRule.model_validate(item))
        except ValidationError:
            continue  # its structural errors are already reported
        origin.append(index)
    machine = RuleMachine(
        states=names,
        start_state=start if isinstance(start, str) else names[0],
        end_states=end_states,
        transitions=rules,
    )
    return machine, origin


def _duplicate_id_issues(
    data: dict[str, Any], source: YamlDocument, top: tuple[int, ...]
) -> list[Issue]:
    """Duplicate step / behavior ids found in raw data.

    The models check this too, but pydantic skips a model's own check when one of its fields
    failed; this pass reports duplicates anyway, with the same locations and messages (so the
    two never show twice).
    """
    issues: list[Issue] = []
    states = data.get("states")
    for stage_id, stage in states.items() if isinstance(states, dict) else ():
        steps = stage.get("steps") if isinstance(stage, dict) else None
        if not isinstance(steps, list):
            continue
        loc: tuple[Any, ...] = ("states", stage_id)
        repeated = duplicate_ids(steps)
        if repeated:
            message = duplicate_steps_message(repeated)
            issues.append(Issue(source.line_of((*top, *loc)), f"{_format_loc(loc)}: {message}"))
        for index, step in enumerate(steps):
            behaviors = step.get("behaviors") if isinstance(step, dict) else None
            repeated = duplicate_ids(behaviors) if isinstance(behaviors, list) else []
            if repeated:
                step_loc = (*loc, "steps", index)
                message = duplicate_behaviors_message(step.get("id"), repeated)
                issues.append(
                    Issue(source.line_of((*top, *step_loc)), f"{_format_loc(step_loc)}: {message}")
                )
    return issues


def _rule_issue(
    found: RuleIssue,
    machine: RuleMachine,
    source: YamlDocument,
    top: tuple[int, ...],
) -> Issue:
    loc: tuple[Any, ...]
    if found.rule_index is not None:
        loc = ("transitions", found.rule_index)
        if found.field is not None:
            loc = (*loc, found.field)
    elif found.state is not None:
        if found.state in machine.states:
            loc = ("states", found.state)
        elif found.state in machine.end_states:
            loc = ("end_states", machine.end_states.index(found.state))
        else:
            loc = ("states",)
    else:
        loc = (found.field,) if found.field is not None else ()
    return Issue(source.line_of((*top, *loc)), found.message)


def _format_loc(loc: Sequence[Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "the top level"


def _pydantic_issue(error: ErrorDetails, source: YamlDocument, top: tuple[int, ...]) -> Issue:
    loc = tuple(error["loc"])
    kind = error["type"]
    message = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "missing" and loc:
        text = f"{_format_loc(loc[:-1])}: missing required key {loc[-1]!r}"
        line = source.line_of((*top, *loc[:-1]))
    elif kind == "extra_forbidden" and loc:
        text = f"{_format_loc(loc[:-1])}: unknown key {loc[-1]!r}"
        line = source.line_of((*top, *loc))
    elif loc and loc[-1] == "[key]":
        text = f"{_format_loc(loc[:-2])}: name {loc[-2]!r}: {message}"
        line = source.line_of((*top, *loc[:-1]))
    else:
        got = ""
        if kind not in ("value_error", "assertion_error") and "input" in error:
            shown = repr(error["input"])
            got = f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
        text = f"{_format_loc(loc)}: {message}{got}"
        line = source.line_of((*top, *loc))
    return Issue(line, text)
