"""Issue 20, item 3 in a real browser: every workflow of the server is listed in the panel,
and a run stuck in a cell that never ends is cancelled from that list within stop_timeout.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import (
    UI_MS,
    Lab,
    Pages,
    assert_panel_layout,
    expect,
    open_lab,
    open_panel,
    panel_width,
    shot,
    tid,
)

if TYPE_CHECKING:
    pass

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

STUCK = Path(__file__).resolve().parents[1] / "fixtures" / "browser" / "stuck.yaml"
STOP_TIMEOUT = 10.0  # the server's default stop_timeout


def test_a_stuck_run_is_cancelled_from_the_workflows_list(lab: Lab, pages: Pages) -> None:
    (lab.root / "blueprints").mkdir(exist_ok=True)
    shutil.copy(STUCK, lab.root / "blueprints" / "stuck.yaml")
    notebook = "listed/stuck.ipynb"
    lab.create_notebook(notebook)
    started = lab.start_workflow(notebook, "blueprints/stuck.yaml")
    workflow_id = started["workflow_id"]
    lab.wait_snapshot(
        workflow_id,
        lambda s: any(c["status"].lower() == "running" for c in s["open_contracts"]),
        "the endless cell running",
    )
    page = pages.new()
    open_lab(page, lab)  # no notebook open: the list is the way to the workflow
    panel = open_panel(page)
    listed = tid(panel, "bcc-workflows")
    listed.locator("summary").click()
    row = listed.locator(f'[data-testid="bcc-workflow-row"][data-workflow-id="{workflow_id}"]')
    expect(row).to_be_visible(timeout=UI_MS)
    expect(row).to_contain_text(notebook)
    expect(row).to_contain_text("Running")
    assert_panel_layout(page)
    shot(page, "20-5-workflows-list")
    panel_width(page, 300)
    assert_panel_layout(page)
    shot(page, "20-5-workflows-list-300px")

    tid(row, "bcc-workflow-cancel").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_be_visible()
    began = time.monotonic()
    dialog.locator(".jp-mod-accept").click()
    cancelled = lab.wait_snapshot(
        workflow_id, lambda s: s["run"]["status"] == "cancelled", "the cancel", timeout=60
    )
    took = time.monotonic() - began
    assert took <= STOP_TIMEOUT + 2, f"cancel took {took:.1f} s (stop_timeout {STOP_TIMEOUT} s)"
    assert cancelled["fsm"]["state"] == "cancelled"
    expect(row).to_have_attribute("data-status", "cancelled", timeout=UI_MS)
    shot(page, "20-6-workflows-list-cancelled-300px")

    # Open takes the user to the notebook
    tid(row, "bcc-workflow-open").click()
    page.wait_for_function(
        "p => window.jupyterapp.shell.currentWidget?.context?.path === p", arg=notebook
    )
