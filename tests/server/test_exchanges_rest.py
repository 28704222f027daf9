"""``GET /workflows/{id}/exchanges``: the request and the raw reply behind a behavior's cells,
over REST, for runs planned by a real loopback LLM server and a real DSLC HTTP server."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.testing.scripted_llm import Reply, ScriptedLlmServer, tokens
from tests.conftest import FIXTURES
from tests.planners.dslc_server import DslcResponder, ScriptedServer
from tests.server.conftest import Api

CONVERSATION = FIXTURES / "llm" / "conversation"


async def _run(api: Api, root: Path, planner: dict[str, Any]) -> dict[str, Any]:
    (root / "work").mkdir()
    shutil.copy(FIXTURES / "dslc" / "prices.csv", root / "work" / "prices.csv")
    body = {
        "notebook_path": "work/run.ipynb",
        "planner": planner,
        "problem": "Describe the house prices",
        "files": ["work/prices.csv"],
        "options": {"auto_confirm": True},
    }
    code, started = await api.call("POST", "workflows", body=body)
    assert code == 201, started
    return await api.wait_status(started["workflow_id"], "completed", "failed")


async def test_an_llm_run_lists_each_reply_with_its_tokens_and_latency(
    api: Api, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", "sk-exchanges")
    with ScriptedLlmServer(CONVERSATION) as server:
        planner = {"kind": "llm", "model": "scripted", "base_url": server.base_url}
        finished = await _run(api, root, planner)
        prompts = [r.body["messages"] for r in server.received]
    assert finished["run"]["status"] == "completed", finished["run"]
    workflow_id = finished["workflow_id"]
    listing = await api.ok("GET", "workflows", workflow_id, "exchanges")
    assert listing["planner_kind"] == "llm"
    files = sorted(CONVERSATION.glob("*.txt"))
    rows = listing["exchanges"]
    assert [r["seq"] for r in rows] == list(range(1, len(files) + 1))
    assert [r["reply"] for r in rows] == [f.read_text(encoding="utf-8") for f in files]
    for row, messages in zip(rows, prompts, strict=True):
        assert row["completion_tokens"] == tokens(row["reply"])
        assert row["prompt_tokens"] == sum(tokens(m["content"]) for m in messages)
        assert row["latency_ms"] > 0
        assert row["reply_truncated"] is False
        assert row["request_summary"].startswith(f"decision: {row['point']} at ")
    # The behavior the arrangement planned: its plan, its actions and its reflection.
    behavior = await api.ok(
        "GET", "workflows", workflow_id, "exchanges", params={"behavior": "load_b1"}
    )
    assert [r["point"] for r in behavior["exchanges"]] == [
        "plan_behavior",
        "generate_actions",
        "reflect_behavior",
    ]
    actions = behavior["exchanges"][1]
    assert actions["reply"] == (CONVERSATION / "004-action-generator.txt").read_text()
    assert actions["iteration"] == 1
    assert "--- system ---" in actions["request_summary"] or "(start)" in actions["request_summary"]
    newest = await api.ok("GET", "workflows", workflow_id, "exchanges", params={"limit": "2"})
    assert [r["seq"] for r in newest["exchanges"]] == [len(files) - 1, len(files)]
    assert newest["truncated"] is True


async def test_a_failed_llm_call_keeps_its_refused_replies_and_error(api: Api, root: Path) -> None:
    garbage = ["no xml here at all", "<stages><stage id='x'"]
    replies = [Reply(text, agent="stage-planner") for text in garbage]
    with ScriptedLlmServer(replies) as server:
        planner = {
            "kind": "llm",
            "model": "scripted",
            "base_url": server.base_url,
            "max_parse_retries": 1,
        }
        finished = await _run(api, root, planner)
    assert finished["run"]["status"] == "failed", finished["run"]
    listing = await api.ok("GET", "workflows", finished["workflow_id"], "exchanges")
    (row,) = listing["exchanges"]
    assert row["point"] == "plan_stages"
    assert row["error"].startswith("stage-planner: no usable <stages> reply after 2 replies")
    assert row["reply"] == garbage[-1], "the last refused reply is kept"
    assert row["calls"] == 2
    assert row["completion_tokens"] == sum(tokens(t) for t in garbage)
    assert len(row["notes"]) >= 2, row["notes"]


async def test_an_http_run_keeps_the_servers_raw_answers(api: Api, root: Path) -> None:
    with ScriptedServer(DslcResponder()) as planner:
        finished = await _run(api, root, {"kind": "http", "url": planner.url})
        received = list(planner.received)
    assert finished["run"]["status"] == "completed", finished["run"]
    listing = await api.ok("GET", "workflows", finished["workflow_id"], "exchanges")
    rows = listing["exchanges"]
    assert listing["planner_kind"] == "http"
    assert len(rows) == len(received)
    for row, request in zip(rows, received, strict=True):
        assert f"POST {planner.url}/{request.path.strip('/')}" in row["request_summary"]
        assert row["reply"], row
        assert row["prompt_tokens"] is None, "a DSLC server reports no tokens"
    generated = [r for r in rows if r["point"] == "generate_actions"]
    assert generated
    assert all(r["behavior_id"] for r in generated)


async def test_a_blueprint_run_has_no_exchanges(api: Api, root: Path) -> None:
    started = await api.start("nb/quick.ipynb", "blueprints/quick.yaml")
    finished = await api.wait_status(started["workflow_id"], "completed", "failed")
    listing = await api.ok("GET", "workflows", finished["workflow_id"], "exchanges")
    assert listing["planner_kind"] == "blueprint"
    assert listing["exchanges"] == []


@pytest.mark.parametrize(
    ("params", "field"),
    [({"limit": "0"}, "limit"), ({"limit": "x"}, "limit"), ({"behavior": "b" * 201}, "behavior")],
)
async def test_a_bad_query_is_a_400_naming_the_field(
    api: Api, root: Path, params: dict[str, str], field: str
) -> None:
    started = await api.start("nb/quick.ipynb", "blueprints/quick.yaml")
    code, body = await api.call(
        "GET", "workflows", started["workflow_id"], "exchanges", params=params
    )
    assert code == 400, body
    assert body["details"]["field"] == field
    assert body["message"].startswith(f"{field}:")


async def test_unknown_workflow_is_404_and_no_token_is_403(api: Api) -> None:
    code, body = await api.call("GET", "workflows", "nope", "exchanges")
    assert code == 404, body
    code, body = await api.call(
        "GET", "workflows", "nope", "exchanges", headers={"Authorization": ""}
    )
    assert code == 403, body


async def test_openapi_names_the_endpoint(api: Api) -> None:
    document = await api.ok("GET", "openapi.json")
    operation = document["paths"]["/workflows/{workflow_id}/exchanges"]["get"]
    assert operation["operationId"] == "getExchanges"
    assert "PlannerExchange" in document["components"]["schemas"]
