"""Journeys: what a user does in their first hour, as real processes on real kernels.

Every test starts where a user starts — a notebook JupyterLab created (one blank cell), a
notebook with the user's own cells, the README's commands typed as written — and runs the
``notebook-bcc`` command in a subprocess, never the engine in-process.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, run_cli

ROOT = Path(__file__).resolve().parents[2]
JOURNEYS = FIXTURES / "journeys"
HOUSING = ROOT / "examples" / "housing"
cli = run_cli
"""``notebook-bcc ARGS`` in a new process (the shared helper, under the journeys' name)."""


def cells(path: Path) -> list[dict[str, Any]]:
    """The cells of the notebook file at ``path``, as JSON."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = data["cells"]
    return found


def sources(path: Path) -> list[str]:
    """Each cell's source text, in order."""
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells(path)
    ]


@pytest.fixture
def lab_notebook(tmp_path: Path) -> Path:
    """A copy of the notebook JupyterLab 4 writes for File > New > Notebook (a blank cell)."""
    target = tmp_path / "Untitled.ipynb"
    shutil.copy(JOURNEYS / "lab_untitled.ipynb", target)
    return target


# The REST journeys run against a real jupyter_server with notebook_bcc (pytest-jupyter).
from tests.server.conftest import api, jp_server_config  # noqa: E402, F401
