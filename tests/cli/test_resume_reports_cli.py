"""``notebook-bcc resume --junit-xml/--report``: the README's flow (``run`` stops waiting on a
stage confirmation, ``resume --approve`` finishes it) gives CI the reports of the whole run."""

from __future__ import annotations

import contextlib
import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import FIXTURES, run_cli

BLUEPRINT = FIXTURES / "cli" / "resume_reports.yaml"


def _stopped_run(tmp_path: Path) -> Path:
    """``run`` the blueprint without --auto-confirm: it stops waiting (exit 3)."""
    stopped = run_cli("run", BLUEPRINT, "--notebook", tmp_path / "nb" / "rr.ipynb")
    assert stopped.returncode == 3, stopped.stdout[-2000:] + stopped.stderr
    return tmp_path / "nb" / "state.sqlite"


def _cases(junit: Path) -> dict[str, str]:
    """Each test case's name -> outcome (passed, failure, error, skipped)."""
    outcomes = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        tags = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[f"{case.get('classname')}:{case.get('name')}"] = tags[0] if tags else "passed"
    return outcomes


def test_resume_writes_reports_of_the_whole_run(tmp_path: Path) -> None:
    state_db = _stopped_run(tmp_path)
    junit, report = tmp_path / "ci" / "out.xml", tmp_path / "ci" / "out.md"
    done = run_cli(
        "resume", "--state-db", state_db, "--approve", "--junit-xml", junit, "--report", report
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr  # publish's acceptance fails
    # the behaviors run before the resume (one passed at once, one on its retry) are there
    # with the right outcome, beside the one the resume ran
    assert _cases(junit) == {
        "resume_reports.review:load.loaded": "passed",
        "resume_reports.review:settle.flaky": "passed",
        "resume_reports.publish:send.never_sent": "failure",
    }
    root = ET.parse(junit).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "1", "0")
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"review (visit 1)", "publish (visit 1)"}
    outcome = suites["review (visit 1)"].find("properties/property[@name='outcome']")
    assert outcome is not None
    assert outcome.get("value") == "success"
    flaky = root.find(".//testcase[@name='settle.flaky']")
    assert flaky is not None
    assert "passed on attempt 2" in (flaky.findtext("system-out") or "")
    text = report.read_text(encoding="utf-8")
    assert "Behaviors: 2 passed, 1 failed, 0 with errors, 0 not run." in text
    assert "| review | 1 | success |" in text
    assert "loaded: passed, flaky: passed" in text
    assert "| publish | 1 | failure |" in text
    assert "never_sent: failed" in text
    # the decision asked by run and answered by resume are both in the report
    assert "| created | stage_confirmation | engine |" in text
    assert "| approve | stage_confirmation | human |" in text


def test_resume_refuses_an_unwritable_junit_path_before_resuming(tmp_path: Path) -> None:
    state_db = _stopped_run(tmp_path)
    before = _events(state_db)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    refused = run_cli(
        "resume", "--state-db", state_db, "--approve", "--junit-xml", blocker / "out.xml"
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.strip() == (
        f"error: --junit-xml {blocker / 'out.xml'}: {blocker} is not a directory"
    )
    # nothing was resumed: no event was added, the run still waits on its decision
    assert _events(state_db) == before
    waiting = run_cli("status", "--state-db", state_db)
    assert "waiting" in waiting.stdout


def _events(state_db: Path) -> int:
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        count: int = db.execute("SELECT count(*) FROM events").fetchone()[0]
    return count
