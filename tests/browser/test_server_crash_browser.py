"""A ``jupyter lab`` killed (``kill -9``) while a workflow writes into the open notebook, then
started again by the user: the page reconnects, the run goes on, and the notebook the user
looks at keeps every cell and output it showed before the crash."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import (
    PROGRESS_MS,
    STEADY_ALL,
    STEADY_HELD,
    UI_MS,
    Lab,
    Pages,
    expect,
    file_printed,
    open_steady,
    printed,
    shot,
    tid,
    wait_printed,
    wait_steady_held,
    wait_until,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

WATCH_MODES = """() => {
  window.__bccModes = [];
  const node = document.querySelector('[data-testid="bcc-connection"]');
  new MutationObserver(() => {
    const now = document.querySelector('[data-testid="bcc-connection"]');
    window.__bccModes.push(now ? now.getAttribute('data-mode') : null);
  }).observe(node.closest('.jp-NotebookBcc-WorkflowPanel') ?? document.body, {
    subtree: true, attributes: true, childList: true
  });
}"""
"""Record every connection mode the panel's header shows from now on (``__bccModes``)."""


def test_a_server_killed_mid_run_and_started_again_keeps_the_open_notebooks_outputs(
    lab: Lab, pages: Pages
) -> None:
    notebook = "crash/steady.ipynb"
    page, panel = open_steady(lab, pages, notebook)
    workflow_id = lab.start_workflow(notebook, "blueprints/steady.yaml")["workflow_id"]
    before = STEADY_HELD
    wait_steady_held(lab, page, workflow_id)
    shot(page, "40-1-before-the-crash")
    page.evaluate(WATCH_MODES)

    lab.crash_and_restart()
    wait_until(
        lambda: any(w["live"] for w in lab.workflows(notebook)),
        "the workflow recovered",
        timeout=PROGRESS_MS / 1000,
    )
    expect(tid(panel, "bcc-connection")).to_have_attribute("data-mode", "live", timeout=UI_MS)
    shot(page, "40-2-after-the-restart")
    assert [t for t in printed(page) if t] == before, "the outputs shown before the crash"
    # while the server rebuilt the workflow's kernel the panel was reconnecting, never
    # "not running here" with every control disabled
    assert "stored" not in page.evaluate("() => window.__bccModes"), page.evaluate(
        "() => window.__bccModes"
    )

    (lab.root / "crash" / "go").touch()
    lab.wait_snapshot(workflow_id, lambda s: s["run"]["status"] == "completed", "the run's end")
    everything = [*before, "fourth output", "fifth output"]
    wait_printed(page, everything)
    shot(page, "40-3-completed")
    lab.wait_file_cells(
        notebook, lambda cells: file_printed(cells) == everything, "every output in the file"
    )


class RefusedSaves:
    """The page's saves of ``notebook`` refused at the network (the server unreachable, for
    saves only: deterministic) until :meth:`lift`."""

    def __init__(self, page: Page, notebook: str) -> None:
        self.page = page
        self.pattern = f"**/api/contents/{notebook}*"
        self.refused: list[str] = []
        page.route(self.pattern, self._route)

    def _route(self, route: Route) -> None:
        if route.request.method == "PUT":
            self.refused.append(route.request.url)
            route.abort("connectionrefused")
        else:
            route.continue_()

    def lift(self) -> None:
        """Let the saves through again."""
        self.page.unroute(self.pattern, self._route)


def start_with_refused_saves(
    lab: Lab, pages: Pages, notebook: str
) -> tuple[Page, RefusedSaves, str]:
    """The steady run started in ``notebook`` while its saves are refused; returns once three
    outputs are shown, a save was refused and the run holds on its fourth cell."""
    page, _ = open_steady(lab, pages, notebook)
    refusal = RefusedSaves(page, notebook)
    workflow_id = lab.start_workflow(notebook, "blueprints/steady.yaml")["workflow_id"]
    wait_steady_held(lab, page, workflow_id)
    wait_until(lambda: bool(refusal.refused), "a save refused", timeout=PROGRESS_MS / 1000)
    return page, refusal, workflow_id


def test_a_save_that_failed_while_the_server_was_away_is_made_again(lab: Lab, pages: Pages) -> None:
    """The saves of the open notebook fail for a while; once they go through again the panel
    saves what failed by itself, and the file gets every cell and output, to the run's end,
    without the user pressing Ctrl-S."""
    notebook = "away/steady.ipynb"
    page, refusal, workflow_id = start_with_refused_saves(lab, pages, notebook)
    refusal.lift()
    # nothing else happens now (the run holds on its fourth cell): only the panel's own
    # retry of what failed can bring the shown outputs into the file
    lab.wait_file_cells(
        notebook,
        lambda cells: file_printed(cells) == STEADY_HELD,
        "the failed save made again",
    )
    shot(page, "40-4-saved-after-failed-saves")
    (lab.root / "away" / "go").touch()
    lab.wait_snapshot(workflow_id, lambda s: s["run"]["status"] == "completed", "the run's end")
    wait_printed(page, STEADY_ALL)
    lab.wait_file_cells(
        notebook, lambda cells: file_printed(cells) == STEADY_ALL, "every output in the file"
    )


def test_saves_back_as_the_run_moves_on_leave_no_cell_only_in_the_tab(
    lab: Lab, pages: Pages
) -> None:
    """The saves go through again just as the run moves on: the panel's retry of the failed
    save and its merges of the next cells overlap. A merge that judged the document "edited
    by the user" before its plan travelled (it held unsaved cells then), while the retry
    made it clean meanwhile, saved nothing, and no later merge did either: the file lagged
    the tab until the user saved (1 run in 6 here, 1 in 3 under CI load)."""
    notebook = "back/steady.ipynb"
    page, refusal, workflow_id = start_with_refused_saves(lab, pages, notebook)
    refusal.lift()
    (lab.root / "back" / "go").touch()
    lab.wait_snapshot(workflow_id, lambda s: s["run"]["status"] == "completed", "the run's end")
    wait_printed(page, STEADY_ALL)
    shot(page, "40-5-saves-back-as-the-run-moves-on")
    lab.wait_file_cells(
        notebook, lambda cells: file_printed(cells) == STEADY_ALL, "every output in the file"
    )
