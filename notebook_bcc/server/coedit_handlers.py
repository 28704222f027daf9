"""REST routes of co-editing (see :mod:`notebook_bcc.server.coedit`), used by the panel.

- ``POST {base}notebook-bcc/api/documents`` ``{holder, paths, dirty}``: the browser ``holder``
  has these notebooks open, ``dirty`` of them with unsaved edits (a heartbeat; an empty list
  releases them). Answers the hold's ``ttl``, whether collaboration rooms are used, and for
  each path with a workflow its ``workflow_id``, cells ``version`` and whether this holder is
  the path's ``writer`` (the one window that takes the workflow's cells and saves them; the
  others reload the file while they are clean).
- ``POST .../documents/merge`` ``{holder, path, cells, document_modified, reloaded}``: the
  operations that put the workflow's cells into the browser's document (``cells`` =
  ``[[cell id, source], ...]`` of that document in order; ``reloaded``: Lab replaced the
  document with its file since the last merge).
- ``POST .../documents/ack`` ``{path, token, saved, detached, deleted}``: the browser applied
  the plan ``token`` and saved it (``saved`` = the file's new ``last_modified``).
"""

from __future__ import annotations

import logging
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.utils import url_path_join
from pydantic import BaseModel
from tornado import web

from notebook_bcc.server.coedit import Coediting
from notebook_bcc.server.coedit_models import (
    AckAnswer,
    AckRequest,
    HeldDocument,
    HoldAnswer,
    HoldRequest,
    MergeAnswer,
    MergeRequest,
)
from notebook_bcc.server.contents import notebook_api_path
from notebook_bcc.server.errors import ServerError
from notebook_bcc.server.handlers import URL_PREFIX, BccAPIHandler

log = logging.getLogger(__name__)

COEDIT_SETTING = "notebook_bcc_coedit"
"""Tornado settings key of the server's :class:`Coediting`."""


class NoWorkflowError(ServerError):
    """No workflow writes this notebook (404)."""

    status = 404
    code = "not_found"


class _CoeditHandler(BccAPIHandler):
    @property
    def coedit(self) -> Coediting:
        """The server's co-editing registry."""
        coedit: Coediting = self.settings[COEDIT_SETTING]
        return coedit

    def writer(self, raw: str) -> Any:
        path = notebook_api_path(raw)
        found = self.coedit.writer_for(path)
        if found is None:
            raise NoWorkflowError(
                f"no workflow writes {path!r} in this server", details={"path": path}
            )
        return found[1]

    def answer(self, data: BaseModel) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(data.model_dump_json())


class DocumentsHandler(_CoeditHandler):
    """``POST .../documents``: a browser's heartbeat for the notebooks it has open."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Hold the paths; answer which have a workflow and at which cells version."""
        request = self.parse(HoldRequest)
        paths = [notebook_api_path(raw) for raw in request.paths]
        dirty = [notebook_api_path(raw) for raw in request.dirty]
        leases = self.coedit.leases
        leases.hold(request.holder, paths, dirty)
        documents = []
        for path in paths:
            found = self.coedit.writer_for(path)
            if found is None:
                continue
            workflow_id, writer = found
            await writer.settled()  # a file write in flight ends before the browser goes on
            documents.append(
                HeldDocument(
                    path=path,
                    workflow_id=workflow_id,
                    version=writer.version,
                    writer=leases.writer(path) == request.holder,
                )
            )
        self.answer(
            HoldAnswer(
                ttl=self.coedit.leases.ttl,
                collaborative=self.coedit.collaborative,
                documents=documents,
            )
        )


class MergeHandler(_CoeditHandler):
    """``POST .../documents/merge``: the operations for a browser's document."""

    @web.authenticated
    @authorized
    def post(self) -> None:
        """A merge plan (``token``, ``ops`` with each cell's JSON, ``metadata``)."""
        request = self.parse(MergeRequest)
        writer = self.writer(request.path)
        plan = writer.merge_for_document(
            request.holder,
            list(request.cells),
            request.document_modified,
            reloaded=request.reloaded,
        )
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "merge plan %s for %s of %s at cells version %s: %s",
                plan["token"][:8],
                request.holder[:8],
                request.path,
                plan["version"],
                ", ".join(_op_words(op) for op in plan["ops"]) or "nothing to do",
            )
        self.answer(MergeAnswer.model_validate(plan))


class AckHandler(_CoeditHandler):
    """``POST .../documents/ack``: a plan was applied and saved."""

    @web.authenticated
    @authorized
    def post(self) -> None:
        """``{acknowledged}``: False when the plan is unknown (superseded): merge again."""
        request = self.parse(AckRequest)
        writer = self.writer(request.path)
        done = writer.acknowledge(request.token, request.saved, request.detached, request.deleted)
        log.debug(
            "merge plan %s of %s saved at %s: %s",
            request.token[:8],
            request.path,
            request.saved,
            "acknowledged" if done else "unknown (superseded)",
        )
        self.answer(AckAnswer(acknowledged=done))


def _op_words(op: dict[str, Any]) -> str:
    """One plan operation for the debug log: ``insert 3 <id> (running)``."""
    cell = op.get("cell") or {}
    own = (cell.get("metadata") or {}).get("notebook_bcc") or {}
    status = own.get("status") if isinstance(own, dict) else None
    return f"{op.get('op')} {op.get('index')} {str(op.get('cell_id'))[:12]} ({status})"


def coedit_routes() -> list[tuple[str, type[web.RequestHandler]]]:
    """The co-editing routes (relative to the base URL; registered before the catch-all)."""
    documents = url_path_join(URL_PREFIX, "api", "documents")
    return [
        (documents, DocumentsHandler),
        (url_path_join(documents, "merge"), MergeHandler),
        (url_path_join(documents, "ack"), AckHandler),
    ]


__all__ = [
    "COEDIT_SETTING",
    "AckRequest",
    "HoldRequest",
    "MergeRequest",
    "coedit_routes",
]
