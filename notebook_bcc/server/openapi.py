"""``openapi.json``: the REST contract, generated from the pydantic wire models.

Nothing here is written by hand but the list of operations; every schema comes from the
models the handlers parse and serialize, so the document cannot drift from the code. The
websocket stream is described in its operation's text (OpenAPI has no websocket object).
"""

from __future__ import annotations

import json
from typing import Any

from notebook_bcc import __version__

API_PREFIX = "notebook-bcc/api"
"""Where the API lives, relative to the server's base_url."""

_JSON = "application/json"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {_JSON: {"schema": _ref(name)}}}


def _errors(*codes: int) -> dict[str, Any]:
    why = {
        400: "Bad input: a body or query that does not validate, a bad path, a refused command.",
        403: "Not authenticated or not authorized, an XSRF failure, or a path escaping the root.",
        404: "No such workflow (for /documents: no workflow writes that notebook).",
        409: "Conflict: a stale expected_version (details.snapshot is current), a notebook "
        "that already has an active workflow, or a workflow not running in this server.",
        501: "The planner kind is not available in this installation.",
    }
    return {str(code): _json("ErrorBody", why[code]) for code in codes}


def _limit(maximum: int, default: int) -> dict[str, Any]:
    """The ``limit`` query parameter of a listing that answers its newest rows."""
    return {
        "name": "limit",
        "in": "query",
        "required": False,
        "description": "At most this many (the newest).",
        "schema": {"type": "integer", "minimum": 1, "maximum": maximum, "default": default},
    }


_WORKFLOW_ID = {
    "name": "workflow_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
}

STREAM_DESCRIPTION = """A websocket (upgrade this GET), authenticated like every endpoint.

Messages are JSON text. The first is a `StreamSnapshot` with `reason: "hello"`; then the
`WorkflowEvent`s (D4) as they are committed: one event as an object, or the events committed
together (or queued while the client read) as a JSON array of them, in order. A client that
reads too slowly gets a `StreamSnapshot` with `reason: "resync"` instead of the events it
missed; when the workflow leaves this server the last message is a `StreamSnapshot` with
`reason: "closed"` and the socket closes. Events whose `version` is not above the last
snapshot's are already reflected in it. The channel is one-way: send commands with
`POST /workflows/{workflow_id}/commands`."""


def _operations() -> dict[str, Any]:
    return {
        "/fsm": {
            "get": {
                "operationId": "getFsm",
                "summary": "The workflow FSM: 14 states, 22 events, 46 transitions.",
                "responses": {"200": _json("FsmDocument", "The FSM table."), **_errors(403)},
            }
        },
        "/openapi.json": {
            "get": {
                "operationId": "getOpenApi",
                "summary": "This document.",
                "responses": {
                    "200": {"description": "OpenAPI 3.1", "content": {_JSON: {"schema": {}}}},
                    **_errors(403),
                },
            }
        },
        "/planners": {
            "get": {
                "operationId": "listPlanners",
                "summary": "The planner kinds, whether this server runs each and why not.",
                "responses": {
                    "200": _json("PlannerList", "Every kind, available or not."),
                    **_errors(403),
                },
            }
        },
        "/workflows": {
            "get": {
                "operationId": "listWorkflows",
                "summary": "The workflows the store knows, oldest first.",
                "parameters": [
                    {
                        "name": "notebook_path",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string"},
                        "description": "Only the workflows of this notebook (an API path).",
                    }
                ],
                "responses": {
                    "200": _json("WorkflowList", "Summaries."),
                    **_errors(400, 403),
                },
            },
            "post": {
                "operationId": "createWorkflow",
                "summary": "Start a workflow on a notebook (created when missing).",
                "requestBody": {
                    "required": True,
                    "content": {_JSON: {"schema": _ref("CreateWorkflowRequest")}},
                },
                "responses": {
                    "201": _json(
                        "WorkflowSnapshot",
                        "The new workflow's snapshot; its workflow_id names it (Location).",
                    ),
                    **_errors(400, 403, 409, 501),
                },
            },
        },
        "/workflows/{workflow_id}": {
            "parameters": [_WORKFLOW_ID],
            "get": {
                "operationId": "getWorkflow",
                "summary": "The workflow's current snapshot.",
                "responses": {
                    "200": _json("WorkflowSnapshot", "The snapshot."),
                    **_errors(403, 404),
                },
            },
            "delete": {
                "operationId": "deleteWorkflow",
                "summary": "Stop the workflow and release its notebook; the notebook and the "
                "session kernel stay.",
                "responses": {
                    "200": _json("WorkflowSnapshot", "The final snapshot."),
                    **_errors(403, 404),
                },
            },
        },
        "/workflows/{workflow_id}/commands": {
            "parameters": [_WORKFLOW_ID],
            "post": {
                "operationId": "sendCommand",
                "summary": "Apply a D3 command (an FSM event, a decision, run / pause).",
                "requestBody": {
                    "required": True,
                    "content": {_JSON: {"schema": _ref("Command")}},
                },
                "responses": {
                    "200": _json("WorkflowSnapshot", "The snapshot right after the command."),
                    **_errors(400, 403, 404, 409),
                },
            },
        },
        "/workflows/{workflow_id}/trace": {
            "parameters": [_WORKFLOW_ID],
            "get": {
                "operationId": "getTrace",
                "summary": "The full FSM history and execution trace.",
                "responses": {
                    "200": _json("TraceDocument", "History and trace."),
                    **_errors(403, 404),
                },
            },
        },
        "/workflows/{workflow_id}/exchanges": {
            "parameters": [
                _WORKFLOW_ID,
                {
                    "name": "behavior",
                    "in": "query",
                    "required": False,
                    "description": "Only the exchanges of this behavior id.",
                    "schema": {"type": "string", "minLength": 1, "maxLength": 200},
                },
                _limit(500, 500),
            ],
            "get": {
                "operationId": "getExchanges",
                "summary": "What an AI planner (llm, http, replay) was asked and answered, "
                "per call: request summary, raw reply, tokens, latency (blueprint: none).",
                "responses": {
                    "200": _json("ExchangeList", "The exchanges, oldest first."),
                    **_errors(400, 403, 404),
                },
            },
        },
        "/workflows/{workflow_id}/events": {
            "parameters": [
                _WORKFLOW_ID,
                {
                    "name": "after",
                    "in": "query",
                    "required": False,
                    "description": "Only events with a larger seq.",
                    "schema": {"type": "integer", "minimum": 0, "default": 0},
                },
                _limit(1000, 200),
            ],
            "get": {
                "operationId": "getEvents",
                "summary": "The stored WorkflowEvents (the stream's, with the same seq): what "
                "happened before a client connected.",
                "responses": {
                    "200": _json("EventList", "The events, oldest first."),
                    **_errors(400, 403, 404),
                },
            },
        },
        "/workflows/{workflow_id}/diagram": {
            "parameters": [
                _WORKFLOW_ID,
                {
                    "name": "machine",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "string", "enum": ["fsm", "stages"], "default": "fsm"},
                },
            ],
            "get": {
                "operationId": "getDiagram",
                "summary": "Mermaid stateDiagram-v2 with the current state marked.",
                "responses": {
                    "200": _json("DiagramDocument", "The diagram."),
                    **_errors(400, 403, 404),
                },
            },
        },
        **_document_operations(),
        "/workflows/{workflow_id}/stream": {
            "parameters": [_WORKFLOW_ID],
            "get": {
                "operationId": "streamWorkflow",
                "summary": "Live WorkflowEvents over a websocket.",
                "description": STREAM_DESCRIPTION,
                "responses": {
                    "101": {"description": "Switching to the websocket protocol."},
                    **_errors(403, 404),
                },
            },
        },
    }


