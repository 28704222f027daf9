"""Blueprint models (D14): seed 004's state machine whose states are DSLC stages.

Two document shapes are accepted:

- :class:`Blueprint` — the D14 form: stages with steps, behaviors and actions that the
  blueprint planner runs;
- :class:`StateMachineSpec` — the bare seed 004 machine, whose state bodies are ``{steps:
  [...]}`` with opaque steps (or empty), checked for its rules only.

Both reduce to a :class:`~notebook_bcc.fsm.rules.RuleMachine`. Unknown keys are errors
(``WireModel`` forbids extras), so a typo is caught at ``validate`` time, not mid-run.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints, field_validator, model_validator

from notebook_bcc.blueprint.parameters import ParameterSpec, check_name
from notebook_bcc.fsm.rules import RuleMachine, TransitionRule, WhenErrors
from notebook_bcc.models.base import WireModel

ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"
"""Stage, step and behavior ids: they become parts of cell ids (D10), so no '/' or spaces."""
MAX_ITERATIONS_LIMIT = 100
"""The largest ``max_iterations`` a behavior may ask for."""

Identifier = Annotated[str, StringConstraints(pattern=ID_PATTERN, min_length=1, max_length=128)]


def _as_list(value: Any) -> Any:
    """A single string where a list of strings is expected becomes a one-item list."""
    if isinstance(value, str):
        return [value]
    return [] if value is None else value


def duplicate_ids(items: list[Any]) -> list[str]:
    """The ``id`` values that occur more than once among ``items`` (mappings or models)."""
    seen: set[str] = set()
    repeated: list[str] = []
    for item in items:
        value = item.get("id") if isinstance(item, dict) else getattr(item, "id", None)
        if not isinstance(value, str):
            continue
        if value in seen and value not in repeated:
            repeated.append(value)
        seen.add(value)
    return repeated


def duplicate_steps_message(repeated: list[str]) -> str:
    """The error for steps of one stage sharing an id."""
    return f"duplicate step id(s) in the stage: {', '.join(repeated)}"


def duplicate_behaviors_message(step_id: Any, repeated: list[str]) -> str:
    """The error for behaviors of one step sharing an id."""
    return f"duplicate behavior id(s) in step {step_id!r}: {', '.join(repeated)}"


class ActionSpec(WireModel):
    """One action of a behavior: exactly one of ``markdown`` or ``code`` (a cell to add/run).

    ``irreversible: true`` (D8) marks code with side effects: it runs at most once per
    idempotency key and, with ``confirm_irreversible``, only after a human approves (D9).
    """

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["markdown"]}, {"required": ["code"]}]}
    )

    markdown: str | None = Field(default=None, description="A markdown cell's text.")
    code: str | None = Field(default=None, description="Python code for a cell to execute.")
    irreversible: bool = Field(default=False, description="Code with side effects (D8).")

    @model_validator(mode="after")
    def _one_kind(self) -> ActionSpec:
        if self.markdown is not None and self.code is not None:
            raise ValueError("an action has either `markdown` or `code`, not both")
        if self.markdown is None and self.code is None:
            raise ValueError("an action needs `markdown` or `code`")
        if self.code is not None and not self.code.strip():
            raise ValueError("`code` is empty")
        if self.irreversible and self.code is None:
            raise ValueError("`irreversible` applies to code actions only")
        return self


class BehaviorSpec(WireModel):
    """A behavior (seed 000): an agent's task, its acceptance criteria and its actions.

    It is retried up to ``max_iterations`` times while its acceptance fails (D15).
    """

    id: Identifier
    agent: str | None = None
    task: str | None = None
    acceptance: list[str] = Field(
        default_factory=list, description="Python expressions evaluated in the kernel."
    )
    max_iterations: int = Field(default=3, ge=1, le=MAX_ITERATIONS_LIMIT, strict=True)
    required_variables: list[str] = Field(default_factory=list)
    actions: list[ActionSpec] = Field(default_factory=list)

    _lists = field_validator("acceptance", "required_variables", mode="before")(_as_list)


class StepSpec(WireModel):
    """A step of a stage: a goal reached by one or more behaviors."""

    id: Identifier
    title: str | None = None
    goal: str | None = None
    required_variables: list[str] = Field(default_factory=list)
    behaviors: list[BehaviorSpec] = Field(default_factory=list)

    _lists = field_validator("required_variables", mode="before")(_as_list)

    @model_validator(mode="after")
    def _unique_behaviors(self) -> StepSpec:
        repeated = duplicate_ids(self.behaviors)
        if repeated:
            raise ValueError(duplicate_behaviors_message(self.id, repeated))
        return self


class StageSpec(WireModel):
    """A stage (a state of the machine): goal, artifacts, acceptance, steps.

    Outcome (D14): ``success`` when its steps completed and its acceptance passes, ``failure``
    otherwise; ``confirm`` (true or a message) raises a ``pause`` after its steps for a human
    ``stage_confirmation`` decision.
    """

    title: str | None = None
    goal: str | None = None
    verified_artifacts: list[str] = Field(default_factory=list)
    required_variables: list[str] = Field(default_factory=list)
    acceptance: list[str] = Field(default_factory=list)
    confirm: bool | str = Field(
        default=False, description="Ask a human after the steps (true, or the question to ask)."
    )
    steps: list[StepSpec] = Field(default_factory=list)

    _lists = field_validator(
        "verified_artifacts", "required_variables", "acceptance", mode="before"
    )(_as_list)

    @field_validator("confirm", mode="before")
    @classmethod
    def _confirm_kind(cls, value: Any) -> Any:
        if value is None:
            return False
        if not isinstance(value, (bool, str)):
            raise ValueError(f"`confirm` is true/false or a message, got {type(value).__name__}")
        return value

    @model_validator(mode="after")
    def _unique_steps(self) -> StageSpec:
        repeated = duplicate_ids(self.steps)
        if repeated:
            raise ValueError(duplicate_steps_message(repeated))
        return self


def _empty_bodies(value: Any) -> Any:
    """``stage:`` with no body (YAML null) is an empty body."""
    if isinstance(value, dict):
        return {key: ({} if body is None else body) for key, body in value.items()}
    return value


class _MachineFields(WireModel):
    """Fields shared by both document shapes."""

    kind: Literal["StateMachine"] = "StateMachine"
    name: str | None = Field(
        default=None, max_length=10_000, description="Shown as the problem when none is given."
    )
    start_state: str | None = Field(default=None, description="Defaults to the first state.")
    end_states: list[str] = Field(
        default_factory=list, description="Terminal states; they need no body (seed 004 §13)."
    )
    when_errors: WhenErrors = Field(
        default="strict",
        description="A `when` failing at run time: strict = the run fails (D13); skip = no match.",
    )
    transitions: list[TransitionRule] = Field(default_factory=list)

    _end_list = field_validator("end_states", mode="before")(_as_list)


class Blueprint(_MachineFields):
    """A D14 blueprint: stages as states, seed 004 transitions between them.

    With no matching rule a stage is followed by the next one in file order; after the last,
    the workflow completes. ``files`` are input files, relative to the blueprint's folder.
    """

    files: list[str] = Field(default_factory=list, description="Input files for the kernel.")
    parameters: dict[str, ParameterSpec] | None = Field(
        default=None,
        description="Run parameters (-p NAME VALUE) the blueprint takes, with types and "
        "defaults; absent = any parameter is taken.",
    )
    states: dict[Identifier, StageSpec] = Field(min_length=1)

    _bodies = field_validator("states", mode="before")(_empty_bodies)
    _files = field_validator("files", mode="before")(_as_list)

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameter_bodies(cls, value: Any) -> Any:
        """``name:`` with no body is a parameter of any type, required."""
        if isinstance(value, dict):
            for name in value:
                check_name(str(name))
            return {key: ({} if body is None else body) for key, body in value.items()}
        return value

    def rule_machine(self) -> RuleMachine:
        """The rule machine of this blueprint (stages in file order)."""
        return _machine(self, list(self.states))

    @property
    def step_count(self) -> int:
        """Steps across all stages."""
        return sum(len(stage.steps) for stage in self.states.values())

    @property
    def behavior_count(self) -> int:
        """Behaviors across all steps."""
        return sum(len(step.behaviors) for stage in self.states.values() for step in stage.steps)


class SeedStateBody(WireModel):
    """A bare seed 004 state body: ``{steps: [...]}``; the steps are not interpreted."""

    steps: list[Any] = Field(default_factory=list)


class StateMachineSpec(_MachineFields):
    """The bare seed 004 machine: states with ``{steps: [...]}`` bodies or none."""

    states: dict[str, SeedStateBody] = Field(min_length=1)

    _bodies = field_validator("states", mode="before")(_empty_bodies)

    def rule_machine(self) -> RuleMachine:
        """The rule machine of this definition (states in file order)."""
        return _machine(self, list(self.states))


def _machine(spec: _MachineFields, states: list[str]) -> RuleMachine:
    return RuleMachine(
        name=spec.name,
        states=states,
        start_state=spec.start_state or (states[0] if states else ""),
        end_states=list(spec.end_states),
        transitions=list(spec.transitions),
        when_errors=spec.when_errors,
    )
