"""REST fuzz (issue 19.4): hostile bodies on every endpoint never give a 5xx or a traceback.

A seeded generator (the session's Hypothesis seed, printed at the start of the run and
replayable with ``--hypothesis-seed``) sends :data:`PER_ENDPOINT` hostile requests to each
endpoint of one test server that holds a live workflow waiting on a decision: random JSON of
every type, mutations of valid bodies (wrong types, coerced versions, over-long strings, path
escapes, unknown keys), raw bytes that are not JSON, not UTF-8, nested 30 to 5,000 deep, with
NaN, or over the size cap. Every answer must be a JSON 4xx, the server log must hold no
traceback or error, and a refused command must leave the workflow's snapshot unchanged. Slow
mode (``NOTEBOOK_BCC_SLOW=1``) sends >= 2,000 per endpoint.
"""

from __future__ import annotations

import asyncio
import json
import random
import string
from collections.abc import Callable
from time import monotonic
from typing import Any
from urllib.parse import quote

import pytest

from notebook_bcc.server.limits import MAX_BODY_BYTES
from tests.conftest import SLOW
from tests.server.conftest import Api
from tests.server.hostile import nested, trapped_log


async def _settled_listing(api: Api, workflow_id: str, timeout: float = 30.0) -> Any:
    """``GET workflows`` once the workflow's run loop has stopped: it stops a moment after the
    waiting state is committed (the final notebook write), and ``running`` says so."""
    deadline = monotonic() + timeout
    while True:
        listed = await api.ok("GET", "workflows")
        entry = next(w for w in listed["workflows"] if w["workflow_id"] == workflow_id)
        if not entry["running"]:
            return listed
        assert monotonic() < deadline, f"the run loop did not stop: {entry}"
        await asyncio.sleep(0.05)


PER_ENDPOINT = 2_000 if SLOW else 200
"""Hostile requests per endpoint."""

NOTEBOOK = "work/fuzz.ipynb"

_PATHS = ["../x", "/etc/passwd", "a/../../b", "~root", "C:x", "a\\b", "a\x00b", "", ".", "x" * 5000]
_STRINGS = [*_PATHS, "\u202e", "💥" * 100, "NaN", "70", "70.0", "true", "null", "{}", "[]"]


def _string(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.4:
        return rng.choice(_STRINGS)
    if pick < 0.5:
        return "y" * rng.choice([1_001, 4_097, 100_001])
    alphabet = string.printable + "\u00e9\u4e2d\ud7ff\x7f"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))


def hostile_value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value: every type, edge numbers, odd strings, shallow containers."""
    kind = rng.randrange(10 if depth < 3 else 7)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, 2**63, -(2**63), 10**30, rng.randint(-5, 10**6)])
    if kind == 3:
        return rng.choice([0.0, -0.0, 1e308, -1e308, 5e-324, 70.0, rng.random()])
    if kind in (4, 5, 6):
        return _string(rng)
    if kind in (7, 8):
        return [hostile_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_string(rng)[:20]: hostile_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _raw(rng: random.Random) -> bytes:
    """A body that is not valid JSON, or valid but hostile at the byte level."""
    choice = rng.randrange(9)
    if choice == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
    if choice == 1:
        return nested(rng.choice([33, 100, 1_000, 5_000]))
    if choice == 2:
        return b'{"a":' * rng.choice([40, 1_000]) + b"1" + b"}" * rng.choice([0, 40, 1_000])
    if choice == 3:
        return rng.choice([b"NaN", b'{"expected_version": Infinity}', b"[-Infinity]"])
    if choice == 4:
        return b'{"expected_version": ' + b"9" * rng.choice([5_000, 20_000]) + b"}"
    if choice == 5:
        return b"\xef\xbb\xbf" + json.dumps(hostile_value(rng)).encode()
    if choice == 6:
        return json.dumps(hostile_value(rng)).encode()[: rng.randint(0, 30)]
    if choice == 7:
        return b'{"action": "pause", "action": "run", "expected_version": -5}'
    return '"\udcff"'.encode("utf-8", "surrogatepass")


def _mutate(rng: random.Random, valid: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    body = json.loads(json.dumps(valid))
    for _ in range(rng.randint(1, 3)):
        target = rng.choice([*keys, "extra"])
        if target == "extra":
            body[_string(rng)[:30] or "x"] = hostile_value(rng)
        else:
            body[target] = hostile_value(rng)
    return body


def hostile_bodies(
    rng: random.Random, count: int, valid: dict[str, Any], keys: list[str]
) -> list[bytes]:
    """``count`` hostile bodies for an endpoint whose valid body is ``valid``."""
    bodies: list[bytes] = [b" " * (MAX_BODY_BYTES + 1)]  # once per endpoint: it costs 1 MB
    while len(bodies) < count:
        pick = rng.random()
        if pick < 0.45:
            bodies.append(json.dumps(_mutate(rng, valid, keys)).encode())
        elif pick < 0.75:
            bodies.append(json.dumps(hostile_value(rng)).encode())
        else:
            bodies.append(_raw(rng))
    return bodies


async def _send(
    api: Api, method: str, parts: tuple[str, ...], body: bytes | None, params: Any = None
) -> tuple[int, Any]:
    response = await api.fetch(
        "notebook-bcc",
        "api",
        *parts,
        method=method,
        body=body,
        params=params,
        allow_nonstandard_methods=True,
        follow_redirects=False,
        raise_error=False,
    )
    assert response.code != 599, response.error
    decoded = json.loads(response.body) if response.body else None
    return response.code, decoded


def _check(code: int, answer: Any, what: str, seed: int) -> None:
    assert code < 500, f"{what}: {code} {answer} (replay: --hypothesis-seed={seed})"
    if code >= 400:
        assert set(answer) == {"code", "message", "details"}, (what, answer)


@pytest.fixture
def seed(pytestconfig: pytest.Config) -> int:
    """This session's Hypothesis seed (printed at the start of the run)."""
    return int(pytestconfig.getoption("hypothesis_seed") or 0)


