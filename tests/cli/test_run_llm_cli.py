"""``notebook-bcc run --planner llm``: flags refused with exit 2, and a whole recorded run
against ``python -m notebook_bcc.testing.scripted_llm`` (the way examples record one)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from notebook_bcc.cli import main
from notebook_bcc.store.sqlite import SqliteStore
from notebook_bcc.testing.scripted_llm import ScriptedLlmServer, rate_limited, server_error
from tests.conftest import FIXTURES, StdoutWatch, run_cli

CONVERSATION = FIXTURES / "llm" / "conversation"
PRICES = FIXTURES / "dslc" / "prices.csv"
SECRET = "sk-cli-test-0d9e8f7a6b5c"
LLM = ["--planner", "llm", "--llm-base-url", "http://127.0.0.1:9/v1", "--model", "m"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--planner", "llm", "--model", "m", "--problem", "p"], "needs --llm-base-url URL"),
        (
            ["--planner", "llm", "--llm-base-url", "http://127.0.0.1:9/v1", "--problem", "p"],
            "needs --model NAME",
        ),
        (LLM, "needs --problem TEXT"),
        (["somewhere", *LLM, "--problem", "p"], "--planner llm takes no TARGET"),
        (
            ["--planner", "llm", "--llm-base-url", "ftp://x/v1", "--model", "m", "--problem", "p"],
            "is not an http(s) URL",
        ),
        (
            ["--planner", "llm", "--llm-base-url", "http://[::1", "--model", "m", "--problem", "p"],
            "'http://[::1': it is malformed (Invalid IPv6 URL)",
        ),
        (
            [
                "--planner",
                "llm",
                "--llm-base-url",
                "http://127.0.0.1:99999/v1",
                "--model",
                "m",
                "--problem",
                "p",
            ],
            "it is malformed (Port out of range 0-65535)",
        ),
        ([*LLM, "--problem", "p", "--llm-max-parse-retries", "50"], "between 0 and 10"),
        ([*LLM, "--problem", "p", "--llm-temperature", "9"], "temperature must be between"),
        ([*LLM, "--problem", "p", "--planner-retries", "-1"], "--planner-retries must be 0"),
        ([*LLM, "--problem", "p", "--llm-api-key-env", "1bad"], "not an environment variable"),
        ([*LLM, "--problem", "p", "--llm-templates", "/nowhere/t"], "folder does not exist"),
        (
            [*LLM, "--problem", "p", "--planner-url", "http://x"],
            "--planner-url applies only to --planner http",
        ),
        (
            [str(FIXTURES / "engine" / "paths.yaml"), "--model", "m"],
            "--model applies only to --planner llm",
        ),
        (
            [str(FIXTURES / "engine" / "paths.yaml"), "--planner-retries", "1"],
            "--planner-retries applies only to --planner http or llm",
        ),
    ],
)
def test_bad_llm_flags_exit_2_with_a_clear_message(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", *args]) == 2
    assert message in capsys.readouterr().err


def test_one_template_file_given_for_the_folder_is_told_apart_from_a_missing_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user who copied one shipped template passes that file: it exists, so "the templates
    folder does not exist" sent them looking for a typo; the message names its folder."""
    copied = tmp_path / "prompts" / "stage-planner.md"
    copied.parent.mkdir()
    copied.write_text("<!-- section: system -->\nx\n", encoding="utf-8")
    notebook = tmp_path / "nb.ipynb"
    argv = ["run", *LLM, "--problem", "p", "--llm-templates", str(copied), "--notebook"]
    assert main([*argv, str(notebook)]) == 2
    err = capsys.readouterr().err
    assert f"{copied}: a file, not a folder of templates" in err
    assert f"(this file's folder is {copied.parent})" in err
    assert "does not exist" not in err
    assert not notebook.exists()


def test_a_bad_template_folder_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "stage-planner.md").write_text("nothing", encoding="utf-8")
    assert main(["run", *LLM, "--problem", "p", "--llm-templates", str(tmp_path)]) == 2
    assert f"{tmp_path / 'stage-planner.md'}: no '<!-- section: system -->'" in (
        capsys.readouterr().err
    )


