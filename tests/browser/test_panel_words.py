"""Issue 20, item 5 in a real browser: the panel reads in plain words at Lab's default width
and at a 300 px panel, in every state of a run (running, waiting for approval, an irreversible
action, failed, completed) on a notebook Lab creates (File > New > Notebook).

At each state and width: the status line says what the run does or needs (the FSM state only
in the details line), no label is clipped or has a word broken across lines, the panel does
not overflow, and a screenshot is saved (``test-artifacts/browser/20-words-*.png``). The code
of an irreversible action scrolls sideways and never wraps; its "Why" row says the blueprint
marked it; the diagram's fit-to-width keeps it readable.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import (
    PANEL_ID,
    PROGRESS_MS,
    UI_MS,
    Lab,
    Pages,
    assert_panel_layout,
    expect,
    new_notebook_from_the_file_menu,
    open_lab,
    open_panel,
    open_section,
    panel_width,
    scroll_panel_top,
    shot,
    tid,
)

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

BLUEPRINT = Path(__file__).resolve().parents[1] / "fixtures" / "browser" / "plainwords.yaml"
NARROW = 300

# Text cut by its box (overflow hidden / ellipsis) and words broken across lines, outside code
# (but inside identifiers: a variable name wraps after an underscore, never inside a word).
CLIPPED_JS = """
panel => {
  const bad = [];
  for (const el of panel.querySelectorAll('*')) {
    if (el.clientWidth === 0 || el.closest('pre, svg, .jp-NotebookBcc-figure')) continue;
    if (!el.checkVisibility({contentVisibilityAuto: true})) continue;
    const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const style = getComputedStyle(el);
    const cuts = ['hidden', 'clip'].includes(style.overflowX) || style.textOverflow === 'ellipsis';
    if (cuts && el.scrollWidth > el.clientWidth + 1) {
      bad.push(`clipped ${el.tagName.toLowerCase()}: "${el.textContent.trim().slice(0, 40)}"`);
    }
  }
  for (const table of panel.querySelectorAll('table')) {
    const box = table.getBoundingClientRect();
    const room = table.parentElement.getBoundingClientRect();
    if (box.width > 0 && box.right > room.right + 1) {
      bad.push(`table wider than its section: ${table.className} ${Math.round(box.width)}px`);
    }
  }
  const walker = document.createTreeWalker(panel, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest('pre, svg')) continue;
    if (parent.closest('code') && !parent.closest('code.jp-NotebookBcc-id')) continue;
    if (!parent.checkVisibility({contentVisibilityAuto: true})) continue;
    const words = /[A-Za-z]{2,}/g;
    for (let m = words.exec(node.textContent); m; m = words.exec(node.textContent)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const lines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0)
        .map(r => Math.round(r.top)));
      if (lines.size > 1) {
        bad.push(`word broken across lines: "${m[0]}" in ${parent.tagName.toLowerCase()}.` +
          `${parent.className} "${node.textContent.slice(0, 60)}" ` +
          `${Math.round(parent.getBoundingClientRect().width)}px`);
      }
    }
  }
  return bad;
}
"""


def reason(panel: Locator) -> Locator:
    return tid(panel, "bcc-reason")


def check_words(page: Page, panel: Locator, name: str, extra: Callable[[], None]) -> None:
    """At the default width and at 300 px: no clipping, no overflow, ``extra``; screenshots."""
    default = panel.bounding_box()
    assert default is not None
    for width, suffix in ((None, ""), (NARROW, f"-{NARROW}px")):
        if width is not None:
            panel_width(page, width)
            page.wait_for_function(
                f"() => Math.abs(document.getElementById('{PANEL_ID}')"
                f".getBoundingClientRect().width - {width}) <= 3",
                timeout=UI_MS,
            )
        extra()
        # every section and tree node open: what a closed one hides is checked too
        panel.evaluate("p => p.querySelectorAll('details').forEach(d => { d.open = true; })")
        problems = panel.evaluate(CLIPPED_JS)
        shot(page, f"20-words-{name}{suffix}")
        assert not problems, f"{name}{suffix}: {problems}"
        assert_panel_layout(page)
    panel_width(page, round(default["width"]))


def expect_plain_header(
    panel: Locator, sentence: str | re.Pattern[str], state_words: str = "Workflow state"
) -> None:
    expect(reason(panel)).to_have_text(sentence, timeout=PROGRESS_MS)
    state = tid(panel, "bcc-state")
    expect(state).to_have_text(re.compile(rf"^{state_words}: [a-z ]+$"))
    header = tid(panel, "bcc-reason").locator("xpath=..")
    for jargon in ("WAITING FOR YOU ·", "run ?", "not possible in"):
        expect(header).not_to_contain_text(jargon)


def test_the_panel_reads_in_plain_words_in_every_state(lab: Lab, pages: Pages) -> None:
    (lab.root / "blueprints").mkdir(exist_ok=True)
    shutil.copy(BLUEPRINT, lab.root / "blueprints" / "plainwords.yaml")
    page = pages.new()
    open_lab(page, lab)
    notebook = new_notebook_from_the_file_menu(page)
    folder = lab.root / Path(notebook).parent
    started = lab.start_workflow(notebook, "blueprints/plainwords.yaml")
    workflow_id = started["workflow_id"]
    panel = open_panel(page)

    # running: the first cell waits for gate-1
    expect(tid(panel, "bcc-badge")).to_have_attribute("data-status", "running", timeout=UI_MS)
    expect_plain_header(panel, "Running Modelling")
    check_words(page, panel, "running", lambda: expect_plain_header(panel, "Running Modelling"))

    # waiting for approval: the stage confirmation asks its question in the status line
    (folder / "gate-1").touch()
    asked = "Waiting for your approval: Review the held-out RMSE before the model is exported."
    expect_plain_header(panel, asked)
    check_words(page, panel, "waiting", lambda: expect_plain_header(panel, asked))
    tid(panel, "bcc-approve").first.click()

    # an irreversible action: its code scrolls sideways, its "Why" names the blueprint
    card = panel.locator('[data-testid="bcc-decision"][data-kind="irreversible_confirmation"]')
    expect(card).to_be_visible(timeout=PROGRESS_MS)
    expect(reason(panel)).to_contain_text("Waiting for your approval of an irreversible action")
    expect(card).to_contain_text("marked irreversible in the blueprint")
    expect(card).not_to_contain_text(re.compile(r"Why\s*planner"))

    def code_scrolls() -> None:
        code = card.locator("pre.jp-NotebookBcc-code")
        expect(code).to_be_visible()
        style = code.evaluate(
            "el => ({ws: getComputedStyle(el).whiteSpace, ox: getComputedStyle(el).overflowX,"
            " sw: el.scrollWidth, cw: el.clientWidth, lines: el.textContent.split('\\n').length,"
            " height: el.clientHeight, lh: parseFloat(getComputedStyle(el).lineHeight)})"
        )
        assert style["ws"] == "pre", style
        assert style["ox"] in ("auto", "scroll"), style
        assert style["sw"] > style["cw"], f"the long line does not scroll: {style}"

    check_words(page, panel, "irreversible", code_scrolls)
    tid(card, "bcc-approve").click()

    # failed: where and why, in words
    failed = "Failed in Tuning: InvalidParameterError: alpha must be >= 0, got -1"
    expect(tid(panel, "bcc-badge")).to_have_attribute("data-status", "failed", timeout=PROGRESS_MS)
    when = "Workflow state when it failed"
    expect_plain_header(panel, failed, when)
    scroll_panel_top(page)
    check_words(page, panel, "failed", lambda: expect_plain_header(panel, failed, when))

    # retry after the cause is fixed: the run completes
    (folder / "fixed").touch()
    tid(panel, "bcc-retry").click()
    expect(tid(panel, "bcc-badge")).to_have_attribute(
        "data-status", "completed", timeout=PROGRESS_MS
    )
    expect_plain_header(panel, "Completed")
    assert lab.snapshot(workflow_id)["run"]["status"] == "completed"
    scroll_panel_top(page)
    check_words(page, panel, "completed", lambda: expect_plain_header(panel, "Completed"))

    # the diagram: open it full size, click to fit: it stays readable
    open_section(panel, "bcc-diagram")
    tid(panel, "bcc-diagram-open").click(timeout=PROGRESS_MS)
    view = tid(page, "bcc-diagram-view")
    expect(view).to_be_visible(timeout=UI_MS)
    image = view.locator("img, svg").first
    natural = image.bounding_box()
    assert natural is not None
    assert natural["width"] > 100, natural
    image.click()
    expect(view).to_have_class(re.compile("jp-mod-fit"))
    fitted = image.bounding_box()
    view_box = view.bounding_box()
    assert fitted is not None
    assert view_box is not None
    shot(page, "20-words-diagram-fit")
    assert fitted["width"] >= min(natural["width"], view_box["width"]) * 0.8, (natural, fitted)
    assert fitted["width"] <= view_box["width"] + 1, (fitted, view_box)
    assert fitted["height"] > 50, fitted
