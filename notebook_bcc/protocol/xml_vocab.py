"""The element names each planner XML root uses (seed 000 T1-T6 and the reference payloads).

The repair tokenizer needs them: a ``<`` that opens one of these names is markup, any other
``<`` is text unless it opens a well-formed, closed element. Elements listed in
:data:`RAW_TEXT_ELEMENTS` hold code or prose whose text is read verbatim up to the closing tag.
"""

from __future__ import annotations

XML_KINDS: tuple[str, ...] = (
    "stages",
    "workflow",
    "steps",
    "behavior",
    "actions",
    "reflection",
    "stage_reflection",
)
"""Payload kinds whose wire form is an XML document; each is also its root element's name."""

RAW_TEXT_ELEMENTS: frozenset[str] = frozenset(
    {
        "add-code2run",
        "add-text",
        "update-project-title",
        "update-section-title",
        "update-step-title",
        "communication",
        "criterion",
    }
)
"""Elements whose content is text to the letter (code, markdown, expressions)."""

TEXT_ONLY_ELEMENTS: frozenset[str] = frozenset(
    {
        "title",
        "description",
        "goal",
        "goals",
        "focus",
        "agent",
        "task",
        "effects",
        "predictability",
        "computability",
        "stability",
        "next_state",
        "next_focus",
        "next_step_id",
        "reasoning",
        "goal_status",
        "needs_update",
        "current_goal",
        "proposed_goal",
        "update_reasoning",
    }
)
"""Elements that hold prose only: a known element opening inside one left open is its sibling
(the repair closes the prose element there instead of swallowing the sibling)."""

_VARIABLES = {"variable", "artifact", "var", "item", "required_artifact"}
_PCS = {"pcs_considerations", "predictability", "computability", "stability"}
_PLAN = {
    "stage",
    "step",
    "title",
    "description",
    "goal",
    "goals",
    "focus",
    "verified_artifacts",
    "required_variables",
    "acceptance",
    "criterion",
    "remaining",
    "completed",
    "current",
    *_VARIABLES,
    *_PCS,
}
_BEHAVIOR = {
    "behavior",
    "agent",
    "task",
    "inputs",
    "effects",
    "outputs",
    "acceptance",
    "criterion",
    "whathappened",
    "overview",
    "background",
    *_VARIABLES,
}
_ACTIONS = {
    "actions",
    "update-project-title",
    "update-section-title",
    "update-step-title",
    "add-text",
    "add-section",
    "add-code2run",
    "communication",
    "section",
}
_DECISION = {"decision", "next_state", "next_focus", "next_step_id", "reasoning"}
_CONTEXT = {
    "context_for_next",
    "variables_produced",
    "whathappened",
    "recommendations_for_next",
    "outputs_tracking_update",
    "outputs_update",
    "produced",
    "in_progress",
    "remaining",
    "expected",
    "stage_level",
    "step_level",
    "new_variable",
    "if_continuing_stage",
    "if_continuing_behavior",
    "if_moving_forward",
    *_VARIABLES,
}
_REFLECTION = {
    "reflection",
    "evaluation",
    "artifacts_produced",
    "acceptance_validation",
    "criterion",
    "execution_quality",
    "goal_achievement",
    "status",
    *_DECISION,
    *_CONTEXT,
}
_STAGE_REFLECTION = {
    "stage_reflection",
    "step_evaluation",
    "stage_assessment",
    "progress",
    "stage_progress",
    "stage_artifacts_status",
    "goal_status",
    "stage_goal_achievement",
    "stage_goal_review",
    "needs_update",
    "current_goal",
    "proposed_goal",
    "update_reasoning",
    "stage_experience",
    "experience_summary",
    "stage_experience_variable",
    "variable_management",
    "variables_extracted_from_notebook",
    "extracted_from_notebook",
    "extracted",
    "variables_to_retain",
    "retain",
    "variables_to_deprecate",
    "deprecate",
    "variables_required_for_next",
    "gaps",
    "variable_gap_analysis",
    "pcs_check",
    "pcs_alignment_check",
    "status",
    *_PCS,
    *_DECISION,
    *_CONTEXT,
}

VOCABULARY: dict[str, frozenset[str]] = {
    "stages": frozenset({"stages", *_PLAN}),
    "workflow": frozenset({"workflow", "stages", *_PLAN, "steps"}),
    "steps": frozenset({"steps", *_PLAN}),
    "behavior": frozenset(_BEHAVIOR),
    "actions": frozenset(_ACTIONS),
    "reflection": frozenset(_REFLECTION),
    "stage_reflection": frozenset(_STAGE_REFLECTION),
}
"""Known element names per root."""
