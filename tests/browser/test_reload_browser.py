"""The open document replaced under a running workflow (single-user Lab), as users do it.

- File > Revert Notebook to Checkpoint: Lab puts the checkpoint's older file in place and
  reloads the document from it. The workflow's cells written since were not deleted by the
  user: they come back into the tab and the file, and the run's later cells follow, each once.
- A page reload: the page that went away let go of the notebook, so the reloaded page takes
  the workflow's next cells at once, not after the old page's hold lapsed (90 s).
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import (
    PROGRESS_MS,
    STEADY,
    STEADY_ALL,
    STEADY_HELD,
    UI_MS,
    Lab,
    Pages,
    expect,
    file_printed,
    new_notebook_from_the_file_menu,
    notebook_panel,
    open_lab,
    open_panel,
    open_steady,
    printed,
    shot,
    wait_printed,
    wait_steady_held,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]


def revert_to_checkpoint(page: Page) -> None:
    """File > Revert Notebook to Checkpoint…, then the dialog's Revert."""
    page.locator('.lm-MenuBar-itemLabel:text-is("File")').click()
    page.locator('.lm-Menu-itemLabel:text-matches("Revert .* to Checkpoint")').first.click()
    dialog = page.locator(".jp-Dialog")
    dialog.locator(".jp-Dialog-button.jp-mod-accept").click(timeout=UI_MS)
    expect(dialog).to_have_count(0, timeout=UI_MS)


def test_revert_to_checkpoint_mid_run_puts_the_workflows_cells_back(lab: Lab, pages: Pages) -> None:
    shutil.copy(STEADY, lab.root / "steady.yaml")
    page = pages.new()
    open_lab(page, lab)
    notebook = new_notebook_from_the_file_menu(page)
    open_panel(page)
    # the user's own save (Ctrl-S, and Lab's "Rename and Save" of an untitled notebook): Lab
    # makes the checkpoint, the blank cell it gave the notebook
    notebook_panel(page).locator(".jp-Notebook").first.focus()
    with page.expect_response(
        lambda r: r.request.method == "POST" and r.url.split("?")[0].endswith("/checkpoints"),
        timeout=UI_MS,
    ):
        page.keyboard.press("Control+s")
        rename = page.locator(".jp-Dialog", has_text="Rename")
        rename.locator(".jp-Dialog-button.jp-mod-accept").click(timeout=UI_MS)
    notebook = str(page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path"))

    workflow_id = lab.start_workflow(notebook, "steady.yaml")["workflow_id"]
    shown = STEADY_HELD
    wait_steady_held(lab, page, workflow_id)
    lab.wait_file_cells(notebook, lambda cells: file_printed(cells) == shown, "the cells saved")
    shot(page, "45-1-before-the-revert")

    revert_to_checkpoint(page)
    # back in the tab and in the file: the revert replaced the document, the user deleted
    # nothing (without the fix both kept only the blank cell, for good)
    wait_printed(page, shown, timeout=UI_MS)
    lab.wait_file_cells(
        notebook, lambda cells: file_printed(cells) == shown, "the cells back in the file"
    )
    shot(page, "45-2-after-the-revert")

    (lab.root / "go").touch()
    lab.wait_snapshot(workflow_id, lambda s: s["run"]["status"] == "completed", "the run's end")
    everything = STEADY_ALL
    wait_printed(page, everything, timeout=PROGRESS_MS)
    cells = lab.wait_file_cells(
        notebook, lambda cells: file_printed(cells) == everything, "every output in the file"
    )
    assert [t for t in printed(page) if t] == everything
    ids = [c.get("id") for c in cells]
    assert len(ids) == len(set(ids)), ids
    shot(page, "45-3-completed")


def test_a_page_reloaded_mid_run_takes_the_next_cells_at_once(lab: Lab, pages: Pages) -> None:
    notebook = "reload/steady.ipynb"
    page, _ = open_steady(lab, pages, notebook)
    workflow_id = lab.start_workflow(notebook, "blueprints/steady.yaml")["workflow_id"]
    shown = STEADY_HELD
    wait_steady_held(lab, page, workflow_id)

    page.reload()
    page.wait_for_function("() => window.jupyterapp?.restored.then(() => true)", timeout=UI_MS)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.context?.isReady", timeout=UI_MS
    )
    wait_printed(page, shown, timeout=UI_MS)
    (lab.root / "reload" / "go").touch()
    lab.wait_snapshot(workflow_id, lambda s: s["run"]["status"] == "completed", "the run's end")
    everything = STEADY_ALL
    # well inside the 90 s an abandoned hold lasts: the old page let go as it went away
    wait_printed(page, everything, timeout=UI_MS)
    lab.wait_file_cells(
        notebook, lambda cells: file_printed(cells) == everything, "every output in the file"
    )
    shot(page, "45-4-reloaded-page-took-the-cells")
