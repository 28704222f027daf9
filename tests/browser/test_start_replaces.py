"""New workflow… on a notebook that holds an earlier run's cells, in a real browser.

``notebook-bcc run`` run again removes the earlier run's cells (its record stays in the store)
and writes the new run after the user's own cells. The panel's start form offers the same,
checked by default: "Remove the earlier run's N cells (its record stays in the store)". The
cells go through Lab's document (it is open), so nothing comes back and nothing of the user's
is lost: a refused start puts them back; unchecked, the new run is written after the earlier
one; an unfinished earlier run keeps its cells (the server refuses the start). Each test runs
in single-user Lab and with jupyter-collaboration (the cells then leave the room's document).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.conftest import (
    PROGRESS_MS,
    REPO,
    UI_MS,
    Lab,
    Pages,
    assert_panel_layout,
    expect,
    lab_of_mode,
    new_notebook_from_the_file_menu,
    notebook_tab,
    open_lab,
    open_panel,
    scroll_panel_top,
    shot,
    shots,
    started_lab,
    tid,
    wait_until,
)
from tests.journeys.conftest import JOURNEYS

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

DIRTY = re.compile(r"\bjp-mod-dirty\b")
INPUTS_TAG = "notebook-bcc-inputs"


@pytest.fixture(scope="module", params=["single-user", "collaborative"])
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One Lab per mode (overrides the conftest's ``lab``): with jupyter-collaboration the
    cells are removed from the room's shared document, which the room saves."""
    yield from started_lab(lab_of_mode(request, tmp_path_factory))


DOC_CELLS = """() => window.jupyterapp.shell.currentWidget.context.model.sharedModel.cells.map(
  c => [c.id, c.getSource(), ((c.getMetadata() || {}).notebook_bcc || null)])"""


def prefix(lab: Lab) -> str:
    """Screenshot names of this module, per mode."""
    return "start-replaces-collab" if lab.collaborative else "start-replaces"


def label(count: int) -> str:
    """The checkbox's words (as ``removeEarlierLabel`` writes them)."""
    cells = "cell" if count == 1 else "cells"
    return f"Remove the earlier run's {count} {cells} (its record stays in the store)"


def source(cell: dict[str, Any]) -> str:
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


def owner(cell: dict[str, Any]) -> str | None:
    """The workflow that wrote a file cell (None: the user's)."""
    bcc = cell.get("metadata", {}).get("notebook_bcc")
    return None if bcc is None else str(bcc.get("workflow_id"))


def layout(cells: list[dict[str, Any]]) -> list[tuple[str, str | None, str]]:
    """(id, workflow, source) of each file cell, in order."""
    return [(str(c.get("id")), owner(c), source(c)) for c in cells]


def doc_layout(page: Page) -> list[tuple[str, str | None, str]]:
    """The same of Lab's open document."""
    return [
        (cid, None if bcc is None else str(bcc.get("workflow_id")), text)
        for cid, text, bcc in page.evaluate(DOC_CELLS)
    ]


def settled(lab: Lab, page: Page, notebook: str) -> list[tuple[str, str | None, str]]:
    """Once Lab saved what it shows: the file's layout, equal to the document's."""
    expect(notebook_tab(page, notebook)).not_to_have_class(DIRTY, timeout=UI_MS)
    wait_until(
        lambda: layout(lab.notebook_cells(notebook)) == doc_layout(page),
        f"{notebook} saved as Lab shows it",
    )
    return layout(lab.notebook_cells(notebook))


def fill_start_form(panel: Locator, blueprint: str, files: str = "") -> Locator:
    """Open the start form (New workflow… or Start a workflow…) and fill it."""
    tid(panel, "bcc-start").click()
    form = tid(panel, "bcc-start-form")
    expect(form).to_be_visible()
    tid(form, "bcc-start-kind").select_option("blueprint")
    tid(form, "bcc-start-blueprint").fill(blueprint)
    tid(form, "bcc-start-files").fill(files)
    return form