async def test_no_hostile_body_gives_a_5xx_or_a_traceback_or_changes_state(
    api: Api, root: Any, jp_serverapp: Any, seed: int
) -> None:
    rng = random.Random(seed)
    started = await api.start(NOTEBOOK, "blueprints/confirm.yaml")
    workflow_id = started["workflow_id"]
    before = await api.wait(workflow_id, lambda s: bool(s["run"]["pending"]))
    version = before["version"]
    listed = await _settled_listing(api, workflow_id)

    def no_current_version(raw: bytes) -> bytes:
        """Never the one command that would apply: a valid shape with the current version."""
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            return raw
        current = isinstance(data, dict) and type(data.get("expected_version")) is int
        if current and data["expected_version"] == version:
            data["expected_version"] = version + 1_000
            return json.dumps(data).encode()
        return raw

    valid_command = {"decide": before["run"]["pending"][0]["id"], "decision": "approve"}
    valid_command["expected_version"] = version - 1  # stale: a 409 if everything else holds
    valid_create = {
        "notebook_path": NOTEBOOK,  # busy: a 409 if everything else holds
        "planner": {"kind": "blueprint", "path": "blueprints/quick.yaml"},
        "problem": "p",
        "files": [],
        "options": {"auto_confirm": True},
    }
    endpoints: list[tuple[str, tuple[str, ...], Callable[[bytes], bytes], list[bytes]]] = [
        (
            "POST",
            ("workflows", workflow_id, "commands"),
            no_current_version,
            hostile_bodies(rng, PER_ENDPOINT, valid_command, list(valid_command)),
        ),
        (
            "POST",
            ("workflows",),
            lambda raw: raw,
            hostile_bodies(rng, PER_ENDPOINT, valid_create, list(valid_create)),
        ),
    ]
    with trapped_log(jp_serverapp) as trap:
        for method, parts, fix, bodies in endpoints:
            for raw in bodies:
                body = fix(raw)
                code, answer = await _send(api, method, parts, body)
                _check(code, answer, f"{method} {'/'.join(parts)} {body[:200]!r}", seed)
                if parts[-1] == "commands":
                    assert code in (400, 409, 413), (body[:200], answer)
                    now = await api.snapshot(workflow_id)
                    assert now["version"] == version, f"a refused command changed state: {body!r}"
                    assert now["run"]["pending"] == before["run"]["pending"]
        # every other endpoint: hostile ids, query values and bodies
        others = [
            ("GET", ("workflows",)),
            ("GET", ("workflows", "{id}")),
            ("GET", ("workflows", "{id}", "trace")),
            ("GET", ("workflows", "{id}", "diagram")),
            ("DELETE", ("workflows", "{id}")),
            ("POST", ("workflows", "{id}", "commands")),
            ("GET", ("fsm",)),
            ("GET", ("openapi.json",)),
            ("GET", ("planners",)),
        ]
        for method, template in others:
            bodies = hostile_bodies(rng, PER_ENDPOINT, {"x": 1}, ["x"])
            for raw in bodies:
                fake = quote(_string(rng)[:200], safe="") or "none"
                if fake == workflow_id:
                    fake = "not-" + fake
                parts = tuple(fake if p == "{id}" else p for p in template)
                params = {
                    "notebook_path": _string(rng)[:300],
                    "machine": rng.choice(["fsm", "stages", _string(rng)[:50]]),
                }
                code, answer = await _send(api, method, parts, raw, params)
                _check(code, answer, f"{method} {'/'.join(parts)} {raw[:200]!r}", seed)
    assert trap.tracebacks() == [], trap.tracebacks()[:5]
    after = await api.snapshot(workflow_id)
    assert after["version"] == version
    assert await api.ok("GET", "workflows") == listed, "no workflow was created or removed"
    assert not (root / "work" / "a.ipynb").exists()
    await api.ok("DELETE", "workflows", workflow_id)
