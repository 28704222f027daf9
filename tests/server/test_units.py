"""Pure pieces of the server extension: API paths, the bounded feeds, the error table, OpenAPI."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from notebook_bcc.errors import CommandError
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.snapshot import WorkflowSnapshot, new_snapshot
from notebook_bcc.schema import json_schema
from notebook_bcc.server.coedit_handlers import coedit_routes
from notebook_bcc.server.contents import (
    api_path,
    join_api,
    notebook_api_path,
    relative_to_folder,
)
from notebook_bcc.server.errors import (
    PathForbiddenError,
    PathRefusedError,
    PlannerUnavailableError,
    status_for,
)
from notebook_bcc.server.event_handlers import event_routes
from notebook_bcc.server.exchange_handlers import exchange_routes
from notebook_bcc.server.handlers import route_table
from notebook_bcc.server.limits import InvalidJsonError, parse_json_body
from notebook_bcc.server.openapi import openapi_document
from notebook_bcc.server.stream import EventFeed, SnapshotMessage, WorkflowHub
from notebook_bcc.store.errors import (
    NotebookBusyError,
    StoreUnavailableError,
    UnknownWorkflowError,
    VersionConflictError,
)


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("a.ipynb", "a.ipynb"),
        ("dir/./sub//a.ipynb", "dir/sub/a.ipynb"),
        ("dir/a.ipynb/", "dir/a.ipynb"),
    ],
)
def test_api_paths_are_normalized(raw: str, normalized: str) -> None:
    assert api_path(raw, what="x") == normalized


@pytest.mark.parametrize(
    "raw",
    ["", "  ", "/etc/passwd", "~/x", "C:x", "../x", "a/../../x", "a/..", "a\\b", "a\x00b", ".", 7],
)
def test_bad_api_paths_are_refused(raw: object) -> None:
    with pytest.raises(PathRefusedError) as caught:
        api_path(raw, what="notebook_path")
    assert caught.value.message.startswith("notebook_path")
    assert status_for(caught.value) == 400


def test_a_notebook_path_names_an_ipynb() -> None:
    assert notebook_api_path("x/y.ipynb") == "x/y.ipynb"
    with pytest.raises(PathRefusedError, match=r"not a \.ipynb"):
        notebook_api_path("x/y.py")


def test_blueprint_relative_files_stay_under_the_root() -> None:
    assert join_api("projects/housing", "data/h.csv", what="f") == "projects/housing/data/h.csv"
    assert join_api("projects/housing", "../shared/h.csv", what="f") == "projects/shared/h.csv"
    assert join_api("", "h.csv", what="f") == "h.csv"
    for bad in ("../../h.csv", "/abs.csv", "a\\b"):
        with pytest.raises(PathRefusedError):
            join_api("projects", bad, what="f")


def test_files_reach_the_kernel_relative_to_the_notebook_folder() -> None:
    assert relative_to_folder("data/h.csv", "") == "data/h.csv"
    assert relative_to_folder("data/h.csv", "analysis") == "../data/h.csv"
    assert relative_to_folder("analysis/in/h.csv", "analysis") == "in/h.csv"


def test_each_error_has_its_status() -> None:
    snap = new_snapshot("wf-1", "r")
    assert status_for(VersionConflictError("wf-1", 3, snap)) == 409
    assert status_for(NotebookBusyError("a.ipynb", "wf-0")) == 409
    assert status_for(UnknownWorkflowError("wf-9")) == 404
    assert status_for(StoreUnavailableError("locked")) == 503
    assert status_for(PathForbiddenError("out")) == 403
    assert status_for(PlannerUnavailableError("llm")) == 501
    assert status_for(CommandError("bad")) == 400


def _event(seq: int, version: int) -> WorkflowEvent:
    return WorkflowEvent(
        workflow_id="wf-1",
        seq=seq,
        version=version,
        at="2026-01-01T00:00:00Z",
        kind="run",
        run_status="running",
    )


class _Workflow:
    def __init__(self) -> None:
        self.snapshot: WorkflowSnapshot = new_snapshot("wf-1", "r")

    def at(self, version: int) -> None:
        self.snapshot = self.snapshot.model_copy(update={"version": version})


def test_a_feed_starts_with_the_snapshot_then_sends_events_in_order() -> None:
    async def scenario() -> None:
        workflow = _Workflow()
        hub = WorkflowHub(lambda: workflow.snapshot, limit=10)
        feed = hub.open()
        first = await feed.next()
        assert isinstance(first, SnapshotMessage)
        assert first.reason == "hello"
        for seq in (1, 2, 3):
            hub.publish(_event(seq, seq))
        got = [await feed.next() for _ in range(3)]
        assert [m.seq for m in got if isinstance(m, WorkflowEvent)] == [1, 2, 3]
        assert hub.clients == 1
        hub.release(feed)
        assert hub.clients == 0
        assert await feed.next() is None

    asyncio.run(scenario())


def test_a_slow_client_gets_a_fresh_snapshot_instead_of_an_unbounded_queue() -> None:
    async def scenario() -> None:
        workflow = _Workflow()
        feed = EventFeed(3, lambda: workflow.snapshot)
        assert isinstance(await feed.next(), SnapshotMessage)
        for seq in range(1, 101):
            workflow.at(seq)
            feed.push(_event(seq, seq))
        assert len(feed._events) <= 3, "the queue never grows past its limit"
        assert feed.dropped > 90
        resync = await feed.next()
        assert isinstance(resync, SnapshotMessage)
        assert resync.reason == "resync"
        assert resync.snapshot.version == 100
        # events already reflected in the resync snapshot are not sent again
        workflow.at(101)
        feed.push(_event(101, 101))
        following = await feed.next()
        assert isinstance(following, WorkflowEvent)
        assert following.version == 101

    asyncio.run(scenario())


def test_a_closed_feed_ends_with_its_final_snapshot() -> None:
    async def scenario() -> None:
        workflow = _Workflow()
        feed = EventFeed(5, lambda: workflow.snapshot)
        assert isinstance(await feed.next(), SnapshotMessage)
        waiter = asyncio.ensure_future(feed.next())
        await asyncio.sleep(0)
        assert not waiter.done(), "next() waits for a message"
        feed.close(workflow.snapshot)
        final = await waiter
        assert isinstance(final, SnapshotMessage)
        assert final.reason == "closed"
        assert await feed.next() is None
        feed.push(_event(1, 1))
        assert await feed.next() is None, "a closed feed takes no more events"

    asyncio.run(scenario())


def test_openapi_names_every_route_and_every_schema_it_uses() -> None:
    document = openapi_document("/base/")
    assert document["openapi"].startswith("3.1")
    assert document["servers"] == [{"url": "/base/notebook-bcc/api"}]
    served = set()
    for pattern, _handler in [
        *coedit_routes(),
        *exchange_routes(),
        *event_routes(),
        *route_table(),
    ]:
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern)
        if "{rest}" not in path:
            served.add(path.removeprefix("/notebook-bcc/api"))
    assert served == set(document["paths"])
    text = json.dumps(document)
    used = set(re.findall(r"#/components/schemas/([\w-]+)", text))
    assert used <= set(document["components"]["schemas"])
    request = document["components"]["schemas"]["CreateWorkflowRequest"]
    assert set(request["properties"]) == {
        "notebook_path",
        "planner",
        "problem",
        "files",
        "files_relative_to",
        "planner_paths_relative_to",
        "parameters",
        "options",
        "fresh_kernel",
    }


def test_the_server_models_are_in_the_schema_registry() -> None:
    schema = json_schema("create_workflow_request")
    assert schema["title"] == "CreateWorkflowRequest"
    assert json_schema("stream_snapshot")["properties"]["reason"]["enum"] == [
        "hello",
        "resync",
        "closed",
    ]


def test_a_body_with_a_huge_integer_is_refused_as_json_with_too_many_digits() -> None:
    """It is JSON: the error says what is wrong with it (it said "not JSON")."""
    with pytest.raises(InvalidJsonError, match="one of its integers has 5000 digits"):
        parse_json_body(b'{"expected_version": ' + b"9" * 5000 + b"}")
    assert parse_json_body(b'{"expected_version": -' + b"9" * 100 + b"}") == {
        "expected_version": -int("9" * 100)
    }