def finished_first_run(lab: Lab, page: Page, panel: Locator, notebook: str) -> str:
    """The quick blueprint run from the panel on the notebook, completed and saved; its id."""
    form = fill_start_form(panel, "blueprints/quick.yaml")
    # nothing to remove yet: the checkbox is not offered
    expect(tid(form, "bcc-start-remove-earlier")).to_be_hidden()
    tid(form, "bcc-start-submit").click()
    badge = tid(panel, "bcc-badge")
    expect(badge).to_have_attribute("data-status", "completed", timeout=PROGRESS_MS)
    (run,) = lab.workflows(notebook)
    lab.wait_file_cells(
        notebook,
        lambda cells: (
            any("answer = 40 + 2" in source(c) for c in cells)
            and all(owner(c) == run["workflow_id"] for c in cells)
        ),
        "the first run's cells",
    )
    expect(notebook_tab(page, notebook)).not_to_have_class(DIRTY, timeout=UI_MS)
    return str(run["workflow_id"])


def type_in(page: Page, cell: Locator, text: str, *, at_end: bool = True) -> None:
    """Click into a cell's editor and type ``text`` (at the end of its line)."""
    editor = cell.locator(".cm-content")
    editor.click()
    expect(editor).to_be_focused(timeout=UI_MS)  # a person types once they see the cursor
    if at_end:
        page.keyboard.press("End")
    page.keyboard.type(text)
    page.keyboard.press("Escape")


def add_cell(page: Page, beside: Locator, key: str, text: str) -> None:
    """Select ``beside``, press A (above) or B (below) in command mode, type into the new cell."""
    editor = beside.locator(".cm-content")
    editor.click()
    expect(editor).to_be_focused(timeout=UI_MS)
    page.keyboard.press("Escape")
    page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.keyboard.type(text)
    page.keyboard.press("Escape")


def save(page: Page, notebook: str) -> None:
    """Ctrl-S; Lab asks to rename an Untitled notebook at its first save: the name is kept."""
    page.keyboard.press("Control+s")
    rename = page.locator(".jp-Dialog", has_text="Rename file")
    clean = page.locator("#jp-main-dock-panel .lm-TabBar-tab:not(.jp-mod-dirty)").filter(
        has_text=re.compile(rf"^{re.escape(notebook)}$")
    )
    expect(rename.or_(clean)).to_be_visible(timeout=UI_MS)
    if rename.is_visible():
        rename.locator(".jp-Dialog-button.jp-mod-accept").click()
        expect(rename).to_have_count(0)
    expect(notebook_tab(page, notebook)).not_to_have_class(DIRTY, timeout=UI_MS)