def test_a_recorded_llm_run_against_the_scripted_server_then_replayed(tmp_path: Path) -> None:
    env = {**os.environ, "NOTEBOOK_BCC_LLM_API_KEY": SECRET}
    env.pop("OPENAI_API_KEY", None)
    scripted = ["-m", "notebook_bcc.testing.scripted_llm", str(CONVERSATION), "--exit-when-done"]
    server = subprocess.Popen(
        [sys.executable, *scripted],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        assert banner.startswith("scripted LLM: 11 replies from "), banner
        base_url = banner.rsplit("base URL ", 1)[1].strip()
        command = [
            *("-m", "notebook_bcc", "run", "--planner", "llm"),
            *("--llm-base-url", base_url, "--model", "scripted"),
            *("--problem", "Describe the house prices", "--file", str(PRICES)),
            *("--notebook", str(tmp_path / "live" / "nb.ipynb"), "--auto-confirm"),
            *("--record", str(tmp_path / "record"), "--json"),
        ]
        done = subprocess.run(
            [sys.executable, *command],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
            env=env,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr
        _, log = server.communicate(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode == 0, log
    assert "served 11 of 11 replies; 0 error(s)" in log
    assert "scripted_llm: action-generator: 200 004-action-generator.txt (stream)" in log
    assert SECRET not in done.stdout + done.stderr + log
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    replay = [
        *("-m", "notebook_bcc", "run", str(tmp_path / "record"), "--planner", "replay"),
        *("--notebook", str(tmp_path / "replay" / "nb.ipynb"), "--auto-confirm"),
    ]
    replayed = subprocess.run(
        [sys.executable, *replay],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert replayed.returncode == 0, replayed.stdout[-2000:] + replayed.stderr
    assert (tmp_path / "replay" / "summary.txt").read_text() == "mean price: 237500.00\n"


def test_the_scripted_server_refuses_a_folder_without_replies(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "notebook_bcc.testing.scripted_llm", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no reply files (NNN-<agent-id>.txt)" in done.stderr


def _requests_beyond(server: ScriptedLlmServer, count: int, timeout: float = 120) -> None:
    """Wait until the server has received more than ``count`` requests."""
    deadline = time.monotonic() + timeout
    while len(server.received) <= count:
        assert time.monotonic() < deadline, "the planner was never asked again"
        time.sleep(0.05)


def test_ctrl_c_while_resume_waits_on_a_rate_limited_planner_stops_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README flow (run, then ``resume --approve``) with the LLM rate-limiting the next
    turn for a minute: one Ctrl-C stops the waiting ``resume`` now, as it does for ``run``
    (it used to wait out the planner, Ctrl-C after Ctrl-C); nothing is lost, and a later
    ``resume`` asks the planner again and completes."""
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", SECRET)
    state_db = tmp_path / "state.sqlite"
    with ScriptedLlmServer(CONVERSATION) as server:
        first = run_cli(
            *("run", "--planner", "llm", "--llm-base-url", server.base_url),
            *("--model", "scripted", "--problem", "Describe the house prices"),
            *("--file", PRICES, "--notebook", tmp_path / "nb.ipynb", "--state-db", state_db),
        )
        assert first.returncode == 3, first.stdout[-2000:] + first.stderr
        asked = len(server.received)
        server.inject(rate_limited("60"))
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "notebook_bcc",
                "resume",
                "--state-db",
                str(state_db),
                "--approve",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _requests_beyond(server, asked)
            # the 429 is answered and the person is told: the planner now waits
            notice = StdoutWatch(process, "attempt 2 of")
            assert notice.seen.wait(60), "no word about the rate limit"
            process.send_signal(signal.SIGINT)
            began = time.monotonic()
            process.wait(timeout=60)
            took = time.monotonic() - began
            notice.thread.join(timeout=10)
            out = "".join(notice.lines)
            err = process.stderr.read() if process.stderr is not None else ""
        finally:
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == 130, out[-2000:] + err
        assert took < 30, "the first Ctrl-C waited out the planner's Retry-After"
        assert "no cell is running" in out + err
        (said,) = [line for line in notice.lines if "attempt 2 of" in line]
        assert "HTTP 429" in said
        assert "in 60.0 s" in said, said
        status = json.loads(run_cli("status", "--state-db", state_db, "--json").stdout)
        assert status["run"]["status"] == "interrupted"

        # the new kernel is rebuilt without the irreversible `with open(...) as out` cell, and
        # no lost_state question is asked for its closed file handle: exit 0, not 3
        assert main(["resume", "--state-db", str(state_db)]) == 0
    notebook = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))
    sources = ["".join(cell["source"]) for cell in notebook["cells"]]
    assert len(sources) == len(set(sources)), "no cell was written twice"
    store = SqliteStore(state_db)
    try:
        (workflow_id,) = store.workflow_ids()
        irreversible = [c for c in store.contracts(workflow_id) if c.irreversible]
        snapshot = store.load(workflow_id)
    finally:
        store.close()
    assert [c.status.value for c in irreversible] == ["COMPLETED"], "the write ran once"
    effects = [*snapshot.effects.current, *snapshot.effects.history]
    assert any("it set no variables, so nothing is missing" in e for e in effects), effects


def test_resume_changes_the_stored_planner_settings_that_made_the_run_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run started with no retries fails on the API's one 500; ``resume`` could only try
    again with the same settings. Now it takes the planner flags, stores them (recorded in
    the trace) and goes on with them."""
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", SECRET)
    state_db = tmp_path / "state.sqlite"
    with ScriptedLlmServer(CONVERSATION) as server:
        server.inject(server_error(500))
        first = run_cli(
            *("run", "--planner", "llm", "--llm-base-url", server.base_url),
            *("--model", "scripted", "--problem", "Describe the house prices"),
            *("--file", PRICES, "--notebook", tmp_path / "nb.ipynb", "--state-db", state_db),
            *("--planner-retries", "0", "--auto-confirm"),
        )
        assert first.returncode == 1, first.stdout[-2000:] + first.stderr
        assert "after 1 attempt" in first.stdout + first.stderr

        capsys.readouterr()
        wrong = ["resume", "--state-db", str(state_db), "--planner-url", "http://x"]
        assert main(wrong) == 2
        assert "(this workflow's planner is llm)" in capsys.readouterr().err

        server.inject(server_error(500))
        again = ["resume", "--state-db", str(state_db), "--auto-confirm"]
        assert main([*again, "--planner-retries", "1", "--planner-backoff", "0.01"]) == 0
        assert "planner settings changed: max_retries = 1" in capsys.readouterr().err
    store = SqliteStore(state_db)
    try:
        (workflow_id,) = store.workflow_ids()
        settings = store.load(workflow_id).planner.settings
        changed = [r for r in store.trace(workflow_id) if r.action == "planner_settings"]
    finally:
        store.close()
    assert settings["max_retries"] == 1
    assert settings["model"] == "scripted", "what was not given is kept"
    (record,) = changed
    assert record.actor == "human"
    assert record.metadata["max_retries"] == [0, 1]
