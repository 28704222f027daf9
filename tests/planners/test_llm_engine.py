"""Whole runs with the LLM planner: a real kernel, the scripted chat server, the engine.

The scripted conversation (``tests/fixtures/llm/conversation``) plans two stages: ``explore``
loads the CSV into ``rows``, ``summarize`` computes ``mean_price`` and writes a summary file
(an irreversible cell).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import nbformat
import pytest

from notebook_bcc.models.names import State
from notebook_bcc.planners.llm import LlmPlanner
from notebook_bcc.planners.recording import RecordingPlanner
from notebook_bcc.planners.transcript import read_transcript
from notebook_bcc.store.sqlite import SqliteStore
from notebook_bcc.testing.scripted_llm import (
    Fault,
    Reply,
    ScriptedLlmServer,
    load_replies,
    rate_limited,
    server_error,
    tokens,
)
from tests.conftest import FIXTURES
from tests.planners.conftest import FolderRun
from tests.planners.llm_helpers import CONVERSATION, REPLIES, SECRET, fast

PRICES = FIXTURES / "dslc" / "prices.csv"

CODE = [
    "import csv\nwith open(user_submit_files[0]) as handle:\n"
    "    rows = list(csv.DictReader(handle))\nprint(len(rows), len(rows) < 10 and len(rows) > 0)",
    "mean_price = sum(float(r['price']) for r in rows) / len(rows)\nprint(round(mean_price, 2))",
    'with open("summary.txt", "w") as out:\n    out.write(f"mean price: {mean_price:.2f}\\n")',
]
"""The code cells the conversation writes (after the inputs cell), byte for byte."""

AGENTS = [
    "stage-planner",
    "step-planner",
    "behavior-arrangement",
    "action-generator",
    "behavior-reflection",
    "stage-reflection",
    "step-planner",
    "behavior-arrangement",
    "action-generator",
    "behavior-reflection",
    "stage-reflection",
]


class Run(FolderRun):
    """A headless run with this module's views of what it wrote."""

    def code(self) -> list[str]:
        cells = nbformat.read(self.notebook, as_version=4).cells
        return [c.source for c in cells[1:] if c.cell_type == "code"]

    def records(self) -> str:
        """Trace, history and events as JSON text."""
        store = SqliteStore(self.state_db)
        try:
            (workflow_id,) = store.workflow_ids()
            rows = [
                *(r.model_dump(mode="json") for r in store.trace(workflow_id)),
                *(r.model_dump(mode="json") for r in store.history(workflow_id)),
                *(r.model_dump(mode="json") for r in store.events(workflow_id)),
            ]
            return json.dumps(rows)
        finally:
            store.close()


