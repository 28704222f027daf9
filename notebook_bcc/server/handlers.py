"""REST and websocket handlers of the server extension: parse, call the service, serialize.

All REST handlers derive from :class:`BccAPIHandler`: it names the authorization resource
(``notebook_bcc``) and answers every error with one JSON shape, ``{code, message, details}``,
the same body :meth:`notebook_bcc.errors.NotebookBccError.to_json` gives the CLI, with the
status :func:`~notebook_bcc.server.errors.status_for` gives. Every HTTP method is wrapped in
``@web.authenticated`` then ``@authorized``, in that order (jupyter_server checks for the
former and refuses unauthenticated requests with 403); the stream socket uses
``@ws_authenticated`` like jupyter_server's own events socket. POST and DELETE go through
Jupyter's XSRF check (``JupyterHandler.prepare``) when the client authenticates by cookie.

Handlers hold no workflow logic: :class:`~notebook_bcc.server.service.WorkflowService` does
the work and the engine decides.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from contextlib import suppress
from http import HTTPStatus
from typing import Any, TypeVar, cast

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server.utils import url_path_join
from pydantic import BaseModel, ValidationError
from tornado import web, websocket
from tornado.iostream import StreamClosedError

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.table import table_rows
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.names import Event, State
from notebook_bcc.server.body_limit import BoundedBody
from notebook_bcc.server.encoding import event_text
from notebook_bcc.server.errors import BadRequestError, status_for
from notebook_bcc.server.limits import parse_json_body
from notebook_bcc.server.models import CreateWorkflowRequest, StreamSnapshot
from notebook_bcc.server.openapi import openapi_document
from notebook_bcc.server.service import WorkflowService
from notebook_bcc.server.stream import EventFeed, Message, SnapshotMessage

M = TypeVar("M", bound=BaseModel)
F = TypeVar("F", bound=Callable[..., Any])


URL_PREFIX = "/notebook-bcc"
"""Path prefix of every route, relative to the server's base_url."""

AUTH_RESOURCE = "notebook_bcc"
"""Resource name passed to the server's Authorizer for every request to this extension."""

SERVICE_SETTING = "notebook_bcc_service"

FILE_IDS_SETTING = "notebook_bcc_file_ids"
"""The tornado setting under which the app publishes its file-id follower, if any
(:mod:`notebook_bcc.server.file_ids`, which names the same key)."""
"""The tornado setting under which the extension publishes its :class:`WorkflowService`."""

_WORKFLOW = r"(?P<workflow_id>[A-Za-z0-9_.-]+)"


def authorized_to(action: str) -> Callable[[F], F]:
    """``@authorized(action)`` with its type kept (jupyter_server's decorator loses it)."""
    return cast("Callable[[F], F]", authorized(action))


def _code_for_status(status_code: int) -> str:
    """A machine-readable error code from an HTTP status: 404 -> ``not_found``."""
    try:
        phrase = HTTPStatus(status_code).phrase
    except ValueError:
        return "http_error"
    return phrase.lower().replace("-", "_").replace(" ", "_")


def error_body(status_code: int, exc: BaseException | None) -> dict[str, Any]:
    """The ``{code, message, details}`` body for an error answered with ``status_code``.

    Project errors keep their own code and details; tornado ``HTTPError`` s (auth refusals,
    404, 405) get a code derived from the status; anything else is an ``internal_error``
    whose message reveals nothing about the server.
    """
    if isinstance(exc, NotebookBccError):
        return exc.to_json()
    if isinstance(exc, web.HTTPError):
        message = exc.log_message % exc.args if exc.log_message and exc.args else exc.log_message
        return {
            "code": _code_for_status(status_code),
            "message": message or exc.reason or _reason(status_code),
            "details": {},
        }
    if exc is not None:
        return {"code": "internal_error", "message": "Unhandled server error", "details": {}}
    return {"code": _code_for_status(status_code), "message": _reason(status_code), "details": {}}


def _reason(status_code: int) -> str:
    try:
        return HTTPStatus(status_code).phrase
    except ValueError:
        return "Unknown HTTP error"


