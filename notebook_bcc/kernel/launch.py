"""Where and how a kernel the session owns is launched: its folder and its transport."""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def default_cwd(notebook_path: str | Path | None) -> Path | None:
    """The kernel's working directory by default: the notebook's folder (DESIGN §9 D14)."""
    if notebook_path is None:
        return None
    return Path(os.path.abspath(notebook_path)).parent


def ipc_settings(transport: str | None) -> dict[str, str]:
    """``transport``/``ip`` for an owned kernel: IPC sockets need an absolute path prefix
    (jupyter_client's default is relative, and the kernel runs in another folder)."""
    if transport != "ipc":
        return {}
    from jupyter_core.paths import jupyter_runtime_dir

    runtime = Path(jupyter_runtime_dir())
    runtime.mkdir(parents=True, exist_ok=True)
    return {"transport": "ipc", "ip": str(runtime / f"nbbcc-{uuid.uuid4().hex[:12]}-ipc")}


__all__ = ["default_cwd", "ipc_settings"]