@pytest.fixture
def secret_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """The API key, in the environment only."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", SECRET)
    return SECRET


def troubled_script() -> list[Reply | Fault]:
    """The conversation with a 429, a 500 and an unusable actions reply on the way."""
    replies: list[Reply | Fault] = [*load_replies(CONVERSATION)]
    broken = Reply("<actions><add-text>no end", agent="action-generator", name="broken")
    replies.insert(3, broken)
    replies.insert(5, server_error(500))
    return [rate_limited("0"), *replies]


@pytest.mark.parametrize(
    "mode", [(True, True), (False, False)], ids=["stream-usage", "plain-no-usage"]
)
def test_a_whole_workflow_completes_and_no_secret_leaks(
    tmp_path: Path,
    secret_key: str,
    mode: tuple[bool, bool],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stream, usage = mode
    caplog.set_level(logging.DEBUG)
    run = Run(tmp_path / "run")
    record = tmp_path / "record"
    with ScriptedLlmServer(troubled_script(), usage=usage) as server:
        llm = LlmPlanner(fast(server.base_url, stream=stream))
        result = run.start(RecordingPlanner(llm, record))
    assert result.exit_code == 0, result.snapshot.run
    snapshot = result.snapshot
    assert snapshot.fsm.state is State.WORKFLOW_COMPLETED
    assert server.errors == []
    assert server.remaining == 0
    assert [r.agent for r in server.received if r.status == 200] == [
        *AGENTS[:4],
        "action-generator",
        *AGENTS[4:],
    ]
    assert [r.status for r in server.received][:2] == [429, 200]
    assert all(r.headers.get("authorization") == f"Bearer {secret_key}" for r in server.received)
    assert all(r.body["stream"] is stream for r in server.received)

    assert run.code() == CODE
    assert (run.notebook.parent / "summary.txt").read_text() == "mean price: 237500.00\n"
    assert snapshot.planner.kind == "llm"
    assert snapshot.planner.settings["base_url"] == server.base_url

    per_stage = snapshot.usage.per_stage
    assert set(per_stage) == {"_workflow", "explore", "summarize"}
    assert snapshot.usage.calls == 11, "one per decision (route_stage makes none)"
    assert per_stage["explore"].calls == 5
    assert per_stage["summarize"].calls == 5
    if usage:
        assert all(per_stage[s].prompt_tokens > 0 for s in per_stage)
        assert (
            snapshot.usage.completion_tokens
            == sum(max(1, len(r.content) // 4) for r in load_replies(CONVERSATION))
            + len("<actions><add-text>no end") // 4
        )
    else:
        assert snapshot.usage.prompt_tokens == snapshot.usage.completion_tokens == 0
    assert snapshot.usage.latency_ms > 0

    # an AI planner's answers are not re-derivable: each turn is committed before the next call
    store = SqliteStore(run.state_db)
    try:
        starts = [
            e.version
            for e in store.events(snapshot.workflow_id)
            if e.kind == "transition" and e.event in ("START_STEP", "START_BEHAVIOR")
        ]
    finally:
        store.close()
    assert len(starts) >= 4
    assert len(starts) == len(set(starts)), starts

    transcript = read_transcript(record)
    assert transcript.header is not None
    assert transcript.header.planner["kind"] == "llm"
    assert [ex.point for ex in transcript.exchanges][:2] == ["plan_stages", "plan_steps"]

    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("state.sqlite") for p in written)
    for path in written:
        assert secret_key.encode() not in path.read_bytes(), f"the key leaked into {path}"
    assert secret_key not in run.records()
    assert secret_key not in snapshot.model_dump_json()
    assert secret_key not in caplog.text
    assert any("reply 1, " in m for m in caplog.messages), "the planner logs its calls"
    captured = capsys.readouterr()
    assert secret_key not in captured.out + captured.err


def test_a_reply_that_stays_unusable_fails_the_run_and_resume_completes(
    tmp_path: Path, secret_key: str
) -> None:
    bad = (REPLIES / "stages-json.txt").read_text()
    script: list[Reply | Fault] = [Reply(bad, agent="stage-planner")] * 3
    run = Run(tmp_path / "run")
    with ScriptedLlmServer(script) as server:
        result = run.start(LlmPlanner(fast(server.base_url)))
        snapshot = result.snapshot
        assert result.exit_code == 1
        assert snapshot.run.status == "failed"
        assert snapshot.fsm.state is State.IDLE, "D1: the FSM stays where it was"
        assert snapshot.run.reason == (
            "plan_stages: planner failed: stage-planner: no usable <stages> reply after 3 "
            "replies (the last error: reply:1: stages: the reply holds no <stages> or "
            "<workflow> XML document)"
        )
        assert len(server.received) == 3
        # the three unusable replies were paid for: the failed decision is counted (calls
        # count decisions) with the tokens of all three replies
        assert snapshot.usage.calls == 1
        assert snapshot.usage.per_stage["_workflow"].calls == 1
        prompts = [
            sum(tokens(str(m["content"])) for m in request.messages) for request in server.received
        ]
        assert snapshot.usage.prompt_tokens == sum(prompts)
        assert snapshot.usage.completion_tokens == 3 * tokens(bad)
        server.add(load_replies(CONVERSATION))
        resumed = run.resume(LlmPlanner)
    assert resumed.exit_code == 0, resumed.snapshot.run
    assert resumed.snapshot.fsm.state is State.WORKFLOW_COMPLETED
    assert run.code() == CODE
