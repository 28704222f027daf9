"""The workflow layer: the pure reducer — planner payloads applied to the snapshot, and the
snapshot projected for planners.


Pure functions, no I/O. Each apply takes the current :class:`WorkflowSnapshot` and a parsed
payload and returns :class:`Applied` — the next snapshot with its FSM events already fired
(history recorded), the events, records, warnings and parked decisions — or raises a typed
:class:`ApplyError` leaving the input untouched. Every payload is checked against the state it
arrives in (:data:`LEGAL_STATES`); D15 (iteration cap), D17 (decision precedence) and D18
(updates parked until approved) are applied here; a truncated payload is refused
(:class:`DamagedPayloadError`) and the parser's repairs are listed (:func:`repair_lines`).
:func:`build_observation` is the projection
planners receive (D21). :func:`load_state_document` reads our snapshot or a reference-client
state.
"""

from notebook_bcc.workflow.actions import apply_actions, complete_action
from notebook_bcc.workflow.damage import DamagedPayloadError, repair_lines
from notebook_bcc.workflow.digest import NotebookDigest, digest_cells
from notebook_bcc.workflow.dispatch import apply_payload, apply_text
from notebook_bcc.workflow.errors import (
    ApplyError,
    ContradictoryPayloadError,
    IllegalPayloadError,
    PendingNotFoundError,
    StateDocumentError,
)
from notebook_bcc.workflow.legal import LEGAL_STATES, legal_states
from notebook_bcc.workflow.metrics import compute_metrics
from notebook_bcc.workflow.navigate import navigate
from notebook_bcc.workflow.observation import (
    DEFAULT_BUDGET,
    ObservationBudget,
    build_observation,
    observation_size,
)
from notebook_bcc.workflow.observation_models import Observation
from notebook_bcc.workflow.planning import apply_planning, apply_signals
from notebook_bcc.workflow.plans import (
    apply_behavior,
    apply_stages,
    apply_steps,
    apply_workflow,
)
from notebook_bcc.workflow.reference import load_state_document, snapshot_from_reference
from notebook_bcc.workflow.reflect import apply_reflection, apply_stage_reflection
from notebook_bcc.workflow.result import (
    DEFAULT_EFFECTS_HISTORY_CAP,
    DEFAULT_MAX_ITERATIONS,
    Applied,
    ApplyOptions,
    PlanDiff,
)
from notebook_bcc.workflow.updates import approve_update, pending_updates, reject_update

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_EFFECTS_HISTORY_CAP",
    "DEFAULT_MAX_ITERATIONS",
    "LEGAL_STATES",
    "Applied",
    "ApplyError",
    "ApplyOptions",
    "ContradictoryPayloadError",
    "DamagedPayloadError",
    "IllegalPayloadError",
    "NotebookDigest",
    "Observation",
    "ObservationBudget",
    "PendingNotFoundError",
    "PlanDiff",
    "StateDocumentError",
    "apply_actions",
    "apply_behavior",
    "apply_payload",
    "apply_planning",
    "apply_reflection",
    "apply_signals",
    "apply_stage_reflection",
    "apply_stages",
    "apply_steps",
    "apply_text",
    "apply_workflow",
    "approve_update",
    "build_observation",
    "complete_action",
    "compute_metrics",
    "digest_cells",
    "legal_states",
    "load_state_document",
    "navigate",
    "observation_size",
    "pending_updates",
    "reject_update",
    "repair_lines",
    "snapshot_from_reference",
]
