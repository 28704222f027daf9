"""Issue 20, item 3 in a real browser: every workflow of the server is listed in the panel,
and a run stuck in a cell that never ends is cancelled from that list within stop_timeout.
"""

from __future__ import annotations

import re
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
    cancel_through,
    expect,
    open_lab,
    open_panel,
    panel_width,
    shot,
    tid,
)

if TYPE_CHECKING:
    from playwright.sync_api import Locator

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

    # Delete takes the row out of the list a person works with: the workflow released its
    # notebook, and its record (the trace) is under "Released", where it cannot be deleted
    # again
    tid(row, "bcc-workflow-delete").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Delete this workflow?")
    dialog.locator(".jp-mod-accept").click()
    released = tid(listed, "bcc-workflows-released")
    expect(released).to_contain_text("Released (1): 1 deleted", timeout=UI_MS)
    current = listed.locator(f'.jp-NotebookBcc-workflowsList > [data-workflow-id="{workflow_id}"]')
    expect(current).to_have_count(0)
    moved = released.locator(f'[data-workflow-id="{workflow_id}"]')
    expect(moved).not_to_be_visible()  # the group starts closed
    released.locator("summary").click()
    expect(moved).to_be_visible()
    expect(moved).to_contain_text("deleted from this list; its record stays")
    expect(tid(moved, "bcc-workflow-delete")).to_be_disabled()
    # it stays open across the list's own refreshes (every 3 s)
    listing = "/notebook-bcc/api/workflows"
    with page.expect_response(lambda r: r.url.split("?")[0].endswith(listing)):
        pass
    expect(moved).to_be_visible()
    assert lab.api("GET", f"workflows/{workflow_id}")["run"]["status"] == "cancelled"
    shot(page, "20-6b-workflows-list-released")


def test_a_workflow_deleted_while_shown_reads_not_running_here_not_offline(
    lab: Lab, pages: Pages
) -> None:
    """The panel follows a run; it is stopped and released (``DELETE``, e.g. from another
    browser or a script): the server is still there, so the panel says the workflow no longer
    runs here (its stored state, still refreshed), never "offline: reconnecting"."""
    (lab.root / "blueprints").mkdir(exist_ok=True)
    shutil.copy(STUCK, lab.root / "blueprints" / "stuck.yaml")
    notebook = "listed/deleted.ipynb"
    lab.create_notebook(notebook)
    workflow_id = lab.start_workflow(notebook, "blueprints/stuck.yaml")["workflow_id"]
    page = pages.new()
    open_lab(page, lab, notebook)
    panel = open_panel(page)
    connection = tid(panel, "bcc-connection")
    expect(connection).to_have_attribute("data-mode", "live", timeout=UI_MS)

    final = lab.api("DELETE", f"workflows/{workflow_id}")
    expect(connection).to_have_attribute("data-mode", "stored", timeout=UI_MS)
    expect(connection).to_have_text("not running here")
    expect(tid(panel, "bcc-badge")).to_have_attribute(
        "data-status", final["run"]["status"], timeout=UI_MS
    )
    # the stored state keeps being read (a poll of its events), and the word stays
    with page.expect_request(lambda r: f"/workflows/{workflow_id}/events" in r.url):
        pass
    expect(connection).to_have_attribute("data-mode", "stored")
    reason = tid(panel, "bcc-reason")
    expect(reason).to_contain_text("deleted from this server")
    expect(reason).not_to_contain_text("Run resumes it")
    # nothing here can act on it: its controls say why; a new workflow can start
    resume = tid(panel, "bcc-run")
    expect(resume).to_be_disabled()
    assert "No engine drives this workflow" in (resume.get_attribute("title") or "")
    expect(tid(panel, "bcc-start")).to_be_visible()
    assert_panel_layout(page)
    shot(page, "20-7-deleted-not-running-here")


TREADMILL = Path(__file__).resolve().parents[1] / "fixtures" / "browser" / "treadmill.yaml"


