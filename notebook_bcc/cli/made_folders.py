"""Folders a command makes on its way to a refusal, and taking them back.

``notebook-bcc run`` creates the notebook's folder, the state database's folder and the
``--record`` directory before the checks that need them have run (an unfinished earlier run in
the store, a state database path that is a directory, an input file that is missing, an
altered store). A refused run must leave the file system as it found it: :class:`MadeFolders`
notes, before anything is made, which of those folders (and which of their parents) do not
exist yet; :meth:`MadeFolders.remove_empty` then removes, deepest first, those that exist
now and are empty. A folder that existed before, or that holds anything, is never removed
(``os.rmdir`` refuses a folder with content, so a file written there meanwhile is safe too).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def _missing_chain(folder: Path) -> list[Path]:
    """``folder`` and its parents that do not exist yet, deepest first (lexical: ``a/../b``
    counts ``a``, which ``mkdir(parents=True)`` creates on the way)."""
    chain: list[Path] = []
    current = folder.absolute()
    while not os.path.lexists(current) and current != current.parent:
        chain.append(current)
        current = current.parent
    return chain


class MadeFolders:
    """The folders among ``folders`` (and their parents) missing when it is built."""

    def __init__(self, folders: Iterable[Path]) -> None:
        missing = {path for folder in folders for path in _missing_chain(folder)}
        # deepest first, so a parent is tried once its made children are gone
        self.missing = sorted(missing, key=lambda path: (-len(path.parts), str(path)))

    def remove_empty(self) -> list[Path]:
        """Remove the noted folders that exist now and are empty, deepest first; the removed
        ones. Called when a command refused to start, so it leaves nothing behind."""
        removed = []
        for folder in self.missing:
            if folder.name in ("", ".", "..") or not folder.is_dir() or folder.is_symlink():
                continue
            try:
                os.rmdir(folder)  # fails on a folder with content: nothing else is touched
            except OSError:
                continue
            removed.append(folder)
        return removed