def test_new_workflow_removes_the_earlier_runs_cells_and_keeps_the_users(
    lab: Lab, pages: Pages
) -> None:
    lab.copy_fixture_blueprint("quick.yaml")
    _copy_browser_fixture(lab, "asks.yaml")
    page = pages.new()
    open_lab(page, lab)
    notebook = new_notebook_from_the_file_menu(page)  # Lab's blank cell in it
    panel = open_panel(page)
    first = finished_first_run(lab, page, panel, notebook)

    # the user writes cells of their own above and below the run, and edits one of its cells
    # (detached, D10: kept as they left it, still the run's cell)
    code = page.locator(".jp-NotebookPanel .jp-Notebook .jp-CodeCell")
    add_cell(page, code.first, "a", "mine_top = 'kept'")
    type_in(page, code.filter(has_text="answer = 40 + 2"), "  # checked by me")
    add_cell(page, code.last, "b", "mine_bottom = 'kept too'")
    save(page, notebook)
    before = layout(lab.notebook_cells(notebook))
    assert [text for _, wf, text in before if wf is None] == [
        "mine_top = 'kept'",
        "mine_bottom = 'kept too'",
    ], before
    earlier = [cid for cid, wf, _ in before if wf == first]
    assert any("# checked by me" in text for _, wf, text in before if wf == first), before
    assert doc_layout(page) == before

    # New workflow…: the form offers to remove the earlier run's cells, checked by default
    form = fill_start_form(panel, "blueprints/asks.yaml", files="data/missing.csv")
    remove = tid(form, "bcc-start-remove-earlier")
    expect(remove).to_be_visible()
    expect(remove).to_be_checked()
    expect(tid(form, "bcc-start-remove-earlier-label")).to_have_text(label(len(earlier)))
    assert_panel_layout(page)
    remove.scroll_into_view_if_needed()
    shots(page, f"{prefix(lab)}-1-form")

    # a start the server refuses (an input file that is not there) puts the cells back, in
    # the document and in the file
    tid(form, "bcc-start-submit").click()
    expect(tid(form, "bcc-start-error")).to_contain_text("Input files", timeout=UI_MS)
    expect(notebook_tab(page, notebook)).not_to_have_class(DIRTY, timeout=UI_MS)
    page.wait_for_function(
        f"([ids]) => JSON.stringify(({DOC_CELLS})().map(c => c[0])) === JSON.stringify(ids)",
        arg=[[cid for cid, _, _ in before]],
        timeout=UI_MS,
    )
    assert doc_layout(page) == before
    assert layout(lab.notebook_cells(notebook)) == before
    (still,) = lab.workflows(notebook)
    assert still["workflow_id"] == first, still
    assert still["released"] == "finished", still  # not replaced: nothing started
    shot(page, f"{prefix(lab)}-2-refused-cells-back")

    # the start without the missing file: the earlier run's cells go, the new run is written
    # after the user's cells; it asks, the user answers in the panel
    tid(form, "bcc-start-files").fill("")
    tid(form, "bcc-start-submit").click()
    expect(form).to_have_count(0, timeout=UI_MS)
    notice = panel.locator('[data-testid="bcc-notice"][data-kind="info"]')
    expect(notice).to_contain_text(f"the earlier run's {len(earlier)} cells removed")
    badge = tid(panel, "bcc-badge")
    expect(badge).to_have_attribute("data-status", "waiting", timeout=PROGRESS_MS)
    decision = tid(panel, "bcc-decision")
    expect(decision).to_have_count(1, timeout=UI_MS)
    shot(page, f"{prefix(lab)}-3-new-run-asks")
    tid(decision, "bcc-approve").click()
    expect(badge).to_have_attribute("data-status", "completed", timeout=PROGRESS_MS)
    second = next(w["workflow_id"] for w in lab.workflows(notebook) if w["workflow_id"] != first)

    lab.wait_file_cells(
        notebook,
        lambda cells: any("value = 41 + 1" in source(c) for c in cells),
        "the new run's cells",
    )
    after = settled(lab, page, notebook)
    # the user's cells first, in their order, then only the new run's cells
    assert [text for _, wf, text in after[:2]] == ["mine_top = 'kept'", "mine_bottom = 'kept too'"]
    assert [wf for _, wf, _ in after[:2]] == [None, None]
    assert after[2:], after
    assert all(wf == second for _, wf, _ in after[2:]), after
    assert not {cid for cid, _, _ in after} & set(earlier), after
    inputs = lab.notebook_cells(notebook)[2]
    assert INPUTS_TAG in inputs["metadata"].get("tags", []), inputs

    # the earlier run is archived: replaced on its notebook, its record still readable
    old = _listed(lab, first)
    assert old["released"] == "replaced", old
    assert not old["active"], old
    assert lab.snapshot(first)["run"]["status"] == "completed"
    scroll_panel_top(page)
    assert_panel_layout(page)
    shots(page, f"{prefix(lab)}-4-only-the-new-run")


