"""The server's ``llm`` planner: specs refused with a clear 400, and a whole run over REST."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.testing.scripted_llm import ScriptedLlmServer, rate_limited
from tests.conftest import FIXTURES
from tests.server.conftest import Api

CONVERSATION = FIXTURES / "llm" / "conversation"
SECRET = "sk-server-test-4c3b2a1f0e9d"


def _start(planner: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"notebook_path": "work/llm.ipynb", "planner": planner, **extra}


async def _start_on_prices(api: Api, root: Path, planner: dict[str, Any]) -> str:
    """Start ``planner`` on work/prices.csv (auto-confirm); the workflow id."""
    (root / "work").mkdir()
    shutil.copy(FIXTURES / "dslc" / "prices.csv", root / "work" / "prices.csv")
    body = _start(
        planner,
        problem="Describe the house prices",
        files=["work/prices.csv"],
        options={"auto_confirm": True},
    )
    code, started = await api.call("POST", "workflows", body=body)
    assert code == 201, started
    return str(started["workflow_id"])


async def _asked(server: ScriptedLlmServer, count: int) -> None:
    """Wait until the scripted API has received ``count`` requests."""
    deadline = time.monotonic() + 60
    while len(server.received) < count:
        assert time.monotonic() < deadline, "the planner was never asked"
        await asyncio.sleep(0.05)


async def _run_to_the_end(api: Api, root: Path, planner: dict[str, Any]) -> dict[str, Any]:
    """Start ``planner`` on work/prices.csv (auto-confirm) and wait until the run ended."""
    return await api.wait_status(await _start_on_prices(api, root, planner), "completed", "failed")


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
                "api_key_env": "JUPYTERHUB_API_TOKEN",
            },
            "planner.api_key_env: 'JUPYTERHUB_API_TOKEN' is not a key variable this server "
            "lends to a planner (allowed: NOTEBOOK_BCC_LLM_API_KEY, OPENAI_API_KEY",
        ),
        (
            {
                "kind": "llm",
                "model": "m",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key_env": "NOTEBOOK_BCC_LLM_API_KEY",
            },
            "environment variable NOTEBOOK_BCC_LLM_API_KEY (the LLM API key) is not set",
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
    api: Api, root: Path, planner: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOTEBOOK_BCC_LLM_API_KEY", raising=False)
    code, body = await api.call("POST", "workflows", body=_start(planner))
    assert code == 400, body
    assert body["code"] == "bad_request"
    assert message in body["message"]
    assert not (root / "work").exists(), "nothing was created for a refused request"


async def test_a_whole_llm_run_over_rest(
    api: Api, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", SECRET)
    with ScriptedLlmServer(CONVERSATION) as server:
        planner = {"kind": "llm", "model": "scripted", "base_url": server.base_url}
        finished = await _run_to_the_end(api, root, planner)
    assert finished["run"]["status"] == "completed", finished["run"]
    assert finished["planner"]["kind"] == "llm"
    assert finished["planner"]["settings"]["base_url"] == server.base_url
    assert server.errors == []
    assert server.remaining == 0
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.received)
    assert SECRET not in str(finished)
    assert (root / "work" / "summary.txt").read_text() == "mean price: 237500.00\n"
    assert SECRET.encode() not in (root / "work" / "llm.ipynb").read_bytes()


SHIPPED = Path(__file__).resolve().parents[2] / "notebook_bcc" / "planners" / "llm" / "templates"


async def test_a_template_folder_under_the_root_replaces_the_shipped_prompt(
    api: Api, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", SECRET)
    prompts = root / "team" / "prompts"
    prompts.mkdir(parents=True)
    marker = "Our team plans in exactly the stages the replies below name."
    shipped = (SHIPPED / "stage-planner.md").read_text()
    (prompts / "stage-planner.md").write_text(
        shipped.replace("<!-- section: system -->\n", f"<!-- section: system -->\n{marker}\n", 1)
    )
    with ScriptedLlmServer(CONVERSATION) as server:
        planner = {
            "kind": "llm",
            "model": "scripted",
            "base_url": server.base_url,
            "templates": "team/prompts",
        }
        finished = await _run_to_the_end(api, root, planner)
    assert finished["run"]["status"] == "completed", finished["run"]
    stage_prompts = [str(m) for m in server.prompts("stage-planner")[0]]
    assert any(marker in text for text in stage_prompts)
    step_prompts = [str(m) for m in server.prompts("step-planner")[0]]
    assert not any(marker in text for text in step_prompts), "only the overridden agent"


@pytest.mark.parametrize(
    ("templates", "code", "message"),
    [
        ("team/missing", 400, "planner.templates: no such folder 'team/missing'"),
        ("../outside", 400, "planner.templates"),
        ("/etc", 400, "planner.templates"),
        ("team/bad", 400, "planner: team/bad/planner.md: unknown template 'planner.md'"),
        ("team/leaky", 403, "resolves outside the server root"),
    ],
)
async def test_bad_template_folders_are_refused_by_api_path(
    api: Api,
    root: Path,
    templates: str,
    code: int,
    message: str,
    *,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", "k")
    (root / "team" / "bad").mkdir(parents=True)
    (root / "team" / "bad" / "planner.md").write_text("<!-- section: system -->\nhi\n")
    (root / "team" / "leaky").mkdir(parents=True)
    secret_file = root.parent / "server-secret.md"  # beside the root, not in it
    secret_file.write_text("a file of the server's, outside the root")
    (root / "team" / "leaky" / "stage-planner.md").symlink_to(secret_file)
    planner = {
        "kind": "llm",
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "NOTEBOOK_BCC_LLM_API_KEY",  # set below: the key check passes
        "templates": templates,
    }
    answer_code, body = await api.call("POST", "workflows", body=_start(planner))
    assert answer_code == code, body
    assert message in body["message"]
    assert str(root) not in body["message"], "the server's OS paths stay on the server"
    assert not (root / "work").exists(), "nothing was created for a refused request"


async def test_pause_while_the_llm_is_rate_limited_answers_at_once_and_run_goes_on(
    api: Api, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The panel's Pause while the planner waits out a minute's Retry-After: the command
    used to hang until the planner answered; a planner call is a safe point, so it is
    dropped, the run is paused now, and Run asks the planner again."""
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", SECRET)
    with ScriptedLlmServer(CONVERSATION) as server:
        server.inject(rate_limited("60"))
        planner = {"kind": "llm", "model": "scripted", "base_url": server.base_url}
        workflow_id = await _start_on_prices(api, root, planner)
        await _asked(server, 1)  # the 429 is answered: the planner now waits
        version = (await api.snapshot(workflow_id))["version"]
        began = time.monotonic()
        code, paused = await api.command(workflow_id, action="pause", expected_version=version)
        took = time.monotonic() - began
        assert code == 200, paused
        assert took < 20, "the pause waited out the planner's Retry-After"
        assert paused["run"]["status"] == "paused"

        code, resumed = await api.command(
            workflow_id, action="run", expected_version=paused["version"]
        )
        assert code == 200, resumed
        done = await api.wait_status(workflow_id, "completed", "failed")
    assert done["run"]["status"] == "completed", done["run"]
    assert server.errors == []


async def test_cancel_while_the_first_plan_is_awaited_cancels_at_once_and_asks_nothing_again(
    api: Api, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A started workflow waits in ``idle`` for its stage plan; seed 003 has no CANCEL from
    ``idle``, so the panel's Cancel was refused ("would need CANCEL from idle") while a slow
    planner held the run. The table now allows it: the call is dropped, the run cancelled,
    and the planner is not asked again."""
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", SECRET)
    with ScriptedLlmServer(CONVERSATION) as server:
        server.inject(rate_limited("60"))
        planner = {"kind": "llm", "model": "scripted", "base_url": server.base_url}
        workflow_id = await _start_on_prices(api, root, planner)
        await _asked(server, 1)
        snapshot = await api.snapshot(workflow_id)
        assert snapshot["fsm"]["state"] == "idle"
        code, cancelled = await api.command(
            workflow_id, event="CANCEL", expected_version=snapshot["version"]
        )
        assert code == 200, cancelled
        assert cancelled["fsm"]["state"] == "cancelled"
        done = await api.wait_status(workflow_id, "cancelled")
        assert done["run"]["status"] == "cancelled"
        assert len(server.received) == 1, "the dropped call was not sent again"
