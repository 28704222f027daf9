"""REST handlers of the server extension.

All handlers derive from :class:`BccAPIHandler`: it names the authorization resource
(``notebook_bcc``) and answers every error with one JSON shape, ``{code, message, details}``,
the same body :meth:`notebook_bcc.errors.NotebookBccError.to_json` gives the CLI.
Every HTTP method is wrapped in ``@web.authenticated`` then ``@authorized``, in that order
(jupyter_server checks for the former and refuses unauthenticated requests with 403).
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server.utils import url_path_join
from tornado import web

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.table import table_rows
from notebook_bcc.models.names import Event, State

URL_PREFIX = "/notebook-bcc"
"""Path prefix of every route, relative to the server's base_url."""

AUTH_RESOURCE = "notebook_bcc"
"""Resource name passed to the server's Authorizer for every request to this extension."""

BAD_INPUT_STATUS = HTTPStatus.BAD_REQUEST
"""HTTP status for a :class:`NotebookBccError` a handler lets escape (bad input)."""


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


class BccAPIHandler(ExtensionHandlerMixin, APIHandler):
    """Base of every notebook-bcc REST handler.

    It ties the handler to the extension app (``ExtensionHandlerMixin``), to the server's
    authentication and XSRF checks (``APIHandler``) and to the ``notebook_bcc`` authorization
    resource, and maps every error to one JSON shape so clients need a single error parser.
    """

    auth_resource = AUTH_RESOURCE

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Answer an error as JSON ``{code, message, details}``.

        A :class:`NotebookBccError` escaping a handler is bad input: it is answered with 400
        rather than tornado's 500.
        """
        exc_info = kwargs.get("exc_info")
        exc = exc_info[1] if exc_info else None
        if isinstance(exc, NotebookBccError):
            status_code = BAD_INPUT_STATUS
            self.set_status(status_code)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(error_body(status_code, exc)))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        """Log project errors (bad input) as one warning line, not as an uncaught traceback."""
        if isinstance(value, NotebookBccError):
            self.log.warning("%s %s: %s", self.request.method, self.request.path, value)
            return
        super().log_exception(typ, value, tb)


def fsm_document() -> dict[str, Any]:
    """The workflow state machine as JSON: the panel draws and validates against it."""
    return {
        "states": [state.value for state in State],
        "events": [event.value for event in Event],
        "transitions": table_rows(),
    }


class FsmHandler(BccAPIHandler):
    """``GET {base_url}notebook-bcc/api/fsm``: the 14 states, 22 events and 45 transitions."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        """Return :func:`fsm_document`; read-only, so any user allowed to *read* may call it."""
        self.finish(json.dumps(fsm_document()))


def route_table() -> list[tuple[str, type[BccAPIHandler]]]:
    """Every ``(pattern, handler)`` the extension serves, relative to the server's base_url."""
    return [
        (url_path_join(URL_PREFIX, "api", "fsm"), FsmHandler),
    ]
