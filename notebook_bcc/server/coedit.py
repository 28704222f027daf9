"""Co-editing: the workflow writes into the notebook *document* the user has open.

Two writers on one file lose cells: JupyterLab's document model and the server's writer each
save their own version, and Lab's "File Changed" dialog asks the user to pick one. So while a
notebook is open, the server does not write its file at all:

- **jupyter-collaboration installed** (``jupyter_server_ydoc``): when the notebook has a
  collaboration room, the workflow's cells are applied to the room's shared document
  (:meth:`Coediting.room_document`); every client sees them at once and the room saves the
  file itself. Nothing else writes the file.
- **Without it**: the panel *holds* each notebook that is open in Lab (a lease renewed by
  heartbeats, :class:`DocumentLeases`). While a notebook is held the server's writer defers;
  the panel asks for a merge plan against its document (``POST .../documents/merge``),
  applies the cells into Lab's document model, saves through Lab and acknowledges. Lab is then
  the file's only writer, so it never sees the file change under it.
- Neither (the notebook is closed, the browser gone): the writer saves the file through the
  contents manager, merging with what is there (D10), as before.

The cell-level rules are :func:`notebook_bcc.server.doc_merge.plan_merge`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from time import monotonic
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from notebook_bcc.server.writer import ContentsNotebookWriter

log = logging.getLogger(__name__)

DEFAULT_TTL = 90.0
"""Seconds a hold lasts without a heartbeat (long: hidden browser tabs throttle timers)."""


class DocumentLeases:
    """Which notebooks (API paths) are open in a browser whose panel applies workflow cells.

    A notebook open in two browser windows without collaboration has two document models;
    if both applied and saved the workflow's cells, each save would change the file under
    the other and Lab would ask "File Changed". So each held path has one *writer* holder
    (:meth:`writer`): the window the user is editing in (its document has unsaved changes),
    else the window that has held it longest. The others follow the file: they reload it
    while their document is clean.
    """

    def __init__(self, ttl: float = DEFAULT_TTL, clock: Callable[[], float] = monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._holders: dict[str, tuple[float, frozenset[str]]] = {}
        # (holder, path) -> when the holder first held it / first reported it dirty
        self._since: dict[tuple[str, str], float] = {}
        self._dirty_since: dict[tuple[str, str], float] = {}

    def hold(self, holder: str, paths: Iterable[str], dirty: Iterable[str] = ()) -> None:
        """``holder`` has exactly ``paths`` open now, ``dirty`` of them with unsaved edits
        (an empty list releases them)."""
        chosen = frozenset(paths)
        unsaved = frozenset(dirty) & chosen
        now = self._clock()
        for key in [k for k in self._since if k[0] == holder and k[1] not in chosen]:
            del self._since[key]
        for key in [k for k in self._dirty_since if k[0] == holder and k[1] not in unsaved]:
            del self._dirty_since[key]
        if not chosen:
            self._holders.pop(holder, None)
            return
        self._holders[holder] = (now + self.ttl, chosen)
        for path in chosen:
            self._since.setdefault((holder, path), now)
        for path in unsaved:
            self._dirty_since.setdefault((holder, path), now)

    def release(self, holder: str) -> None:
        """``holder`` closed (its tab went away)."""
        self.hold(holder, ())

    def _live(self, path: str) -> list[str]:
        now = self._clock()
        live = []
        for holder, (until, paths) in list(self._holders.items()):
            if until < now:
                self.release(holder)
            elif path in paths:
                live.append(holder)
        return live

    def held(self, path: str) -> bool:
        """Whether some live holder has ``path`` open."""
        return bool(self._live(path))

    def writer(self, path: str) -> str | None:
        """The holder whose document takes the workflow's cells and saves them, or None.

        The earliest to have unsaved edits (the user types there: their save writes both),
        else the earliest to hold the path; stable while nothing changes.
        """
        live = self._live(path)
        dirty = [h for h in live if (h, path) in self._dirty_since]
        if dirty:
            return min(dirty, key=lambda h: (self._dirty_since[(h, path)], h))
        if live:
            return min(live, key=lambda h: (self._since.get((h, path), 0.0), h))
        return None

    def renamed(self, old: str, new: str) -> None:
        """Follow a rename: the holders of ``old`` now hold ``new`` (until their next beat)."""
        for holder, (until, paths) in list(self._holders.items()):
            if old in paths:
                self._holders[holder] = (until, (paths - {old}) | {new})
                for table in (self._since, self._dirty_since):
                    if (holder, old) in table:
                        table[(holder, new)] = table.pop((holder, old))


class Coediting:
    """The leases, the collaboration rooms and the workflows' writers, by notebook path."""

    def __init__(
        self,
        leases: DocumentLeases | None = None,
        ydoc: Callable[[], Any | None] | None = None,
    ) -> None:
        self.leases = leases or DocumentLeases()
        self._ydoc = ydoc or (lambda: None)
        self._writers: dict[str, ContentsNotebookWriter] = {}

    # -- writers --------------------------------------------------------------------------

    def register(self, workflow_id: str, writer: ContentsNotebookWriter) -> None:
        """A workflow's writer (the latest registered for a path wins)."""
        self._writers.pop(workflow_id, None)
        self._writers[workflow_id] = writer

    def unregister(self, workflow_id: str) -> None:
        """The workflow's writer has nothing left to write."""
        self._writers.pop(workflow_id, None)

    def retire(self, workflow_id: str, writer: ContentsNotebookWriter) -> None:
        """A newer workflow writes ``writer``'s notebook: it writes nothing more (left
        registered, it wrote the file once more when the hold lapsed)."""
        writer.gone = True
        self.unregister(workflow_id)

    def writer_for(self, path: str) -> tuple[str, ContentsNotebookWriter] | None:
        """The newest writer whose notebook is ``path`` now, with its workflow id."""
        for workflow_id, writer in reversed(list(self._writers.items())):
            # a writer whose notebook was deleted answers to nothing: a new notebook created
            # under that name must not receive the old workflow's cells
            if writer.api_path == path and not writer.gone:
                return workflow_id, writer
        return None

    def writers(self) -> list[tuple[str, ContentsNotebookWriter]]:
        """Every registered writer with its workflow id."""
        return list(self._writers.items())

    # -- collaboration rooms --------------------------------------------------------------

    @property
    def collaborative(self) -> bool:
        """Whether jupyter_server_ydoc runs in this server."""
        return self._ydoc() is not None

    async def room_document(self, path: str) -> Any | None:
        """The live shared notebook of ``path``'s collaboration room, or None (no room)."""
        extension = self._ydoc()
        if extension is None:
            return None
        try:
            return await extension.get_document(
                path=path, content_type="notebook", file_format="json", copy=False
            )
        except Exception as exc:  # no file id yet, a room starting or stopping
            log.debug("notebook-bcc: no collaboration room for %s: %r", path, exc)
            return None


def ydoc_extension(serverapp: Any) -> Callable[[], Any | None]:
    """A getter for the running ``jupyter_server_ydoc`` extension app of ``serverapp``."""

    def get() -> Any | None:
        manager = getattr(serverapp, "extension_manager", None)
        apps = getattr(manager, "extension_apps", {}) if manager is not None else {}
        for app in apps.get("jupyter_server_ydoc", ()):
            if hasattr(app, "get_document"):
                return app
        return None

    return get


__all__ = ["DEFAULT_TTL", "Coediting", "DocumentLeases", "ydoc_extension"]
