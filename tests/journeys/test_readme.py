"""The README's decision flow, typed as written from the project root (each exit code checked)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.journeys.conftest import ROOT, cli, sources

HEADING = "### Running a workflow and answering its questions"


def readme_block() -> list[tuple[list[str], int]]:
    """The commands of the first ``bash`` block under HEADING, with their ``# exit N``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(HEADING) :]
    block = section[
        section.index("```bash") + len("```bash") : section.index(
            "```", section.index("```bash") + 7
        )
    ]
    commands = []
    for line in block.strip().splitlines():
        command, _, comment = line.partition("#")
        match = re.search(r"exit (\d+)", comment)
        assert match, f"README line without '# exit N': {line}"
        words = shlex.split(command)
        assert words[0] == "notebook-bcc"
        commands.append((words[1:], int(match.group(1))))
    return commands


@pytest.mark.timeout(900)  # five housing runs as separate processes
def test_the_readme_decision_flow_holds_as_written(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples" / "housing", tmp_path / "examples" / "housing")
    commands = readme_block()
    assert len(commands) >= 5
    stepwise: list[str] = []
    printed = []
    for index, (args, expected) in enumerate(commands):
        done = cli(*args, cwd=tmp_path)
        assert done.returncode == expected, (args, done.stdout, done.stderr)
        printed.append(done.stdout)
        if index == len(commands) - 2:
            stepwise = sources(tmp_path / "out" / "housing" / "housing.ipynb")
    assert sources(tmp_path / "out" / "housing" / "housing.ipynb") == stepwise
    # the export question says what the code is for, in the blueprint's words
    assert (
        'Run the irreversible code of "Pickle the fitted model next to the notebook." '
        '(stage "Results communication", step "Export the model")?'
    ) in "".join(printed)
