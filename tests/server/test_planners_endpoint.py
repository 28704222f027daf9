"""``GET /planners`` and the ``allowed_planners`` trait (the panel's start form reads them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import Api


async def test_every_kind_is_listed_and_available_by_default(api: Api) -> None:
    body = await api.ok("GET", "planners")
    kinds = [row["kind"] for row in body["planners"]]
    assert kinds == ["blueprint", "replay", "http", "llm"]
    assert all(row["available"] and row["reason"] is None for row in body["planners"])
    assert all(row["defaults"] == {} for row in body["planners"])


class TestRestrictedServer:
    """A server that allows blueprints only, with a default blueprint configured."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config: dict[str, Any]) -> dict[str, Any]:
        config = {**jp_server_config}
        config["NotebookBccApp"] = {
            **jp_server_config["NotebookBccApp"],
            "allowed_planners": ["Blueprint"],
            "default_planner": {"kind": "blueprint", "path": "housing/workflow.yaml"},
        }
        return config

    async def test_refused_kinds_carry_the_reason(self, api: Api) -> None:
        rows = {row["kind"]: row for row in (await api.ok("GET", "planners"))["planners"]}
        assert rows["blueprint"]["available"] is True
        assert rows["blueprint"]["defaults"] == {"path": "housing/workflow.yaml"}
        for kind in ("replay", "http", "llm"):
            assert rows[kind]["available"] is False
            assert "allowed_planners" in rows[kind]["reason"]
            assert f"the {kind} planner is turned off" in rows[kind]["reason"]

    async def test_starting_a_refused_kind_is_501_and_nothing_starts(
        self, api: Api, root: Path
    ) -> None:
        code, body = await api.call(
            "POST",
            "workflows",
            body={
                "notebook_path": "nb.ipynb",
                "planner": {"kind": "http", "url": "http://127.0.0.1:9/"},
            },
        )
        assert code == 501
        assert body["code"] == "planner_unavailable"
        assert "turned off" in body["message"]
        assert body["details"] == {"kind": "http", "allowed": ["blueprint"]}
        assert (await api.ok("GET", "workflows"))["workflows"] == []
        assert not (root / "nb.ipynb").exists()


class TestBadTraitValue:
    """A misspelt kind in the configuration fails loudly at start-up, not at request time."""

    def test_unknown_kind_is_refused_by_the_trait(self) -> None:
        from traitlets import TraitError

        from notebook_bcc.server.app import NotebookBccApp

        app = NotebookBccApp()
        with pytest.raises(TraitError, match="allowed_planners"):
            app.allowed_planners = ["blueprint", "gpt"]