def test_unchecked_the_new_run_is_written_after_the_earlier_one(lab: Lab, pages: Pages) -> None:
    lab.copy_fixture_blueprint("quick.yaml")
    page = pages.new()
    open_lab(page, lab)
    notebook = new_notebook_from_the_file_menu(page)
    panel = open_panel(page)
    first = finished_first_run(lab, page, panel, notebook)
    before = layout(lab.notebook_cells(notebook))

    form = fill_start_form(panel, "blueprints/quick.yaml")
    remove = tid(form, "bcc-start-remove-earlier")
    expect(tid(form, "bcc-start-remove-earlier-label")).to_have_text(label(len(before)))
    remove.uncheck()
    remove.scroll_into_view_if_needed()
    shot(page, f"{prefix(lab)}-5-unchecked")
    tid(form, "bcc-start-submit").click()
    expect(form).to_have_count(0, timeout=UI_MS)
    badge = tid(panel, "bcc-badge")
    second = lab.wait_file_cells(
        notebook,
        lambda cells: any(owner(c) not in (None, first) for c in cells),
        "the new run's first cell",
        timeout=PROGRESS_MS / 1000,
    )
    second_id = next(owner(c) for c in second if owner(c) != first)
    lab.wait_snapshot(str(second_id), lambda s: s["run"]["status"] == "completed", "the end")
    expect(badge).to_have_attribute("data-status", "completed", timeout=PROGRESS_MS)
    lab.wait_file_cells(
        notebook,
        lambda cells: sum("answer = 40 + 2" in source(c) for c in cells) == 2,
        "the new run's code cell",
    )
    after = settled(lab, page, notebook)
    expect(page.locator(".jp-NotebookPanel .jp-InputPrompt", has_text="[*]")).to_have_count(0)

    # both runs' code cells reach the file in their last state (a heartbeat after the panel
    # shows the run's end, as every cell): the earlier run's too, though the new run started
    # a moment after it ended (its last plan was once never asked for: [*] for good)
    def states(cells: list[dict[str, Any]]) -> list[tuple[str | None, object, object]]:
        return [
            (owner(c), c["metadata"]["notebook_bcc"].get("status"), c["execution_count"])
            for c in cells
            if "answer = 40 + 2" in source(c)
        ]

    try:
        lab.wait_file_cells(
            notebook,
            lambda cells: [(s[1], s[2] is not None) for s in states(cells)] == [("ok", True)] * 2,
            "both runs' code cells in their last state",
        )
    except AssertionError as late:
        raise AssertionError(states(lab.notebook_cells(notebook))) from late
    assert [s[0] for s in states(lab.notebook_cells(notebook))] == [first, second_id]
    # today's behaviour: the earlier run's cells stay as they were, the new run after them
    assert after[: len(before)] == before, after
    assert all(wf == second_id for _, wf, _ in after[len(before) :]), after
    shot(page, f"{prefix(lab)}-6-both-runs")


def test_an_unfinished_run_keeps_its_cells_and_a_finished_one_leaves_only_the_new_run(
    lab: Lab, pages: Pages
) -> None:
    blueprint = _copy_browser_fixture(lab, "asks.yaml")
    lab.copy_fixture_blueprint("quick.yaml")
    page = pages.new()
    open_lab(page, lab)
    notebook = new_notebook_from_the_file_menu(page)  # only Lab's blank cell in it
    panel = open_panel(page)
    waiting = lab.start_workflow(notebook, blueprint)
    lab.next_decision_or_end(waiting["workflow_id"])
    decision = tid(panel, "bcc-decision")
    expect(decision).to_have_count(1, timeout=PROGRESS_MS)
    lab.wait_file_cells(
        notebook,
        lambda cells: any("value = 41 + 1" in source(c) for c in cells),
        "the waiting run's cells",
    )
    before = settled(lab, page, notebook)
    assert all(wf == waiting["workflow_id"] for _, wf, _ in before), before

    # the palette's "Start a Workflow on This Notebook…" opens the form while the run waits
    page.evaluate("() => window.jupyterapp.commands.execute('notebook-bcc:start')")
    form = tid(panel, "bcc-start-form")
    expect(form).to_be_visible()
    expect(tid(form, "bcc-start-remove-earlier")).to_be_checked()
    expect(tid(form, "bcc-start-remove-earlier-label")).to_have_text(label(len(before)))
    tid(form, "bcc-start-kind").select_option("blueprint")
    tid(form, "bcc-start-blueprint").fill("blueprints/quick.yaml")
    tid(form, "bcc-start-submit").click()
    # the server refuses a second workflow on the notebook; its cells were never touched
    expect(tid(form, "bcc-start-error")).to_contain_text(
        "already has an active workflow", timeout=UI_MS
    )
    assert doc_layout(page) == before
    assert layout(lab.notebook_cells(notebook)) == before
    expect(notebook_tab(page, notebook)).not_to_have_class(DIRTY)
    assert lab.snapshot(waiting["workflow_id"])["run"]["status"] == "waiting"
    assert_panel_layout(page)
    shot(page, f"{prefix(lab)}-7-unfinished-refused")

    # the user answers the run's question; it completes, and the same form starts anew: every
    # cell of the notebook was the earlier run's, so only the new run is left in it
    tid(decision, "bcc-approve").click()
    expect(tid(panel, "bcc-badge")).to_have_attribute("data-status", "completed", timeout=UI_MS)
    tid(form, "bcc-start-submit").click()
    expect(form).to_have_count(0, timeout=UI_MS)
    expect(tid(panel, "bcc-badge")).to_have_attribute(
        "data-status", "completed", timeout=PROGRESS_MS
    )
    new, after = _new_run_settled(lab, page, notebook, waiting["workflow_id"])
    # no blank cell, nothing of the earlier run: the new run's inputs cell first
    assert all(wf == new["workflow_id"] for _, wf, _ in after), after
    first_cell = lab.notebook_cells(notebook)[0]
    assert INPUTS_TAG in first_cell["metadata"].get("tags", []), first_cell
    scroll_panel_top(page)
    shot(page, f"{prefix(lab)}-8-only-the-new-run")