class JsonErrorsMixin:
    """One error mapper for every handler of the extension (REST and the socket's handshake)."""

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Answer an error as JSON ``{code, message, details}``, never as an HTML page.

        A :class:`NotebookBccError` escaping a handler is answered with the status
        :func:`status_for` gives it (400 for plain bad input) rather than tornado's 500.
        """
        handler: Any = self
        exc_info = kwargs.get("exc_info")
        exc = exc_info[1] if exc_info else None
        if isinstance(exc, NotebookBccError):
            status_code = status_for(exc)
            handler.set_status(status_code)
        handler.set_header("Content-Type", "application/json")
        handler.finish(json.dumps(error_body(status_code, exc)))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        """Log project errors (bad input) as one warning line, not as an uncaught traceback."""
        handler: Any = self
        if isinstance(value, NotebookBccError):
            handler.log.warning("%s %s: %s", handler.request.method, handler.request.path, value)
            return
        super().log_exception(typ, value, tb)  # type: ignore[misc]


@web.stream_request_body
class BccAPIHandler(BoundedBody, JsonErrorsMixin, ExtensionHandlerMixin, APIHandler):
    """Base of every notebook-bcc REST handler.

    It ties the handler to the extension app (``ExtensionHandlerMixin``), to the server's
    authentication and XSRF checks (``APIHandler``) and to the ``notebook_bcc`` authorization
    resource, and maps every error to one JSON shape so clients need a single error parser.
    The body is streamed and bounded before it is buffered (:mod:`.body_limit`).
    """

    auth_resource = AUTH_RESOURCE

    async def prepare(self) -> None:  # type: ignore[override]
        """The server's checks, then the body size cap on every method (413 when over),
        before any of the body is read.

        An unauthenticated request is left to ``@web.authenticated`` (403), so the size check
        reveals nothing to a client that may not call the API; its body is not kept.
        """
        await super().prepare()
        self.bound_body(authenticated=self.current_user is not None)
        if self.current_user is not None:
            # a notebook renamed outside Jupyter is followed before it is looked up
            file_ids = self.settings.get(FILE_IDS_SETTING)
            if file_ids is not None:
                await file_ids.check(wait=False)

    @property
    def service(self) -> WorkflowService:
        """The extension's workflow service."""
        service: WorkflowService = self.settings[SERVICE_SETTING]
        return service

    async def require(self, action: str, resource: str) -> None:
        """Refuse (403) unless the user may also ``action`` on another server ``resource``.

        Starting a workflow runs code in a kernel and writes a notebook: a user the
        authorizer would not let do either through Jupyter's own API cannot do it here.
        """
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, action, resource)
        )
        if not allowed:
            raise web.HTTPError(403, f"User is not authorized to {action} on resource: {resource}.")

    def json_body(self) -> Any:
        """The request body as JSON, bounded first (:mod:`~notebook_bcc.server.limits`).

        Too large, nested too deep, or not JSON: a 400 saying which.
        """
        return parse_json_body(self.body_bytes())

    def parse(self, model: type[M]) -> M:
        """The request body validated as ``model``; problems become one 400 naming each field."""
        data = self.json_body()
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            problems = [
                "/" + "/".join(str(p) for p in err["loc"]) + ": " + err["msg"]
                for err in exc.errors()
            ]
            raise BadRequestError(
                "invalid request body: " + "; ".join(problems), details={"errors": problems}
            ) from None

    def reply(self, model: BaseModel, status: int = HTTPStatus.OK) -> None:
        """Serialize a wire model (by alias) as the JSON answer."""
        self.reply_text(model.model_dump_json(by_alias=True), status)

    def reply_text(self, text: str, status: int = HTTPStatus.OK) -> None:
        """Answer JSON text serialised already."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(text)


def fsm_document() -> dict[str, Any]:
    """The workflow state machine as JSON: the panel draws and validates against it."""
    return {
        "states": [state.value for state in State],
        "events": [event.value for event in Event],
        "transitions": table_rows(),
    }


class FsmHandler(BccAPIHandler):
    """``GET {base_url}notebook-bcc/api/fsm``: the 14 states, 22 events and 46 transitions."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        """Return :func:`fsm_document`; read-only, so any user allowed to *read* may call it."""
        self.finish(json.dumps(fsm_document()))


class OpenApiHandler(BccAPIHandler):
    """``GET .../openapi.json``: the REST contract generated from the wire models."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        """The OpenAPI 3.1 document, with this server's base_url."""
        self.finish(json.dumps(openapi_document(self.base_url)))


