"""A stage confirmation shows the outputs of the stage it asks about, and only those.

Found in a browser walk: after "Start over", the stage confirmation listed another stage's
(an earlier attempt's) output, because the review showed the run's latest outputs and the
stage under review had printed nothing. The decision now carries its stage visit's own
outputs (``details.outputs``); the CLI and the panel show those.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import FIXTURES
from tests.conftest import run_cli as cli

BLUEPRINT = FIXTURES / "cli" / "review_outputs.yaml"


def _pending(state_db: Path) -> dict[str, object]:
    shown = cli("status", "--state-db", state_db, "--json")
    (pending,) = json.loads(shown.stdout)["run"]["pending"]
    assert isinstance(pending, dict)
    return pending


def test_a_quiet_stage_is_reviewed_without_another_stages_output(tmp_path: Path) -> None:
    notebook = tmp_path / "review.ipynb"
    state_db = tmp_path / "state.sqlite"
    first = cli("run", BLUEPRINT, "--notebook", notebook, "--state-db", state_db)
    assert first.returncode == 3, first.stdout + first.stderr
    assert "Is the quiet stage good?" in first.stdout
    assert "the stage printed no output" in first.stdout
    assert "alpha-output" not in first.stdout, "the loud stage's output is not the quiet one's"
    pending = _pending(state_db)
    assert pending["details"]["outputs"] == []  # type: ignore[index]

    second = cli("resume", "--state-db", state_db, "--approve")
    assert second.returncode == 3, second.stdout + second.stderr
    assert "Is the shout stage good?" in second.stdout
    assert "    | gamma-output" in second.stdout
    assert "alpha-output" not in second.stdout
    pending = _pending(state_db)
    assert pending["details"]["outputs"] == ["gamma-output\n"]  # type: ignore[index]
