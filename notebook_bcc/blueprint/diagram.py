"""Mermaid ``stateDiagram-v2`` of a rule machine or blueprint (for ``notebook-bcc diagram``).

Every rule is an edge labelled ``on`` (plus ``[when]`` when it has one); a ``"*"`` rule is drawn
from each state it can fire in. A rule that an earlier unconditional rule always beats in a
state is not drawn from that state. Where a state has no unconditional ``success`` rule, the
D14 fallback is drawn too: an edge labelled ``next`` to the next state in file order, or, for
the last state, an edge to the end.
"""

from __future__ import annotations

from notebook_bcc.blueprint.loader import LoadedBlueprint
from notebook_bcc.blueprint.models import Blueprint, StateMachineSpec
from notebook_bcc.fsm.mermaid import state_diagram
from notebook_bcc.fsm.rules import WILDCARD, RuleMachine

NEXT_LABEL = "next"
"""The label of the implicit file-order fallback edge."""


def rule_machine_edges(machine: RuleMachine) -> list[tuple[str, str, str]]:
    """``(source, label, target)`` for each live rule per state, then the ``next`` fallbacks."""
    edges: list[tuple[str, str, str]] = []
    for state in machine.states:
        if machine.is_end(state):
            continue
        settled: set[str] = set()
        for rule in machine.transitions:
            if rule.from_state not in (WILDCARD, state) or rule.on in settled:
                continue
            label = rule.on if rule.when is None else f"{rule.on} [{rule.when}]"
            edges.append((state, label, rule.to))
            if rule.when is None:
                settled.add(rule.on)
        following = machine.next_in_file_order(state)
        if "success" not in settled and following is not None:
            edges.append((state, NEXT_LABEL, following))
    return edges


def _falls_off_the_end(machine: RuleMachine) -> list[str]:
    last = machine.states[-1] if machine.states else None
    if last is None or machine.is_end(last):
        return []
    unconditional = any(
        rule.from_state in (WILDCARD, last) and rule.on == "success" and rule.when is None
        for rule in machine.transitions
    )
    return [] if unconditional else [last]


def rule_machine_mermaid(machine: RuleMachine, current: str | None = None) -> str:
    """The Mermaid diagram of ``machine``; ``current`` (a state name) is highlighted."""
    names = list(dict.fromkeys([*machine.states, *machine.end_states]))
    ends = list(dict.fromkeys([*machine.end_states, *_falls_off_the_end(machine)]))
    return state_diagram(
        names,
        rule_machine_edges(machine),
        start=machine.start_state if machine.states else None,
        ends=ends,
        current=current,
    )


def blueprint_mermaid(
    blueprint_or_machine: Blueprint | StateMachineSpec | RuleMachine | LoadedBlueprint,
    current: str | None = None,
) -> str:
    """The Mermaid diagram of a blueprint, a bare seed 004 machine, a loaded file or a machine."""
    source = blueprint_or_machine
    if isinstance(source, LoadedBlueprint):
        machine = source.machine
    elif isinstance(source, RuleMachine):
        machine = source
    else:
        machine = source.rule_machine()
    return rule_machine_mermaid(machine, current)
