"""CLI: ``fsm table``, ``fsm diagram``, ``schema`` and a light ``--help``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from notebook_bcc.cli import main
from tests.fsm.test_workflow_fsm import TABLE_ROWS


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_fsm_table_json_is_the_seed_table_plus_the_rows_beyond_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(capsys, "fsm", "table", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert len(rows) == 46
    assert {(r["from"], r["event"], r["to"]) for r in rows} == set(TABLE_ROWS)
    assert all(set(r) == {"from", "event", "to"} for r in rows)


def test_fsm_table_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "fsm", "table", "--format", "markdown")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith("| from | event | to")
    assert len(lines) == 2 + 46
    assert "| idle | START_WORKFLOW | stage_running | core |" in lines
    assert "| idle | CANCEL | cancelled | beyond_seed |" in lines


def test_fsm_diagram_is_mermaid_with_all_edges(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "fsm", "diagram")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "stateDiagram-v2"
    assert "    [*] --> idle" in lines
    edges = [line for line in lines if "-->" in line and "[*]" not in line]
    assert len(edges) == 46
    for source, event, target in TABLE_ROWS:
        assert f"    {source} --> {target} : {event}" in lines


def test_fsm_diagram_marks_current(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "fsm", "diagram", "--current", "STEP_RUNNING")
    assert code == 0
    assert "    class step_running current" in out.splitlines()


def test_fsm_diagram_bad_current_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "fsm", "diagram", "--current", "flying")
    assert code == 2
    assert "unknown state 'flying'" in err


def test_schema_all_is_keyed_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "schema")
    assert code == 0
    schemas = json.loads(out)
    for name in ["snapshot", "command", "event", "contract"]:
        assert name in schemas
    assert schemas["snapshot"]["title"] == "WorkflowSnapshot"
    assert "fsm" in schemas["snapshot"]["properties"]


def test_schema_one_model(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "schema", "event")
    assert code == 0
    assert json.loads(out)["title"] == "WorkflowEvent"


def test_schema_unknown_model_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "schema", "nonsense")
    assert code == 2
    assert out == ""
    assert "unknown schema model 'nonsense'" in err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys)
    assert code == 2
    assert "usage: notebook-bcc" in out


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["fsm", "table", "--format", "yaml"])
    assert info.value.code == 2


def test_help_does_not_import_heavy_modules() -> None:
    probe = (
        "import sys, contextlib, io\n"
        "from notebook_bcc.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "heavy = [m for m in ('nbformat', 'nbclient', 'jupyter_server', 'tornado', 'lxml',"
        " 'pydantic', 'ruamel', 'rich') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""
