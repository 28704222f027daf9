"""Saves that readers never see half done: write a temporary file, then rename it over.

jupyter_server's file contents managers save "atomically" by copying the old file aside and
then truncating and rewriting the notebook *in place*. With the async managers JupyterLab uses,
the write runs on a worker thread while the event loop keeps answering requests, so a
``GET /api/contents/<notebook>`` that lands mid-write reads an empty or partial file: Lab shows
"File Load Error ... Notebook does not appear to be JSON", and the manager's read recovery
(move the unreadable file aside, restore the copy) can even put the old version back while the
writer is still writing. A workflow saves its notebook after every cell while the panel reloads
the open document, so this race is the common case here, not a corner.

:func:`install_replace_on_save` gives a file-backed contents manager (one with
``use_atomic_writing`` on) a writer that builds the new content in a temporary file beside the
target, flushes and fsyncs it, and renames it over the target: a reader sees the old file or
the new one, never a mix. Everything else of ``save`` -- pre/post-save hooks, validation,
signing, checkpoints -- is unchanged, as it only swaps the manager's ``atomic_writing``
context manager (the hook jupyter_server itself uses for the choice between atomic and simple
writing). Permissions of the existing file are kept; a failed write leaves the old file and no
temporary behind. ``NotebookBccApp.replace_on_save`` turns it off.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

INSTALLED_MARK = "_notebook_bcc_replace_on_save"
"""Attribute set on a contents manager once it writes by rename (installing twice is a no-op)."""


@contextmanager
def replace_writing(
    os_path: str, text: bool = True, encoding: str = "utf-8", **kwargs: Any
) -> Iterator[IO[Any]]:
    """A file object whose content replaces ``os_path`` by rename when the block succeeds.

    The same signature as jupyter_server's ``atomic_writing`` (``log`` is accepted and unused).
    A symlinked target is resolved so the link survives and its target is replaced.
    """
    kwargs.pop("log", None)
    target = os.path.realpath(os_path) if os.path.islink(os_path) else os_path
    directory = os.path.dirname(target) or os.getcwd()
    handle, tmp = tempfile.mkstemp(
        prefix=f".{os.path.basename(target)}.", suffix=".saving", dir=directory
    )
    try:
        if text:
            kwargs.setdefault("newline", "\n")
            fileobj: IO[Any] = os.fdopen(handle, "w", encoding=encoding, **kwargs)
        else:
            fileobj = os.fdopen(handle, "wb", **kwargs)
    except BaseException:
        os.close(handle)
        os.unlink(tmp)
        raise
    try:
        with fileobj:
            yield fileobj
            fileobj.flush()
            os.fsync(fileobj.fileno())
        if os.path.exists(target):
            shutil.copymode(target, tmp)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask() -> int:
    """The process umask, read without setting it (``os.umask`` would, for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def install_replace_on_save(contents_manager: Any) -> bool:
    """Make ``contents_manager`` save by rename, if it is file-backed with atomic writing on.

    Returns whether it now does (False for other backends, or with ``use_atomic_writing``
    off -- a setting for file systems where renames misbehave, which this must respect).
    """
    if getattr(contents_manager, INSTALLED_MARK, False):
        return True
    original = getattr(contents_manager, "atomic_writing", None)
    perm_to_403 = getattr(contents_manager, "perm_to_403", None)
    if original is None or perm_to_403 is None or not hasattr(contents_manager, "root_dir"):
        return False
    if not getattr(contents_manager, "use_atomic_writing", False):
        return False

    @contextmanager
    def atomic_writing(os_path: str, *args: Any, **kwargs: Any) -> Iterator[IO[Any]]:
        directory = os.path.dirname(os.path.realpath(os_path)) or os.getcwd()
        if not getattr(contents_manager, "use_atomic_writing", False) or (
            os.path.isfile(os_path) and not os.access(directory, os.W_OK)
        ):
            # turned off since, or a writable file in a read-only folder (no room for a
            # temporary): the manager's own writing, as before
            with original(os_path, *args, **kwargs) as f:
                yield f
            return
        with perm_to_403(os_path), replace_writing(os_path, *args, **kwargs) as f:
            yield f

    contents_manager.atomic_writing = atomic_writing
    setattr(contents_manager, INSTALLED_MARK, True)
    return True


__all__ = ["install_replace_on_save", "replace_writing"]
