"""Irreversible code that already ran in this run is not run again (D7), nor added again.

The idempotency rule itself is pure (:mod:`notebook_bcc.fsm.idempotency`); this is where the
action executor asks the store for the contracts with an action's key and, on a refusal,
completes the action with a WARN effect and a ``skip:`` trace record instead of running it.
When the refused ``exec`` runs the cell its ``add`` creates (the way planners send code), the
``add`` is not applied either: a retried behavior or a loop revisit would otherwise leave one
more unexecuted copy of the irreversible cell in the notebook each time.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from notebook_bcc.engine.irreversible import is_irreversible
from notebook_bcc.fsm.idempotency import IdempotencyVerdict, check_idempotency, idempotency_key
from notebook_bcc.kernel.cell_ids import ActionPath
from notebook_bcc.models.actions import AddAction, ExecAction
from notebook_bcc.models.contract import ExecutionContract
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.workflow import Applied, complete_action, navigate

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineHost


def code_key(source: str) -> str:
    """The idempotency key of running ``source`` (D7): what defines the side effect only."""
    return idempotency_key({"type": "code", "code": source})


class Skips:
    """The idempotency half of :class:`~notebook_bcc.engine.actions.ActionExecutor`."""

    engine: EngineHost

    if TYPE_CHECKING:

        def path(
            self, index: int, *, suffix: str = "", snapshot: WorkflowSnapshot | None = None
        ) -> ActionPath: ...

        async def _finish(
            self,
            applied: Applied,
            snapshot: WorkflowSnapshot,
            *,
            records: list[HistoryEntry | TraceRecord],
            contracts: list[ExecutionContract],
            kinds: frozenset[str],
            chain: bool = False,
            ahead: Any = None,
        ) -> Any: ...

    async def _verdict(self, key: str) -> IdempotencyVerdict:
        """What D7 says about running code with ``key`` now, from the stored contracts."""
        snap = self.engine.snapshot
        existing = await self.engine.store.call(
            lambda s: s.contracts(snap.workflow_id, idempotency_key=key)
        )
        return check_idempotency(
            key, workflow_id=snap.workflow_id, run_id=snap.run_id, existing=existing
        )

    @staticmethod
    def _skip_record(path: ActionPath, effect: str, key: str, now: float) -> TraceRecord:
        return TraceRecord(
            actor="engine",
            action=f"skip:{path.key}",
            timestamp=now,
            metadata={"idempotency_key": key, "reason": effect},
        )

    async def _skip(self, path: ActionPath, effect: str, key: str) -> None:
        """Complete the ``exec`` at ``path`` without running it."""
        applied = complete_action(
            self.engine.snapshot, effects=[effect], options=self.engine.client_options()
        )
        await self._finish(
            applied,
            applied.snapshot,
            records=[self._skip_record(path, effect, key, time.time())],
            contracts=[],
            kinds=frozenset({"action"}),
        )

    async def _refused_add(
        self, action: AddAction, following: ExecAction
    ) -> tuple[str, str] | None:
        """``(effect, key)`` when the code ``action`` adds is irreversible and the ``exec``
        ``following`` it would be refused as already run in this run, else None."""
        irreversible, _ = is_irreversible(
            action.content,
            flagged=bool(action.irreversible or following.irreversible),
            patterns=self.engine.options.irreversible_patterns,
        )
        if not irreversible:
            return None
        key = code_key(action.content)
        verdict = await self._verdict(key)
        if verdict.outcome != "refuse":
            return None
        return f"WARN: {verdict.reason}; its cell was not added again", key

    async def _skip_add_and_exec(self, path: ActionPath, effect: str, key: str) -> None:
        """Complete the ``add`` at ``path`` and the ``exec`` after it, applying neither, in
        one commit (see :meth:`_refused_add`)."""
        options = self.engine.client_options()
        added = complete_action(self.engine.snapshot, options=options)
        moved = navigate(added.snapshot, options=options)
        exec_path = self.path(moved.snapshot.action_queue.index, snapshot=moved.snapshot)
        skipped = complete_action(moved.snapshot, effects=[effect], options=options)
        now = time.time()
        await self._finish(
            skipped,
            skipped.snapshot,
            records=[
                *added.records,
                *moved.records,
                self._skip_record(path, effect, key, now),
                self._skip_record(exec_path, effect, key, now),
            ],
            contracts=[],
            kinds=frozenset({"action"}),
        )
