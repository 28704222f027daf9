"""Issue 20, items 4 and 6 in a real browser, on a notebook Lab creates (File > New >
Notebook) inside a project folder:

- the start form preselects the ``workflow.yaml`` beside the notebook, Browse opens in the
  notebook's folder and lists YAML files only, an input file picked or typed relative to the
  notebook's folder is accepted and read by the kernel, a check's error clears as soon as the
  field is fixed, and the last values come back for "New workflow…" (after a reload too);
- workflow cells carry a stage · step badge, plan nodes show their time, "Follow" keeps the
  running cell in view, clicking a behavior scrolls the notebook to its cells, and the
  timeline folds contract rows under their action.

One Lab and one browser page for the whole module: the tests are the steps of one journey and
run in order (each step's checks are its own test, so a failure names the step).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.conftest import (
    PROGRESS_MS,
    UI_MS,
    Lab,
    Pages,
    assert_panel_layout,
    expect,
    new_notebook_from_the_file_menu,
    open_panel,
    open_section,
    panel_width,
    scroll_panel_top,
    shot,
    started_lab,
    tid,
)

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

NAV = Path(__file__).resolve().parents[1] / "fixtures" / "browser" / "nav.yaml"
PROJECT = "proj"
PROBLEM = "Walk through the notebook"

# The notebook's scrolling viewport and whether a cell is inside it.
IN_VIEW_JS = """([index]) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cell = panel.content.widgets[index];
  const outer = panel.content.node.querySelector('.jp-WindowedPanel-outer') || panel.content.node;
  const view = outer.getBoundingClientRect();
  const box = cell.node.getBoundingClientRect();
  return box.height > 0 && box.bottom > view.top + 4 && box.top < view.bottom - 4;
}"""
SCROLL_NOTEBOOK_JS = """(where) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const outer = panel.content.node.querySelector('.jp-WindowedPanel-outer') || panel.content.node;
  outer.scrollTop = where === 'top' ? 0 : outer.scrollHeight;
}"""
GEOMETRY_JS = """(index) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const outer = panel.content.node.querySelector('.jp-WindowedPanel-outer') || panel.content.node;
  const box = panel.content.widgets[index].node.getBoundingClientRect();
  const view = outer.getBoundingClientRect();
  return {cls: outer.className, top: outer.scrollTop, height: outer.scrollHeight,
          client: outer.clientHeight, view: [view.top, view.bottom], cell: [box.top, box.bottom],
          cells: panel.content.widgets.length};
}"""
CELL_INDEX_JS = """([key, value]) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.model.cells;
  const found = [];
  for (let i = 0; i < cells.length; i++) {
    const bcc = cells.get(i).getMetadata('notebook_bcc');
    if (bcc && bcc[key] === value) found.push(i);
  }
  return found;
}"""


@dataclass
class Journey:
    """The module's one Lab page and the notebook it created."""

    lab: Lab
    page: Page
    notebook: str
    workflow_id: str | None = None

    @property
    def panel(self) -> Locator:
        return open_panel(self.page)

    def snapshot(self) -> dict[str, Any]:
        assert self.workflow_id is not None
        return self.lab.snapshot(self.workflow_id)

    def cells_of(self, key: str, value: str) -> list[int]:
        found = self.page.evaluate(CELL_INDEX_JS, [key, value])
        assert isinstance(found, list)
        return [int(i) for i in found]

    def in_view(self, index: int) -> bool:
        return bool(self.page.evaluate(IN_VIEW_JS, [index]))

    def wait_in_view(self, index: int, what: str) -> None:
        try:
            self.page.wait_for_function(
                f"(args) => ({IN_VIEW_JS})(args)", arg=[index], timeout=UI_MS
            )
        except Exception as exc:
            raise AssertionError(f"{what}: cell {index} never came into view") from exc


