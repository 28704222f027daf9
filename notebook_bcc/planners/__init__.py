"""Where decisions come from: one :class:`Planner` protocol, several implementations.

``blueprint`` (a YAML blueprint, D14) is built in; ``replay``, ``http`` and ``llm`` follow the
same protocol. Planners answer with wire payloads parsed by the protocol layer, so the engine
never knows which kind it talks to.
"""

from notebook_bcc.planners.base import (
    DecisionPoint,
    Planner,
    PlannerError,
    PlannerReply,
    PlannerRequest,
    StageRoute,
)

__all__ = [
    "DecisionPoint",
    "Planner",
    "PlannerError",
    "PlannerReply",
    "PlannerRequest",
    "StageRoute",
]
