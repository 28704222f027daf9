"""Failure paths of the REST API that are refused before anything runs (no kernel starts)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.server.app import NotebookBccApp
from notebook_bcc.server.store_place import default_store_path, recorded_root
from tests.server.conftest import Api

GOOD_PLANNER = {"kind": "blueprint", "path": "blueprints/quick.yaml"}


def _body(**overrides: Any) -> dict[str, Any]:
    return {"notebook_path": "work/a.ipynb", "planner": GOOD_PLANNER, **overrides}


def _assert_error(body: Any, code: str) -> None:
    assert set(body) == {"code", "message", "details"}, body
    assert body["code"] == code, body


async def _refused(api: Api, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
    return await api.call("POST", "workflows", body=body, raw=raw)


async def test_bad_bodies_are_400_naming_the_problem(api: Api, root: Path) -> None:
    code, body = await _refused(api, raw=b"{not json")
    assert code == 400
    _assert_error(body, "bad_request")
    assert "not JSON" in body["message"]

    code, body = await _refused(api, body=["a list"])
    assert code == 400
    _assert_error(body, "bad_request")

    code, body = await _refused(api, body={"planner": GOOD_PLANNER})
    assert code == 400
    assert "/notebook_path" in body["message"]

    code, body = await _refused(api, body=_body(colour="red"))
    assert code == 400
    assert "/colour" in body["message"]

    code, body = await _refused(api, body=_body(options={"max_hops": 0}))
    assert code == 400
    assert "/options/max_hops" in body["message"]

    code, body = await _refused(api, body=_body(options={"auto_confirm": True, "turbo": 1}))
    assert code == 400
    assert "/options/turbo" in body["message"]

    code, body = await _refused(api, body=_body(planner={"kind": "oracle"}))
    assert code == 400
    assert "planner" in body["message"]

    code, body = await _refused(api, body=_body(planner={"kind": "llm"}))
    assert code == 400, "an llm spec without a model is refused"
    assert "/planner/llm/model" in body["message"]

    assert not (root / "work").exists(), "nothing was created for a refused request"


async def test_a_planner_is_required_without_a_configured_default(api: Api, root: Path) -> None:
    code, body = await _refused(api, body={"notebook_path": "work/a.ipynb"})
    assert code == 400
    assert "planner: required" in body["message"]


async def test_a_replay_planner_needs_a_recorded_folder(api: Api, root: Path) -> None:
    code, body = await _refused(api, body=_body(planner={"kind": "replay", "path": "nothing"}))
    assert code == 400
    assert "not a recorded transcript folder" in body["message"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("notebook_path", "/etc/evil.ipynb"),
        ("notebook_path", "../outside.ipynb"),
        ("notebook_path", "work/../../outside.ipynb"),
        ("notebook_path", "work/notes.txt"),
        ("planner", {"kind": "blueprint", "path": "../quick.yaml"}),
        ("planner", {"kind": "blueprint", "path": "/blueprints/quick.yaml"}),
        ("files", ["../secret.csv"]),
        ("files", ["/etc/passwd"]),
    ],
)
async def test_path_escapes_are_refused_before_anything_runs(
    api: Api, root: Path, field: str, value: Any
) -> None:
    code, body = await _refused(api, body=_body(**{field: value}))
    assert code == 400, body
    _assert_error(body, "bad_path")
    assert not (root / "work").exists()


async def test_a_symlink_out_of_the_root_is_forbidden(api: Api, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.csv").write_text("a\n1\n")
    os.symlink(outside, root / "link")
    for body in (
        _body(notebook_path="link/escaped.ipynb"),
        _body(files=["link/data.csv"]),
    ):
        code, answer = await _refused(api, body=body)
        assert code == 403, answer
        _assert_error(answer, "forbidden_path")
    assert not (outside / "escaped.ipynb").exists()


async def test_a_missing_or_invalid_blueprint_is_400(api: Api, root: Path) -> None:
    code, body = await _refused(
        api, body=_body(planner={"kind": "blueprint", "path": "blueprints/none.yaml"})
    )
    assert code == 400
    assert "no such file" in body["message"]

    code, body = await _refused(
        api, body=_body(planner={"kind": "blueprint", "path": "blueprints/invalid.yaml"})
    )
    assert code == 400
    _assert_error(body, "invalid_blueprint")
    assert body["details"]["filename"] == "blueprints/invalid.yaml"
    assert any(error["line"] for error in body["details"]["errors"])


async def test_missing_input_files_are_400(api: Api, root: Path) -> None:
    code, body = await _refused(api, body=_body(files=["data/none.csv", "blueprints/quick.yaml"]))
    assert code == 400
    assert body["details"] == {"field": "files", "missing": ["data/none.csv"]}


async def test_unknown_workflows_are_404(api: Api, root: Path) -> None:
    for method, parts in (
        ("GET", ("workflows", "wf-nope")),
        ("DELETE", ("workflows", "wf-nope")),
        ("GET", ("workflows", "wf-nope", "trace")),
        ("GET", ("workflows", "wf-nope", "diagram")),
    ):
        code, body = await api.call(method, *parts)
        assert code == 404, (method, parts, body)
        _assert_error(body, "not_found")
    code, body = await api.command("wf-nope", action="pause", expected_version=0)
    assert code == 404
    _assert_error(body, "not_found")


async def test_unknown_api_paths_answer_json_404(api: Api) -> None:
    code, body = await api.call("GET", "no", "such", "thing")
    assert code == 404
    _assert_error(body, "not_found")
    code, body = await api.call("POST", "workflows", "wf-1", "explode", body={})
    assert code == 404
    _assert_error(body, "not_found")


async def test_list_refuses_a_bad_notebook_filter(api: Api) -> None:
    code, body = await api.call("GET", "workflows", params={"notebook_path": "../x.ipynb"})
    assert code == 400
    _assert_error(body, "bad_path")
    assert await api.ok("GET", "workflows") == {"workflows": []}


async def test_the_openapi_document_is_served(api: Api, jp_base_url: str) -> None:
    document = await api.ok("GET", "openapi.json")
    assert document["servers"] == [{"url": f"{jp_base_url}notebook-bcc/api"}]
    assert "/workflows/{workflow_id}/commands" in document["paths"]


def test_the_store_lives_under_the_jupyter_data_dir(bcc_app: NotebookBccApp) -> None:
    from jupyter_core.paths import jupyter_data_dir

    assert bcc_app.serverapp is not None
    root = bcc_app.serverapp.root_dir
    assert Path(bcc_app.store_path) == default_store_path(jupyter_data_dir(), root)
    assert (
        Path(bcc_app.store_path).parent.parent
        == Path(jupyter_data_dir()) / "notebook_bcc" / "roots"
    )
    assert recorded_root(Path(bcc_app.store_path)) == os.path.realpath(root)
    settings = bcc_app.service_settings()
    assert settings.engine.confirm_irreversible is True
    assert settings.engine.auto_confirm is False
    assert settings.restart_policy == "resume"
    assert bcc_app.current_activity() is None


def _route_patterns(router: Any) -> list[str]:
    """Every path pattern of a tornado router, nested routers (per host) included."""
    patterns: list[str] = []
    for rule in getattr(router, "rules", []):
        regex = getattr(rule.matcher, "regex", None)
        if regex is not None:
            patterns.append(regex.pattern)
        patterns.extend(_route_patterns(rule.target))
    return patterns


async def test_every_route_the_server_registers_is_in_openapi(
    api: Api, jp_serverapp: Any, jp_base_url: str
) -> None:
    document = await api.ok("GET", "openapi.json")
    prefix = f"{jp_base_url}notebook-bcc/api"
    registered = set()
    for pattern in _route_patterns(jp_serverapp.web_app.default_router):
        if not pattern.startswith(prefix) or "(?P<rest>" in pattern:
            continue  # another extension's route, or the catch-all answering 404
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern.removesuffix("$"))
        registered.add(path.removeprefix(prefix))
    assert {"/documents", "/documents/merge", "/workflows/{workflow_id}"} <= registered
    assert registered == set(document["paths"])
    schemas = document["components"]["schemas"]
    hold = document["paths"]["/documents"]["post"]
    assert hold["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/HoldRequest"
    }
    assert set(schemas["HoldAnswer"]["properties"]) == {"ttl", "collaborative", "documents"}
    assert set(schemas["MergeAnswer"]["properties"]) >= {"version", "token", "ops"}
