"""Saving by rename: a notebook being saved is never read half written (replace_save)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

from notebook_bcc.server.app import NotebookBccApp
from notebook_bcc.server.replace_save import (
    INSTALLED_MARK,
    install_replace_on_save,
    replace_writing,
)
from tests.server.conftest import Fetch


def leftovers(folder: Path) -> list[str]:
    """Temporary, backup or set-aside files a save left beside the target."""
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.name.startswith(".~") or p.name.endswith(".saving") or "invalid" in p.name
    )


def test_the_target_keeps_its_old_content_until_the_block_succeeds(tmp_path: Path) -> None:
    target = tmp_path / "data.txt"
    target.write_text("old")
    with replace_writing(str(target)) as out:
        out.write("half")
        assert target.read_text() == "old"
        out.write(" and the rest\n")
    assert target.read_text() == "half and the rest\n"
    assert leftovers(tmp_path) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "data.txt"
    target.write_text("old")

    def fail_midway() -> None:
        with replace_writing(str(target)) as out:
            out.write("partial")
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        fail_midway()
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_permissions_and_symlinks_survive(tmp_path: Path) -> None:
    real = tmp_path / "real.ipynb"
    real.write_text("{}")
    real.chmod(0o640)
    link = tmp_path / "link.ipynb"
    link.symlink_to(real)
    with replace_writing(str(link)) as out:
        out.write('{"cells": []}')
    assert link.is_symlink()
    assert real.read_text() == '{"cells": []}'
    assert stat.S_IMODE(real.stat().st_mode) == 0o640


def test_a_new_file_gets_the_usual_permissions(tmp_path: Path) -> None:
    target = tmp_path / "new.ipynb"
    with replace_writing(str(target), text=False) as out:
        out.write(b"{}")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def test_only_file_managers_with_atomic_writing_are_changed(tmp_path: Path) -> None:
    off = AsyncLargeFileManager(root_dir=str(tmp_path), use_atomic_writing=False)
    assert install_replace_on_save(off) is False
    assert not hasattr(off, INSTALLED_MARK)
    assert install_replace_on_save(object()) is False
    on = AsyncLargeFileManager(root_dir=str(tmp_path))
    assert install_replace_on_save(on) is True
    assert install_replace_on_save(on) is True  # twice is once


async def test_a_read_during_a_save_sees_the_old_notebook(tmp_path: Path) -> None:
    """The race itself, made deterministic: a read lands while the save is writing.

    With jupyter_server's in-place writing the notebook is half written at that moment; the
    read takes it for a crashed save, moves it aside and restores the backup, and the save
    then finishes into the file set aside -- the new content is silently lost. Saving by
    rename, the read sees the old version and the save completes.
    """
    manager = AsyncLargeFileManager(root_dir=str(tmp_path))
    old = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    await manager.save({"type": "notebook", "content": old}, "nb.ipynb")

    stock_writing = manager.atomic_writing
    with stock_writing(str(tmp_path / "nb.ipynb")) as out:
        out.write('{"cells": [')
        out.flush()
        read = await manager.get("nb.ipynb")
        assert read["content"]["cells"][0]["source"] == "x = 1"
        out.write('{"cell_type": "code", "source": "lost"}]}')
    assert "lost" not in (tmp_path / "nb.ipynb").read_text()
    (aside,) = [name for name in leftovers(tmp_path) if "invalid" in name]
    assert "lost" in (tmp_path / aside).read_text()
    for name in leftovers(tmp_path):
        (tmp_path / name).unlink()

    assert install_replace_on_save(manager)
    new = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 2")])
    with manager.atomic_writing(str(tmp_path / "nb.ipynb")) as out:
        nbformat.write(new, out)
        read = await manager.get("nb.ipynb")
        assert read["content"]["cells"][0]["source"] == "x = 1"
    read = await manager.get("nb.ipynb")
    assert read["content"]["cells"][0]["source"] == "x = 2"
    assert leftovers(tmp_path) == []


async def test_the_server_saves_by_rename_and_reads_never_fail_meanwhile(
    bcc_app: NotebookBccApp, jp_serverapp: Any, jp_fetch: Fetch, jp_root_dir: Path
) -> None:
    """Saves and reads of one notebook, interleaved through the REST API of a real server."""
    manager = jp_serverapp.contents_manager
    assert getattr(manager, INSTALLED_MARK) is True
    cells = [nbformat.v4.new_code_cell("x = 1\n" * 400) for _ in range(60)]
    notebook = json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=cells)))
    body = json.dumps({"type": "notebook", "content": notebook})
    await jp_fetch("api", "contents", "big.ipynb", method="PUT", body=body)

    async def save(times: int) -> None:
        for _ in range(times):
            await jp_fetch("api", "contents", "big.ipynb", method="PUT", body=body)

    async def read(times: int) -> list[int]:
        seen = []
        for _ in range(times):
            answer = await jp_fetch("api", "contents", "big.ipynb", raise_error=False)
            assert answer.code == 200, answer.body[:300]
            seen.append(len(json.loads(answer.body)["content"]["cells"]))
        return seen

    _, counts = await asyncio.gather(save(40), read(80))
    assert set(counts) == {60}
    assert leftovers(jp_root_dir) == []
