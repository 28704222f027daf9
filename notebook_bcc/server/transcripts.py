"""Recorded transcripts named over REST: every path they reach confined to the server root.

A transcript folder is an API path, but what it contains is untrusted: ``transcript.jsonl``
may itself be a symlink, the header's ``files[].path`` may be absolute or climb with ``..``,
and a file under ``inputs/`` may be a symlink out of the root. Each is checked against the
root's real location before it is read (403 ``forbidden_path`` or 400, naming the API path);
a transcript error never shows the server's OS path. Reading the transcript (up to
:data:`~notebook_bcc.planners.transcript.MAX_TRANSCRIPT_BYTES`) happens in a worker thread.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from notebook_bcc.planners.registry import REGISTRY
from notebook_bcc.planners.replay import ReplayPlanner
from notebook_bcc.planners.transcript import TRANSCRIPT, TranscriptError
from notebook_bcc.server.contents import Contents, api_path, join_api
from notebook_bcc.server.errors import BadRequestError


def _hide(message: str, folder: str, os_folders: list[str]) -> str:
    """``message`` with every OS spelling of the record folder replaced by its API path."""
    for os_folder in sorted(set(os_folders), key=len, reverse=True):
        message = message.replace(os_folder, folder)
    return message


async def open_replay_api(contents: Contents, raw: str) -> tuple[ReplayPlanner, list[str]]:
    """The replay planner of the record folder at API path ``raw`` and its inputs (API paths)."""
    folder = api_path(raw, what="planner.path")
    contents.check_inside_root(folder, what="planner.path")
    os_folder = contents.os_path(folder)
    if os_folder is None or not Path(os_folder).is_dir():
        raise BadRequestError(
            f"planner.path: {folder!r} is not a recorded transcript folder on this server",
            details={"path": folder},
        )
    # the transcript file itself may be a symlink out of the root
    contents.check_inside_root(f"{folder}/{TRANSCRIPT}", what="planner.path")
    spellings = [os_folder, str(Path(os_folder).resolve())]
    try:
        built = await asyncio.to_thread(REGISTRY.build, "replay", {"transcript": os_folder})
        assert isinstance(built, ReplayPlanner)  # the registry's replay kind
        planner = built
        spellings.append(str(planner.directory))
        recorded = planner.files()
    except TranscriptError as exc:
        message = _hide(exc.message, folder, spellings)
        raise BadRequestError(f"planner.path: {message}", details={"path": folder}) from None
    files: list[str] = []
    for file in recorded:
        relative = file.relative_to(planner.directory).as_posix()
        path = join_api(folder, relative, what=f"{folder} inputs")
        contents.check_inside_root(path, what=f"{folder} inputs")
        files.append(path)
    return planner, files