class PlannersHandler(BccAPIHandler):
    """``GET .../planners``: the planner kinds and whether this server runs them."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        """A :class:`PlannerList` (the start form greys out unavailable kinds)."""
        self.reply(self.service.planner_kinds())


class WorkflowsHandler(BccAPIHandler):
    """``/workflows``: list (``GET``, ``?notebook_path=``) and start (``POST``) workflows."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Summaries of the workflows in the store, optionally of one notebook."""
        path = self.get_query_argument("notebook_path", None)
        self.reply(await self.service.list_workflows(path))

    @web.authenticated
    @authorized_to("execute")
    async def post(self) -> None:
        """Start a workflow: 201 with its snapshot (``Location`` names it)."""
        await self.require("execute", "kernels")
        await self.require("write", "contents")
        request = self.parse(CreateWorkflowRequest)
        snapshot = await self.service.create(request)
        self.set_header(
            "Location",
            url_path_join(self.base_url, URL_PREFIX, "api", "workflows", snapshot.workflow_id),
        )
        self.reply(snapshot, HTTPStatus.CREATED)


class WorkflowHandler(BccAPIHandler):
    """``/workflows/{id}``: the snapshot (``GET``); stop and release it (``DELETE``)."""

    @web.authenticated
    @authorized
    async def get(self, workflow_id: str) -> None:
        """The current snapshot (its JSON text made once per version, see :mod:`.encoding`)."""
        self.reply_text(await self.service.snapshot_text(workflow_id))

    @web.authenticated
    @authorized
    async def delete(self, workflow_id: str) -> None:
        """Stop the workflow (its running cell finishes first); answer its final snapshot."""
        self.reply(await self.service.delete(workflow_id))


class CommandsHandler(BccAPIHandler):
    """``POST /workflows/{id}/commands``: a D3 command, ``expected_version`` required."""

    @web.authenticated
    @authorized_to("execute")
    async def post(self, workflow_id: str) -> None:
        """Apply the command; 200 with the snapshot right after it applied."""
        await self.require("execute", "kernels")
        snapshot = await self.service.command(workflow_id, self.json_body())
        self.reply(snapshot)


class TraceHandler(BccAPIHandler):
    """``GET /workflows/{id}/trace``: the full FSM history and the execution trace."""

    @web.authenticated
    @authorized
    async def get(self, workflow_id: str) -> None:
        """History and trace rows from the store, oldest first."""
        self.reply(await self.service.trace(workflow_id))


class DiagramHandler(BccAPIHandler):
    """``GET /workflows/{id}/diagram?machine=fsm|stages``: Mermaid, current state marked."""

    @web.authenticated
    @authorized
    async def get(self, workflow_id: str) -> None:
        """The diagram of the FSM (default) or of the stage machine."""
        machine = self.get_query_argument("machine", "fsm")
        self.reply(await self.service.diagram(workflow_id, machine))


class NotFoundHandler(BccAPIHandler):
    """Anything else under the API prefix: a JSON 404 (never the server's HTML page)."""

    def _missing(self) -> None:
        raise web.HTTPError(404, f"no such notebook-bcc endpoint: {self.request.path}")

    @web.authenticated
    @authorized
    def get(self, rest: str) -> None:
        """404."""
        self._missing()

    @web.authenticated
    @authorized
    def post(self, rest: str) -> None:
        """404."""
        self._missing()

    @web.authenticated
    @authorized
    def delete(self, rest: str) -> None:
        """404."""
        self._missing()


BATCH_EVENTS = 100
"""The most events one stream message carries."""


def encode_events(events: Sequence[WorkflowEvent]) -> str:
    """Events queued together (a commit makes about a dozen) as one stream message: a JSON
    array of them, in order. One websocket frame each cost the server a write per event:
    about a fifth of its event loop under ``make bench-server``'s 20 workflows."""
    return "[" + ",".join(event_text(event) for event in events) + "]"


def encode_message(message: Message) -> str:
    """A stream message as the JSON text sent on the socket."""
    if isinstance(message, SnapshotMessage):
        wire = StreamSnapshot(reason=message.reason, snapshot=message.snapshot)
        return wire.model_dump_json(by_alias=True)
    return event_text(message)


