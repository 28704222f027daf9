"""Before code is taken from the store and run again, the store is verified.

A kernel rebuild replays the stored sources of completed cells, and a ``lost_state`` approval
re-runs an irreversible cell's stored code. Both read rows a process outside the store could
have edited since they were written (the notebook still shows the original), so both verify
the whole file first, as ``notebook-bcc resume`` and a restarted server do: a store altered
behind its back fails the run, naming the row, and nothing of it runs.
"""

from __future__ import annotations

from notebook_bcc.engine.host import EngineHost, StepEnded
from notebook_bcc.store.errors import ChainBrokenError


async def ensure_unaltered(engine: EngineHost, doing: str) -> None:
    """Return when the store verifies; else fail the run (saying what was not done, e.g.
    "the kernel is not rebuilt from it") and raise :class:`StepEnded`."""
    try:
        await engine.store.call(lambda s: s.verification())
    except ChainBrokenError as exc:
        await engine.fail_run(
            f"the state database was altered after it was written, so {doing}: {exc.message} "
            "(`notebook-bcc trace --verify` checks it)"
        )
        raise StepEnded(exc.message) from exc


__all__ = ["ensure_unaltered"]
