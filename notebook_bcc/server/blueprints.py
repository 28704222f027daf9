"""Blueprints named over REST: bounded, then parsed off the tornado event loop.

The file's size is checked against the CLI's cap (:data:`~notebook_bcc.server.limits.
MAX_BLUEPRINT_BYTES`, 2 MB) before its content is read, and again on the text read (a contents
manager need not report sizes). YAML parsing and validation run in a worker thread, so a slow
file never stalls other requests; the loader itself bounds aliases, merge keys and tags
(:mod:`notebook_bcc.blueprint.yaml_guard`).
"""

from __future__ import annotations

import asyncio

from notebook_bcc.blueprint.issues import BlueprintError, Issue
from notebook_bcc.blueprint.loader import LoadedBlueprint, load_blueprint_text
from notebook_bcc.server.contents import Contents
from notebook_bcc.server.limits import MAX_BLUEPRINT_BYTES


def _too_large(path: str, size: int) -> BlueprintError:
    return BlueprintError(
        path, [Issue(None, f"file is {size} bytes; the limit is {MAX_BLUEPRINT_BYTES} bytes")]
    )


async def load_blueprint_api(contents: Contents, path: str) -> LoadedBlueprint:
    """The blueprint at API ``path`` (which exists and is inside the root), or a 400."""
    size = await contents.size(path)
    if size is not None and size > MAX_BLUEPRINT_BYTES:
        raise _too_large(path, size)
    text = await contents.read_text(path)
    if len(text) > MAX_BLUEPRINT_BYTES:
        raise _too_large(path, len(text.encode("utf-8", errors="replace")))
    return await asyncio.to_thread(load_blueprint_text, text, path)