def _new_run_settled(
    lab: Lab, page: Page, notebook: str, earlier: str
) -> tuple[dict[str, Any], list[tuple[str, str | None, str]]]:
    """The workflow started after ``earlier`` on ``notebook``, once its cells reached the
    file, and the notebook's cells as :func:`settled` reads them then."""
    (new,) = [w for w in lab.workflows(notebook) if w["workflow_id"] != earlier]
    lab.wait_file_cells(
        notebook,
        lambda cells: any(owner(c) == new["workflow_id"] and "answer" in source(c) for c in cells),
        "the new run's cells",
    )
    return new, settled(lab, page, notebook)


def test_a_failed_run_is_replaced_and_its_cells_removed(lab: Lab, pages: Pages) -> None:
    # a failed run may be retried, but starting anew on its notebook is never refused (as
    # `notebook-bcc run` again): its cells go like a finished run's
    target = lab.root / "blueprints"
    target.mkdir(exist_ok=True)
    shutil.copy(JOURNEYS / "failing_counting.yaml", target / "failing_counting.yaml")
    lab.copy_fixture_blueprint("quick.yaml")
    page = pages.new()
    open_lab(page, lab)
    notebook = new_notebook_from_the_file_menu(page)
    panel = open_panel(page)
    failed = lab.start_workflow(notebook, "blueprints/failing_counting.yaml", auto_confirm=True)
    expect(tid(panel, "bcc-badge")).to_have_attribute("data-status", "failed", timeout=PROGRESS_MS)
    lab.wait_file_cells(
        notebook,
        lambda cells: any("fixed" in source(c) for c in cells),
        "the failed run's cells",
    )
    before = settled(lab, page, notebook)
    assert all(wf == failed["workflow_id"] for _, wf, _ in before), before

    form = fill_start_form(panel, "blueprints/quick.yaml")
    expect(tid(form, "bcc-start-remove-earlier")).to_be_checked()
    expect(tid(form, "bcc-start-remove-earlier-label")).to_have_text(label(len(before)))
    tid(form, "bcc-start-submit").click()
    # started at once: the failed run, released for the new one, never takes its notebook
    # back (a late commit of it once did, and the start was refused with 409)
    expect(form).to_have_count(0, timeout=UI_MS)
    badge = tid(panel, "bcc-badge")
    expect(badge).to_have_attribute("data-status", "completed", timeout=PROGRESS_MS)
    new, after = _new_run_settled(lab, page, notebook, failed["workflow_id"])
    assert all(wf == new["workflow_id"] for _, wf, _ in after), after
    # the failed run is archived with its record: replaced, still failed
    old = _listed(lab, failed["workflow_id"])
    assert old["released"] == "replaced", old
    assert lab.snapshot(failed["workflow_id"])["run"]["status"] == "failed"
    shot(page, f"{prefix(lab)}-9-failed-run-replaced")


def _listed(lab: Lab, workflow_id: str) -> dict[str, Any]:
    """``workflow_id``'s row in the server's whole workflow list (the list names a workflow's
    notebook as its snapshot has it: that is not what these tests are about)."""
    rows = lab.api("GET", "workflows")["workflows"]
    found = [w for w in rows if w["workflow_id"] == workflow_id]
    assert found, f"{workflow_id} is not listed: {rows}"
    return dict(found[0])


def _copy_browser_fixture(lab: Lab, name: str) -> str:
    """A blueprint of tests/fixtures/browser under ``blueprints/``; its API path."""
    target = lab.root / "blueprints"
    target.mkdir(exist_ok=True)
    shutil.copy(REPO / "tests" / "fixtures" / "browser" / name, target / name)
    return f"blueprints/{name}"
