"""A resumed run and a notebook file that lags the store (a kill inside the write debounce).

The store commits a cell's new source before the debounced write puts it in the file; a
process killed in between leaves the file holding the workflow's older version of the cell.
The process that resumes has written nothing yet, so it must still know that version for the
workflow's own (the store keeps digests of a cell's latest sources), take the stored one, and
keep only what a user really typed.
"""

from __future__ import annotations

import nbformat
import pytest

from notebook_bcc.cli import main
from tests.durability.conftest import Durable

pytestmark = pytest.mark.timeout(120)

FIRST = "The crash suite kills this workflow anywhere."
"""The first of crash.yaml's three merged intro paragraphs: that cell's first version."""
USERS = "Mean and spread, in my own words."


def test_a_resume_replaces_the_workflows_older_version_and_keeps_a_users_edit(
    durable: Durable,
) -> None:
    db = ["--state-db", str(durable.state_db)]
    run = ["run", str(durable.blueprint("crash")), "--notebook", str(durable.notebook), *db]
    assert main(run) == 3  # waiting on the review stage's confirmation
    merged = next(s for s in durable.store_sources() if s.startswith(FIRST))
    assert merged.count("\n\n") == 2  # three paragraphs merged into one cell

    nb = nbformat.read(str(durable.notebook), as_version=4)
    lagging = next(cell for cell in nb.cells if cell.source == merged)
    lagging.source = FIRST  # as a kill right after the first merge leaves the file
    edited = next(cell for cell in nb.cells if cell.source == "Mean and spread.")
    edited.source = USERS  # a user's edit while no process ran the workflow
    nbformat.write(nb, str(durable.notebook))

    assert main(["resume", *db, "--approve", "--auto-confirm"]) == 0

    by_id = {
        cell.id: cell.source for cell in nbformat.read(str(durable.notebook), as_version=4).cells
    }
    assert by_id[lagging.id] == merged
    assert by_id[edited.id] == USERS
    assert list(by_id.values()).count(merged) == 1
