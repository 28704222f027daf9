"""The server's ``llm`` planner: specs refused with a clear 400, and a whole run over REST."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.testing.scripted_llm import ScriptedLlmServer
from tests.conftest import FIXTURES
from tests.server.conftest import Api

CONVERSATION = FIXTURES / "llm" / "conversation"
SECRET = "sk-server-test-4c3b2a1f0e9d"


def _start(planner: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"notebook_path": "work/llm.ipynb", "planner": planner, **extra}


@pytest.mark.parametrize(
    ("planner", "message"),
    [
        ({"kind": "llm", "model": "m"}, "planner.base_url: required for an llm planner"),
        ({"kind": "llm", "base_url": "http://127.0.0.1:9/v1"}, "/planner/llm/model"),
        ({"kind": "llm", "model": "m", "base_url": "ftp://x/v1"}, "/planner/llm/base_url"),
        (
            {"kind": "llm", "model": " ", "base_url": "http://127.0.0.1:9/v1"},
            "planner: LLM model: a model name is required",
        ),
        (
            {
                "kind": "llm",
                "model": "m",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key_env": "NOTEBOOK_BCC_TEST_UNSET_KEY",
            },
            "environment variable NOTEBOOK_BCC_TEST_UNSET_KEY (the LLM API key) is not set",
        ),
        (
            {
                "kind": "llm",
                "model": "m",
                "base_url": "http://127.0.0.1:9/v1",
                "max_parse_retries": 11,
            },
            "/planner/llm/max_parse_retries",
        ),
    ],
)
async def test_bad_llm_specs_are_400_naming_the_reason(
    api: Api, root: Path, planner: dict[str, Any], message: str
) -> None:
    code, body = await api.call("POST", "workflows", body=_start(planner))
    assert code == 400, body
    assert body["code"] == "bad_request"
    assert message in body["message"]
    assert not (root / "work").exists(), "nothing was created for a refused request"


async def test_a_whole_llm_run_over_rest(
    api: Api, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", SECRET)
    (root / "work").mkdir()
    shutil.copy(FIXTURES / "dslc" / "prices.csv", root / "work" / "prices.csv")
    with ScriptedLlmServer(CONVERSATION) as server:
        planner = {"kind": "llm", "model": "scripted", "base_url": server.base_url}
        code, started = await api.call(
            "POST",
            "workflows",
            body=_start(
                planner,
                problem="Describe the house prices",
                files=["work/prices.csv"],
                options={"auto_confirm": True},
            ),
        )
        assert code == 201, started
        finished = await api.wait_status(started["workflow_id"], "completed", "failed")
    assert finished["run"]["status"] == "completed", finished["run"]
    assert finished["planner"]["kind"] == "llm"
    assert finished["planner"]["settings"]["base_url"] == server.base_url
    assert server.errors == []
    assert server.remaining == 0
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.received)
    assert SECRET not in str(finished)
    assert (root / "work" / "summary.txt").read_text() == "mean price: 237500.00\n"
    assert SECRET.encode() not in (root / "work" / "llm.ipynb").read_bytes()
