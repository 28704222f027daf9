"""Debounced notebook saves take turns across the server's workflows, and lose nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from time import monotonic

import pytest

from notebook_bcc.server.app import NotebookBccApp
from notebook_bcc.server.save_pacing import SavePacer
from tests.server.conftest import Api, read_notebook


def test_the_gap_keeps_saves_to_their_share_and_is_capped() -> None:
    pacer = SavePacer(0.25, max_gap=2.0)
    assert pacer.gap_after(0.1) == pytest.approx(0.3)
    assert pacer.gap_after(10.0) == 2.0
    assert pacer.gap_after(-1.0) == 0.0
    assert SavePacer(1.0).gap_after(5.0) == 0.0
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="share"):
            SavePacer(bad)


async def test_turns_never_overlap_and_the_next_waits_for_its_gap() -> None:
    pacer = SavePacer(0.5, max_gap=1.0)
    log: list[tuple[str, str, float]] = []
    release = asyncio.Event()

    async def save(name: str) -> None:
        async with pacer.turn():
            log.append((name, "in", monotonic()))
            if name == "a":
                await release.wait()
            log.append((name, "out", monotonic()))

    first = asyncio.ensure_future(save("a"))
    second = asyncio.ensure_future(save("b"))
    while not log:
        await asyncio.sleep(0)
    release.set()
    await asyncio.gather(first, second)
    assert [(n, what) for n, what, _ in log] == [
        ("a", "in"),
        ("a", "out"),
        ("b", "in"),
        ("b", "out"),
    ]
    a_in, a_out, b_in = log[0][2], log[1][2], log[2][2]
    owed = pacer.gap_after(a_out - a_in)
    assert b_in - a_out >= owed - 0.005, "b started before the gap a's save owed"
    assert pacer.turns == 2


async def test_a_closed_pacer_lets_every_save_go_at_once() -> None:
    pacer = SavePacer(0.01, max_gap=60.0)
    async with pacer.turn():
        await asyncio.sleep(0.01)  # owes a long gap
    waiting = asyncio.ensure_future(_one_turn(pacer))
    await asyncio.sleep(0)
    assert not waiting.done(), "the next save waits for its gap"
    pacer.close()
    await asyncio.wait_for(_one_turn(pacer), timeout=5)  # a new save: at once
    waiting.cancel()


async def _one_turn(pacer: SavePacer) -> None:
    async with pacer.turn():
        pass


async def test_many_workflows_save_every_cell_in_turns(
    api: Api, root: Path, bcc_app: NotebookBccApp
) -> None:
    started = [await api.start(f"pace/n{i}.ipynb", "blueprints/quick.yaml") for i in range(3)]
    finals = [await api.wait_status(s["workflow_id"], "completed", "failed") for s in started]
    assert {f["run"]["status"] for f in finals} == {"completed"}
    pacer = bcc_app.service.save_pacer
    if pacer.turns < 1:
        # runs quicker than the debounce leave every cell to their final (unpaced) write: ask
        # each for a debounced save, the kind a long run makes at every behavior boundary
        for final in finals:
            live = bcc_app.service.live(final["workflow_id"])
            assert live is not None
            writer = live.engine.runtime.writer
            writer.metadata_changed(writer.document.nb.metadata)
            writer.flush_soon()
    deadline = monotonic() + 30
    while pacer.turns < 1 and monotonic() < deadline:  # the debounced saves of the runs
        await asyncio.sleep(0.05)
    assert pacer.turns >= 1, "debounced saves went through the pacer"
    for i, final in enumerate(finals):
        await api.ok("DELETE", "workflows", final["workflow_id"])  # writes what is left
        cells = read_notebook(root / "pace" / f"n{i}.ipynb")["cells"]
        sources = [
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells
        ]
        assert sources[0].startswith("# notebook-bcc inputs"), sources
        assert sources[1:] == ["## Quick", "answer = 40 + 2"]