def _post(operation_id: str, summary: str, request: str, answer: str, *codes: int) -> Any:
    return {
        "post": {
            "operationId": operation_id,
            "summary": summary,
            "requestBody": {"required": True, "content": {_JSON: {"schema": _ref(request)}}},
            "responses": {"200": _json(answer, "The answer."), **_errors(*codes)},
        }
    }


def _document_operations() -> dict[str, Any]:
    """Co-editing: how the panel keeps an open notebook and the workflow's cells in step."""
    return {
        "/documents": _post(
            "holdDocuments",
            "Heartbeat: this browser has these notebooks open (an empty list releases "
            "them); the server then writes their cells through the browser's document.",
            "HoldRequest",
            "HoldAnswer",
            400,
            403,
        ),
        "/documents/merge": _post(
            "mergeDocument",
            "The cell operations that put the workflow's cells into the browser's document.",
            "MergeRequest",
            "MergeAnswer",
            400,
            403,
            404,
        ),
        "/documents/ack": _post(
            "acknowledgeMerge",
            "The browser applied the merge plan `token` and saved the notebook.",
            "AckRequest",
            "AckAnswer",
            400,
            403,
            404,
        ),
    }


def component_schemas() -> dict[str, Any]:
    """JSON Schemas of every model the API reads or writes, keyed by model name."""
    from pydantic import BaseModel
    from pydantic.json_schema import models_json_schema

    from notebook_bcc.models.command import Command
    from notebook_bcc.models.event import EventList, WorkflowEvent
    from notebook_bcc.models.exchanges import ExchangeList
    from notebook_bcc.models.snapshot import WorkflowSnapshot
    from notebook_bcc.server.coedit_models import COEDIT_MODELS
    from notebook_bcc.server.models import (
        CreateWorkflowRequest,
        DiagramDocument,
        ErrorBody,
        FsmDocument,
        PlannerList,
        StreamSnapshot,
        TraceDocument,
        WorkflowList,
    )

    models: list[type[BaseModel]] = [
        CreateWorkflowRequest,
        Command,
        WorkflowSnapshot,
        WorkflowEvent,
        EventList,
        WorkflowList,
        PlannerList,
        TraceDocument,
        ExchangeList,
        DiagramDocument,
        FsmDocument,
        StreamSnapshot,
        ErrorBody,
        *COEDIT_MODELS,
    ]
    _, top = models_json_schema(
        [(model, "validation") for model in models],
        by_alias=True,
        ref_template="#/components/schemas/{model}",
    )
    schemas: dict[str, Any] = top.get("$defs", {})
    return schemas


def openapi_document(base_url: str = "/") -> dict[str, Any]:
    """The OpenAPI 3.1 document of the REST API served under ``base_url``."""
    server = base_url.rstrip("/") + "/" + API_PREFIX
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "notebook-bcc",
            "version": __version__,
            "description": "Run DSLC workflows in real notebooks: the Jupyter server "
            "extension's REST API. Every endpoint requires Jupyter authentication; POST and "
            "DELETE go through Jupyter's XSRF check when authenticated by cookie. Errors are "
            "JSON {code, message, details}.",
        },
        "servers": [{"url": server}],
        "security": [{"token": []}, {"cookie": []}],
        "paths": _operations(),
        "components": {
            "schemas": component_schemas(),
            "securitySchemes": {
                "token": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "description": "`token <server token>`",
                },
                "cookie": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "username-*",
                    "description": "A Jupyter login cookie; then send X-XSRFToken with "
                    "the _xsrf cookie's value on POST and DELETE.",
                },
            },
        },
    }


def main() -> None:
    """Print openapi.json: ``python -m notebook_bcc.server.openapi > labextension/openapi.json``."""
    print(json.dumps(openapi_document("/"), indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
