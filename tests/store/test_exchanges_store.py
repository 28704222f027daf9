"""The ``planner_exchanges`` side table on real SQLite files: bounded rows, order, filters."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.models.exchanges import (
    MAX_ROW_BYTES,
    TRUNCATION_MARK,
    PlannerExchange,
    clip,
)
from notebook_bcc.store import SqliteStore
from notebook_bcc.store.exchanges import append_exchange, list_exchanges


def exchange(
    workflow: str = "wf-1", behavior: str | None = "b1", **extra: object
) -> PlannerExchange:
    base: dict[str, object] = {
        "workflow_id": workflow,
        "planner_kind": "llm",
        "point": "generate_actions",
        "fsm_state": "behavior_running",
        "behavior_id": behavior,
        "at": "2026-11-25T12:00:00Z",
        "latency_ms": 12.5,
        "reply": "<actions/>",
    }
    base.update(extra)
    return PlannerExchange.model_validate(base)


def test_rows_come_back_in_order_numbered_per_workflow(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.sqlite")
    try:
        append_exchange(store, exchange(behavior="b1", point="plan_behavior"))
        append_exchange(store, exchange(workflow="other"))
        append_exchange(store, exchange(behavior="b1"))
        append_exchange(store, exchange(behavior="b2"))
        rows, more = list_exchanges(store, "wf-1")
        assert [(r.seq, r.behavior_id, r.point) for r in rows] == [
            (1, "b1", "plan_behavior"),
            (2, "b1", "generate_actions"),
            (3, "b2", "generate_actions"),
        ]
        assert more is False
        only, _ = list_exchanges(store, "wf-1", behavior="b1")
        assert [r.seq for r in only] == [1, 2]
        newest, more = list_exchanges(store, "wf-1", limit=2)
        assert [r.seq for r in newest] == [2, 3]
        assert more is True
        assert list_exchanges(store, "nobody") == ([], False)
    finally:
        store.close()


def test_rows_survive_reopening_and_the_table_is_added_to_an_existing_database(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.sqlite"
    store = SqliteStore(path)
    store.close()
    with sqlite3.connect(path) as db:  # a database from before the side table
        db.execute("DROP TABLE planner_exchanges")
    store = SqliteStore(path)
    append_exchange(store, exchange())
    store.close()
    store = SqliteStore(path)
    try:
        rows, _ = list_exchanges(store, "wf-1")
        assert [r.reply for r in rows] == ["<actions/>"]
    finally:
        store.close()


def test_a_huge_reply_is_cut_below_the_row_bound_and_marked(tmp_path: Path) -> None:
    from notebook_bcc.models.exchanges import MAX_REPLY_BYTES

    reply = "é" * 200_000  # 400 kB of UTF-8
    text, cut = clip(reply, MAX_REPLY_BYTES)
    store = SqliteStore(tmp_path / "state.sqlite")
    try:
        append_exchange(
            store, exchange(reply=text, reply_truncated=cut, reply_bytes=len(reply.encode()))
        )
        (row,) = store.connection.execute("SELECT body FROM planner_exchanges").fetchall()
        assert len(row[0].encode("utf-8")) < MAX_ROW_BYTES + 4_000  # JSON quoting aside
        (stored,), _ = list_exchanges(store, "wf-1")
        assert stored.reply_truncated is True
        assert stored.reply is not None
        assert stored.reply.endswith(TRUNCATION_MARK)
        assert stored.reply_bytes == 400_000
    finally:
        store.close()


@given(st.text(max_size=300), st.integers(min_value=len(TRUNCATION_MARK.encode()), max_value=400))
def test_clip_never_exceeds_the_limit_and_keeps_short_text(text: str, limit: int) -> None:
    clipped, cut = clip(text, limit)
    assert len(clipped.encode("utf-8")) <= limit
    if len(text.encode("utf-8")) <= limit:
        assert (clipped, cut) == (text, False)
    else:
        assert cut is True
        assert clipped.endswith(TRUNCATION_MARK)
        assert text.startswith(clipped[: -len(TRUNCATION_MARK)])
