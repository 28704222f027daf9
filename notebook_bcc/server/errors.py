"""Errors of the server extension and the HTTP status each project error is answered with.

The service layer raises typed :class:`~notebook_bcc.errors.NotebookBccError` s and never a
tornado ``HTTPError``; the handlers' one error mapper turns them into ``{code, message,
details}`` with the status :func:`status_for` gives. Keeping the table here (and not in each
handler) is what makes every endpoint answer the same error the same way.
"""

from __future__ import annotations

from http import HTTPStatus

from notebook_bcc.engine.decisions import DecisionGoneError
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.store.errors import (
    NotebookBusyError,
    StoreUnavailableError,
    UnknownWorkflowError,
    VersionConflictError,
)


class ServerError(NotebookBccError):
    """A request the server refuses, with the HTTP status that says why."""

    status: int = HTTPStatus.BAD_REQUEST


class BadRequestError(ServerError):
    """A request body or query that does not validate (names the field and the problem)."""

    code = "bad_request"


class PathRefusedError(ServerError):
    """An API path that is malformed, absolute or climbs out of the root with ``..``."""

    code = "bad_path"


class PathForbiddenError(ServerError):
    """An API path that resolves (through a symlink) outside the server's root."""

    code = "forbidden_path"
    status = HTTPStatus.FORBIDDEN


class ContentsError(ServerError):
    """The contents manager refused an operation; carries the status it answered."""

    code = "contents_error"

    def __init__(self, message: str, *, status: int, path: str) -> None:
        super().__init__(message, details={"path": path, "status": status})
        self.status = status


class KernelUnavailableError(ServerError):
    """No usable kernel for the notebook (kernelspec missing, the session's kernel is dead)."""

    code = "kernel_unavailable"
    status = HTTPStatus.CONFLICT


class PlannerUnavailableError(ServerError):
    """A planner kind the API knows but this installation cannot run yet."""

    code = "planner_unavailable"
    status = HTTPStatus.NOT_IMPLEMENTED


class WorkflowNotLiveError(ServerError):
    """The workflow exists in the store but no engine drives it in this server process."""

    code = "not_running"
    status = HTTPStatus.CONFLICT


class StoreAlteredError(ServerError):
    """The state database was altered behind the store's back: nothing new is written to it."""

    code = "store_altered"
    status = HTTPStatus.CONFLICT


class NotebookGoneError(ServerError):
    """The workflow's notebook was deleted: a run that went on would write to no file."""

    code = "notebook_deleted"
    status = HTTPStatus.CONFLICT


class ServiceStoppedError(ServerError):
    """The extension is shutting down and accepts no new work."""

    code = "shutting_down"
    status = HTTPStatus.SERVICE_UNAVAILABLE


def status_for(exc: NotebookBccError) -> int:
    """The HTTP status a project error is answered with (400 unless the error says otherwise).

    Conflicts (a stale ``expected_version``, a decision no longer pending, a notebook that
    already has an active workflow) are 409, an unknown workflow 404, a store that cannot be
    written 503; everything else a client can fix by changing its request is 400.
    """
    if isinstance(exc, ServerError):
        return int(exc.status)
    if isinstance(exc, VersionConflictError | NotebookBusyError | DecisionGoneError):
        return int(HTTPStatus.CONFLICT)
    if isinstance(exc, UnknownWorkflowError):
        return int(HTTPStatus.NOT_FOUND)
    if isinstance(exc, StoreUnavailableError):
        return int(HTTPStatus.SERVICE_UNAVAILABLE)
    return int(HTTPStatus.BAD_REQUEST)
