"""Seed 000's six agents: their ids, the decision point each answers and the XML it writes.

The id is what a request's system message names on its first line
(``# notebook-bcc agent: <id>``), what prompt templates are called (``<id>.md``) and what a
scripted conversation's reply files are named after (``NNN-<id>.txt``). ``<communication
to=...>`` addressees are matched to an id leniently (:func:`agent_for_address`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from notebook_bcc.planners.base import DecisionPoint

AGENT_LINE_PREFIX = "# notebook-bcc agent: "
"""The first line of every request's system message, followed by the agent id."""


@dataclass(frozen=True)
class Agent:
    """One seed 000 agent: its id, title, decision point and accepted XML roots."""

    id: str
    title: str
    point: DecisionPoint
    roots: tuple[str, ...]


AGENTS: tuple[Agent, ...] = (
    Agent("stage-planner", "Stage-Planner", "plan_stages", ("stages", "workflow")),
    Agent("step-planner", "Step-Planner", "plan_steps", ("steps",)),
    Agent("behavior-arrangement", "Behavior Arrangement", "plan_behavior", ("behavior",)),
    Agent("action-generator", "Action-Generator", "generate_actions", ("actions",)),
    Agent("behavior-reflection", "Behavior Reflection", "reflect_behavior", ("reflection",)),
    Agent("stage-reflection", "Stage Reflection", "reflect_stage", ("stage_reflection",)),
)

AGENT_IDS: tuple[str, ...] = tuple(agent.id for agent in AGENTS)
BY_ID: dict[str, Agent] = {agent.id: agent for agent in AGENTS}
BY_POINT: dict[str, Agent] = {agent.point: agent for agent in AGENTS}

ANY_AGENT = "*"
"""Outbox key of messages whose addressee names no known agent: the next agent asked reads them."""

_ALIASES: dict[str, str] = {
    "stages-planner": "stage-planner",
    "steps-planner": "step-planner",
    "behavior-planner": "behavior-arrangement",
    "behavior-arranger": "behavior-arrangement",
    "arrangement": "behavior-arrangement",
    "action-generation": "action-generator",
    "actions-generator": "action-generator",
    "generator": "action-generator",
    "code-generator": "action-generator",
    "behavior-reflector": "behavior-reflection",
    "reflection": "behavior-reflection",
    "reflector": "behavior-reflection",
    "step-reflection": "behavior-reflection",
    "stage-reflector": "stage-reflection",
}


_COMPACT: dict[str, str] = {
    name.replace("-", ""): target for name, target in [*((a, a) for a in BY_ID), *_ALIASES.items()]
}
"""Ids and aliases without hyphens (``StageReflection``, ``actiongenerator``)."""


def agent_line(agent_id: str) -> str:
    """The first line of the system message for ``agent_id``."""
    return AGENT_LINE_PREFIX + agent_id


def agent_of_line(line: str) -> str | None:
    """The agent id a system message's first line names, or None when it is not that line."""
    if not line.startswith(AGENT_LINE_PREFIX):
        return None
    name = line[len(AGENT_LINE_PREFIX) :].strip()
    return name if name in BY_ID else None


def agent_for_address(address: str | None) -> str:
    """The agent id a ``<communication to=...>`` names, or :data:`ANY_AGENT`.

    Case, spaces, hyphens, underscores, a leading "the", a trailing "agent" and the British
    "behaviour" do not matter: ``Behaviour_Reflection Agent`` and ``StageReflection`` name
    ``behavior-reflection`` and ``stage-reflection``.
    """
    if not address:
        return ANY_AGENT
    word = re.sub(r"[\s_]+", "-", address.strip().lower())
    word = re.sub(r"-+", "-", word.replace("behaviour", "behavior")).strip("-")
    word = word.removeprefix("the-").removesuffix("-agent").removesuffix("agent").strip("-")
    if word in BY_ID:
        return word
    if word in _ALIASES:
        return _ALIASES[word]
    return _COMPACT.get(word.replace("-", ""), ANY_AGENT)


__all__ = [
    "AGENTS",
    "AGENT_IDS",
    "AGENT_LINE_PREFIX",
    "ANY_AGENT",
    "BY_ID",
    "BY_POINT",
    "Agent",
    "agent_for_address",
    "agent_line",
    "agent_of_line",
]