@pytest.fixture(scope="module")
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One Lab whose root has ``proj/`` with the blueprint beside where the notebook will be,
    another YAML file, files that are not YAML, and the input data (overrides ``lab``)."""
    request.getfixturevalue("browser_available")
    server = Lab(tmp_path_factory.mktemp("lab-nav"))
    project = server.root / PROJECT
    (project / "data").mkdir(parents=True)
    shutil.copy(NAV, project / "workflow.yaml")
    (project / "other.yml").write_text("kind: StateMachine\nname: other\nstates: {}\n")
    (project / "notes.txt").write_text("not a blueprint\n")
    (project / "data" / "in.csv").write_text("a,b\n1,2\n3,4\n")
    yield from started_lab(
        server,
        settings={"@jupyterlab/docmanager-extension:plugin": {"renameUntitledFileOnSave": False}},
    )


@pytest.fixture(scope="module")
def journey(lab: Lab, browser: Any) -> Iterator[Journey]:
    pages = Pages(browser)
    page = pages.new()
    page.goto(lab.url(f"lab/workspaces/nav/tree/{PROJECT}"), timeout=PROGRESS_MS)
    page.wait_for_selector("#jp-main-dock-panel", timeout=PROGRESS_MS)
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=PROGRESS_MS)
    # the file browser shows proj/: File > New > Notebook creates the notebook there
    page.locator(".jp-FileBrowser .jp-DirListing-item", has_text="workflow.yaml").wait_for()
    notebook = new_notebook_from_the_file_menu(page)
    assert notebook.startswith(f"{PROJECT}/"), notebook
    try:
        yield Journey(lab, page, notebook)
    finally:
        if pages.errors:
            print("\n".join(pages.errors[-20:]))
        pages.close()


def browse_dialog(journey: Journey, field: str) -> Locator:
    """Click the Browse… button of a start-form field; returns the file dialog."""
    form = tid(journey.panel, "bcc-start-form")
    tid(form, field).locator("xpath=..").get_by_role("button").click()
    dialog = journey.page.locator(".jp-Dialog")
    expect(dialog).to_be_visible()
    return dialog


def listed(dialog: Locator) -> list[str]:
    items = dialog.locator(".jp-DirListing-item .jp-DirListing-itemText")
    expect(items.first).to_be_visible()
    return sorted(t.strip() for t in items.all_inner_texts())


# -- item 4: the start form -------------------------------------------------------------


def test_the_blueprint_beside_the_notebook_is_preselected(journey: Journey) -> None:
    panel = journey.panel
    tid(panel, "bcc-start").click()
    form = tid(panel, "bcc-start-form")
    expect(form).to_be_visible()
    # named as every path of the form: from the notebook's folder, which the hints say
    expect(tid(form, "bcc-start-blueprint")).to_have_value("workflow.yaml")
    hint = f"Relative to the notebook's folder ({PROJECT}/); start with / to name a path"
    expect(tid(form, "bcc-start-blueprint-hint")).to_contain_text(hint)
    expect(tid(form, "bcc-start-files-hint")).to_contain_text(hint)
    expect(tid(form, "bcc-start-error")).to_have_count(0)
    assert_panel_layout(journey.page)
    shot(journey.page, "20-4-start-form-preselected")


def test_browse_opens_in_the_notebook_folder_and_lists_yaml_only(journey: Journey) -> None:
    dialog = browse_dialog(journey, "bcc-start-blueprint")
    expect(dialog.locator(".jp-Dialog-header")).to_contain_text(".yaml or .yml")
    expect(dialog.locator(".jp-BreadCrumbs")).to_contain_text(PROJECT)
    assert listed(dialog) == ["data", "other.yml", "workflow.yaml"]
    shot(journey.page, "20-4-browse-yaml-only")
    dialog.locator(".jp-DirListing-item", has_text="other.yml").click()
    dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
    expect(dialog).to_have_count(0)
    form = tid(journey.panel, "bcc-start-form")
    expect(tid(form, "bcc-start-blueprint")).to_have_value("other.yml")
    tid(form, "bcc-start-blueprint").fill("workflow.yaml")


def test_an_error_clears_as_soon_as_the_field_is_fixed(journey: Journey) -> None:
    form = tid(journey.panel, "bcc-start-form")
    blueprint = tid(form, "bcc-start-blueprint")
    blueprint.fill("")
    tid(form, "bcc-start-submit").click()
    expect(tid(form, "bcc-start-error")).to_have_text("Blueprint is required.")
    blueprint.fill("workflow.txt")
    expect(tid(form, "bcc-start-error")).to_contain_text("is not a .yaml file")
    blueprint.fill("workflow.yaml")
    expect(tid(form, "bcc-start-error")).to_have_count(0)


def test_a_path_not_found_is_named_by_its_field_and_where_it_was_looked_for(
    journey: Journey,
) -> None:
    """The blueprint and the input files are typed from the same folder, the notebook's:
    a missing one is refused naming the box, what was typed and the path looked for."""
    form = tid(journey.panel, "bcc-start-form")
    blueprint = tid(form, "bcc-start-blueprint")
    error = tid(form, "bcc-start-error")
    blueprint.fill("missing.yaml")
    tid(form, "bcc-start-submit").click()
    expect(error).to_have_text(
        f"Blueprint: no such file 'missing.yaml' (looked for '{PROJECT}/missing.yaml'); "
        f"paths here are relative to the notebook's folder '{PROJECT}'",
        timeout=UI_MS,
    )
    shot(journey.page, "item2-blueprint-not-found")
    blueprint.fill("workflow.yaml")  # beside the notebook, as data/in.csv is
    tid(form, "bcc-start-files").fill("data/none.csv")
    tid(form, "bcc-start-submit").click()
    expect(error).to_have_text(
        f"Input files: no such file 'data/none.csv' (looked for '{PROJECT}/data/none.csv'); "
        f"paths here are relative to the notebook's folder '{PROJECT}'",
        timeout=UI_MS,
    )
    assert journey.lab.workflows(journey.notebook) == [], "nothing started"
    assert_panel_layout(journey.page)
    shot(journey.page, "item2-input-file-not-found")
    tid(form, "bcc-start-files").fill("")


def test_an_input_file_relative_to_the_notebook_is_accepted(journey: Journey) -> None:
    form = tid(journey.panel, "bcc-start-form")
    dialog = browse_dialog(journey, "bcc-start-files")
    expect(dialog.locator(".jp-BreadCrumbs")).to_contain_text(PROJECT)
    dialog.locator(".jp-DirListing-item", has_text="data").dblclick()
    dialog.locator(".jp-DirListing-item", has_text="in.csv").click()
    dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
    expect(tid(form, "bcc-start-files")).to_have_value("data/in.csv")
    tid(form, "bcc-start-problem").fill(PROBLEM)
    panel_width(journey.page, 300)
    assert_panel_layout(journey.page)
    shot(journey.page, "20-4-start-form-300px")
    panel_width(journey.page, 420)
    tid(form, "bcc-start-submit").click()
    expect(form).to_have_count(0, timeout=UI_MS)
    [workflow] = journey.lab.workflows(journey.notebook)
    journey.workflow_id = workflow["workflow_id"]
    snapshot = journey.snapshot()
    assert snapshot["files"] == ["data/in.csv"]
    # the kernel (in the notebook's folder) read the file the user named from there
    journey.lab.wait_snapshot(
        journey.workflow_id, lambda s: "rows" in s["variables"], "the input file read"
    )
    assert journey.snapshot()["variables"]["rows"].get("length") == 3


# -- item 6: navigation -----------------------------------------------------------------


def wait_gated(journey: Journey) -> None:
    """The run sits in the cell that waits for ``gate-nav``."""
    journey.lab.wait_snapshot(
        journey.workflow_id or "",
        lambda s: (
            s["location"]["current"].get("behavior_id") == "fitting"
            and any(c["status"].lower() == "running" for c in s.get("open_contracts", []))
        ),
        "the gated cell running",
    )
    journey.page.wait_for_function(
        """() => {
          const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
          for (let i = 0; i < cells.length; i++) {
            if (cells.get(i).sharedModel.getSource().includes('gate-nav')) return true;
          }
          return false;
        }""",
        timeout=PROGRESS_MS,
    )


def test_workflow_cells_carry_a_stage_step_badge(journey: Journey) -> None:
    wait_gated(journey)
    page = journey.page
    badges = page.locator(".jp-NotebookPanel [data-testid='bcc-cell-badge']")
    # a windowed notebook renders the cells in view: look at both ends
    page.evaluate(SCROLL_NOTEBOOK_JS, "top")
    expect(badges.filter(has_text=re.compile("^workflow inputs$")).first).to_be_visible()
    expect(badges.filter(has_text=re.compile("^explore · look$")).first).to_be_visible()
    page.evaluate(SCROLL_NOTEBOOK_JS, "bottom")
    expect(badges.filter(has_text=re.compile("^modelling · fit$")).first).to_be_visible()
    page.evaluate(SCROLL_NOTEBOOK_JS, "top")
    read = journey.cells_of("behavior_id", "read_input")
    assert read, "the read_input cells are in the notebook"
    first = page.locator(".jp-NotebookPanel .jp-Cell").nth(read[0])
    expect(first).to_have_class(re.compile(r"\bjp-NotebookBcc-workflowCell\b"))
    assert "read_input" in (
        first.locator("[data-testid='bcc-cell-badge']").get_attribute("title") or ""
    )
    # a badge is not part of the cell: the source on disk and in the model stays the code
    assert all(
        "explore · look" not in c["source"] for c in journey.lab.notebook_cells(journey.notebook)
    )


def test_plan_nodes_show_their_time(journey: Journey) -> None:
    tree = tid(journey.panel, "bcc-tree")
    behaviors = tid(tree, "bcc-tree-behavior")
    prepare = behaviors.filter(has=journey.page.locator('[title="prepare"]')).first
    time_text = tid(prepare, "bcc-node-time")
    expect(time_text).to_have_text(re.compile(r"^\d+(\.\d)? s$|^\d+ min \d\d s$"))
    stage = tid(tree, "bcc-stage").filter(has=journey.page.locator('[title="explore"]')).first
    explore_time = tid(stage, "bcc-node-time").first.inner_text()
    match = re.match(r"^(\d+(?:\.\d)?) s$", explore_time)
    assert match, explore_time
    # the exploration stage slept 1.5 s in one of its cells
    assert float(match.group(1)) >= 1.5, explore_time


def test_clicking_a_behavior_scrolls_to_its_cells(journey: Journey) -> None:
    page = journey.page
    prepare_cells = journey.cells_of("behavior_id", "prepare")
    assert len(prepare_cells) == 3, prepare_cells
    page.evaluate(SCROLL_NOTEBOOK_JS, "bottom")
    assert not journey.in_view(prepare_cells[0]), page.evaluate(GEOMETRY_JS, prepare_cells[0])
    # the running step lists its behaviors: "Prepare" is done, "Fitting" runs
    behavior = tid(journey.panel, "bcc-tree-behavior").filter(
        has=page.locator('.jp-NotebookBcc-nodeTitle[title="prepare"]')
    )
    expect(behavior).to_have_attribute("data-status", "completed")
    behavior.locator(".jp-NotebookBcc-nodeTitle").click()
    journey.wait_in_view(prepare_cells[0], "the behavior's first cell is shown")
    revealed = page.locator(".jp-NotebookPanel .jp-Cell.jp-NotebookBcc-revealed")
    expect(revealed).to_have_count(3)
    shot(page, "20-6-click-behavior")
    # a stage opens its first cell, at the top of the notebook
    tid(journey.panel, "bcc-stage").locator('.jp-NotebookBcc-nodeTitle[title="explore"]').click()
    journey.wait_in_view(journey.cells_of("stage_id", "explore")[0], "the stage's first cell")


def test_follow_keeps_the_running_cell_in_view(journey: Journey) -> None:
    page = journey.page
    [gate] = [
        i
        for i in journey.cells_of("behavior_id", "fitting")
        if "gate-nav"
        in page.evaluate(
            "(i) => window.jupyterapp.shell.currentWidget.content.model.cells.get(i)"
            ".sharedModel.getSource()",
            i,
        )
    ]
    follow = tid(journey.panel, "bcc-follow")
    expect(follow).not_to_be_checked()
    page.evaluate(SCROLL_NOTEBOOK_JS, "top")
    assert not journey.in_view(gate), "the notebook is long enough to hide the running cell"
    follow.check()
    journey.wait_in_view(gate, "switching Follow on shows the running cell")
    shot(page, "20-6-follow-running-cell")
    panel_width(page, 300)
    assert_panel_layout(page)
    shot(page, "20-6-follow-running-cell-300px")
    panel_width(page, 420)
    # the run goes on: the cell it writes next comes into view by itself
    page.evaluate(SCROLL_NOTEBOOK_JS, "top")
    (journey.lab.root / PROJECT / "gate-nav").write_text("go")
    journey.lab.wait_snapshot(
        journey.workflow_id or "",
        lambda s: s["run"]["status"] == "completed",
        "the run completed",
    )
    assert journey.snapshot()["run"]["status"] == "completed"
    page.wait_for_function(
        f"() => ({CELL_INDEX_JS})(['behavior_id', 'fitting']).length >= 3", timeout=UI_MS
    )
    last = journey.cells_of("behavior_id", "fitting")[-1]
    journey.wait_in_view(last, "the newest workflow cell was followed")
    tid(journey.panel, "bcc-follow").uncheck()


def test_the_timeline_groups_contract_rows_under_their_action(journey: Journey) -> None:
    panel = journey.panel
    timeline = open_section(panel, "bcc-timeline")
    actions = timeline.locator('[data-testid="bcc-event"][data-event="action"]')
    expect(actions.first).to_be_visible()
    expect(timeline.locator('[data-testid="bcc-event"][data-event="contract"]')).to_have_count(0)
    inner = tid(actions.first, "bcc-action-event")
    expect(inner.first).to_be_hidden()
    actions.first.locator("summary").click(position={"x": 2, "y": 5})
    expect(inner.first).to_be_visible()
    # the action's label opens its cell
    journey.page.evaluate(SCROLL_NOTEBOOK_JS, "top")
    contract = actions.first.get_attribute("data-contract-id") or ""
    cells = journey.cells_of("contract_id", contract)
    assert cells, f"a cell carries contract {contract}"
    tid(actions.first, "bcc-action-link").click()
    journey.wait_in_view(cells[0], "the action's cell is shown")
    actions.first.scroll_into_view_if_needed()
    shot(journey.page, "20-6-timeline-grouped")


def test_screenshots_at_both_widths(journey: Journey) -> None:
    page = journey.page
    scroll_panel_top(page)
    shot(page, "20-6-navigation-1280")
    panel_width(page, 300)
    assert_panel_layout(page)
    shot(page, "20-6-navigation-300px")
    panel_width(page, 420)


def test_new_workflow_remembers_the_last_values(journey: Journey) -> None:
    page = journey.page
    # a reload: what is remembered outlives the page
    page.reload()
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=PROGRESS_MS)
    panel = open_panel(page)
    start = tid(panel, "bcc-start")
    expect(start).to_be_visible(timeout=PROGRESS_MS)
    start.click()
    form = tid(panel, "bcc-start-form")
    expect(tid(form, "bcc-start-blueprint")).to_have_value("workflow.yaml")
    expect(tid(form, "bcc-start-problem")).to_have_value(PROBLEM)
    expect(tid(form, "bcc-start-files")).to_have_value("data/in.csv")
    shot(page, "20-4-new-workflow-remembered")
    tid(form, "bcc-start-cancel").click()
