"""The extension asks the server's Authorizer, for its own resource and for the ones it uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jupyter_server.auth.authorizer import Authorizer

from tests.server.conftest import Api


class NoNotebookWrites(Authorizer):
    """Lets a user read everything and run kernels, but not write files."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        """Refuse writing contents."""
        return not (resource == "contents" and action == "write")


class ReadOnlyBcc(Authorizer):
    """Lets a user read notebook-bcc but not act on it."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        """Refuse anything but reading notebook_bcc."""
        return not (resource == "notebook_bcc" and action != "read")


@pytest.fixture(params=[NoNotebookWrites, ReadOnlyBcc])
def jp_server_config(request: Any) -> dict[str, Any]:
    """The test server with a restrictive authorizer."""
    return {
        "ServerApp": {
            "jpserver_extensions": {"notebook_bcc": True, "jupyter_server_terminals": False},
            "allow_unauthenticated_access": False,
            "authorizer_class": f"{__name__}.{request.param.__name__}",
        },
    }


async def test_a_user_who_may_not_act_cannot_start_a_workflow(api: Api, root: Path) -> None:
    code, body = await api.call(
        "POST",
        "workflows",
        body={
            "notebook_path": "work/a.ipynb",
            "planner": {"kind": "blueprint", "path": "blueprints/quick.yaml"},
        },
    )
    assert code == 403
    assert body["code"] == "forbidden"
    assert "not authorized" in body["message"]
    assert not (root / "work").exists()
    assert await api.ok("GET", "workflows") == {"workflows": []}, "reading is allowed"
