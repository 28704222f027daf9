"""``notebook-bcc run / status / cancel / diagram`` as real processes: exit codes and --json."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from notebook_bcc.cli.next_steps import next_commands
from notebook_bcc.models import WorkflowEvent
from notebook_bcc.schema import json_schema
from notebook_bcc.store.sqlite import SqliteStore
from tests.conftest import FIXTURES
from tests.conftest import run_cli as cli

ENGINE = FIXTURES / "engine"


def run_args(tmp_path: Path, blueprint: str, *extra: str) -> list[str | Path]:
    return [
        "run",
        ENGINE / f"{blueprint}.yaml",
        "--notebook",
        tmp_path / "nb.ipynb",
        "--state-db",
        tmp_path / "state.sqlite",
        *extra,
    ]


def test_json_events_validate_against_the_schema(tmp_path: Path) -> None:
    done = cli(*run_args(tmp_path, "paths", "--auto-confirm", "--json"))
    assert done.returncode == 0, done.stderr
    schema = json_schema("event")
    lines = done.stdout.splitlines()
    assert len(lines) > 50
    kinds = set()
    for line in lines:
        data = json.loads(line)
        jsonschema.validate(data, schema)
        event = WorkflowEvent.model_validate(data)
        kinds.add(event.kind)
    assert kinds >= {"transition", "contract", "cell", "run"}
    seqs = [json.loads(line)["seq"] for line in lines]
    assert seqs == sorted(seqs)
    assert "completed" in done.stderr, "the summary goes to stderr with --json"


def test_waiting_exits_3_and_status_shows_the_decision(tmp_path: Path) -> None:
    done = cli(*run_args(tmp_path, "confirm"))
    assert done.returncode == 3, done.stderr
    assert "pending decision stage_confirmation-" in done.stdout
    status = cli("status", "--state-db", tmp_path / "state.sqlite")
    assert status.returncode == 0
    assert "FSM state: stage_completed" in status.stdout
    assert "run: waiting" in status.stdout
    as_json = cli("status", "--state-db", tmp_path / "state.sqlite", "--json")
    snapshot = json.loads(as_json.stdout)
    assert snapshot["run"]["pending"][0]["kind"] == "stage_confirmation"


def test_two_resumes_at_once_one_runs_the_other_says_who_does(tmp_path: Path) -> None:
    """Two terminals answer the same waiting run at the same moment: one process takes it
    and completes it; the other is told which process runs it (not a version conflict with
    "reload and retry" half way through), and changes nothing."""
    assert cli(*run_args(tmp_path, "confirm")).returncode == 3
    db = tmp_path / "state.sqlite"
    argv = [sys.executable, "-m", "notebook_bcc", "resume", "--state-db", str(db), "--approve"]
    both = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    answers = [(p.wait(timeout=300), *p.communicate()) for p in both]
    codes = sorted(code for code, _, _ in answers)
    assert codes == [0, 2], answers
    ((_, _, told),) = [a for a in answers if a[0] == 2]
    assert "is being run by process" in told, told
    assert "reload and retry" not in told
    status = json.loads(cli("status", "--state-db", db, "--json").stdout)
    assert status["run"]["status"] == "completed", status["run"]


def test_ctrl_c_during_a_resumes_replay_says_it_finishes_the_replay(tmp_path: Path) -> None:
    """``resume`` rebuilds the kernel by replaying the completed cells before anything else;
    a Ctrl-C then says that is what it finishes (not "no cell is running" while it goes on
    for as long as the replay takes), and the run stops interrupted once the replay ends."""
    assert cli(*run_args(tmp_path, "replay_hold")).returncode == 3
    hold = tmp_path / "hold-replay"
    hold.touch()
    argv = [sys.executable, "-m", "notebook_bcc", "resume", "--state-db"]
    resume = subprocess.Popen(
        [*argv, str(tmp_path / "state.sqlite"), "--approve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "replaying").exists():
            assert resume.poll() is None, resume.communicate()
            assert time.monotonic() < deadline, "the replay never started"
            time.sleep(0.05)
        resume.send_signal(signal.SIGINT)
        time.sleep(0.5)  # the handler prints at once; the replay still holds meanwhile
        hold.unlink()
        out, err = resume.communicate(timeout=120)
    finally:
        if resume.poll() is None:
            resume.kill()
    told = out + err  # the inputs cell is replayed first, then the held one
    assert "finishing the replay of the kernel's state (1 of 2 cells replayed)" in told, told
    assert "no cell is running" not in told
    assert resume.returncode == 130, (out, err)
    status = json.loads(cli("status", "--state-db", tmp_path / "state.sqlite", "--json").stdout)
    assert status["run"]["status"] == "interrupted", status["run"]


def test_approve_on_a_completed_run_says_it_is_completed(tmp_path: Path) -> None:
    assert cli(*run_args(tmp_path, "paths", "--auto-confirm")).returncode == 0
    again = cli("resume", "--state-db", tmp_path / "state.sqlite", "--approve")
    assert again.returncode == 2
    assert "there is no pending decision to answer: workflow wf-" in again.stderr
    assert "is completed (run the same `notebook-bcc run` command again" in again.stderr


def test_failed_workflow_exits_1(tmp_path: Path) -> None:
    done = cli(*run_args(tmp_path, "escalation"))
    assert done.returncode == 1
    assert "failed (stage only failed" in done.stdout


@pytest.mark.parametrize(("blueprint", "tries"), [("raises", 1), ("raises_accepted", 2)])
def test_a_cell_that_raises_fails_the_run_whatever_the_acceptance_says(
    tmp_path: Path, blueprint: str, tries: int
) -> None:
    notebook = tmp_path / "nb.ipynb"
    done = cli(
        "run",
        FIXTURES / "cli" / f"{blueprint}.yaml",
        "--notebook",
        notebook,
        "--state-db",
        tmp_path / "state.sqlite",
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "ValueError: bad input row 7 (line 2 of cell" in done.stdout
    assert "run completed" not in done.stdout
    status = json.loads(cli("status", "--state-db", tmp_path / "state.sqlite", "--json").stdout)
    assert status["run"]["status"] == "failed"
    stage = status["location"]["progress"]["stages"]["current"]
    assert stage["completion_status"] == "failed"
    assert stage["extra"]["step_results"][0]["completion_status"] == "failed"
    raised = [
        cell
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        if any(o.get("ename") == "ValueError" for o in cell.get("outputs", []))
    ]
    assert len(raised) == tries, "each iteration ran the cell once"


def test_cancel_without_a_running_process_exits_4_on_the_next_run(tmp_path: Path) -> None:
    assert cli(*run_args(tmp_path, "confirm")).returncode == 3
    cancelled = cli("cancel", "--state-db", tmp_path / "state.sqlite")
    assert cancelled.returncode == 0, cancelled.stderr
    assert "cancelled" in cancelled.stdout
    status = cli("status", "--state-db", tmp_path / "state.sqlite")
    assert "FSM state: cancelled" in status.stdout
    again = cli("cancel", "--state-db", tmp_path / "state.sqlite")
    assert again.returncode == 2
    assert "CANCEL" in again.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", FIXTURES / "blueprints" / "bad_rules.yaml"], "bad_rules.yaml:13: transitions[1]"),
        (["run", FIXTURES / "no-such-folder"], "no such blueprint"),
        (["run", ENGINE / "paths.yaml", "--max-hops", "0"], "--max-hops must be at least 1"),
        (["run", ENGINE / "paths.yaml", "--cell-timeout", "-1"], "--cell-timeout must be positive"),
        (["run", ENGINE / "paths.yaml", "--file", "/no/such/input.csv"], "input file(s) not found"),
        (["status", "--state-db", "/no/such.sqlite"], "no such state database"),
        (["cancel", "--state-db", "/no/such.sqlite"], "no such state database"),
        (["diagram", FIXTURES / "blueprints" / "bad_syntax.yaml"], "bad_syntax.yaml:"),
    ],
)
def test_bad_input_exits_2(tmp_path: Path, args: list[str | Path], message: str) -> None:
    if args[0] == "run" and "--notebook" not in args:
        args = [*args, "--notebook", tmp_path / "nb.ipynb"]
    done = cli(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"cells": [], "metadata": {}, "nbformat": 3, "nbformat_minor": 0}', "worksheets"),
        ('{"cells": "oops", "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "invalid"),
        ("[]", "it holds a JSON list, not an object with cells"),
        ("{not json", "is not a readable notebook"),
    ],
)
def test_a_notebook_that_is_no_notebook_exits_2_naming_it(
    tmp_path: Path, text: str, message: str
) -> None:
    notebook = tmp_path / "given.ipynb"
    notebook.write_text(text, encoding="utf-8")
    done = cli("run", ENGINE / "paths.yaml", "--notebook", notebook, "--auto-confirm")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"{notebook} is not a" in done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert notebook.read_text(encoding="utf-8") == text, "the file is left as it was"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["given.ipynb"], "no state db made"


@pytest.mark.parametrize("command", ["run", "status", "resume", "trace"])
def test_a_state_db_that_is_a_directory_or_no_database_exits_2(
    tmp_path: Path, command: str
) -> None:
    folder = tmp_path / "dbdir"
    folder.mkdir()
    text = tmp_path / "notes.sqlite"
    text.write_text("hello", encoding="utf-8")
    for db, message in ((folder, "is a directory, not a state database"), (text, "not a")):
        args: list[str | Path] = [command]
        if command == "run":
            args += [ENGINE / "paths.yaml", "--notebook", tmp_path / "nb.ipynb"]
        done = cli(*args, "--state-db", db)
        assert done.returncode == 2, (db, done.stdout, done.stderr)
        assert message in done.stderr
        assert "Traceback" not in done.stderr
    assert text.read_text(encoding="utf-8") == "hello"
    assert not (tmp_path / "nb.ipynb").exists(), "nothing ran"


@pytest.mark.parametrize("command", ["run", "status", "resume", "trace", "trace --verify"])
def test_a_foreign_or_empty_sqlite_file_is_refused_and_left_as_it_is(
    tmp_path: Path, command: str
) -> None:
    import sqlite3

    foreign = tmp_path / "customers.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE customers (name TEXT)")
        db.execute("INSERT INTO customers VALUES ('Ada')")
    db.close()
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    cases = [(foreign, "it holds tables of its own (customers)")]
    if command != "run":  # run starts a new state database in an empty file
        cases.append((empty, "it is empty"))
    for path, message in cases:
        before = path.read_bytes()
        args: list[str | Path] = command.split()
        if command == "run":
            args += [ENGINE / "paths.yaml", "--notebook", tmp_path / "nb.ipynb"]
        done = cli(*args, "--state-db", path)
        assert done.returncode == 2, (path, done.stdout, done.stderr)
        assert f"{path} is not a state database: {message}" in done.stderr
        assert "Traceback" not in done.stderr
        assert path.read_bytes() == before, "not a byte written"
        assert not Path(f"{path}-wal").exists()
    assert not (tmp_path / "nb.ipynb").exists(), "nothing ran"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            [b"--problem", b"bad\xffbyte"],
            "--problem is not UTF-8 text (byte b'\\xff' at character 3",
        ),
        ([b"-p", b"rows", b"\xfe"], "--parameters is not UTF-8 text (byte b'\\xfe' at character 0"),
    ],
)
def test_text_that_is_not_utf8_is_exit_2_naming_the_flag(
    tmp_path: Path, flags: list[bytes], message: str
) -> None:
    import subprocess
    import sys

    argv = [
        sys.executable.encode(),
        b"-m",
        b"notebook_bcc",
        b"run",
        str(ENGINE / "paths.yaml").encode(),
        b"--notebook",
        str(tmp_path / "nb.ipynb").encode(),
        *flags,
    ]
    done = subprocess.run(argv, capture_output=True, check=False, timeout=120)
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, err
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "nb.ipynb").exists()


def test_a_bare_resume_of_a_completed_run_does_nothing(tmp_path: Path) -> None:
    assert cli(*run_args(tmp_path, "paths", "--auto-confirm")).returncode == 0
    db = tmp_path / "state.sqlite"
    before = json.loads(cli("status", "--state-db", db, "--json").stdout)["version"]
    again = cli("resume", "--state-db", db)
    assert again.returncode == 0, again.stderr
    assert "is completed: nothing to resume" in again.stdout
    assert json.loads(cli("status", "--state-db", db, "--json").stdout)["version"] == before


def test_diagram_of_a_blueprint(tmp_path: Path) -> None:
    done = cli("diagram", ENGINE / "paths.yaml", "--current", "second")
    assert done.returncode == 0
    assert done.stdout.startswith("stateDiagram-v2\n")
    assert "second --> first" in done.stdout
    assert "class second current" in done.stdout


def test_resume_goes_on_in_a_notebook_renamed_while_the_run_waited(tmp_path: Path) -> None:
    """A user renames the notebook in a terminal while the run waits on a decision: status
    says where it went, resume goes on in the renamed file and never writes the old name."""
    assert cli(*run_args(tmp_path, "confirm")).returncode == 3
    db = tmp_path / "state.sqlite"
    notebook = tmp_path / "nb.ipynb"
    renamed = tmp_path / "renamed.ipynb"
    assert "warning" not in cli("status", "--state-db", db).stdout
    written = len(json.loads(notebook.read_text())["cells"])
    notebook.rename(renamed)
    status = cli("status", "--state-db", db)
    assert status.returncode == 0
    assert (
        f"warning: the notebook is not at {notebook}: renamed.ipynb carries this workflow "
        "(renamed?); resume goes on in renamed.ipynb"
    ) in status.stdout
    waiting = cli("resume", "--state-db", db)
    assert waiting.returncode == 3
    assert f"{notebook} was renamed to renamed.ipynb; resume goes on in renamed.ipynb" in (
        waiting.stderr
    )
    assert "warning" not in cli("status", "--state-db", db).stdout
    approved = cli("resume", "--state-db", db, "--approve")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert not notebook.exists(), "resume wrote the old name again"
    cells = json.loads(renamed.read_text())["cells"]
    assert len(cells) > written
    assert json.loads(cli("status", "--state-db", db, "--json").stdout)["notebook_path"] == str(
        renamed
    )


def test_status_says_a_notebook_is_gone_or_copied(tmp_path: Path) -> None:
    assert cli(*run_args(tmp_path, "confirm")).returncode == 3
    db = tmp_path / "state.sqlite"
    notebook = tmp_path / "nb.ipynb"
    shutil.copyfile(notebook, tmp_path / "copy.ipynb")
    notebook.rename(tmp_path / "renamed.ipynb")
    copies = cli("status", "--state-db", db)
    assert "copy.ipynb, renamed.ipynb all carry this workflow (copies?)" in copies.stdout
    waiting = cli("resume", "--state-db", db)
    assert waiting.returncode == 3
    assert "was renamed" not in waiting.stderr, "with two copies resume follows neither"
    (tmp_path / "renamed.ipynb").unlink()
    (tmp_path / "copy.ipynb").unlink()
    gone = cli("status", "--state-db", db)
    assert f"the notebook is not at {notebook} (moved or deleted?)" in gone.stdout


def test_trace_prints_one_line_per_row_with_iso_times(tmp_path: Path) -> None:
    assert cli(*run_args(tmp_path, "paths", "--auto-confirm")).returncode == 0
    done = cli("trace", "--state-db", tmp_path / "state.sqlite")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("trace ("))
    rows = lines[start + 1 :]
    count = int(lines[start].split("(")[1].split()[0])
    assert len(rows) == count, "a row's multi-line result stays on its line"
    stamp = re.compile(r"^  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z  ")
    assert all(stamp.match(row) for row in rows), [r for r in rows if not stamp.match(r)][:3]


def test_the_readable_trace_says_what_a_warning_and_a_settings_change_were(
    tmp_path: Path,
) -> None:
    assert cli(*run_args(tmp_path, "escalation")).returncode == 1
    done = cli("trace", "--state-db", tmp_path / "state.sqlite")
    (warning,) = [line for line in done.stdout.splitlines() if "  engine  warning" in line]
    assert warning.endswith(
        "warning behavior iterations exhausted (2 of 2): the step completes as failed and "
        "the stage reflection decides (D15)"
    ), warning


def test_a_settings_change_shows_its_old_and_new_values() -> None:
    from notebook_bcc.cli.resume_cmd import _readable_detail
    from notebook_bcc.models.records import TraceRecord

    record = TraceRecord(
        actor="human",
        action="planner_settings",
        timestamp=0.0,
        result="changed by resume",
        metadata={"url": ["http://127.0.0.1:9", "http://127.0.0.1:8765"], "max_retries": [3, 0]},
    )
    assert _readable_detail(record) == (
        " changed by resume; url: 'http://127.0.0.1:9' -> 'http://127.0.0.1:8765'; "
        "max_retries: 3 -> 0"
    )


def test_one_decision_at_a_time_numbers_cells_as_auto_confirm_does(tmp_path: Path) -> None:
    """Each resume replays the earlier cells silently into a new kernel, which counted
    nothing: the notebook read [2] [1] [1] where the auto-confirmed run read [2] [3] [4]."""

    def counts(notebook: Path) -> list[int | None]:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        return [c.get("execution_count") for c in cells if c["cell_type"] == "code"]

    auto = tmp_path / "auto"
    assert cli(*run_args(auto, "confirm", "--auto-confirm")).returncode == 0
    stepped = tmp_path / "stepped"
    assert cli(*run_args(stepped, "confirm")).returncode == 3
    for _ in range(5):
        answered = cli("resume", "--state-db", stepped / "state.sqlite", "--approve")
        if answered.returncode != 3:
            break
    assert answered.returncode == 0, answered.stdout + answered.stderr
    numbered = counts(stepped / "nb.ipynb")
    assert numbered == counts(auto / "nb.ipynb")
    assert numbered == list(range(1, len(numbered) + 1)), numbered


def test_resume_with_auto_confirm_answers_what_is_pending_and_a_crashed_run_keeps_it(
    tmp_path: Path,
) -> None:
    """``--auto-confirm`` approves what a human may delegate, also a decision that was
    pending already (a run started without it): ``resume --auto-confirm`` on a waiting run
    goes on to the end instead of replaying the kernel and asking the same question. A run
    started with it keeps that in its record, so the command ``status`` gives to continue it
    after a crash carries it too."""
    stepped = tmp_path / "stepped"
    assert cli(*run_args(stepped, "confirm")).returncode == 3
    db = stepped / "state.sqlite"
    answered = cli("resume", "--state-db", db, "--auto-confirm")
    assert answered.returncode == 0, answered.stdout + answered.stderr
    status = json.loads(cli("status", "--state-db", db, "--json").stdout)
    assert status["run"]["status"] == "completed", status["run"]
    trace = cli("trace", "--state-db", db, "--json")
    rows = [json.loads(line) for line in trace.stdout.splitlines()]
    approved = [r for r in rows if r["actor"] == "auto-confirm" and r["result"] == "approved"]
    assert len(approved) == 1, trace.stdout[-2000:]  # the stage confirmation, by auto-confirm

    auto = tmp_path / "auto"
    assert cli(*run_args(auto, "confirm", "--auto-confirm")).returncode == 0
    store = SqliteStore(auto / "state.sqlite")
    try:
        (workflow_id,) = store.workflow_ids()
        kept = store.load(workflow_id)
    finally:
        store.close()
    assert kept.options.get("auto_confirm") is True
    crashed = kept.model_copy(update={"run": kept.run.model_copy(update={"status": "running"})})
    assert next_commands(crashed, "s.db") == [
        "next: notebook-bcc resume --state-db s.db --auto-confirm   (continues where it stopped)"
    ]


@pytest.mark.parametrize("way", ["raise", "reject"])
def test_a_failure_no_rule_routes_fails_the_run_before_the_next_stage(
    tmp_path: Path, way: str
) -> None:
    """A blueprint without ``transitions``: the first stage raising, or a human rejecting its
    confirmation, ends the run failed (exit 1); the second stage (a publish) never runs."""
    args = [
        "run",
        FIXTURES / "cli" / ("unrouted.yaml" if way == "raise" else "unrouted_confirm.yaml"),
        "--notebook",
        tmp_path / "nb.ipynb",
        "--state-db",
        tmp_path / "state.sqlite",
    ]
    env = {"UNROUTED_RAISE": "1"} if way == "raise" else {}
    first = cli(*args, env=env)
    if way == "reject":
        assert first.returncode == 3, first.stdout + first.stderr
        first = cli("resume", "--state-db", tmp_path / "state.sqlite", "--reject", env=env)
    assert first.returncode == 1, first.stdout + first.stderr
    assert not (tmp_path / "published.txt").exists(), "the next stage ran after the failure"
    status = json.loads(cli("status", "--state-db", tmp_path / "state.sqlite", "--json").stdout)
    assert status["run"]["status"] == "failed", status["run"]
    sources = [
        "".join(c["source"]) for c in json.loads((tmp_path / "nb.ipynb").read_text())["cells"]
    ]
    assert not any("published.txt" in s for s in sources), sources


def test_a_confirmation_after_a_failed_stage_says_the_stage_failed(tmp_path: Path) -> None:
    """The human asked "go on?" after a stage that raised is told it did not succeed."""
    args = [
        "run",
        FIXTURES / "cli" / "unrouted_confirm.yaml",
        "--notebook",
        tmp_path / "nb.ipynb",
        "--state-db",
        tmp_path / "state.sqlite",
    ]
    asked = cli(*args, env={"UNROUTED_RAISE": "1"})
    assert asked.returncode == 3, asked.stdout + asked.stderr
    status = json.loads(cli("status", "--state-db", tmp_path / "state.sqlite", "--json").stdout)
    (pending,) = status["run"]["pending"]
    assert pending["message"].startswith("Loaded. Go on to publish?"), pending
    assert "stage load did not succeed (failed)" in pending["message"], pending
