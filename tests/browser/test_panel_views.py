"""Issue 10 in a real browser: the Workflow panel shows a running workflow live, its pending
decision and its completion, in the light and the dark theme, without overflow or raw JSON.

The panel is read-only here: every decision is answered over REST, the panel only watches.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.browser.conftest import (
    DARK,
    LIGHT,
    PANEL_ID,
    PROGRESS_MS,
    UI_MS,
    Lab,
    Pages,
    assert_panel_layout,
    expect,
    notebook_cells,
    notebook_tab,
    open_lab,
    open_panel,
    open_section,
    scroll_panel_top,
    shot,
    shots,
    tid,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

HOUSING_PROBLEM = "Predict house prices; the held-out RMSE must be below 18,000 and R² above 0.9."
NOTEBOOK = "views/housing.ipynb"


def test_panel_shows_empty_state_for_a_notebook_without_workflow(lab: Lab, pages: Pages) -> None:
    lab.create_notebook("views/empty.ipynb")
    page = pages.new()
    open_lab(page, lab, "views/empty.ipynb")
    panel = open_panel(page)
    empty = tid(panel, "bcc-empty")
    expect(empty).to_be_visible(timeout=UI_MS)
    expect(tid(empty, "bcc-start")).to_be_enabled()
    expect(tid(panel, "bcc-badge")).to_have_count(0)
    assert_panel_layout(page)
    shots(page, "10-empty")


def test_the_panel_left_open_is_open_again_after_a_reload(lab: Lab, pages: Pages) -> None:
    """A user who keeps the Workflow panel open and reloads the page (or comes back to the
    workspace tomorrow) finds it open again beside the notebook, as Lab's own side panels are."""
    lab.create_notebook("views/reload.ipynb")
    page = pages.new()
    workspace = "w-reload-" + secrets.token_hex(3)
    open_lab(page, lab, "views/reload.ipynb", workspace=workspace)
    open_panel(page)
    # Lab writes the workspace's layout a moment after it changes: wait for the open panel in it
    deadline = time.monotonic() + UI_MS / 1000
    right: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status, body = lab.request("GET", f"lab/api/workspaces/{workspace}")
        if status == 200:
            right = body["data"].get("layout-restorer:data", {}).get("right", {})
        if (right.get("current"), right.get("collapsed")) == (PANEL_ID, False):
            break
        page.wait_for_timeout(100)  # the next poll of the saved workspace
    assert (right.get("current"), right.get("collapsed")) == (PANEL_ID, False), right
    open_lab(page, lab, "views/reload.ipynb", workspace=workspace)  # the page loaded again
    panel = page.locator(f"#{PANEL_ID}")
    expect(panel).to_be_visible(timeout=UI_MS)
    expect(tid(panel, "bcc-empty")).to_be_visible(timeout=UI_MS)
    shots(page, "10-reloaded")


