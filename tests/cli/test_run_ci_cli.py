"""``notebook-bcc run`` with papermill / jupyter-execute habits, as real processes (issue 22).

Parameters (``-p``/``-y``/``-f``, the ``injected-parameters`` cell, a blueprint's declared
types, the snapshot, a recording and its replay), ``-k``/``--cwd``/``--start-timeout``/
``--execution-timeout``, ``--log-output`` (streamed while the cell runs), ``--junit-xml``
(validated against a JUnit schema), ``--report`` (html and md), and remote ``--notebook``/
``--report`` URLs; failures included: a failing cell, a failed acceptance, an unknown kernel,
an undeclared or mistyped parameter, a URL whose filesystem is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from notebook_bcc.cli import main
from notebook_bcc.models import WorkflowEvent
from notebook_bcc.planners.transcript import read_transcript
from notebook_bcc.store.sqlite import SqliteStore
from tests.conftest import FIXTURES
from tests.conftest import run_cli as cli

CLI_FIXTURES = FIXTURES / "cli"
JUNIT_XSD = CLI_FIXTURES / "junit.xsd"
TCP_WARNING = "without encryption"


def blueprint(name: str) -> Path:
    return CLI_FIXTURES / f"{name}.yaml"


def junit(path: Path) -> Any:
    """The parsed report, after checking it against the JUnit schema."""
    schema = etree.XMLSchema(etree.parse(str(JUNIT_XSD)))
    doc = etree.parse(str(path))
    assert schema.validate(doc), schema.error_log
    return doc.getroot()


def cells(notebook: Path) -> list[dict[str, Any]]:
    data: dict[str, Any] = json.loads(notebook.read_text())
    return list(data["cells"])


def source(cell: dict[str, Any]) -> str:
    text = cell["source"]
    return "".join(text) if isinstance(text, list) else str(text)


def stored_snapshot(state_db: Path) -> Any:
    store = SqliteStore(state_db)
    try:
        (workflow_id,) = store.workflow_ids()
        return store.load(workflow_id)
    finally:
        store.close()


def test_parameters_reach_code_acceptance_when_snapshot_and_a_replay(tmp_path: Path) -> None:
    (tmp_path / "params.yaml").write_text("threshold: 2\nlabel: from-file\n")
    record = tmp_path / "record"
    done = cli(
        "run",
        blueprint("params"),
        "--notebook",
        tmp_path / "nb.ipynb",
        "-f",
        tmp_path / "params.yaml",
        "-y",
        "label: from-yaml",
        "-p",
        "n",
        "21",
        "-p",
        "label",
        "007",
        "--record",
        record,
        "--json",
        "--log-output",
    )
    assert done.returncode == 0, done.stderr
    assert TCP_WARNING not in done.stderr
    events = [WorkflowEvent.model_validate(json.loads(line)) for line in done.stdout.splitlines()]
    route = next(e for e in events if e.kind == "run" and e.event == "route")
    assert route.detail["end"] == "big", "the `when` rule read context.variables.n (21 > 10)"
    outputs = [e for e in events if e.kind == "cell" and e.event == "output"]
    assert any("result 42 007 2.0" in e.detail["text"] for e in outputs)
    nb = cells(tmp_path / "nb.ipynb")
    assert "user_problem" in source(nb[0])
    injected = nb[1]
    assert injected["metadata"]["tags"] == ["injected-parameters"]
    # -p wins over -y wins over -f; the declared str keeps '007' as typed; float from int 2
    assert "n = 21\n" in source(injected)
    assert "label = '007'\n" in source(injected)
    assert "threshold = 2.0\n" in source(injected)
    assert injected["execution_count"] == 2
    snapshot = stored_snapshot(tmp_path / "state.sqlite")
    assert snapshot.parameters == {"n": 21, "label": "007", "threshold": 2.0}
    assert snapshot.acceptance["doubling"]["result == n * 2"].status == "passed"
    header = read_transcript(record).header
    assert header is not None
    assert header.parameters == {"n": 21, "label": "007", "threshold": 2.0}

    replayed = cli(
        "run", record, "--planner", "replay", "--notebook", tmp_path / "replay" / "nb.ipynb"
    )
    assert replayed.returncode == 0, replayed.stderr
    again = cells(tmp_path / "replay" / "nb.ipynb")
    assert source(again[1]) == source(injected)
    assert stored_snapshot(tmp_path / "replay" / "state.sqlite").parameters == snapshot.parameters


def test_failing_cell_and_unreached_behavior_in_junit_and_markdown_report(tmp_path: Path) -> None:
    done = cli(
        "run",
        blueprint("mixed"),
        "--notebook",
        tmp_path / "nb.ipynb",
        "--junit-xml",
        tmp_path / "reports" / "junit.xml",
        "--report",
        tmp_path / "reports" / "report.md",
    )
    assert done.returncode == 1, done.stderr
    root = junit(tmp_path / "reports" / "junit.xml")
    assert root.get("tests") == "3"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["prepare (visit 1)", "analyse (visit 1)"]
    prepare, analyse = suites
    assert prepare.find("properties/property[@name='outcome']").get("value") == "success"
    passed = prepare.find("testcase")
    assert passed.get("name") == "load.loader"
    assert list(passed)
    assert passed[0].tag == "system-out"
    assert "acceptance passed: rows == 3" in passed[0].text
    assert analyse.find("properties/property[@name='outcome']").get("value") == "failure"
    broken, unreached = analyse.findall("testcase")
    error = broken.find("error")
    assert error.get("type") == "ValueError"
    assert error.get("message") == "ValueError: bad input row 7"
    assert 'raise ValueError("bad input row 7")' in error.text
    assert "\x1b[" not in error.text, "terminal colours are stripped"
    failure = broken.find("failure")
    assert failure.get("message") == "acceptance criterion failed: answer == 42"
    assert unreached.get("name") == "never_reached.unreached"
    assert unreached.find("skipped").get("message") == "not reached"
    assert (analyse.get("tests"), analyse.get("errors"), analyse.get("skipped")) == ("2", "1", "1")
    assert float(broken.get("time")) > 0

    report = (tmp_path / "reports" / "report.md").read_text()
    head, _, body = report.partition("## Metrics")
    assert "# notebook-bcc run: mixed" in head
    assert "**Outcome:** failed" in head
    assert "| Prepare | 1 | success |" in head
    assert "| Analyse | 1 | failure |" in head
    assert "broken: error, unreached: skipped" in head
    assert "## Planner usage" in body
    assert body.index("## Planner usage") < body.index('raise ValueError("bad input row 7")'), (
        "the summary comes before the rendered notebook"
    )


def test_failed_acceptance_with_kernel_cwd_and_timeouts_and_an_html_report(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    done = cli(
        "run",
        blueprint("accept"),
        "--notebook",
        tmp_path / "nb" / "nb.ipynb",
        "-k",
        "python3",
        "--cwd",
        work,
        "--start-timeout",
        "60",
        "--execution-timeout",
        "30",
        "--junit-xml",
        tmp_path / "junit.xml",
        "--report",
        tmp_path / "report.html",
    )
    assert done.returncode == 1, done.stderr
    assert TCP_WARNING not in done.stderr
    root = junit(tmp_path / "junit.xml")
    (case,) = root.findall("testsuite/testcase")
    assert case.find("error") is None
    (failure,) = case.findall("failure")
    assert failure.get("message") == "acceptance criterion failed: rmse < 10"
    assert "acceptance passed: rmse > 0" in case.find("system-out").text
    code = next(c for c in cells(tmp_path / "nb" / "nb.ipynb") if "rmse = 12.5" in source(c))
    assert source({"source": code["outputs"][0]["text"]}) == f"cwd {work.resolve()}\n"
    page = (tmp_path / "report.html").read_text()
    assert page.lstrip().lower().startswith("<!doctype html>")
    body = page[page.index("<body") :]
    assert body.index("notebook-bcc run: accept") < body.index("jp-CodeCell")
    assert "12.5" in page


def test_log_output_streams_a_cell_while_it_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "notebook_bcc",
            "run",
            str(blueprint("stream")),
            "--notebook",
            str(tmp_path / "nb.ipynb"),
            "--log-output",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        seen: list[str] = []
        for line in process.stdout:
            seen.append(line)
            if line == "first line\n":
                break
        assert seen[-1:] == ["first line\n"], seen
        # the cell is still sleeping: its last line is not in the notebook yet
        assert process.poll() is None
        rest, errors = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, errors
    assert "second line\n" in rest
    assert "to stderr\n" in errors
    assert TCP_WARNING not in errors


def test_remote_notebook_and_report_through_fsspec_file_urls(tmp_path: Path) -> None:
    remote = tmp_path / "bucket"
    done = cli(
        "run",
        blueprint("params"),
        "-p",
        "n",
        "3",
        "--notebook",
        f"file://{remote}/runs/nb.ipynb",
        "--report",
        f"file://{remote}/runs/report.md",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    uploaded = cells(remote / "runs" / "nb.ipynb")
    assert any("result = n * 2" in source(c) for c in uploaded)
    assert "# notebook-bcc run: params" in (remote / "runs" / "report.md").read_text()
    local = tmp_path / "out" / "params"
    assert (local / "nb.ipynb").exists()
    assert (local / "state.sqlite").exists()
    assert not (tmp_path / "file:").exists()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["-k", "no-such-kernel", "-p", "n", "1"], "no kernel named 'no-such-kernel' (installed: "),
        (["-p", "m", "1"], "parameter 'm' is not declared by the blueprint (declared: n, "),
        (["-p", "n", "1", "--notebook", "s3://bucket/run.ipynb"], "s3fs"),
    ],
)
def test_bad_input_exits_2_naming_it(tmp_path: Path, extra: list[str], expected: str) -> None:
    done = cli("run", blueprint("params"), *extra, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing written, no 's3:' folder"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["-p", "n", "1.5"], "parameter 'n': expected int, got float (1.5)"),
        (["-p", "threshold", "0.1"], "parameter 'n' is required by the blueprint"),
        (["-p", "n", "1", "-y", "[1, 2]"], "-y (#1): expected a mapping of parameters"),
        (["-p", "n", "1", "-f", "missing.yaml"], "missing.yaml: cannot read the parameters file"),
        (["-p", "n", "1", "--notebook", "nosuchscheme://x/run.ipynb"], "nosuchscheme"),
        (["-p", "n", "1", "--report", "report.pdf"], "use a .html or .md file name"),
        (["-p", "n", "1", "--start-timeout", "0"], "--start-timeout must be positive"),
        (["-p", "n", "1", "--max-tokens", "0"], "--max-tokens must be at least 1"),
        (["-p", "n", "1", "--cwd", "nowhere"], "--cwd nowhere: not a directory"),
        (["-p", "n", "1", "--junit-xml", "."], "--junit-xml .: is a directory"),
        (
            ["-p", "n", "1", "--junit-xml", "/dev/null/junit.xml"],
            "--junit-xml /dev/null/junit.xml: /dev/null is not a directory",
        ),
    ],
)
def test_more_bad_input_exits_2_in_process(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(blueprint("params")), *extra]) == 2
    assert expected in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_malformed_parameters_yaml_is_one_line_naming_file_and_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A broken ``-f`` file reads like a broken blueprint (``FILE:LINE: ...`` on one line),
    not as ruamel's multi-line report about ``"<unicode string>"``."""
    given = tmp_path / "given"
    given.mkdir()
    (given / "p.yaml").write_text("n: 1\nextra: {x: 1\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    argv = ["run", str(blueprint("params")), "-f", str(given / "p.yaml")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"error: -f {given / 'p.yaml'}:3: not valid YAML (line 3, column 1)")
    assert "flow mapping opened at line 2, column 8" in err[0]
    assert "<unicode string>" not in err[0]
    assert main(["run", str(blueprint("params")), "-y", "n: [1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: -y (#1), line 1, column 6: not valid YAML: "), line
    assert sorted(p.name for p in work.iterdir()) == []


def test_replay_refuses_new_parameters(tmp_path: Path) -> None:
    (tmp_path / "transcript.jsonl").write_text(
        json.dumps({"type": "header", "planner": {"kind": "blueprint", "settings": {}}}) + "\n"
    )
    done = cli("run", tmp_path, "--planner", "replay", "-p", "n", "1")
    assert done.returncode == 2
    assert "uses the recorded parameters" in done.stderr


def test_validate_checks_declared_parameters(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        blueprint("params")
        .read_text()
        .replace("threshold: {type: float, default: 0.5}", "threshold: {type: float, default: x}")
    )
    done = cli("validate", bad)
    assert done.returncode == 2
    assert f"{bad}:8: parameters.threshold: default 'x': expected float, got str" in (
        done.stdout + done.stderr
    )
    good = cli("validate", blueprint("params"))
    assert good.returncode == 0, good.stderr
    assert "3 parameters" in good.stdout


def test_log_output_on_a_terminal_prints_above_the_live_tree(tmp_path: Path) -> None:
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "notebook_bcc",
            "run",
            str(blueprint("stream")),
            "--notebook",
            str(tmp_path / "nb.ipynb"),
            "--log-output",
        ],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    chunks: list[bytes] = []
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process exited
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=120) == 0
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert "first line" in screen
    assert "second line" in screen
    assert "to stderr" in screen
    assert "talker" in screen, "the live tree was drawn"
    assert "[bold]" not in screen, "the tree's markup survives the streamed output"
    assert screen.index("first line") < screen.rindex("run completed")


