"""``examples/housing-ai``: an LLM-planned housing run, recorded, replayed offline in a real kernel.

The replay runs from a copy of the record directory at another path (a fresh clone), the
transcript is checked for the LLM quirks it was written with, and a re-recording through the
real LLM planner and the scripted chat server must give the committed transcript back.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.models.contract import ExecutionStatus
from notebook_bcc.planners.transcript import Exchange, read_transcript
from notebook_bcc.protocol.errors import ProtocolError
from notebook_bcc.protocol.parse import parse_payload
from notebook_bcc.store.sqlite import SqliteStore
from tests.conftest import run_cli as cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "housing-ai"
HOUSING_CSV = EXAMPLE.parent / "housing" / "data" / "housing.csv"
MALFORMED = "038-behavior-arrangement.txt"

HEADINGS = [
    "## Data existence",
    "## Data integrity and cleaning",
    "## Exploratory data analysis",
    "## Feature engineering",
    "## Modelling",
    "## Results",
    "### Model export",
]


def source(cell: dict[str, Any]) -> str:
    text = cell["source"]
    return "".join(text) if isinstance(text, list) else str(text)


def answers(exchanges: list[Exchange]) -> list[Exchange]:
    """The exchanges an agent answered (stage routes make no LLM call)."""
    return [ex for ex in exchanges if ex.point != "route_stage"]


def replies() -> list[Path]:
    return sorted((EXAMPLE / "llm").glob("*.txt"))


def test_the_example_replays_to_completion_from_a_fresh_copy(tmp_path: Path) -> None:
    copy = tmp_path / "clone" / "housing-ai"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "out"
    done = cli(
        "run",
        copy,
        "--planner",
        "replay",
        "--auto-confirm",
        "--notebook",
        out / "housing-ai.ipynb",
        "--state-db",
        out / "state.sqlite",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "completed, FSM workflow_completed" in done.stdout + done.stderr

    notebook = json.loads((out / "housing-ai.ipynb").read_text(encoding="utf-8"))
    cells = notebook["cells"]
    markdown = [source(c) for c in cells if c["cell_type"] == "markdown"]
    assert [text for text in markdown if text.startswith("#")] == HEADINGS
    assert notebook["metadata"]["title"] == "Housing price model"
    assert source(cells[0]).startswith("# notebook-bcc inputs")
    listed = source(cells[0]).split("user_submit_files = ['")[1].split("'")[0]
    assert not Path(listed).is_absolute(), "inputs are written relative to the notebook"
    assert (out / listed).resolve() == (copy / "inputs" / "housing.csv").resolve(), (
        "inputs come from the copy"
    )
    code = [c for c in cells if c["cell_type"] == "code"]
    assert len(code) == 13
    outputs = [o for c in code for o in c.get("outputs", [])]
    errors = [o for o in outputs if o["output_type"] == "error"]
    assert [(o["ename"], o["evalue"]) for o in errors] == [("KeyError", "'neighbourhood'")]
    plots = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(plots) == 2, "the EDA scatter and the residual panels"
    printed = "".join("".join(o.get("text", "")) for o in outputs if o["output_type"] == "stream")
    assert "selected enriched: meets the target (RMSE < 18,000, R² > 0.9)" in printed

    card = json.loads((out / "housing_price_model.json").read_text(encoding="utf-8"))
    assert card["rmse"] < 18_000
    assert card["r2"] > 0.9
    assert (out / "housing_price_model.pkl").stat().st_size > 0
    store = SqliteStore(out / "state.sqlite")
    try:
        (workflow_id,) = store.workflow_ids()
        exports = [c for c in store.contracts(workflow_id) if c.irreversible]
        confirmations = [c for c in store.contracts(workflow_id) if c.action_type == "confirmation"]
    finally:
        store.close()
    assert [c.status for c in exports] == [ExecutionStatus.COMPLETED], "the export ran once"
    assert [c.status for c in confirmations] == [ExecutionStatus.COMPLETED]


def test_the_transcript_is_self_contained() -> None:
    transcript = read_transcript(EXAMPLE)
    header = transcript.header
    assert header is not None
    assert header.planner["kind"] == "llm"
    assert header.planner["settings"]["model"] == "scripted-housing"
    assert [f.path for f in header.files] == ["inputs/housing.csv"]
    assert (EXAMPLE / "inputs" / "housing.csv").read_bytes() == HOUSING_CSV.read_bytes()
    points = [ex.point for ex in transcript.exchanges]
    assert len(points) == 60
    assert points.count("route_stage") == 6
    # the one reply the planner sent back is in the record, where it came, with its body
    (rejected,) = transcript.errors
    assert rejected.code == "reply_rejected"
    assert rejected.point == "plan_behavior"
    assert rejected.location["step_id"] == "fit_and_compare"
    assert "needs a non-empty id attribute" in rejected.message
    assert rejected.details["body"] == (EXAMPLE / "llm" / MALFORMED).read_text()
    answered = transcript.exchanges[rejected.after]
    assert answered.point == "plan_behavior"
    assert 'id="' in (answered.body or "")


def test_the_transcript_holds_the_llm_quirks() -> None:
    exchanges = answers(read_transcript(EXAMPLE).exchanges)
    bodies = [ex.body or "" for ex in exchanges]
    prose = [b for b in bodies if not b.lstrip().startswith(("<", "```"))]
    assert len(prose) >= 5, "prose before the XML"
    after = [b[b.rindex("</") :].split(">", 1)[1].replace("```", "").strip() for b in bodies]
    assert len([text for text in after if text]) >= 2, "prose after the XML"
    assert any("```xml\n<" in b for b in bodies), "a fenced document"
    assert any("if rmse < 18000 and r2 > 0.9:" in b for b in bodies), "a raw '<' in code"
    assert any("<criterion>rmse < 18000</criterion>" in b for b in bodies)
    assert any("<add-code2run irreversible>" in b for b in bodies), "a bare attribute"

    def repairs(ex: Exchange) -> set[str]:
        return {note["kind"] for note in (ex.payload or {}).get("repairs", [])}

    seen = set().union(*(repairs(ex) for ex in exchanges))
    expected = {"dropped_prose", "dropped_trailing", "escaped_char", "verbatim_text"}
    assert seen >= {*expected, "bare_attribute"}
    export = next(ex for ex in exchanges if "<add-code2run irreversible>" in (ex.body or ""))
    (code,) = [a for a in (export.payload or {})["actions"] if a["type"] == "add-code2run"]
    assert code["irreversible"] is True


def test_the_malformed_reply_was_answered_by_the_corrected_one() -> None:
    files = replies()
    malformed = EXAMPLE / "llm" / MALFORMED
    with pytest.raises(ProtocolError, match="needs a non-empty id attribute"):
        parse_payload(malformed.read_text(encoding="utf-8"))
    usable = [f for f in files if f.name != MALFORMED]
    exchanges = answers(read_transcript(EXAMPLE).exchanges)
    assert [ex.body for ex in exchanges] == [f.read_text(encoding="utf-8") for f in usable]
    assert [ex.point for ex in exchanges] == [
        {
            "stage-planner": "plan_stages",
            "step-planner": "plan_steps",
            "behavior-arrangement": "plan_behavior",
            "action-generator": "generate_actions",
            "behavior-reflection": "reflect_behavior",
            "stage-reflection": "reflect_stage",
        }[f.stem.split("-", 1)[1]]
        for f in usable
    ]
    corrected = exchanges[files.index(malformed)]
    assert corrected.location["step_id"] == "fit_and_compare"
    assert (corrected.body or "").startswith("You are right, the id attribute was missing.")


def test_rerecording_through_the_llm_planner_gives_the_same_transcript(tmp_path: Path) -> None:
    out = tmp_path / "recorded"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "record.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"1 sent back with a parse error ({MALFORMED})" in done.stdout

    def decisions(directory: Path) -> list[tuple[Any, ...]]:
        return [
            (ex.point, ex.fsm_state, ex.location, ex.body, ex.payload, ex.route)
            for ex in read_transcript(directory).exchanges
        ]

    assert decisions(out) == decisions(EXAMPLE)
    assert (out / "inputs" / "housing.csv").read_bytes() == HOUSING_CSV.read_bytes()
