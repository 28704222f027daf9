"""Request bodies bounded before they are buffered (issue 19 §4).

Without this, tornado reads a whole request body into memory (up to the server's
``max_body_size``, 512 MB in jupyter_server) before any handler code runs, so a 1 MB cap checked
in a handler still lets every request cost the server the full body. The REST handlers are
therefore ``@tornado.web.stream_request_body`` and use :class:`BoundedBody`:

- in ``prepare()`` (after authentication, before a byte of the body is read) a declared
  ``Content-Length`` over the limit is refused at once: **413** ``body_too_large``, and the
  connection is closed without reading the body;
- a body without a length (``Transfer-Encoding: chunked``) is counted as it arrives in
  ``data_received``; the chunk that crosses the limit gets the same 413 and nothing more is kept;
- a request that is not authenticated keeps nothing (its 403 comes from ``@web.authenticated``,
  at once when it declares an oversized body) and tornado's own body limit is lowered to the
  cap for it, so it cannot stream much either.
"""

from __future__ import annotations

from typing import Any

from tornado import web

from notebook_bcc.server.limits import MAX_BODY_BYTES, BodyTooLargeError


def too_large(size: int, limit: int, *, chunked: bool = False) -> BodyTooLargeError:
    """The 413 for a body of ``size`` bytes (for a chunked body: received so far)."""
    what = f"at least {size}" if chunked else str(size)
    details: dict[str, Any] = {"limit": limit, "size": size}
    if chunked:
        details["chunked"] = True
    return BodyTooLargeError(
        f"the request body is {what} bytes; the limit is {limit}", details=details
    )


class BoundedBody:
    """Mixin for a ``@stream_request_body`` handler: keeps at most :attr:`body_limit` bytes."""

    body_limit = MAX_BODY_BYTES
    """Largest body kept; more is a 413."""

    _kept: bytearray | None = None
    _count = 0
    _refused = False

    def bound_body(self, *, authenticated: bool) -> None:
        """From ``prepare()``: refuse a declared oversized body (raises the 413), and keep
        the body as it arrives only for an authenticated request."""
        handler: Any = self
        limit = self.body_limit
        self._count = 0
        self._refused = False
        declared = handler.request.headers.get("Content-Length")
        over = declared is not None and declared.strip().isdigit() and int(declared) > limit
        if not authenticated:
            self._kept = None
            handler.request.connection.set_max_body_size(limit)
            if over:  # the 403 the method would give, without reading the body
                self._refused = True
                raise web.HTTPError(403)
            return
        self._kept = bytearray()
        if over:
            self._refused = True
            raise too_large(int(str(declared)), limit)

    def data_received(self, chunk: bytes) -> None:
        """Count (and keep) a piece of the body; the piece that crosses the limit is a 413."""
        handler: Any = self
        if self._refused or handler._finished:
            return
        self._count += len(chunk)
        if self._count > self.body_limit:
            self._refused = True
            self._kept = None
            error = too_large(self._count, self.body_limit, chunked=True)
            handler.log.warning("%s %s: %s", handler.request.method, handler.request.path, error)
            handler.send_error(int(error.status), exc_info=(type(error), error, None))
            return
        if self._kept is not None:
            self._kept += chunk

    def body_bytes(self) -> bytes:
        """The body received (empty when none was sent or it was not kept)."""
        return bytes(self._kept) if self._kept else b""


__all__ = ["BoundedBody", "too_large"]
