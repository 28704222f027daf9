"""The snapshot stored in parts (store/parts.py): the full view survives any sequence of
changes, and a commit writes what changed, not what the run accumulated (issue 23)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from notebook_bcc.models import WorkflowSnapshot, new_snapshot
from notebook_bcc.models.actions import AddAction
from notebook_bcc.models.names import Event, State
from notebook_bcc.models.records import HistoryEntry
from notebook_bcc.models.snapshot import AcceptanceResult, PlanItem, UsageTotals
from notebook_bcc.store import Commit, SqliteStore


def _item(n: int) -> PlanItem:
    return PlanItem(id=f"s{n:04d}", title=f"stage {n:04d}", goal="g" * 40, acceptance=["x == 1"])


def _with_progress(
    snap: WorkflowSnapshot, completed: list[PlanItem], remaining: list[PlanItem]
) -> WorkflowSnapshot:
    stages = snap.location.progress.stages.model_copy(
        update={"completed": completed, "remaining": remaining}
    )
    progress = snap.location.progress.model_copy(update={"stages": stages})
    location = snap.location.model_copy(update={"progress": progress})
    return snap.model_copy(update={"location": location})


def _entry(n: int) -> HistoryEntry:
    return HistoryEntry.model_validate(
        {
            "from": State.ACTION_RUNNING.value,
            "event": Event.COMPLETE_ACTION.value,
            "to": State.ACTION_COMPLETED.value,
            "timestamp": f"t{n}",
            "actor": "client",
        }
    )


def _step(snap: WorkflowSnapshot, op: str, n: int) -> WorkflowSnapshot:
    """One change of the kind a run makes (append, drop from the front, replace, new keys)."""
    stages = snap.location.progress.stages
    if op == "complete" and stages.remaining:
        return _with_progress(snap, [*stages.completed, stages.remaining[0]], stages.remaining[1:])
    if op == "plan":
        return _with_progress(snap, list(stages.completed), [_item(100 + n + i) for i in range(3)])
    if op == "rewrite" and stages.completed:
        changed = stages.completed[-1].model_copy(update={"whathappened": f"w{n}"})
        return _with_progress(snap, [*stages.completed[:-1], changed], list(stages.remaining))
    if op == "history":
        history = [*snap.fsm.history, _entry(n)][-5:]
        return snap.model_copy(update={"fsm": snap.fsm.model_copy(update={"history": history})})
    if op == "accept":
        acceptance = {
            **snap.acceptance,
            f"b{n % 4}": {"x == 1": AcceptanceResult(status="passed" if n % 2 else "failed")},
        }
        return snap.model_copy(update={"acceptance": acceptance})
    if op == "usage":
        per_stage = {**snap.usage.per_stage, f"s{n % 3}": UsageTotals(calls=n)}
        usage = snap.usage.model_copy(update={"per_stage": per_stage, "calls": n})
        return snap.model_copy(update={"usage": usage})
    if op == "forget":
        usage = snap.usage.model_copy(
            update={"per_stage": dict(list(snap.usage.per_stage.items())[1:])}
        )
        visits = {f"s{n % 5}": n, **snap.stage_machine.visits}
        machine = snap.stage_machine.model_copy(update={"visits": visits})
        return snap.model_copy(update={"usage": usage, "stage_machine": machine})
    if op == "queue":
        actions = [AddAction(content=f"x = {n + i}") for i in range(n % 4)]
        queue = snap.action_queue.model_copy(update={"actions": actions, "index": 0})
        return snap.model_copy(update={"action_queue": queue})
    if op == "effect":
        current = [*snap.effects.current, f"cell {n} printed " + "x" * (n % 7)]
        effects = snap.effects.model_copy(update={"current": current})
        return snap.model_copy(update={"effects": effects})
    if op == "archive":  # the next behavior starts: current moves to a capped history
        history = [*snap.effects.history, *snap.effects.current][-4:]
        effects = snap.effects.model_copy(update={"current": [], "history": history})
        return snap.model_copy(update={"effects": effects})
    if op == "advance":
        queue = snap.action_queue.model_copy(update={"index": snap.action_queue.index + 1})
        return snap.model_copy(update={"action_queue": queue})
    return snap.model_copy(update={"problem": f"problem {n}"})


OPS = st.sampled_from(
    [
        "complete",
        "plan",
        "rewrite",
        "history",
        "accept",
        "usage",
        "forget",
        "problem",
        "queue",
        "advance",
        "effect",
        "archive",
    ]
)


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(OPS, max_size=25))
def test_the_full_view_survives_any_sequence_of_changes(
    tmp_path_factory: pytest.TempPathFactory, ops: list[str]
) -> None:
    path = tmp_path_factory.mktemp("parts") / "state.sqlite"
    store = SqliteStore(path)
    try:
        snap = store.create(
            _with_progress(
                new_snapshot("wf", "r", notebook_path="n.ipynb"), [], [_item(i) for i in range(4)]
            )
        )
        for n, op in enumerate(ops):
            snap = store.commit(Commit(_step(snap, op, n), snap.version)).snapshot
            assert store.load("wf") == snap
    finally:
        store.close()
    fresh = SqliteStore(path)  # no layout in memory: rebuilt from the rows
    try:
        assert fresh.load("wf") == snap
        after = fresh.commit(Commit(_step(snap, "complete", 99), snap.version)).snapshot
        assert fresh.load("wf") == after
    finally:
        fresh.close()


def test_a_commit_writes_what_changed_not_what_accumulated(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.sqlite")
    try:
        snap = store.create(new_snapshot("wf", "r", notebook_path="n.ipynb", problem="p"))
        written: dict[int, int] = {}
        for n in range(400):
            stages = snap.location.progress.stages
            grown = _with_progress(snap, [*stages.completed, _item(n)], [])
            snap = store.commit(Commit(grown, snap.version)).snapshot
            written[n] = store.last_write.bytes
        assert written[399] == written[10]
        assert store.last_write.rows == 1
        stored = sqlite3.connect(tmp_path / "state.sqlite")
        try:
            parts_bytes = stored.execute(
                "SELECT SUM(LENGTH(body)) FROM snapshot_parts WHERE workflow_id = 'wf'"
            ).fetchone()[0]
        finally:
            stored.close()
        assert parts_bytes < len(new_snapshot("wf", "r").model_dump_json()) * 2
        assert len(store.load("wf").location.progress.stages.completed) == 400
    finally:
        store.close()


def test_a_behavior_of_many_printing_cells_writes_each_cells_effects_once(
    tmp_path: Path,
) -> None:
    """The running behavior's effects grow by a cell's outputs (up to 4,000 characters) at
    every code action; kept inside the ``effects`` part they were all written again at every
    commit (a 300-cell behavior: a 900 KB part per commit, an 80 MB write-ahead log)."""
    store = SqliteStore(tmp_path / "state.sqlite")
    try:
        snap = store.create(new_snapshot("wf", "r", notebook_path="n.ipynb", problem="p"))
        written: dict[int, int] = {}
        for n in range(300):
            current = [*snap.effects.current, f"{n:04d}" + "x" * 3000]
            grown = snap.model_copy(
                update={"effects": snap.effects.model_copy(update={"current": current})}
            )
            snap = store.commit(Commit(grown, snap.version)).snapshot
            written[n] = store.last_write.bytes
        assert written[299] == written[10]
        assert written[299] < 3100  # the new cell's effect, not the behavior's
        assert store.load("wf").effects.current == snap.effects.current
    finally:
        store.close()


def test_a_snapshot_stored_before_the_parts_loads_and_converts(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    store = SqliteStore(path)
    snap = store.create(
        _with_progress(new_snapshot("wf", "r", notebook_path="n.ipynb"), [_item(1)], [_item(2)])
    )
    store.close()
    raw = sqlite3.connect(path)
    raw.execute("UPDATE workflows SET snapshot = ?", (snap.model_dump_json(by_alias=True),))
    raw.execute("DELETE FROM snapshot_parts")
    raw.execute("DELETE FROM snapshot_items")
    raw.commit()
    raw.close()
    store = SqliteStore(path)
    try:
        assert store.load("wf") == snap
        after = store.commit(Commit(_step(snap, "complete", 1), snap.version)).snapshot
        assert store.load("wf") == after
        assert [i.id for i in after.location.progress.stages.completed] == ["s0001", "s0002"]
    finally:
        store.close()


def test_a_moved_notebook_is_rekeyed_in_the_parts(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.sqlite")
    try:
        snap = store.create(
            _with_progress(new_snapshot("wf", "r", notebook_path="a/n.ipynb"), [_item(1)], [])
        )
        snap = store.commit(Commit(_step(snap, "history", 1), snap.version)).snapshot
        assert store.move_notebook("a", "b") == ["wf"]
        moved = store.load("wf")
        assert moved.notebook_path == "b/n.ipynb"
        assert moved.version == snap.version
        assert moved.model_copy(update={"notebook_path": "a/n.ipynb"}) == snap
        assert store.workflow_ids(notebook_path="b/n.ipynb") == ["wf"]
        after = store.commit(Commit(_step(moved, "complete", 2), moved.version)).snapshot
        assert store.load("wf") == after
    finally:
        store.close()


def _queued(snap: WorkflowSnapshot, count: int) -> WorkflowSnapshot:
    actions = [AddAction(content=f"x = {i}" + " " * 200) for i in range(count)]
    queue = snap.action_queue.model_copy(update={"actions": actions, "index": 0})
    return snap.model_copy(update={"action_queue": queue})


def test_moving_the_queue_cursor_writes_no_queued_action(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.sqlite")
    try:
        snap = store.create(new_snapshot("wf", "r", notebook_path="n.ipynb"))
        snap = store.commit(Commit(_queued(snap, 10), snap.version)).snapshot
        assert store.last_write.rows == 10  # its ten actions (the rest of the queue is as it was)
        for _ in range(5):
            snap = store.commit(Commit(_step(snap, "advance", 0), snap.version)).snapshot
            assert store.last_write.rows == 1
            assert store.last_write.bytes < 300
        assert store.load("wf") == snap
        assert len(store.load("wf").action_queue.actions) == 10
    finally:
        store.close()


def _effects(snap: WorkflowSnapshot, count: int) -> WorkflowSnapshot:
    for n in range(count):
        snap = _step(snap, "effect", n)
    return snap


Made = Callable[[WorkflowSnapshot, int], WorkflowSnapshot]


@pytest.mark.parametrize(
    "case",
    [
        ("action_queue", "action_queue.actions", _queued, "advance", "x = 0"),
        ("effects", "effects.current", _effects, "effect", "printed"),
    ],
)
def test_items_stored_inside_their_part_are_kept_and_moved_to_rows(
    tmp_path: Path, case: tuple[str, str, Made, str, str]
) -> None:
    """A database written while the queued actions, or the running behavior's effects, lived
    in their part itself (before they were split out as rows): ``case`` is the part, its
    items' path, how the snapshot gets 3 of them, the change committed after, and a text of
    an item that must no longer be in the part."""
    part, items, before, change, needle = case
    path = tmp_path / "state.sqlite"
    store = SqliteStore(path)
    snap = store.create(before(new_snapshot("wf", "r", notebook_path="n.ipynb"), 3))
    store.close()
    raw = sqlite3.connect(path)
    raw.execute(
        "UPDATE snapshot_parts SET body = ? WHERE part = ?",
        (snap.model_dump_json(by_alias=True, include={part}), part),
    )
    raw.execute("DELETE FROM snapshot_items WHERE path = ?", (items,))
    raw.commit()
    raw.close()
    for n in range(2):  # the first commit moves the items to rows, the second finds them
        store = SqliteStore(path)
        try:
            assert store.load("wf") == snap
            snap = store.commit(Commit(_step(snap, change, 10 + n), snap.version)).snapshot
            assert store.load("wf") == snap
        finally:
            store.close()
    expected = len(snap.action_queue.actions if part == "action_queue" else snap.effects.current)
    raw = sqlite3.connect(path)
    try:
        rows = raw.execute(
            "SELECT COUNT(*) FROM snapshot_items WHERE path = ?", (items,)
        ).fetchone()[0]
        body = raw.execute("SELECT body FROM snapshot_parts WHERE part = ?", (part,)).fetchone()
    finally:
        raw.close()
    assert rows == expected >= 3
    assert needle not in body[0]
