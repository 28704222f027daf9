"""Declarative transitions (seed 004): rules, checks, resolution and hop accounting. Pure.

A rule machine is a set of named states (those with bodies, in file order), a start state,
end states (which need no body, seed 004 §13) and ordered rules ``from``/``on``/``to``/``when``.
After a state finishes with an outcome event (``success``, ``failure`` or ``pause``), the
*first* rule whose ``from`` is the state or ``"*"``, whose ``on`` is the event and whose
``when`` (if any) is true wins. An ``on: pause`` rule names the state to resume in.
With no matching rule, the run moves to the next state in file order and, when none is left,
ends (D14); :meth:`RuleMachine.next_in_file_order` gives that fallback.

Runtime-error policy (D13) — a deliberate departure from seed 004: the seed treats a ``when``
that fails at run time as "no match" and logs a warning. A silently skipped rule is exactly how
a run takes the wrong branch unnoticed, so the default here (``when_errors: strict``) raises
:class:`WhenEvaluationError` naming the rule, its line and the reason; ``when_errors: skip``
restores the seed's behaviour (the failure becomes a warning in the :class:`Resolution` and
the rule does not match).

Nothing here reads files or YAML: the blueprint loader builds a :class:`RuleMachine` and maps
the :class:`RuleIssue` records of :func:`check_machine` to line numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from notebook_bcc.errors import NotebookBccError, UnknownNameError
from notebook_bcc.fsm.expressions import (
    WhenEvaluationError,
    WhenExpression,
    WhenExpressionError,
    compile_when,
)
from notebook_bcc.models.base import WireModel

Outcome = Literal["success", "failure", "pause"]
"""The outcome events a rule can react to."""
OUTCOMES: tuple[str, ...] = ("success", "failure", "pause")
WILDCARD = "*"
"""``from: "*"`` matches every state."""
WhenErrors = Literal["strict", "skip"]
"""D13 runtime-error policy: ``strict`` raises, ``skip`` warns and treats the rule as no match."""
HOPS_PER_STATE = 10
"""Default hop cap = this x the number of states (seed 004 §10)."""


class TransitionRule(WireModel):
    """One ordered rule: in state ``from`` (or any, ``"*"``), on event ``on``, go to ``to``.

    ``when`` is an optional safe expression (:mod:`notebook_bcc.fsm.expressions`). A mapping
    whose ``on`` key was read as the boolean True (YAML 1.1 loaders read an unquoted ``on:``
    that way) is accepted as ``on``. The YAML line a rule came from, when known, is kept out of
    the wire form and read with :attr:`line`.
    """

    from_state: str = Field(alias="from", min_length=1, description='A state name or "*".')
    on: Outcome = Field(description="The outcome event: success, failure or pause.")
    to: str = Field(min_length=1, description="A state name or an end state.")
    when: str | None = Field(
        default=None, description="Optional safe expression over the D13 namespace."
    )
    _line: int | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _yaml11_on_key(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and True in data and "on" not in data:
            return {("on" if key is True else key): value for key, value in data.items()}
        return data

    @property
    def line(self) -> int | None:
        """The 1-based YAML line of this rule, when it was loaded from a file."""
        return self._line

    def at_line(self, line: int | None) -> TransitionRule:
        """A copy of this rule that remembers its YAML line."""
        copy = self.model_copy()
        copy._line = line
        return copy

    @property
    def label(self) -> str:
        """A short human form, e.g. ``evaluation --success--> tuning [rmse > 5]``."""
        text = f"{self.from_state} --{self.on}--> {self.to}"
        return f"{text} [{self.when}]" if self.when is not None else text

    def applies_to(self, state: str, event: str) -> bool:
        """Whether ``from`` and ``on`` match (the ``when`` is not considered)."""
        return self.on == event and self.from_state in (WILDCARD, state)

    def compiled_when(self) -> WhenExpression | None:
        """The checked ``when`` (cached by text), or None; raises a WhenExpressionError."""
        return None if self.when is None else compile_when(self.when)


class RuleMachine(WireModel):
    """A seed 004 state machine reduced to what rule resolution needs.

    ``states`` are the states with bodies, in file order; ``start_state`` defaults to the first;
    ``end_states`` may name states without bodies. Build it from a blueprint with the loader or
    directly; run :func:`check_machine` before trusting it.
    """

    name: str | None = None
    states: list[str] = Field(description="States with bodies, in file order.")
    start_state: str = Field(description="Where the machine starts; defaults to the first state.")
    end_states: list[str] = Field(default_factory=list)
    transitions: list[TransitionRule] = Field(default_factory=list)
    when_errors: WhenErrors = "strict"

    @model_validator(mode="before")
    @classmethod
    def _default_start(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("start_state") is None:
            states = data.get("states")
            if isinstance(states, (list, tuple)) and states:
                return {**data, "start_state": states[0]}
        return data

    @property
    def max_hops(self) -> int:
        """The default hop cap: 10 x the number of states (seed 004 §10, D14)."""
        return HOPS_PER_STATE * len(self.states)

    def is_end(self, state: str) -> bool:
        """Whether ``state`` is terminal (end states stay terminal whatever the rules say)."""
        return state in self.end_states

    def next_in_file_order(self, state: str) -> str | None:
        """D14 fallback when no rule matches: the next state in file order, None when none left."""
        if state not in self.states:
            return None
        position = self.states.index(state) + 1
        return self.states[position] if position < len(self.states) else None


# --------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class RuleIssue:
    """A problem found by :func:`check_machine`.

    ``rule_index`` (0-based) and ``field`` (``from``, ``on``, ``to``, ``when``) locate a rule
    problem; ``state`` locates a state problem; ``field`` alone (``start_state``,
    ``end_states``, ``states``) a top-level one. The loader turns these into line numbers.
    """

    severity: Literal["error", "warning"]
    message: str
    rule_index: int | None = None
    field: str | None = None
    state: str | None = None


def _rule_name(index: int, rule: TransitionRule) -> str:
    return f"transitions[{index}] ({rule.from_state} --{rule.on}--> {rule.to})"


def check_machine(
    machine: RuleMachine, *, rule_numbers: Sequence[int] | None = None
) -> list[RuleIssue]:
    """Every load-time problem of ``machine``: errors first, then warnings.

    Errors: no states, a duplicate or reserved state name, an unknown start state, an unknown
    ``from`` (``"*"`` or a state with a body) or ``to`` (a state or an end state), a ``when``
    that does not parse or leaves the allow-list. Warnings: rules that can never fire (shadowed
    by an earlier unconditional rule, or leaving an end state), states unreachable from the
    start, states with no path to an end.

    ``rule_numbers`` gives each rule's position in its source when some rules were left out
    before checking (messages and ``rule_index`` then use those positions).
    """
    numbers = list(range(len(machine.transitions))) if rule_numbers is None else list(rule_numbers)
    if len(numbers) != len(machine.transitions):
        raise ValueError("rule_numbers must have one entry per rule")
    errors = _structure_errors(machine) + _rule_errors(machine, numbers)
    warnings = _shadow_warnings(machine, numbers) + _graph_warnings(machine)
    return errors + warnings


def _structure_errors(machine: RuleMachine) -> list[RuleIssue]:
    issues: list[RuleIssue] = []
    if not machine.states:
        issues.append(RuleIssue("error", "the machine has no states", field="states"))
    seen: set[str] = set()
    for state in machine.states:
        if state in seen:
            issues.append(RuleIssue("error", f"duplicate state {state!r}", state=state))
        seen.add(state)
    for state in [*machine.states, *machine.end_states]:
        if state == WILDCARD:
            issues.append(
                RuleIssue(
                    "error", "'*' is reserved for `from` and is not a state name", state=state
                )
            )
    if machine.states and machine.start_state not in machine.states:
        why = (
            "is an end state without a body"
            if machine.start_state in machine.end_states
            else "is not a state"
        )
        issues.append(
            RuleIssue("error", f"start_state {machine.start_state!r} {why}", field="start_state")
        )
    return issues


def _rule_errors(machine: RuleMachine, numbers: list[int]) -> list[RuleIssue]:
    issues: list[RuleIssue] = []
    bodies = set(machine.states)
    targets = bodies | set(machine.end_states)
    known = ", ".join(sorted(targets)) or "none"
    for position, rule in enumerate(machine.transitions):
        index = numbers[position]
        name = _rule_name(index, rule)
        source = rule.from_state
        if source != WILDCARD and source not in bodies:
            why = (
                "is an end state without a body, so no rule can leave it"
                if source in machine.end_states
                else "is not a state"
            )
            issues.append(RuleIssue("error", f"{name}: from {source!r} {why}", index, field="from"))
        if rule.to not in targets:
            issues.append(
                RuleIssue(
                    "error",
                    f"{name}: to {rule.to!r} is not a state or end state; known: {known}",
                    index,
                    field="to",
                )
            )
        if rule.when is not None:
            try:
                compile_when(rule.when)
            except WhenExpressionError as exc:
                issues.append(RuleIssue("error", f"{name}: {exc.message}", index, field="when"))
    return issues


def _shadow_warnings(machine: RuleMachine, numbers: list[int]) -> list[RuleIssue]:
    issues: list[RuleIssue] = []
    rules = machine.transitions
    for later, rule in enumerate(rules):
        for earlier in range(later):
            first = rules[earlier]
            if (
                first.when is None
                and first.on == rule.on
                and first.from_state in (WILDCARD, rule.from_state)
            ):
                issues.append(
                    RuleIssue(
                        "warning",
                        f"{_rule_name(numbers[later], rule)} never fires: "
                        f"{_rule_name(numbers[earlier], first)} always matches first",
                        numbers[later],
                    )
                )
                break
        else:
            if rule.from_state in machine.states and machine.is_end(rule.from_state):
                issues.append(
                    RuleIssue(
                        "warning",
                        f"{_rule_name(numbers[later], rule)} never fires: {rule.from_state!r} is "
                        "an end state and stays terminal",
                        numbers[later],
                        field="from",
                    )
                )
    return issues


def successors(machine: RuleMachine, state: str) -> set[str | None]:
    """Where ``state`` may lead: rule targets and the D14 file-order fallback (None = the end).

    The fallback is counted unless both ``success`` and ``failure`` have an unconditional rule
    from the state, so the result over-approximates what a run can do (no false warnings).
    """
    if machine.is_end(state):
        return set()
    found: set[str | None] = set()
    unconditional: set[str] = set()
    for rule in machine.transitions:
        if rule.from_state in (WILDCARD, state):
            found.add(rule.to)
            if rule.when is None:
                unconditional.add(rule.on)
    if not {"success", "failure"} <= unconditional:
        found.add(machine.next_in_file_order(state))
    return found


def _graph_warnings(machine: RuleMachine) -> list[RuleIssue]:
    if machine.start_state not in machine.states:
        return []
    nodes = list(dict.fromkeys([*machine.states, *machine.end_states]))
    known = set(nodes)
    edges: dict[str, set[str]] = {}
    finishing: set[str] = set(machine.end_states)
    for node in nodes:
        leads_to = successors(machine, node)
        if None in leads_to:
            finishing.add(node)
        edges[node] = {target for target in leads_to if target is not None and target in known}
    reachable = _closure({machine.start_state}, lambda node: edges[node])
    issues = [
        RuleIssue(
            "warning", f"state {state!r} is unreachable from {machine.start_state!r}", state=state
        )
        for state in nodes
        if state not in reachable
    ]
    reverse: dict[str, set[str]] = {node: set() for node in nodes}
    for node, targets in edges.items():
        for target in targets:
            reverse[target].add(node)
    can_finish = _closure(finishing, lambda node: reverse[node])
    issues.extend(
        RuleIssue("warning", f"state {state!r} has no path to an end state", state=state)
        for state in machine.states
        if state not in can_finish
    )
    return issues


def _closure(seeds: set[str], step: Callable[[str], Iterable[str]]) -> set[str]:
    seen = set(seeds)
    frontier = list(seeds)
    while frontier:
        for target in step(frontier.pop()):
            if target not in seen:
                seen.add(target)
                frontier.append(target)
    return seen


# --------------------------------------------------------------------------- resolution


def when_namespace(
    *,
    event: str,
    variables: Mapping[str, Any] | None = None,
    acceptance: Mapping[str, Any] | None = None,
    effects: Mapping[str, Any] | None = None,
    stage_id: str | None = None,
    visits: int = 0,
    last_output: Any = None,
) -> dict[str, Any]:
    """The D13 namespace a ``when`` sees, from plain JSON parts.

    ``context.{variables, acceptance, effects, stage: {id, visits}}``, ``output: {event,
    last_output}`` and the shorthands ``variables``, ``acceptance``, ``effects``, ``stage``,
    ``event``. Values must already be plain JSON (the kernel probe's summaries, D13).
    """
    stage = {"id": stage_id, "visits": visits}
    context = {
        "variables": dict(variables or {}),
        "acceptance": dict(acceptance or {}),
        "effects": dict(effects or {}),
        "stage": stage,
    }
    return {
        "context": context,
        "output": {"event": event, "last_output": last_output},
        "variables": context["variables"],
        "acceptance": context["acceptance"],
        "effects": context["effects"],
        "stage": stage,
        "event": event,
    }


@dataclass(frozen=True)
class Resolution:
    """The outcome of :func:`resolve`: the winning rule (and its index) or none.

    ``warnings`` lists rules skipped because their ``when`` failed under ``when_errors: skip``.
    """

    state: str
    event: str
    rule: TransitionRule | None = None
    index: int | None = None
    warnings: tuple[str, ...] = ()

    @property
    def matched(self) -> bool:
        """Whether a rule matched."""
        return self.rule is not None

    @property
    def target(self) -> str | None:
        """The matched rule's ``to``, or None (the caller then applies the D14 fallback)."""
        return self.rule.to if self.rule is not None else None

    @property
    def resume_state(self) -> str | None:
        """For a ``pause``: the state to resume in (seed 004 pause re-entry), else None."""
        return self.target if self.event == "pause" else None


def resolve(
    machine: RuleMachine,
    state: str,
    event: str,
    namespace: Mapping[str, Any] | None = None,
) -> Resolution:
    """The first rule matching ``state`` and ``event`` whose ``when`` holds (first match wins).

    ``namespace`` is the D13 namespace (see :func:`when_namespace`); ``event`` and
    ``output.event`` are filled in when absent. A ``when`` that fails at run time raises
    :class:`WhenEvaluationError` naming the rule and its line, unless the machine says
    ``when_errors: skip`` (then the rule is skipped with a warning).
    """
    if event not in OUTCOMES:
        raise UnknownNameError("outcome event", event, list(OUTCOMES))
    scope = dict(namespace or {})
    scope.setdefault("event", event)
    scope.setdefault("output", {"event": event, "last_output": None})
    skipped: list[str] = []
    for index, rule in enumerate(machine.transitions):
        if not rule.applies_to(state, event):
            continue
        if rule.when is not None:
            try:
                expression = compile_when(rule.when)
            except WhenExpressionError as exc:
                raise type(exc)(
                    f"{_rule_name(index, rule)}: {exc.reason}",
                    expression=exc.expression,
                    node=exc.node,
                    column=exc.column,
                ) from None
            try:
                holds = expression.matches(scope)
            except WhenEvaluationError as exc:
                if machine.when_errors == "strict":
                    raise exc.for_rule(index, rule.line, rule.label) from None
                where = f" (line {rule.line})" if rule.line is not None else ""
                skipped.append(
                    f"{_rule_name(index, rule)}{where}: when {rule.when!r} failed: "
                    f"{exc.reason}; rule skipped (when_errors: skip)"
                )
                continue
            if not holds:
                continue
        return Resolution(state, event, rule, index, tuple(skipped))
    return Resolution(state, event, None, None, tuple(skipped))


# --------------------------------------------------------------------------- hops


class HopCapExceededError(NotebookBccError):
    """Entering another state would exceed the hop cap: the run fails (D1, D16), never succeeds."""

    code = "hop_cap_exceeded"

    def __init__(self, hops: int, cap: int) -> None:
        super().__init__(
            f"hop cap exceeded: {hops} state entries already made, the cap is {cap}",
            details={"hops": hops, "cap": cap},
        )
        self.hops = hops
        self.cap = cap


@dataclass(frozen=True)
class HopAllowed:
    """Entering another state is allowed; ``hop`` is this entry's 1-based number."""

    hop: int
    cap: int

    @property
    def remaining(self) -> int:
        """Entries still allowed after this one."""
        return self.cap - self.hop


@dataclass(frozen=True)
class HopCapExceeded:
    """Entering another state is not allowed: the cap is exhausted (an explicit failure)."""

    hops: int
    cap: int

    def error(self) -> HopCapExceededError:
        """The typed error for this outcome."""
        return HopCapExceededError(self.hops, self.cap)


def check_hop(hops_taken: int, cap: int) -> HopAllowed | HopCapExceeded:
    """Whether one more state entry fits under ``cap``, given ``hops_taken`` entries so far.

    A hop is a state entry (the start state's included, D14); the default cap is
    :attr:`RuleMachine.max_hops`.
    """
    if hops_taken < 0:
        raise ValueError(f"hops_taken must be >= 0, got {hops_taken}")
    if hops_taken >= cap:
        return HopCapExceeded(hops_taken, cap)
    return HopAllowed(hops_taken + 1, cap)


def enter_state(hops_taken: int, cap: int) -> int:
    """The hop count after one more entry; raises :class:`HopCapExceededError` at the cap."""
    outcome = check_hop(hops_taken, cap)
    if isinstance(outcome, HopCapExceeded):
        raise outcome.error()
    return outcome.hop