def test_cancel_from_the_list_wins_against_a_workflow_that_keeps_committing(
    lab: Lab, pages: Pages
) -> None:
    """The list refreshes every 3 s while the workflow commits several times a second: the
    row's version is behind when Cancel is clicked. The server refuses the stale version (409
    with the current snapshot) and the list sends the cancel again against it, as often as
    the workflow moved meanwhile: the user sees the run cancelled, never "Could not cancel"."""
    (lab.root / "blueprints").mkdir(exist_ok=True)
    shutil.copy(TREADMILL, lab.root / "blueprints" / "treadmill.yaml")
    notebook = "listed/treadmill.ipynb"
    lab.create_notebook(notebook)
    workflow_id = lab.start_workflow(notebook, "blueprints/treadmill.yaml", max_hops=100000)[
        "workflow_id"
    ]
    page = pages.new()
    open_lab(page, lab)
    panel = open_panel(page)
    listed = tid(panel, "bcc-workflows")
    listed.locator("summary").click()
    row = listed.locator(f'[data-testid="bcc-workflow-row"][data-workflow-id="{workflow_id}"]')
    expect(row).to_contain_text("Running", timeout=UI_MS)
    listing = "/notebook-bcc/api/workflows"
    with page.expect_response(lambda r: r.url.split("?")[0].endswith(listing)):
        pass  # a refresh just happened: the next is 3 s away
    expect(row).to_have_attribute("data-version", re.compile(r"\d+"))
    shown = int(row.get_attribute("data-version") or -1)
    lab.wait_snapshot(workflow_id, lambda s: s["version"] > shown + 3, "the workflow moving on")
    refused, cancelled = cancel_through(page, lab, workflow_id, tid(row, "bcc-workflow-cancel"))
    assert cancelled["fsm"]["state"] == "cancelled"
    expect(row).to_have_attribute("data-status", "cancelled", timeout=UI_MS)
    expect(tid(panel, "bcc-notice").filter(has_text="Could not cancel")).to_have_count(0)
    assert refused[:1] == [409], f"the first cancel was not stale: {refused}"
    assert refused[-1] == 200, refused


def test_a_finished_run_stays_listed_as_finished_not_as_released_by_deletion(
    lab: Lab, pages: Pages
) -> None:
    """Runs that completed in an earlier server are no longer running here and hold no
    notebook, yet nobody deleted them: they stay in the list, "Completed", their notebook free
    for a new workflow. Only a deleted workflow, or one a newer workflow on its notebook
    replaced, goes into the Released group, each saying which of the two happened to it."""
    quick = lab.copy_fixture_blueprint("quick.yaml")
    (lab.root / "blueprints").mkdir(exist_ok=True)
    shutil.copy(STUCK, lab.root / "blueprints" / "stuck.yaml")
    for notebook in ("why/done.ipynb", "why/twice.ipynb", "why/gone.ipynb"):
        lab.create_notebook(notebook)
    done = lab.start_workflow("why/done.ipynb", quick)["workflow_id"]
    lab.wait_snapshot(done, lambda s: s["run"]["status"] == "completed", "the run's end")
    older = lab.start_workflow("why/twice.ipynb", quick)["workflow_id"]
    lab.wait_snapshot(older, lambda s: s["run"]["status"] == "completed", "the run's end")
    newer = lab.start_workflow("why/twice.ipynb", quick)["workflow_id"]
    lab.wait_snapshot(newer, lambda s: s["run"]["status"] == "completed", "the run's end")
    gone = lab.start_workflow("why/gone.ipynb", "blueprints/stuck.yaml")["workflow_id"]
    lab.api("DELETE", f"workflows/{gone}")
    # the user stops Lab and starts it again: no engine drives any of them any more
    lab.stop()
    lab.start()
    lab.wait_ready()

    page = pages.new()
    open_lab(page, lab)
    panel = open_panel(page)
    listed = tid(panel, "bcc-workflows")
    listed.locator("summary").first.click()

    def current(workflow_id: str) -> Locator:
        return listed.locator(f'.jp-NotebookBcc-workflowsList > [data-workflow-id="{workflow_id}"]')

    for workflow_id in (done, newer):
        row = current(workflow_id)
        expect(row).to_be_visible(timeout=UI_MS)
        expect(row).to_contain_text("Completed")
        expect(row).to_contain_text("finished; its notebook is free for a new workflow")
        expect(row).not_to_contain_text("released")
        expect(row).not_to_contain_text("deleted")
        expect(tid(row, "bcc-workflow-delete")).to_be_enabled()
    released = tid(listed, "bcc-workflows-released")
    expect(released.locator("summary")).to_contain_text(
        re.compile(r"Released \(\d+\): \d+ deleted, 1 replaced by a newer workflow")
    )
    released.locator("summary").click()
    expect(released.locator(f'[data-workflow-id="{older}"]')).to_contain_text(
        "replaced by a newer workflow on its notebook"
    )
    expect(released.locator(f'[data-workflow-id="{gone}"]')).to_contain_text(
        "deleted from this list; its record stays"
    )
    for workflow_id in (done, newer):
        expect(released.locator(f'[data-workflow-id="{workflow_id}"]')).to_have_count(0)
    assert_panel_layout(page)
    shot(page, "item1-finished-not-released")

    # deleting the finished run is what moves it into Released, as deleted
    tid(current(done), "bcc-workflow-delete").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Delete this workflow?")
    dialog.locator(".jp-mod-accept").click()
    expect(current(done)).to_have_count(0, timeout=UI_MS)
    moved = released.locator(f'[data-workflow-id="{done}"]')
    expect(moved).to_contain_text("deleted from this list; its record stays")
    expect(moved).to_contain_text("Completed")
    shot(page, "item1-finished-then-deleted")
