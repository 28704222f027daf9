"""Where a server keeps its workflow store: one store per server root.

A workflow names its notebook relative to the server's root. A store shared by two roots lets
a server started in ``~/projB`` list, stop and delete ``~/projA``'s workflows, and at start-up
resume them into ``~/projB``'s notebooks of the same name (JupyterLab names every new
notebook ``Untitled.ipynb``). So the default store lives in a folder of its own per root, and
a store remembers the root it belongs to in a small JSON file beside it: a server whose root
differs refuses to open it (a configured ``store_path`` shared by two roots, a project folder
moved with its configuration).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from notebook_bcc.store.errors import StoreUnavailableError

ROOT_FILE_SUFFIX = ".root.json"
"""The file beside a store naming the server root it belongs to (``<store>.root.json``)."""

MAX_ROOT_FILE_BYTES = 64 * 1024
"""A root file larger than this is not one notebook-bcc wrote."""


class StoreOfAnotherRootError(StoreUnavailableError):
    """The store belongs to a server with another root: its workflows' notebooks are not
    this server's files, so it acts on none of them."""

    code = "store_of_another_root"


def real_root(root: str | os.PathLike[str]) -> str:
    """The server root as one spelling: user expanded, absolute, symlinks resolved."""
    return os.path.realpath(os.path.expanduser(os.fspath(root)))


def default_store_path(data_dir: str | os.PathLike[str], root: str | os.PathLike[str]) -> Path:
    """``<data_dir>/notebook_bcc/roots/<folder name>-<digest of the root>/workflows.sqlite``.

    The folder name makes the directory recognisable to a person; the digest of the whole
    real path keeps two roots of the same name apart."""
    real = real_root(root)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(real).name).strip("._")[:40] or "root"
    return Path(data_dir) / "notebook_bcc" / "roots" / f"{name}-{digest}" / "workflows.sqlite"


def root_file(store: Path) -> Path:
    """The file naming the root ``store`` belongs to."""
    return store.with_name(store.name + ROOT_FILE_SUFFIX)


def recorded_root(store: Path) -> str | None:
    """The root ``store``'s root file names, or None when it has none (a new store)."""
    marker = root_file(store)
    try:
        if marker.stat().st_size > MAX_ROOT_FILE_BYTES:
            raise _unreadable(store, marker, "it is larger than a root file can be")
        body = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise _unreadable(store, marker, str(exc)) from exc
    root = body.get("root") if isinstance(body, dict) else None
    if not isinstance(root, str) or not root:
        raise _unreadable(store, marker, 'it has no "root" string')
    return root


def claim_store(store: Path, root: str | os.PathLike[str]) -> None:
    """Check that ``store`` belongs to ``root`` (recording it for a store that names none).

    Raises :class:`StoreOfAnotherRootError` when the store belongs to another root; nothing
    is written then."""
    mine = real_root(root)
    owner = recorded_root(store)
    if owner is None:
        store.parent.mkdir(parents=True, exist_ok=True)
        marker = root_file(store)
        partial = marker.with_name(marker.name + ".partial")
        partial.write_text(json.dumps({"root": mine}) + "\n", encoding="utf-8")
        os.replace(partial, marker)
        return
    if owner != mine:
        raise StoreOfAnotherRootError(
            f"the state database {store} belongs to the server root {owner}, and this "
            f"server's root is {mine}: its workflows' notebooks are not this server's files, "
            "so it acts on none of them. Give this server a database of its own "
            "(NotebookBccApp.store_path), or, if that project folder was moved here, delete "
            f"{root_file(store)} to adopt the database",
            details={"path": str(store), "store_root": owner, "server_root": mine},
        )


def legacy_store(data_dir: str | os.PathLike[str], store: Path) -> Path | None:
    """The one store every root shared before stores were kept per root
    (``<data_dir>/notebook_bcc/workflows.sqlite``), when it is there, no root has adopted it
    and ``store`` is another one: its workflows are not listed by this server, and nothing
    tells which root they belonged to, so the server names it and the way to adopt it."""
    legacy = Path(data_dir) / "notebook_bcc" / "workflows.sqlite"
    if not legacy.is_file() or root_file(legacy).exists():
        return None
    if os.path.realpath(legacy) == os.path.realpath(store):
        return None
    return legacy


def legacy_store_notice(legacy: Path, store: Path) -> str:
    """What the server logs at start-up while :func:`legacy_store` finds one."""
    return (
        f"an earlier notebook-bcc kept the workflows of every server root in {legacy}; this "
        f"server keeps its root's workflows in {store} and does not list those. To go on with "
        f"them here, start the server with --NotebookBccApp.store_path={legacy} (that store then "
        "belongs to this root); to leave them, move that file away and this notice ends"
    )


def _unreadable(store: Path, marker: Path, why: str) -> StoreUnavailableError:
    return StoreUnavailableError(
        f"the root file {marker} of the state database {store} cannot be read ({why}); "
        "delete it to let this server adopt the database",
        details={"path": str(store), "root_file": str(marker), "cause": why},
    )


__all__ = [
    "ROOT_FILE_SUFFIX",
    "StoreOfAnotherRootError",
    "claim_store",
    "default_store_path",
    "legacy_store",
    "legacy_store_notice",
    "real_root",
    "recorded_root",
    "root_file",
]
