"""A workflow started again on a notebook whose kernel ran the last one (the panel's "New
workflow..." after a run): the kernel is restarted first, unless the request says to keep it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.server.conftest import Api


async def run_once(api: Api, **extra: Any) -> dict[str, Any]:
    started = await api.start(
        "again/counted.ipynb",
        "blueprints/rerun_counter.yaml",
        options={"auto_confirm": True},
        **extra,
    )
    done = await api.wait_status(started["workflow_id"], "completed", "failed", timeout=60)
    assert done["run"]["status"] == "completed", done["run"]
    return done


def said(snapshot: dict[str, Any]) -> str:
    return " ".join(snapshot["effects"]["history"] + snapshot["effects"]["current"])


async def test_a_rerun_starts_on_a_restarted_kernel_unless_asked_to_keep_it(
    api: Api, root: Path
) -> None:
    first = await run_once(api)
    assert first["variables"]["rounds"]["value"] == 1
    assert "restarted" not in said(first), "a kernel the session just started is fresh"

    second = await run_once(api)
    assert second["kernel"]["kernel_id"] == first["kernel"]["kernel_id"], "the same session"
    assert second["variables"]["rounds"]["value"] == 1, "not what the last run left behind"
    assert f"held the state of the earlier workflow {first['workflow_id']}" in said(second)

    kept = await run_once(api, fresh_kernel=False)
    assert kept["variables"]["rounds"]["value"] == 2, "fresh_kernel: false keeps the namespace"
    assert "restarted" not in said(kept)

    asked = await run_once(api, fresh_kernel=True)
    assert asked["variables"]["rounds"]["value"] == 1
    assert "restarted before the run" in said(asked)
