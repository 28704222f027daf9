"""``--max-planner-calls`` / ``--max-tokens``: the run stops ``waiting`` on a ``budget``
decision before the call that would pass the cap; approving raises it, rejecting fails the run
(real processes: a blueprint run, and an LLM run against the scripted chat server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from notebook_bcc.store.sqlite import SqliteStore
from tests.conftest import FIXTURES
from tests.conftest import run_cli as cli

CONVERSATION = FIXTURES / "llm" / "conversation"
PRICES = FIXTURES / "dslc" / "prices.csv"


def snapshot(state_db: Path) -> Any:
    store = SqliteStore(state_db)
    try:
        (workflow_id,) = store.workflow_ids()
        return store.load(workflow_id)
    finally:
        store.close()


def test_a_call_cap_waits_then_an_approval_allows_as_many_again(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    first = cli(
        "run",
        FIXTURES / "cli" / "params.yaml",
        "-p",
        "n",
        "2",
        "--notebook",
        tmp_path / "nb.ipynb",
        "--max-planner-calls",
        "3",
        "--json",
    )
    assert first.returncode == 3, first.stderr
    waiting = snapshot(state)
    assert waiting.run.status == "waiting"
    (pending,) = waiting.run.pending
    assert pending.kind == "budget"
    assert pending.details["limit"] == "max_planner_calls"
    assert waiting.usage.calls == 3, "stopped before the fourth call"
    events = [json.loads(line) for line in first.stdout.splitlines()]
    assert any(e["kind"] == "decision" and e["detail"]["kind"] == "budget" for e in events)

    status = cli("status", "--state-db", state)
    assert "budget" in status.stdout

    # --auto-confirm lets the new process rebuild the kernel (D11) without asking; it never
    # approves a budget: --approve does
    approved = cli("resume", "--state-db", state, "--approve", "--auto-confirm")
    assert approved.returncode == 0, approved.stderr
    done = snapshot(state)
    assert done.run.status == "completed"
    assert done.budget.max_planner_calls == 6
    assert 3 < done.usage.calls <= 6


def test_a_token_cap_on_an_llm_run_and_a_rejection(tmp_path: Path) -> None:
    env = {**os.environ, "NOTEBOOK_BCC_LLM_API_KEY": "sk-budget-test"}
    server = subprocess.Popen(
        [sys.executable, "-m", "notebook_bcc.testing.scripted_llm", str(CONVERSATION)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().rsplit("base URL ", 1)[1].strip()
        first = cli(
            *("run", "--planner", "llm", "--llm-base-url", base_url, "--model", "scripted"),
            *("--problem", "Describe the house prices", "--file", PRICES),
            *("--notebook", tmp_path / "nb.ipynb", "--max-tokens", "1"),
            env=env,
        )
    finally:
        server.kill()
        server.communicate(timeout=30)  # closes its pipes
    assert first.returncode == 3, first.stdout[-2000:] + first.stderr
    state = tmp_path / "state.sqlite"
    waiting = snapshot(state)
    (pending,) = waiting.run.pending
    assert pending.kind == "budget"
    assert pending.details["limit"] == "max_tokens"
    assert waiting.usage.calls == 1, "the first call ran; the second would pass the cap"
    assert waiting.usage.prompt_tokens + waiting.usage.completion_tokens >= 1

    rejected = cli("resume", "--state-db", state, "--reject", env=env)
    assert rejected.returncode == 1, rejected.stderr
    failed = snapshot(state)
    assert failed.run.status == "failed"
    assert "planner budget exhausted" in (failed.run.reason or "")
    assert failed.usage.calls == 1
