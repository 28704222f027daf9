"""Jupyter's XSRF check on cookie-authenticated POSTs, and the stream socket's authentication."""

from __future__ import annotations

import json
import urllib.parse
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError, HTTPResponse

from tests.server.conftest import Api, Fetch, WsFetch

NO_TOKEN = {"Authorization": ""}


def _cookies(response: HTTPResponse) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    for header in response.headers.get_list("Set-Cookie"):
        jar.load(header)
    return {name: morsel.value for name, morsel in jar.items()}


async def _cookie_login(fetch: Fetch, token: str) -> dict[str, str]:
    page = await fetch("login", headers=dict(NO_TOKEN))
    cookies = _cookies(page)
    xsrf = cookies["_xsrf"]
    answer = await fetch(
        "login",
        method="POST",
        body=urllib.parse.urlencode({"_xsrf": xsrf, "password": token}),
        headers={**NO_TOKEN, "Cookie": f"_xsrf={xsrf}"},
        follow_redirects=False,
        raise_error=False,
    )
    assert answer.code == 302, answer.code
    cookies.update(_cookies(answer))
    assert any(name.startswith("username-") for name in cookies), cookies
    return cookies


async def test_a_cookie_post_needs_the_xsrf_header(
    jp_fetch: Fetch, jp_serverapp: Any, root: Path
) -> None:
    cookies = await _cookie_login(jp_fetch, jp_serverapp.identity_provider.token)
    cookie_header = "; ".join(f"{k}={v}" for k, v in cookies.items())
    body = json.dumps(
        {
            "notebook_path": "work/xsrf.ipynb",
            "planner": {"kind": "blueprint", "path": "blueprints/quick.yaml"},
        }
    )
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch(
            "notebook-bcc",
            "api",
            "workflows",
            method="POST",
            body=body,
            headers={**NO_TOKEN, "Cookie": cookie_header},
        )
    assert caught.value.code == 403
    assert caught.value.response is not None
    refusal = json.loads(caught.value.response.body)
    assert refusal["code"] == "forbidden"
    assert "xsrf" in refusal["message"].lower()
    assert not (root / "work").exists(), "nothing ran without the XSRF token"

    created = await jp_fetch(
        "notebook-bcc",
        "api",
        "workflows",
        method="POST",
        body=body,
        headers={**NO_TOKEN, "Cookie": cookie_header, "X-XSRFToken": cookies["_xsrf"]},
    )
    assert created.code == 201
    snapshot = json.loads(created.body)
    assert created.headers["Location"].endswith(
        f"/notebook-bcc/api/workflows/{snapshot['workflow_id']}"
    )

    listed = await jp_fetch(
        "notebook-bcc", "api", "workflows", headers={**NO_TOKEN, "Cookie": cookie_header}
    )
    assert json.loads(listed.body)["workflows"][0]["workflow_id"] == snapshot["workflow_id"]
    await Api(jp_fetch).wait_status(snapshot["workflow_id"], "completed", "failed")


async def test_the_stream_refuses_a_client_without_credentials(
    jp_ws_fetch: WsFetch, api: Api, root: Path
) -> None:
    with pytest.raises(HTTPClientError) as caught:
        await jp_ws_fetch(
            "notebook-bcc", "api", "workflows", "wf-any", "stream", headers=dict(NO_TOKEN)
        )
    assert caught.value.code in {302, 403}, "not upgraded"


async def test_the_stream_of_an_unknown_workflow_is_404(jp_ws_fetch: WsFetch, root: Path) -> None:
    with pytest.raises(HTTPClientError) as caught:
        await jp_ws_fetch("notebook-bcc", "api", "workflows", "wf-nope", "stream")
    assert caught.value.code == 404
