"""``notebook-bcc trace --exchanges``: the planner's raw replies, tokens and latency, from the
state database of a real LLM run (a scripted chat server on loopback) and a blueprint run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from notebook_bcc.cli import main
from notebook_bcc.testing.scripted_llm import ScriptedLlmServer, tokens
from tests.conftest import FIXTURES

CONVERSATION = FIXTURES / "llm" / "conversation"
PRICES = FIXTURES / "dslc" / "prices.csv"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "notebook_bcc", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=env,
    )


def test_trace_exchanges_of_an_llm_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = {**os.environ, "NOTEBOOK_BCC_LLM_API_KEY": "sk-trace"}
    with ScriptedLlmServer(CONVERSATION) as server:
        done = _cli(
            *("run", "--planner", "llm", "--llm-base-url", server.base_url, "--model", "m"),
            *("--problem", "Describe the house prices", "--file", str(PRICES)),
            *("--notebook", str(tmp_path / "nb.ipynb"), "--auto-confirm"),
            env=env,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    state = str(tmp_path / "state.sqlite")
    assert main(["trace", "--state-db", state, "--exchanges", "--behavior", "load_b1"]) == 0
    text = capsys.readouterr().out
    reply = (CONVERSATION / "004-action-generator.txt").read_text(encoding="utf-8")
    assert "(llm, 3):" in text
    (header,) = [line for line in text.splitlines() if line.startswith("#4  ")]
    assert header.startswith("#4  generate_actions at behavior_running")
    assert f" / {tokens(reply)} out" in header
    for line in reply.rstrip("\n").splitlines():
        assert f"    {line}" in text
    assert main(["trace", "--state-db", state, "--exchanges", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["table"] for r in rows] == ["exchanges"] * 11
    assert [r["point"] for r in rows][:5] == [
        "plan_stages",
        "plan_steps",
        "plan_behavior",
        "generate_actions",
        "reflect_behavior",
    ]


def test_trace_exchanges_of_a_blueprint_run_says_there_is_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = _cli(
        "run",
        str(FIXTURES / "server" / "quick.yaml"),
        *("--notebook", str(tmp_path / "nb.ipynb"), "--auto-confirm"),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    state = str(tmp_path / "state.sqlite")
    assert main(["trace", "--state-db", state, "--exchanges"]) == 0
    assert "no planner exchange (planned by a blueprint)" in capsys.readouterr().out
