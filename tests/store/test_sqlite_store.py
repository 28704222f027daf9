"""The SQLite store on real database files: CAS, D7 index, upserts, hash chains, locks."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from notebook_bcc.fsm.contract import create_contract, fire
from notebook_bcc.fsm.workflow import transition
from notebook_bcc.models import ExecutionContract, ExecutionStatus, WorkflowSnapshot, new_snapshot
from notebook_bcc.models.cell_sources import SOURCES_KEPT
from notebook_bcc.store import (
    AsyncStore,
    CellRow,
    ChainBrokenError,
    Commit,
    EventDraft,
    IdempotencyViolationError,
    NotAStateDatabaseError,
    NotebookBusyError,
    SqliteStore,
    StoreUnavailableError,
    UnknownWorkflowError,
    VersionConflictError,
)
from notebook_bcc.store.crash import CrashPlan
from notebook_bcc.store.schema import SCHEMA_VERSION


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    s = SqliteStore(tmp_path / "state.sqlite")
    yield s  # type: ignore[misc]
    s.close()


def fresh(
    store: SqliteStore, wf: str = "wf-1", notebook: str | None = "nb.ipynb"
) -> WorkflowSnapshot:
    return store.create(new_snapshot(wf, "run-1", notebook_path=notebook))


def irreversible(
    execution_id: str, status: str, run_id: str = "run-1", key: str = "k1"
) -> ExecutionContract:
    contract, _ = create_contract(
        execution_id,
        "cell_execution",
        {"code": "export()"},
        irreversible=True,
        idempotency_key=key,
        workflow_id="wf-1",
        run_id=run_id,
    )
    return contract.model_copy(update={"status": ExecutionStatus(status)})


def test_create_load_round_trip_and_pragmas(store: SqliteStore) -> None:
    snap = fresh(store)
    assert store.load("wf-1") == snap
    assert store.schema_version == SCHEMA_VERSION
    mode = store._db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    with pytest.raises(UnknownWorkflowError, match="no workflow 'nope'"):
        store.load("nope")


def test_commit_bumps_version_and_appends_rows(store: SqliteStore) -> None:
    snap = fresh(store)
    moved, history = transition(snap, "START_WORKFLOW", at="2026-01-01T00:00:00Z")
    result = store.commit(
        Commit(
            snapshot=moved,
            expected_version=0,
            history=history,
            events=[EventDraft("transition", "idle", "START_WORKFLOW", "stage_running")],
        )
    )
    assert result.snapshot.version == 1
    assert store.load("wf-1").version == 1
    assert store.load("wf-1").fsm.state.value == "stage_running"
    assert [h.event.value for h in store.history("wf-1")] == ["START_WORKFLOW"]
    (event,) = result.events
    assert (event.seq, event.version, event.kind, event.to) == (1, 1, "transition", "stage_running")
    assert store.events("wf-1") == [event]
    assert store.events("wf-1", after_seq=1) == []


def test_recent_events_are_the_newest_after_a_seq_oldest_first(store: SqliteStore) -> None:
    snap = fresh(store)
    notes = [f"note-{n}" for n in range(5)]
    result = store.commit(
        Commit(
            snapshot=snap,
            expected_version=0,
            events=[EventDraft("run", event=note) for note in notes],
        )
    )
    assert [e.event for e in result.events] == notes
    events, more = store.recent_events("wf-1", limit=2)
    assert ([e.event for e in events], more) == (["note-3", "note-4"], True)
    events, more = store.recent_events("wf-1", after_seq=result.events[2].seq, limit=5)
    assert ([e.event for e in events], more) == (["note-3", "note-4"], False)
    events, more = store.recent_events("wf-1", after_seq=result.events[-1].seq, limit=5)
    assert (events, more) == ([], False)
    with pytest.raises(UnknownWorkflowError):
        store.recent_events("nope", limit=5)


def test_stale_version_conflicts_and_changes_nothing(store: SqliteStore) -> None:
    snap = fresh(store)
    moved, history = transition(snap, "START_WORKFLOW")
    store.commit(Commit(snapshot=moved, expected_version=0, history=history))
    again, more = transition(snap, "START_WORKFLOW")
    with pytest.raises(VersionConflictError) as info:
        store.commit(
            Commit(
                snapshot=again,
                expected_version=0,
                history=more,
                cells=[CellRow("c1", 0, {"cell_type": "markdown", "source": "x"})],
            )
        )
    assert info.value.current.version == 1
    assert info.value.details["snapshot"]["version"] == 1
    assert len(store.history("wf-1")) == 1
    assert store.cells("wf-1") == []


def test_a_cell_row_remembers_the_latest_sources_the_workflow_gave_it(store: SqliteStore) -> None:
    snap = fresh(store)
    version = 0

    def give(*sources: str) -> list[str]:
        nonlocal version
        for source in sources:
            cell = {"cell_type": "markdown", "source": source}
            store.commit(
                Commit(snapshot=snap, expected_version=version, cells=[CellRow("m", 0, cell)])
            )
            version += 1
        return store._db.execute("SELECT sources FROM cells").fetchone()[0].split(",")

    def digest(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    assert give("first", "second", "second") == [digest("first"), digest("second")]
    merges = [f"merge {n}" for n in range(SOURCES_KEPT - 1)]
    assert give(*merges) == [digest(t) for t in ["second", *merges]]  # oldest first, 8 kept
    (row,) = store.cells("wf-1")
    assert row.sources == frozenset(digest(t) for t in ["second", *merges])


def test_one_active_workflow_per_notebook(store: SqliteStore) -> None:
    snap = fresh(store)
    with pytest.raises(NotebookBusyError, match=r"nb\.ipynb"):
        store.create(new_snapshot("wf-2", "run-1", notebook_path="nb.ipynb"))
    done = snap.model_copy(update={"run": snap.run.model_copy(update={"status": "completed"})})
    store.commit(Commit(snapshot=done, expected_version=0))
    store.create(new_snapshot("wf-2", "run-1", notebook_path="nb.ipynb"))
    assert store.workflow_ids(notebook_path="nb.ipynb", active=True) == ["wf-2"]
    assert store.workflow_ids() == ["wf-1", "wf-2"]


def test_partial_unique_index_is_d7(store: SqliteStore) -> None:
    snap = fresh(store)
    store.commit(
        Commit(snapshot=snap, expected_version=0, contracts=[irreversible("a", "RUNNING")])
    )
    with pytest.raises(IdempotencyViolationError):
        store.commit(
            Commit(
                snapshot=snap,
                expected_version=1,
                contracts=[irreversible("b", "RUNNING")],
                cells=[CellRow("c", 0, {"cell_type": "code", "source": "export()"})],
            )
        )
    assert store.load("wf-1").version == 1
    assert store.cells("wf-1") == []
    # the first one failing frees the key within the run
    store.commit(Commit(snapshot=snap, expected_version=1, contracts=[irreversible("a", "FAILED")]))
    store.commit(
        Commit(snapshot=snap, expected_version=2, contracts=[irreversible("b", "COMPLETED")])
    )
    # another run, another key, a confirmation contract and a reversible one are all free
    confirm, _ = create_contract(
        "c", "confirmation", {"key": "k1"}, idempotency_key="k1", workflow_id="wf-1", run_id="run-1"
    )
    store.commit(
        Commit(
            snapshot=snap,
            expected_version=3,
            contracts=[
                irreversible("d", "RUNNING", run_id="run-2"),
                irreversible("e", "RUNNING", key="k2"),
                confirm.model_copy(update={"status": ExecutionStatus.WAITING}),
            ],
        )
    )
    statuses = {c.execution_id: c.status.value for c in store.contracts("wf-1")}
    assert statuses == {
        "a": "FAILED",
        "b": "COMPLETED",
        "c": "WAITING",
        "d": "RUNNING",
        "e": "RUNNING",
    }
    assert [c.execution_id for c in store.contracts("wf-1", run_id="run-2")] == ["d"]
    assert [
        c.execution_id for c in store.contracts("wf-1", statuses=[ExecutionStatus.COMPLETED])
    ] == ["b"]


def test_contract_upsert_keeps_one_row(store: SqliteStore) -> None:
    snap = fresh(store)
    contract, created = create_contract(
        "x", "cell_execution", {"code": "1"}, workflow_id="wf-1", run_id="run-1"
    )
    store.commit(Commit(snapshot=snap, expected_version=0, contracts=[contract], trace=created))
    running, records = fire(contract, "start", actor="engine")
    store.commit(Commit(snapshot=snap, expected_version=1, contracts=[running], trace=records))
    (stored,) = store.contracts("wf-1")
    assert stored.status is ExecutionStatus.RUNNING
    assert [t.action for t in store.trace("wf-1")] == [
        "create_contract:x",
        "transition:x:pending→running",
    ]


def test_cells_upsert_in_position_order(store: SqliteStore) -> None:
    snap = fresh(store)
    store.commit(
        Commit(
            snapshot=snap,
            expected_version=0,
            cells=[
                CellRow("b", 1, {"cell_type": "code", "source": "x = 1", "outputs": []}, "k-1"),
                CellRow("a", 0, {"cell_type": "markdown", "source": "# T"}),
            ],
        )
    )
    store.commit(
        Commit(
            snapshot=snap,
            expected_version=1,
            cells=[
                CellRow("b", 1, {"cell_type": "code", "source": "x = 1", "outputs": [{"n": 1}]})
            ],
        )
    )
    cells = store.cells("wf-1")
    assert [c.cell_id for c in cells] == ["a", "b"]
    assert cells[1].cell["outputs"] == [{"n": 1}]
    assert cells[1].contract_id == "k-1"


def _some_rows(store: SqliteStore) -> None:
    snap = fresh(store)
    version = 0
    for event in ["START_WORKFLOW", "START_STEP", "START_BEHAVIOR"]:
        snap, history = transition(snap, event)
        _, trace = create_contract(f"c-{event}", "cell_execution", {"e": event})
        result = store.commit(
            Commit(
                snapshot=snap,
                expected_version=version,
                history=history,
                trace=trace,
                events=[EventDraft("transition", event=event)],
            )
        )
        version = result.snapshot.version


def test_chain_verifies_then_catches_an_edit(store: SqliteStore, tmp_path: Path) -> None:
    _some_rows(store)
    assert store.verify() == 9
    raw = sqlite3.connect(tmp_path / "state.sqlite")
    raw.execute("UPDATE trace SET actor = 'mallory' WHERE seq = 2")
    raw.commit()
    raw.close()
    with pytest.raises(ChainBrokenError, match=r"trace row seq=2") as info:
        store.verify()
    assert info.value.details == {"table": "trace", "seq": 2}


def test_chain_catches_a_deleted_row(store: SqliteStore, tmp_path: Path) -> None:
    _some_rows(store)
    raw = sqlite3.connect(tmp_path / "state.sqlite")
    raw.execute("DELETE FROM history WHERE seq = 2")
    raw.commit()
    raw.close()
    with pytest.raises(ChainBrokenError, match=r"history row seq=3"):
        store.verify()


def test_locked_database_is_a_typed_error_and_nothing_changes(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite", busy_timeout=0.05)
    snap = fresh(store)
    other = sqlite3.connect(tmp_path / "s.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    moved, history = transition(snap, "START_WORKFLOW")
    with pytest.raises(StoreUnavailableError, match="locked by another writer"):
        store.commit(Commit(snapshot=moved, expected_version=0, history=history))
    other.execute("ROLLBACK")
    other.close()
    assert store.load("wf-1").version == 0
    assert store.history("wf-1") == []
    store.commit(Commit(snapshot=moved, expected_version=0, history=history))
    assert store.load("wf-1").version == 1
    store.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA user_version = 99")
    raw.close()
    with pytest.raises(StoreUnavailableError, match="schema version 99"):
        SqliteStore(path)


def test_not_a_database_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(NotAStateDatabaseError, match="is not a state database") as info:
        SqliteStore(path)
    assert isinstance(info.value, StoreUnavailableError), "a server answers 503 for it"
    with pytest.raises(NotAStateDatabaseError, match="is a directory, not a state database"):
        SqliteStore(tmp_path)


def test_reopen_keeps_everything(tmp_path: Path) -> None:
    first = SqliteStore(tmp_path / "s.sqlite")
    _some_rows(first)
    first.close()
    second = SqliteStore(tmp_path / "s.sqlite")
    assert second.load("wf-1").fsm.state.value == "behavior_running"
    assert len(second.history("wf-1")) == 3
    assert second.verify() == 9
    second.close()


def test_async_store(tmp_path: Path) -> None:
    async def scenario() -> tuple[int, str]:
        store = await AsyncStore.open(tmp_path / "a.sqlite")
        snap = await store.create(new_snapshot("wf", "r"))
        moved, history = transition(snap, "START_WORKFLOW")
        result = await store.commit(Commit(snapshot=moved, expected_version=0, history=history))
        loaded = await store.load("wf")
        await store.close()
        return result.snapshot.version, loaded.fsm.state.value

    assert asyncio.run(scenario()) == (1, "stage_running")


@pytest.mark.parametrize("raw", ["later:1", "before", "before:x", "after:1:a:b"])
def test_crash_plan_is_validated(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTEBOOK_BCC_CRASH_AT", raw)
    with pytest.raises(ValueError, match=r"NOTEBOOK_BCC_CRASH_AT|invalid literal"):
        CrashPlan.from_env()


def test_crash_plan_counts_by_kind() -> None:
    plan = CrashPlan("after", 2, "cell")
    assert not plan.tick(frozenset({"transition"}))
    assert not plan.tick(frozenset({"cell"}))
    assert plan.tick(frozenset({"cell", "transition"}))


@settings(max_examples=40)
@given(st.lists(st.integers(min_value=-1, max_value=1), max_size=25))
def test_cas_version_counts_successful_commits(offsets: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "p.sqlite")
        snap = store.create(new_snapshot("wf", "r"))
        successes = 0
        for offset in offsets:
            expected = successes + offset
            if offset != 0:
                with pytest.raises(VersionConflictError) as info:
                    store.commit(Commit(snapshot=snap, expected_version=expected))
                assert info.value.current.version == successes
            else:
                store.commit(Commit(snapshot=snap, expected_version=expected))
                successes += 1
        assert store.load("wf").version == successes
        store.close()


def test_a_version_1_database_is_migrated_in_place(tmp_path: Path) -> None:
    from notebook_bcc.store.schema import MIGRATIONS

    path = tmp_path / "old.sqlite"
    raw = sqlite3.connect(path, isolation_level=None)
    for statement in MIGRATIONS[0].split(";"):
        if statement.strip():
            raw.execute(statement)
    raw.execute("PRAGMA user_version = 1")
    snap = new_snapshot("wf-old", "r")
    raw.execute(
        "INSERT INTO workflows (workflow_id, run_id, notebook_path, version, fsm_state, run_status,"
        " active, snapshot, created_at, updated_at) VALUES (?, ?, NULL, 0, 'idle', 'running', 1,"
        " ?, 't', 't')",
        ("wf-old", "r", snap.model_dump_json(by_alias=True)),
    )
    raw.close()
    store = SqliteStore(path)
    assert store.schema_version == SCHEMA_VERSION
    assert store.load("wf-old") == snap
    assert store.owner("wf-old") is None
    command = store.enqueue_command("wf-old", {"event": "CANCEL", "expected_version": 0})
    assert store.open_commands("wf-old") == [(command, {"event": "CANCEL", "expected_version": 0})]
    store.finish_command(command, "applied")
    assert store.open_commands("wf-old") == []
    store.close()


def test_a_version_6_database_learns_why_its_inactive_workflows_released_their_notebook(
    tmp_path: Path,
) -> None:
    """Schema 7 records ``released``; rows released before it are classified: a newer
    workflow on the same notebook replaced it, else a finished run finished, else deleted."""
    path = tmp_path / "six.sqlite"
    SqliteStore(path).close()
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("ALTER TABLE workflows DROP COLUMN released")
    raw.execute("PRAGMA user_version = 6")
    rows = [
        ("wf-a", "a.ipynb", "completed", 0, "1"),  # finished, then replaced by wf-b
        ("wf-b", "a.ipynb", "completed", 0, "2"),  # finished
        ("wf-c", "c.ipynb", "interrupted", 0, "3"),  # released while unfinished: deleted
        ("wf-d", "d.ipynb", "running", 1, "4"),  # holds its notebook
    ]
    for wid, notebook, status, active, created in rows:
        raw.execute(
            "INSERT INTO workflows (workflow_id, run_id, notebook_path, version, fsm_state,"
            " run_status, active, snapshot, created_at, updated_at)"
            " VALUES (?, 'r', ?, 0, 'idle', ?, ?, '', ?, ?)",
            (wid, notebook, status, active, created, created),
        )
    raw.close()
    store = SqliteStore(path)
    assert store.schema_version == SCHEMA_VERSION
    assert store.released() == {"wf-a": "replaced", "wf-b": "finished", "wf-c": "deleted"}
    store.close()


def test_released_says_finished_deleted_or_replaced(store: SqliteStore) -> None:
    snap = fresh(store, "wf-1", "nb.ipynb")
    done = snap.model_copy(update={"run": snap.run.model_copy(update={"status": "completed"})})
    store.commit(Commit(snapshot=done, expected_version=snap.version))
    assert store.released() == {"wf-1": "finished"}
    fresh(store, "wf-2", "nb.ipynb")  # a new workflow on its notebook
    assert store.released() == {"wf-1": "replaced"}
    store.deactivate("wf-2", "deleted")
    store.deactivate("wf-2", "replaced")  # a second release keeps the first reason
    assert store.released() == {"wf-1": "replaced", "wf-2": "deleted"}
    assert store.released(notebook_path="other.ipynb") == {}


@pytest.mark.parametrize("status", ["failed", "running", "waiting", "paused"])
@pytest.mark.parametrize("reason", ["replaced", "deleted"])
def test_a_late_commit_of_a_released_workflow_never_takes_its_notebook_back(
    store: SqliteStore, status: str, reason: str
) -> None:
    """The CI race (collaborative Lab, Start right after a run failed: 409 "already has an
    active workflow"): the failed run was released for the new one, then one more commit of
    it (its run status still ``failed``) set it active again, and the new workflow's insert
    found it. A workflow replaced or deleted keeps its notebook released, and its reason."""
    snap = fresh(store, "wf-1", "nb.ipynb")
    ended = snap.model_copy(update={"run": snap.run.model_copy(update={"status": status})})
    snap = store.commit(Commit(snapshot=ended, expected_version=snap.version)).snapshot
    store.deactivate("wf-1", reason)  # type: ignore[arg-type]
    store.commit(Commit(snapshot=snap, expected_version=snap.version))  # the late commit
    assert store.workflow_ids(notebook_path="nb.ipynb", active=True) == []
    assert store.released() == {"wf-1": reason}
    fresh(store, "wf-2", "nb.ipynb")  # not refused
    assert store.workflow_ids(notebook_path="nb.ipynb", active=True) == ["wf-2"]
    assert store.released() == {"wf-1": reason}


def test_a_finished_workflow_run_again_takes_its_notebook_back(store: SqliteStore) -> None:
    """A finished workflow released its notebook by itself ("finished"); a command that runs
    it again (a reset) makes it the notebook's active workflow once more."""
    snap = fresh(store, "wf-1", "nb.ipynb")
    done = snap.model_copy(update={"run": snap.run.model_copy(update={"status": "cancelled"})})
    snap = store.commit(Commit(snapshot=done, expected_version=snap.version)).snapshot
    assert store.released() == {"wf-1": "finished"}
    again = snap.model_copy(update={"run": snap.run.model_copy(update={"status": "running"})})
    store.commit(Commit(snapshot=again, expected_version=snap.version))
    assert store.workflow_ids(notebook_path="nb.ipynb", active=True) == ["wf-1"]
    assert store.released() == {}
