"""Planner budgets (``--max-tokens N`` / ``--max-planner-calls N``): stop before the call that
would pass a cap, as ``waiting`` on a ``budget`` decision (D2).

Checked before every planner call (``Engine.ask``): a call is not started when it would be
call number ``max_planner_calls + 1``, nor once the tokens used (prompt + completion, as the
planner reported them) reached ``max_tokens`` -- a call's size is only known after it, so the
token cap stops the first call that would start at or past it. The FSM does not move: the run
waits where it was and asks the same decision again once allowed.

Answers: **approve** raises each cap by the amount first granted, counted from what is
already used (``--max-planner-calls 10`` approved twice allows 30 calls; a token cap the last
call overshot restarts from the tokens used) and the run continues; **reject** fails the run
(``failed``, "planner budget exhausted"); a later ``resume`` asks again. ``--auto-confirm``
never approves a budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from notebook_bcc.engine.routing import drop_pending, with_run
from notebook_bcc.models.snapshot import Budget, PendingDecision, WorkflowSnapshot
from notebook_bcc.store.sqlite import EventDraft

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineHost


def budget_for(max_tokens: int | None, max_planner_calls: int | None) -> Budget:
    """A run's budget from the two caps (each approval adds the same amounts again)."""
    return Budget(
        max_tokens=max_tokens,
        max_planner_calls=max_planner_calls,
        tokens_step=max_tokens,
        calls_step=max_planner_calls,
    )


def over_budget(snapshot: WorkflowSnapshot) -> dict[str, Any] | None:
    """What the next planner call would pass (``{limit, cap, used}``), or None."""
    budget, usage = snapshot.budget, snapshot.usage
    if budget.max_planner_calls is not None and usage.calls + 1 > budget.max_planner_calls:
        return {"limit": "max_planner_calls", "cap": budget.max_planner_calls, "used": usage.calls}
    tokens = usage.prompt_tokens + usage.completion_tokens
    if budget.max_tokens is not None and tokens >= budget.max_tokens:
        return {"limit": "max_tokens", "cap": budget.max_tokens, "used": tokens}
    return None


def _event(pending: PendingDecision, what: str, actor: str) -> EventDraft:
    return EventDraft(
        "decision",
        event=what,
        actor=actor,
        detail={"id": pending.id, "kind": pending.kind, "message": pending.message},
    )


async def stop_for_budget(engine: EngineHost, point: str) -> bool:
    """Park the run on a ``budget`` decision when the next call would pass a cap (True)."""
    found = over_budget(engine.snapshot)
    if found is None:
        return False
    noun = "planner calls" if found["limit"] == "max_planner_calls" else "tokens"
    message = (
        f"planner budget reached: {found['used']} {noun} used of {found['cap']} "
        f"(--{found['limit'].replace('_', '-')}); approve to allow as many again before {point}"
    )
    snap, decision = engine.new_decision("budget", message, {**found, "point": point})
    await engine.commit(
        with_run(snap, "waiting", message),
        events=[_event(decision, "created", "engine")],
        kinds=frozenset({"decision"}),
    )
    return True


async def answer_budget(
    engine: EngineHost,
    pending: PendingDecision,
    decision: Literal["approve", "reject"],
    actor: str,
) -> None:
    """Approve: raise the caps by their steps and run on; reject: the run fails."""
    snap = drop_pending(engine.snapshot, pending.id)
    if decision == "approve":
        budget, usage = snap.budget, snap.usage
        tokens = usage.prompt_tokens + usage.completion_tokens
        raised = budget.model_copy(
            update={
                "max_tokens": _raise(budget.max_tokens, budget.tokens_step, tokens),
                "max_planner_calls": _raise(
                    budget.max_planner_calls, budget.calls_step, usage.calls
                ),
            }
        )
        after = with_run(snap.model_copy(update={"budget": raised}), "running", None)
    else:
        after = with_run(snap, "failed", f"planner budget exhausted ({pending.message})")
    await engine.commit(
        after,
        events=[_event(pending, decision, actor)],
        kinds=frozenset({"decision"}),
    )


def _raise(cap: int | None, step: int | None, used: int) -> int | None:
    """The cap after an approval: what is used (a call may pass a token cap) plus a step."""
    if cap is None:
        return None
    return max(cap, used) + (step or cap)
