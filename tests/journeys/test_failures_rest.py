"""Journey 3 over REST (what the panel sends): a failed run is retried, or replaced."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.journeys.conftest import JOURNEYS
from tests.server.conftest import Api, read_notebook


def _failed(snapshot: dict[str, object]) -> bool:
    return snapshot["run"]["status"] == "failed"  # type: ignore[index]


async def test_retry_from_the_failure_and_a_new_workflow_on_a_failed_notebook(
    api: Api, jp_root_dir: Path
) -> None:
    shutil.copy(JOURNEYS / "failing.yaml", jp_root_dir / "failing.yaml")
    shutil.copy(JOURNEYS / "lab_untitled.ipynb", jp_root_dir / "Untitled.ipynb")
    first = await api.start("Untitled.ipynb", "failing.yaml", options={"auto_confirm": True})
    wid = first["workflow_id"]
    failed = await api.wait(wid, _failed, timeout=120)
    assert failed["fsm"]["state"] == "stage_completed"
    reason = failed["run"]["reason"]
    assert "model / fit / train" in reason
    assert "TypeError" in reason
    # the panel's "Retry from the failure", once the cause is fixed
    (jp_root_dir / "fixed.flag").touch()
    code, body = await api.command(wid, action="retry", expected_version=failed["version"])
    assert code == 200, body
    done = await api.wait_status(wid, "completed", timeout=120)
    assert done["stage_machine"]["visits"]["model"] == 2
    # a stale version is refused for retry (it is not a "go on whatever" command)
    code, body = await api.command(wid, action="retry", expected_version=failed["version"])
    assert code == 409, body

    (jp_root_dir / "fixed.flag").unlink()
    shutil.copy(JOURNEYS / "lab_untitled.ipynb", jp_root_dir / "Second.ipynb")
    second = await api.start("Second.ipynb", "failing.yaml", options={"auto_confirm": True})
    await api.wait(second["workflow_id"], _failed, timeout=120)
    # "New workflow…" on the failed notebook: the failed one is archived, not a 409
    third = await api.start("Second.ipynb", "failing.yaml", options={"auto_confirm": True})
    assert third["workflow_id"] != second["workflow_id"]
    listed = await api.ok("GET", "workflows", params={"notebook_path": "Second.ipynb"})
    active = {w["workflow_id"]: w["active"] for w in listed["workflows"]}
    assert active[second["workflow_id"]] is False
    assert active[third["workflow_id"]] is True
    await api.wait(third["workflow_id"], _failed, timeout=120)
    cells = read_notebook(jp_root_dir / "Second.ipynb")["cells"]
    tags = [c["metadata"].get("tags") for c in cells]
    assert ["notebook-bcc-inputs"] in tags


async def test_start_over_after_a_failure_runs_in_a_fresh_kernel(
    api: Api, jp_root_dir: Path
) -> None:
    # the first stage counts its runs in the kernel ("prepare run N"): a Start over that kept
    # the failed attempt's namespace would make the new run's first stage say "2"
    shutil.copy(JOURNEYS / "failing_counting.yaml", jp_root_dir / "failing.yaml")
    shutil.copy(JOURNEYS / "lab_untitled.ipynb", jp_root_dir / "nb.ipynb")
    first = await api.start("nb.ipynb", "failing.yaml", options={"auto_confirm": True})
    wid = first["workflow_id"]
    failed = await api.wait(wid, _failed, timeout=120)
    (jp_root_dir / "fixed.flag").touch()
    code, body = await api.command(wid, action="restart", expected_version=failed["version"])
    assert code == 200, body
    done = await api.wait_status(wid, "completed", timeout=120)
    assert done["run_id"] != failed["run_id"]
    assert done["stage_machine"]["visits"]["prepare"] == 2
    cells = read_notebook(jp_root_dir / "nb.ipynb")["cells"]
    said = [
        "".join(output.get("text", ""))
        for cell in cells
        for output in cell.get("outputs", [])
        if "prepare run" in "".join(output.get("text", ""))
    ]
    assert said == ["prepare run 1\n", "prepare run 1\n"], said
    # the inputs cell ran again in the new kernel (the new run's stages can read the
    # problem), in place: the notebook still has one
    inputs = [c for c in cells if "notebook-bcc-inputs" in c["metadata"].get("tags", [])]
    assert len(inputs) == 1
    assert "user_problem" in done["variables"]