class HousingRun:
    """The housing blueprint on ``NOTEBOOK``, started over REST without auto-confirm (its
    decisions wait) the first time a test asks for it."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.workflow_id: str | None = None

    def start(self) -> str:
        if self.workflow_id is None:
            snapshot = self.lab.start_workflow(
                NOTEBOOK, "housing/workflow.yaml", problem=HOUSING_PROBLEM, auto_confirm=False
            )
            assert snapshot["run"]["status"] == "running", snapshot["run"]
            self.workflow_id = str(snapshot["workflow_id"])
        return self.workflow_id


@pytest.fixture(scope="module")
def housing_run(lab: Lab) -> HousingRun:
    lab.create_notebook(NOTEBOOK)
    return HousingRun(lab)


def test_running_workflow_shows_live_progress_decisions_and_completion(
    lab: Lab, pages: Pages, housing_run: HousingRun
) -> None:
    page = pages.new()
    open_lab(page, lab, NOTEBOOK)
    panel = open_panel(page)
    expect(tid(panel, "bcc-empty")).to_be_visible()
    # started elsewhere (REST) while the notebook is open: the panel finds it and follows it
    workflow_id = housing_run.start()
    badge = tid(panel, "bcc-badge")
    expect(badge).to_be_visible(timeout=UI_MS)
    expect(tid(panel, "bcc-connection")).to_have_attribute("data-mode", "live", timeout=UI_MS)
    expect(tid(panel, "bcc-state")).not_to_be_empty()
    expect(badge).to_have_attribute("data-state", re.compile(r"^[a-z_]+$"))

    # a stage the page shows as current turns completed while the page stays open
    current = panel.locator('[data-testid="bcc-stage"][data-status="current"]').first
    expect(current).to_be_visible(timeout=PROGRESS_MS)
    watched = current.get_attribute("data-stage-id")
    assert watched
    shots(page, "10-following")
    assert_panel_layout(page)
    url = page.url
    watched_items = panel.locator(f'[data-testid="bcc-stage"][data-stage-id="{watched}"]')
    if watched != "modelling":  # modelling completes only once its confirmation is answered
        expect(watched_items.first).to_have_attribute(
            "data-status", "completed", timeout=PROGRESS_MS
        )

    seen_kinds: list[str] = []
    while True:
        snapshot = lab.next_decision_or_end(workflow_id)
        if snapshot["run"]["status"] != "waiting":
            break
        decision = snapshot["run"]["pending"][0]
        shown = panel.locator(f'[data-testid="bcc-decision"][data-decision-id="{decision["id"]}"]')
        expect(shown).to_be_visible(timeout=UI_MS)
        expect(shown).to_have_attribute("data-kind", decision["kind"])
        expect(badge).to_have_attribute("data-status", "waiting")
        expect(tid(shown, "bcc-approve")).to_be_visible()
        expect(tid(shown, "bcc-reject")).to_be_visible()
        # the cells written so far reached the open notebook, which stays clean
        same_cells_as_disk(page, lab)
        expect(tid(page, "bcc-reload-notice")).to_have_count(0)
        expect(notebook_tab(page, "housing.ipynb")).not_to_have_class(re.compile("jp-mod-dirty"))
        # the behavior section is the one element called bcc-behavior
        expect(tid(panel, "bcc-behavior")).to_have_count(1)
        if decision["kind"] == "irreversible_confirmation":
            step = panel.locator('[data-testid="bcc-step"][data-status="current"]')
            expect(step).to_have_attribute("data-step-id", "export")
        if decision["kind"] not in seen_kinds:
            seen_kinds.append(decision["kind"])
            name = "10-decision-" + decision["kind"].replace("_", "-")
            assert_panel_layout(page)
            shots(page, name)
        lab.approve(snapshot, decision["id"])
        expect(shown).to_have_count(0, timeout=UI_MS)

    assert snapshot["run"]["status"] == "completed", snapshot["run"]
    assert seen_kinds[:1] == ["stage_confirmation"], seen_kinds
    assert "irreversible_confirmation" in seen_kinds, seen_kinds
    expect(badge).to_have_attribute("data-status", "completed", timeout=UI_MS)
    expect(badge).to_have_attribute("data-state", "workflow_completed")
    # a re-entered stage is listed once per visit
    expect(watched_items.last).to_have_attribute("data-status", "completed")
    unfinished = panel.locator('[data-testid="bcc-stage"]:not([data-status="completed"])')
    expect(unfinished).to_have_count(0)
    expect(tid(panel, "bcc-decisions")).to_have_count(0)
    expect(tid(panel, "bcc-progress")).to_contain_text(re.compile(r"Stages (\d+) / \1"))
    assert page.url == url, "the page was never reloaded: everything came over the live stream"
    expect(tid(panel, "bcc-connection")).to_have_attribute("data-mode", "live")
    assert_panel_layout(page)
    scroll_panel_top(page)
    shots(page, "10-completed")


def same_cells_as_disk(page: Page, lab: Lab) -> None:
    """The open notebook shows as many cells as the file on disk holds. The run's last write
    lands a moment after it stops (the state is committed first): re-read the file until the
    two agree, each time waiting on the page for that count."""
    deadline = time.monotonic() + UI_MS / 1000
    while True:
        on_disk = len(lab.notebook_cells(NOTEBOOK))
        try:
            expect(notebook_cells(page)).to_have_count(on_disk, timeout=2_000)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise


def finish(lab: Lab, workflow_id: str) -> dict[str, Any]:
    """Approve over REST whatever the run still asks, until it completed."""
    while True:
        snapshot = lab.next_decision_or_end(workflow_id)
        if snapshot["run"]["status"] != "waiting":
            assert snapshot["run"]["status"] == "completed", snapshot["run"]
            return snapshot
        lab.approve(snapshot)


def test_completed_workflow_details_in_dark_theme(
    lab: Lab, pages: Pages, housing_run: HousingRun
) -> None:
    done = finish(lab, housing_run.start())
    lab.set_theme(DARK)
    try:
        page = pages.new()
        open_lab(page, lab, NOTEBOOK)
        assert page.evaluate("() => document.body.dataset.jpThemeName") == DARK
        panel = open_panel(page)
        expect(tid(panel, "bcc-badge")).to_have_attribute("data-status", "completed")
        expect(tid(panel, "bcc-stage")).to_have_count(
            len(done["location"]["progress"]["stages"]["completed"])
        )
        shot(page, "10-details-dark-top")

        behavior = tid(panel, "bcc-behavior")
        expect(behavior).to_be_visible()
        expect(tid(behavior, "bcc-criterion").first).to_be_attached()
        expect(
            behavior.locator('[data-testid="bcc-criterion"]:not([data-result="pass"])')
        ).to_have_count(0)
        expect(
            behavior.locator('[data-testid="bcc-artifact"][data-present="false"]')
        ).to_have_count(0)
        expect(tid(panel, "bcc-effects")).to_be_visible()

        metrics = open_section(panel, "bcc-metrics")
        expect(metrics.locator("tr").first).to_be_visible()
        variables = open_section(panel, "bcc-variables")
        for name in ("rmse", "r2", "model", "clean_df"):
            expect(variables.locator("td code", has_text=re.compile(rf"^{name}$"))).to_have_count(1)
        timeline = open_section(panel, "bcc-timeline")
        expect(tid(timeline, "bcc-event").first).to_be_visible()
        expect(
            timeline.locator('[data-testid="bcc-event"][data-event="transition"]').first
        ).to_be_attached()
        # A page opened after the run: the stored events, not only the FSM history tail --
        # the actions (contract and cell events) and the run's own events are there too.
        expect(
            timeline.locator('[data-testid="bcc-event"][data-event="action"]').first
        ).to_be_attached(timeout=UI_MS)
        expect(
            timeline.locator('[data-testid="bcc-event"][data-event="run"]').first
        ).to_be_attached()
        tid(timeline, "bcc-event").first.scroll_into_view_if_needed()
        assert_panel_layout(page)
        shot(page, "10-details-dark-timeline")

        diagram = open_section(panel, "bcc-diagram")
        for tab in ("bcc-diagram-fsm", "bcc-diagram-stages"):
            tid(diagram, tab).click()
            expect(tid(diagram, tab)).to_have_attribute("aria-selected", "true")
            # Mermaid's figure (JupyterLab's mermaid manager draws an <img> of an SVG; an
            # inline <svg> is fine too) or the text fallback (a <pre>)
            drawing = diagram.locator(
                'svg:visible, img[src^="data:image/svg+xml"]:visible, pre:visible'
            ).first
            expect(drawing).to_be_visible(timeout=UI_MS)
            kind = drawing.evaluate("node => node.tagName.toLowerCase()")
            drawing.scroll_into_view_if_needed()
            assert_panel_layout(page)
            shot(page, f"10-{tab}-{kind}-dark")

        # the side panel shows an overview; "Open in a tab" shows the FSM at its drawing size
        tid(diagram, "bcc-diagram-fsm").click()
        opener = tid(diagram, "bcc-diagram-open")
        if opener.count():  # only with JupyterLab's Mermaid (the text fallback has no figure)
            opener.click()
            view = tid(page, "bcc-diagram-view")
            expect(view).to_be_visible(timeout=UI_MS)
            image = view.locator("img").first
            expect(image).to_be_visible()
            drawn = image.evaluate("n => n.getBoundingClientRect().width")
            panel_width = panel.evaluate("n => n.getBoundingClientRect().width")
            assert drawn > 2 * panel_width, (drawn, panel_width)
            shot(page, "10-diagram-tab-dark")
            # opening it again shows it in the same tab
            opener.click()
            tabs = page.locator(".lm-DockPanel .lm-TabBar-tabLabel", has_text="Workflow FSM")
            expect(tabs).to_have_count(1)
    finally:
        lab.set_theme(LIGHT)