def test_a_step_with_several_behaviors_has_a_case_each_and_counts_only_real_retries(
    tmp_path: Path,
) -> None:
    """The behaviors a step runs one after the other are the step's iterations (seed 000), but
    only an iteration after a behavior that did not succeed is a retry: three behaviors, one
    retried once, are three test cases, 1 retry in 4 runs, and the report lists all three."""
    done = cli(
        "run",
        blueprint("behaviors"),
        "--notebook",
        tmp_path / "nb.ipynb",
        "--cwd",
        tmp_path,
        "--junit-xml",
        tmp_path / "junit.xml",
        "--report",
        tmp_path / "report.md",
    )
    assert done.returncode == 0, done.stderr
    assert "retry_rate 0.25" in done.stdout, done.stdout
    root = junit(tmp_path / "junit.xml")
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["step.first", "step.flaky", "step.third"]
    assert root.get("tests") == "3"
    first, flaky, third = cases
    assert first.find("system-err") is None
    assert third.find("system-err") is None
    assert flaky.find("system-out").text == "passed on attempt 2 (iteration 3 of its step)"
    assert flaky.find("system-err").text == (
        "attempt 1 (iteration 2 of its step): error (ValueError: first attempt fails)"
    )
    report = (tmp_path / "report.md").read_text()
    assert "first: passed, flaky: passed, third: passed" in report, report
    snapshot = stored_snapshot(tmp_path / "state.sqlite")
    assert snapshot.metrics.retry_rate == 0.25


def test_a_cell_past_its_timeout_is_named_as_timed_out_not_as_an_interrupt(
    tmp_path: Path,
) -> None:
    """The engine interrupts a cell that runs past ``--execution-timeout``; the cell's own
    output is then a KeyboardInterrupt traceback. The run's failure line and the JUnit case
    name the timeout, the cause a user looks for (they said only "stage failed" and
    "KeyboardInterrupt")."""
    done = cli(
        "run",
        blueprint("overtime"),
        "--notebook",
        tmp_path / "nb.ipynb",
        "--execution-timeout",
        "2",
        "--junit-xml",
        tmp_path / "junit.xml",
    )
    assert done.returncode == 1, done.stderr
    assert (
        "stage wait failed: in wait / step / sleeper: TimeoutError: the cell ran longer than "
        "2 s and was interrupted"
    ) in done.stdout, done.stdout
    root = junit(tmp_path / "junit.xml")
    (case,) = root.findall("testsuite/testcase")
    error = case.find("error")
    assert error.get("type") == "TimeoutError"
    assert error.get("message") == "TimeoutError: the cell ran longer than 2 s and was interrupted"