class StreamHandler(
    JsonErrorsMixin,
    WebSocketMixin,
    websocket.WebSocketHandler,
    ExtensionHandlerMixin,
    JupyterHandler,
):
    """``GET /workflows/{id}/stream``: the workflow's D4 events over a websocket.

    Authenticated like jupyter_server's events socket (``@ws_authenticated``, then the
    authorizer for *read* on ``notebook_bcc``), with the server's origin checks and keep-alive
    pings (``WebSocketMixin``). Each client reads its own bounded feed (see
    :mod:`notebook_bcc.server.stream`); a disconnect releases it.
    """

    auth_resource = AUTH_RESOURCE

    feed: EventFeed | None = None
    _release: Any = None
    _pump: asyncio.Future[None] | None = None

    def set_default_headers(self) -> None:
        """No page headers (CSP and friends) on a websocket handshake."""

    @property
    def service(self) -> WorkflowService:
        """The extension's workflow service."""
        service: WorkflowService = self.settings[SERVICE_SETTING]
        return service

    async def pre_get(self) -> None:
        """Authorize the user, then open the workflow's feed (404 if it does not exist)."""
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "read", AUTH_RESOURCE)
        )
        if not allowed:
            raise web.HTTPError(403, f"User is not authorized to read on {AUTH_RESOURCE}.")
        workflow_id = self.path_kwargs["workflow_id"]
        self.feed, self._release = await self.service.open_feed(workflow_id)

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        """Upgrade to a websocket once the user is authenticated and authorized.

        A request that is not a websocket handshake gets a JSON 400 (tornado would answer in
        plain text) before any feed is opened. tornado's ``get`` returns once the socket is
        closed, or at once when it refused the handshake (bad origin): either way the feed is
        released then.
        """
        upgrade = self.request.headers.get("Upgrade", "").lower()
        connection = self.request.headers.get("Connection", "").lower()
        if upgrade != "websocket" or "upgrade" not in connection:
            raise web.HTTPError(
                400, "this endpoint is a websocket: send an Upgrade: websocket handshake"
            )
        await self.pre_get()
        try:
            await super().get(*args, **kwargs)
        finally:
            if self.ws_connection is None:
                self._close_feed()

    def open(self, *args: Any, **kwargs: Any) -> None:
        """Start the keep-alive pings and the task that sends the feed."""
        super().open(*args, **kwargs)
        self._pump = asyncio.ensure_future(self._send_feed())

    async def _send_feed(self) -> None:
        feed = self.feed
        if feed is None:
            return
        while True:
            message = await feed.next()
            if message is None:
                self.close(1000, "the workflow's stream ended")
                return
            text = encode_message(message)
            if isinstance(message, WorkflowEvent):
                more = feed.queued_events(BATCH_EVENTS - 1)
                if more:
                    text = encode_events([message, *more])
            try:
                await self.write_message(text)
            except (websocket.WebSocketClosedError, StreamClosedError):
                return

    def on_message(self, message: str | bytes) -> None:
        """The channel is one-way; commands go over REST, where XSRF is checked."""

    def on_close(self) -> None:
        """Release the feed and stop sending."""
        self._close_feed()
        pump, self._pump = self._pump, None
        if pump is not None and not pump.done():
            pump.cancel()
            with suppress(asyncio.CancelledError):
                pump.add_done_callback(_consume)

    def _close_feed(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()


def _consume(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


def route_table() -> list[tuple[str, type[web.RequestHandler]]]:
    """Every ``(pattern, handler)`` the extension serves, relative to the server's base_url."""
    api = url_path_join(URL_PREFIX, "api")
    workflow = url_path_join(api, "workflows", _WORKFLOW)
    return [
        (url_path_join(api, "fsm"), FsmHandler),
        (url_path_join(api, "openapi.json"), OpenApiHandler),
        (url_path_join(api, "planners"), PlannersHandler),
        (url_path_join(api, "workflows"), WorkflowsHandler),
        (workflow, WorkflowHandler),
        (url_path_join(workflow, "commands"), CommandsHandler),
        (url_path_join(workflow, "trace"), TraceHandler),
        (url_path_join(workflow, "diagram"), DiagramHandler),
        (url_path_join(workflow, "stream"), StreamHandler),
        (url_path_join(api, "(?P<rest>.*)"), NotFoundHandler),
    ]
