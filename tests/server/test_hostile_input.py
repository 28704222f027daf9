"""Hostile input over REST is refused with a typed 4xx before it costs anything (issue 19.4).

Bodies too large or nested too deep, ``expected_version`` that is not a JSON integer,
over-long strings, hostile blueprints (size, alias and merge-key bombs, ``!!python`` tags) and
replay transcripts that reach out of the root through symlinks or absolute paths: each is a
4xx naming what and where (API paths only), with no traceback in the server's log.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.server.limits import MAX_BODY_BYTES, MAX_JSON_DEPTH, MAX_PROBLEM_CHARS
from tests.server.conftest import Api
from tests.server.hostile import nested, trapped_log

GOOD_PLANNER = {"kind": "blueprint", "path": "blueprints/quick.yaml"}


def _body(**overrides: Any) -> dict[str, Any]:
    return {"notebook_path": "work/a.ipynb", "planner": GOOD_PLANNER, **overrides}


def _no_server_path(body: Any, *paths: Path) -> None:
    text = json.dumps(body)
    for path in paths:
        assert str(path) not in text, f"a server path leaked: {text}"


# -- bodies ---------------------------------------------------------------------------------


@pytest.mark.parametrize("parts", [("workflows",), ("workflows", "wf-1", "commands")])
async def test_json_nested_1000_deep_is_400_without_traceback(
    api: Api, root: Path, jp_serverapp: Any, parts: tuple[str, ...]
) -> None:
    with trapped_log(jp_serverapp) as trap:
        for raw in (nested(1000), b'{"a":' * 1000 + b"1" + b"}" * 1000, nested(100_000)):
            code, body = await api.call("POST", *parts, raw=raw)
            assert code == 400, body
            assert body["code"] == "json_too_deep", body
            assert str(MAX_JSON_DEPTH) in body["message"]
    assert trap.tracebacks() == []


async def test_brackets_inside_strings_do_not_count_as_depth(api: Api, root: Path) -> None:
    code, body = await api.call("POST", "workflows", body=_body(problem="[" * 1000, colour=1))
    assert code == 400
    assert "/colour" in body["message"], "validated as usual: the depth check let it through"


@pytest.mark.parametrize("method", ["POST", "DELETE", "GET"])
async def test_an_oversized_body_is_413_on_every_method(
    api: Api, root: Path, jp_serverapp: Any, method: str
) -> None:
    raw = b" " * (MAX_BODY_BYTES + 1)
    parts = ("workflows",) if method != "DELETE" else ("workflows", "wf-1")
    with trapped_log(jp_serverapp) as trap:
        response = await api.fetch(
            "notebook-bcc",
            "api",
            *parts,
            method=method,
            body=raw,
            allow_nonstandard_methods=True,
            raise_error=False,
        )
    assert response.code == 413, response.body
    answer = json.loads(response.body)
    assert answer["code"] == "body_too_large"
    assert answer["details"] == {"limit": MAX_BODY_BYTES, "size": MAX_BODY_BYTES + 1}
    assert trap.tracebacks() == []


@pytest.mark.parametrize("token", [b"NaN", b"Infinity", b"-Infinity"])
async def test_nan_and_infinity_are_not_json(api: Api, root: Path, token: bytes) -> None:
    raw = b'{"notebook_path": "work/a.ipynb", "options": {"cell_timeout": ' + token + b"}}"
    code, body = await api.call("POST", "workflows", raw=raw)
    assert code == 400
    assert body["code"] == "bad_request"
    assert "not JSON" in body["message"]


async def test_an_over_long_problem_or_path_is_400(api: Api, root: Path) -> None:
    code, body = await api.call(
        "POST", "workflows", body=_body(problem="p" * (MAX_PROBLEM_CHARS + 1))
    )
    assert code == 400
    assert "/problem" in body["message"]
    code, body = await api.call(
        "POST", "workflows", body=_body(notebook_path="a/" * 3000 + "x.ipynb")
    )
    assert code == 400
    assert "/notebook_path" in body["message"]
    code, body = await api.call("POST", "workflows", body=_body(files=["x.csv"] * 1001))
    assert code == 400
    assert "/files" in body["message"]
    assert not (root / "work").exists()


# -- expected_version (needs a live workflow) ------------------------------------------------


async def test_expected_version_must_be_a_json_integer(api: Api, root: Path) -> None:
    started = await api.start("work/confirm.ipynb", "blueprints/confirm.yaml")
    waiting = await api.wait(started["workflow_id"], lambda s: bool(s["run"]["pending"]))
    version = waiting["version"]
    workflow_id = waiting["workflow_id"]
    for bad in (float(version), str(version), True, None, [version], {"v": version}, -1):
        code, body = await api.command(workflow_id, action="pause", expected_version=bad)
        assert code == 400, (bad, body)
        assert "/expected_version" in body["message"], body
        assert (await api.snapshot(workflow_id))["version"] == version, (
            "a refused command changed state"
        )
    raw = b'{"action": "pause", "expected_version": ' + str(version).encode() + b".0}"
    code, body = await api.call("POST", "workflows", workflow_id, "commands", raw=raw)
    assert code == 400, body
    code, body = await api.command(workflow_id, action="pause", expected_version=version)
    assert code == 200, body
    await api.ok("DELETE", "workflows", workflow_id)


# -- blueprints --------------------------------------------------------------------------------


def _alias_bomb() -> str:
    big = "x" * 500_000
    return "name: &a " + big + "\nstates:\n  s:\n    steps: [" + ", ".join(["*a"] * 100) + "]\n"


def _merge_bomb() -> str:
    lines = ["l0: &l0 {a: 1, b: 2}"]
    for i in range(1, 24):
        lines.append(f"l{i}: &l{i}\n  <<: [*l{i - 1}, *l{i - 1}]\n  k{i}: 1")
    return "\n".join(lines) + "\nstates: {s: {}}\n"


HOSTILE_BLUEPRINTS = {
    "oversized": (
        "name: " + "n" * 1_950_000 + "\nstates: {s: {}}\n" + "#" * 100_000,
        None,
        "limit",
    ),
    "alias_bomb": (_alias_bomb(), 4, "characters"),  # the list of aliases on line 4
    "merge_bomb": (_merge_bomb(), -1, "values"),  # -1: the line of whichever merge overflows
    "python_apply": ("states: {s: {}}\nname: !!python/object/apply:os.system ['id']\n", 2, "tag"),
    "python_name": ("states: {s: {}}\nname: !!python/name:os.system\n", 2, "tag"),
    "custom_tag": ("states: {s: {}}\nname: !evil x\n", 2, "tag"),
    "long_name": ("name: " + "n" * 20_000 + "\nstates:\n  s: {}\n", 1, "name"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_BLUEPRINTS))
async def test_hostile_blueprints_are_400_naming_file_and_line(
    api: Api, root: Path, jp_serverapp: Any, case: str
) -> None:
    text, line, fragment = HOSTILE_BLUEPRINTS[case]
    (root / "bad").mkdir()
    (root / "bad" / f"{case}.yaml").write_text(text, encoding="utf-8")
    planner = {"kind": "blueprint", "path": f"bad/{case}.yaml"}
    with trapped_log(jp_serverapp) as trap:
        code, body = await api.call("POST", "workflows", body=_body(planner=planner))
    assert code == 400, body
    assert body["code"] == "invalid_blueprint"
    assert body["details"]["filename"] == f"bad/{case}.yaml"
    first = body["details"]["errors"][0]
    if line == -1:
        assert isinstance(first["line"], int), body
        assert first["line"] > 1, body
    else:
        assert first["line"] == line, body
    assert fragment in first["message"], body
    assert len(json.dumps(body)) < 10_000, "the error does not echo the hostile input"
    _no_server_path(body, root)
    assert trap.tracebacks() == []
    assert not (root / "work").exists()


async def test_a_slow_blueprint_does_not_block_other_requests(api: Api, root: Path) -> None:
    """The YAML is parsed in a worker thread: the loop answers GETs meanwhile."""
    import asyncio

    (root / "bad").mkdir()
    (root / "bad" / "slow.yaml").write_text(
        "states:\n" + "".join(f"  s{i}: {{steps: []}}\n" for i in range(1_500)) + "bogus: 1\n",
        encoding="utf-8",
    )
    start = asyncio.ensure_future(
        api.call(
            "POST", "workflows", body=_body(planner={"kind": "blueprint", "path": "bad/slow.yaml"})
        )
    )
    answered_while_parsing = 0
    while not start.done():
        code, _ = await api.call("GET", "fsm")
        assert code == 200
        answered_while_parsing += int(not start.done())
    code, body = await start
    assert code == 400, body
    assert answered_while_parsing > 0, "no request was answered while the blueprint was parsed"


# -- replay transcripts --------------------------------------------------------------------


def _header(files: list[dict[str, Any]]) -> str:
    return json.dumps(
        {
            "type": "header",
            "format": "notebook-bcc-transcript",
            "version": 1,
            "planner": {"kind": "blueprint", "settings": {}},
            "problem": "replayed",
            "files": files,
        }
    )


def _replay(path: str) -> dict[str, Any]:
    return _body(planner={"kind": "replay", "path": path})


async def test_a_transcript_that_is_a_symlink_out_of_the_root_is_403(
    api: Api, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "transcript.jsonl").write_text(_header([]) + "\n")
    (root / "rec").mkdir()
    os.symlink(outside / "transcript.jsonl", root / "rec" / "transcript.jsonl")
    code, body = await api.call("POST", "workflows", body=_replay("rec"))
    assert code == 403, body
    assert body["code"] == "forbidden_path"
    assert "rec/transcript.jsonl" in body["message"]
    _no_server_path(body, root, tmp_path)
    assert not (root / "work").exists()


async def test_a_symlinked_input_inside_the_transcript_folder_is_403(
    api: Api, root: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("password\nhunter2\n")
    rec = root / "rec"
    (rec / "inputs").mkdir(parents=True)
    (rec / "transcript.jsonl").write_text(
        _header([{"source": "data.csv", "path": "inputs/data.csv"}]) + "\n"
    )
    os.symlink(secret, rec / "inputs" / "data.csv")
    code, body = await api.call("POST", "workflows", body=_replay("rec"))
    assert code == 403, body
    assert body["code"] == "forbidden_path"
    assert "rec/inputs/data.csv" in body["message"]
    _no_server_path(body, root, tmp_path)


@pytest.mark.parametrize("bad", ["/etc/passwd", "../../outside.csv", "inputs/../../x.csv"])
async def test_an_absolute_or_climbing_transcript_file_is_400(
    api: Api, root: Path, jp_serverapp: Any, bad: str
) -> None:
    rec = root / "rec"
    rec.mkdir()
    (rec / "transcript.jsonl").write_text(_header([{"source": "x.csv", "path": bad}]) + "\n")
    with trapped_log(jp_serverapp) as trap:
        code, body = await api.call("POST", "workflows", body=_replay("rec"))
    assert code == 400, body
    assert body["code"] == "bad_request"
    assert "files[0].path" in body["message"]
    assert "rec/transcript.jsonl" in body["message"]
    _no_server_path(body, root)
    assert trap.tracebacks() == []


async def test_a_broken_transcript_names_its_api_path_only(api: Api, root: Path) -> None:
    rec = root / "rec"
    rec.mkdir()
    (rec / "transcript.jsonl").write_text("{not json\n")
    code, body = await api.call("POST", "workflows", body=_replay("rec"))
    assert code == 400, body
    assert "rec/transcript.jsonl:1" in body["message"]
    _no_server_path(body, root)


async def test_a_50_mb_name_is_refused_by_size_before_it_is_read(
    api: Api, root: Path, jp_serverapp: Any
) -> None:
    (root / "bad").mkdir()
    with (root / "bad" / "huge.yaml").open("wb") as handle:
        handle.write(b"states: {s: {}}\nname: ")
        handle.write(b"n" * 50_000_000)
        handle.write(b"\n")
    planner = {"kind": "blueprint", "path": "bad/huge.yaml"}
    with trapped_log(jp_serverapp) as trap:
        code, body = await api.call("POST", "workflows", body=_body(planner=planner))
    assert code == 400, body
    assert body["code"] == "invalid_blueprint"
    assert body["message"] == "bad/huge.yaml: file is 50000023 bytes; the limit is 2000000 bytes"
    assert trap.tracebacks() == []
    assert await api.ok("GET", "workflows") == {"workflows": []}


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"cell_timeout": 1e308}, "cell_timeout"),
        ({"auto_confirm": "yes"}, "auto_confirm"),
        ({"confirm_irreversible": 1}, "confirm_irreversible"),
        ({"max_hops": 10**30}, "max_hops"),
        ({"max_hops": 2.0}, "max_hops"),
    ],
)
async def test_options_of_the_wrong_type_or_size_are_400_naming_the_field(
    api: Api, root: Path, jp_serverapp: Any, options: dict[str, Any], field: str
) -> None:
    """A sloppy client's ``"yes"`` must not turn auto-confirm on, and a timeout too large to
    schedule must not start a run that then dies of an internal error."""
    with trapped_log(jp_serverapp) as trap:
        code, body = await api.call("POST", "workflows", body=_body(options=options))
    assert code == 400, body
    assert f"options/{field}" in body["message"] or field in json.dumps(body), body
    assert trap.tracebacks() == []
    listing = await api.ok("GET", "workflows")
    assert listing["workflows"] == [], "nothing was started"


async def test_a_notebook_name_longer_than_a_file_system_holds_is_400(
    api: Api, root: Path, jp_serverapp: Any
) -> None:
    with trapped_log(jp_serverapp) as trap:
        code, body = await api.call(
            "POST", "workflows", body=_body(notebook_path="h/" + "a" * 300 + ".ipynb")
        )
    assert code == 400, body
    assert "at most 255" in body["message"], body
    assert trap.tracebacks() == []
    assert not (root / "h").exists()
