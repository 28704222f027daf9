"""A stage confirmation in the panel shows what that stage printed, and nothing else.

Found in a browser walk: the card reviewing a stage listed another stage's output (an
earlier attempt's, after "Start over"), because it showed the run's latest outputs and the
stage under review had printed nothing. On a notebook Lab creates (File > New > Notebook),
a quiet stage's card says it printed nothing; the next stage's card shows its own output.
Screenshots: ``test-artifacts/browser/stage-review-*.png``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.browser.conftest import (
    PROGRESS_MS,
    Lab,
    Pages,
    assert_panel_layout,
    expect,
    new_notebook_from_the_file_menu,
    open_lab,
    open_panel,
    shot,
    tid,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

BLUEPRINT = Path(__file__).resolve().parents[1] / "fixtures" / "cli" / "review_outputs.yaml"


def test_each_stage_confirmation_reviews_its_own_stages_output(lab: Lab, pages: Pages) -> None:
    (lab.root / "blueprints").mkdir(exist_ok=True)
    shutil.copy(BLUEPRINT, lab.root / "blueprints" / "review_outputs.yaml")
    page = pages.new()
    open_lab(page, lab)
    notebook = new_notebook_from_the_file_menu(page)
    lab.start_workflow(notebook, "blueprints/review_outputs.yaml")
    panel = open_panel(page)
    card = panel.locator('[data-testid="bcc-decision"][data-kind="stage_confirmation"]')

    expect(card).to_contain_text("Is the quiet stage good?", timeout=PROGRESS_MS)
    expect(tid(card, "bcc-review")).to_have_text("The stage printed no output.")
    expect(card).not_to_contain_text("alpha-output")
    assert_panel_layout(page)
    shot(page, "stage-review-quiet")
    tid(card, "bcc-approve").click()

    expect(card).to_contain_text("Is the shout stage good?", timeout=PROGRESS_MS)
    expect(tid(card, "bcc-review")).to_contain_text("gamma-output")
    expect(card).not_to_contain_text("alpha-output")
    expect(card).not_to_contain_text("Outputs")  # carried for the review, not a detail row
    shot(page, "stage-review-shout")
