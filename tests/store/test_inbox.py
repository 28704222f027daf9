"""Who drives a workflow (``owner``) and its command inbox, on real database files."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from notebook_bcc.models import new_snapshot
from notebook_bcc.store import SqliteStore, UnknownWorkflowError


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "state.sqlite"
    store = SqliteStore(path)
    try:
        store.create(new_snapshot("wf-1", "run-1", notebook_path="nb.ipynb"))
    finally:
        store.close()
    return path


def test_a_claim_is_refused_while_another_live_process_drives_the_workflow(db: Path) -> None:
    store = SqliteStore(db)
    try:
        alive = {"1@here"}
        assert store.claim_owner("wf-1", "1@here", alive.__contains__) is None
        assert store.owner("wf-1") == "1@here"
        assert store.claim_owner("wf-1", "2@here", alive.__contains__) == "1@here"
        assert store.owner("wf-1") == "1@here", "a refused claim changes nothing"
        assert store.claim_owner("wf-1", "1@here", alive.__contains__) is None, "its own again"
        alive.clear()  # the first process died: its record does not hold the workflow
        assert store.claim_owner("wf-1", "2@here", alive.__contains__) is None
        assert store.owner("wf-1") == "2@here"
        with pytest.raises(UnknownWorkflowError):
            store.claim_owner("wf-nope", "2@here", alive.__contains__)
    finally:
        store.close()


def _claim_together(db: Path, names: list[str]) -> dict[str, str | None]:
    """Each of ``names`` claims the workflow on its own connection (as separate ``resume``
    processes do), all released at the same moment; every name counts as alive."""
    start = threading.Barrier(len(names))
    answers: dict[str, str | None] = {}

    def claim(name: str) -> None:
        store = SqliteStore(db)
        try:
            start.wait()
            answers[name] = store.claim_owner("wf-1", name, set(names).__contains__)
        finally:
            store.close()

    threads = [threading.Thread(target=claim, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_of_two_processes_claiming_at_once_exactly_one_wins(db: Path) -> None:
    """Two claimants released together, many times: one wins, the other is told the winner;
    never both."""
    for round_ in range(25):
        first = SqliteStore(db)
        try:
            first.set_owner("wf-1", None)
        finally:
            first.close()
        names = [f"a{round_}@here", f"b{round_}@here"]
        answers = _claim_together(db, names)
        winners = [name for name, other in answers.items() if other is None]
        assert len(winners) == 1, answers
        (loser,) = set(names) - set(winners)
        assert answers[loser] == winners[0]


def test_commands_are_queued_taken_in_order_and_finished(db: Path) -> None:
    store = SqliteStore(db)
    try:
        first = store.enqueue_command("wf-1", {"event": "PAUSE"})
        second = store.enqueue_command("wf-1", {"event": "CANCEL"})
        assert [body for _, body in store.open_commands("wf-1")] == [
            {"event": "PAUSE"},
            {"event": "CANCEL"},
        ]
        store.finish_command(first, "applied")
        assert store.open_commands("wf-1") == [(second, {"event": "CANCEL"})]
    finally:
        store.close()
