"""Crash-suite machinery: real ``notebook-bcc`` processes killed at a commit, then resumed.

Processes come from a ``forkserver`` context whose server has the CLI, the engine, nbclient
and nbformat imported already (JUPYTER-NOTES "Speed"): a child starts in milliseconds instead
of the ~1.5 s a fresh interpreter needs. Each child runs :func:`notebook_bcc.cli.main` with
``NOTEBOOK_BCC_CRASH_AT`` set as asked and exits with its exit code, or is SIGKILLed by the
store's crash hook (exit code -9).

A kill point is run by :func:`run_point` (from a worker thread of the test): kill, resume with
``--auto-confirm`` (answering an in-doubt decision by the ledger: approve when the side effect
did not happen, reject when it did), and collect what the test asserts on.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import multiprocessing.connection
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

from notebook_bcc.store.crash import ENV_VAR

PRELOAD = [
    "tests.durability.crashkit",
    "notebook_bcc.cli",
    "notebook_bcc.cli.run_cmd",
    "notebook_bcc.cli.resume_cmd",
    "notebook_bcc.cli.status_cmd",
    "notebook_bcc.cli.views",
    "notebook_bcc.engine.engine",
    "notebook_bcc.engine.headless",
    "notebook_bcc.blueprint.loader",
    "notebook_bcc.planners.blueprint",
    "notebook_bcc.kernel.session",
    "notebook_bcc.kernel.writer",
    "notebook_bcc.store.sqlite",
    "nbclient",
    "nbformat",
    "jupyter_client",
    "jupyter_client.manager",
]
"""Modules the forkserver imports once, so that every child starts warm."""

CHILD_TIMEOUT = 120.0
"""Seconds a child process may take before it is killed and the point fails."""

KILLED = -9
"""``Process.exitcode`` of a child the crash hook SIGKILLed."""


@functools.cache
def context() -> ForkServerContext:
    """The shared forkserver context (its server starts, with the preload, on first use)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


@dataclass(frozen=True)
class KillPoint:
    """Die ``when`` (before / after) the ``count``-th store commit, of ``kind`` if given."""

    when: str
    count: int
    kind: str | None = None
    index: int = 0
    """The commit's position among all commits of an uninterrupted run (from 1); past the
    run's last commit when ``index`` exceeds the total."""

    @property
    def spec(self) -> str:
        """The value of ``NOTEBOOK_BCC_CRASH_AT``."""
        base = f"{self.when}:{self.count}"
        return f"{base}:{self.kind}" if self.kind else base

    @property
    def key(self) -> tuple[str, int]:
        """Points with the same key kill at the same moment of the run."""
        return (self.when, self.index)

    @property
    def label(self) -> str:
        """A folder-safe name."""
        return self.spec.replace(":", "-")


def cli_child(
    argv: Sequence[str],
    env: dict[str, str],
    log: str,
    record: str | None = None,
) -> None:
    """Child body: run the CLI with ``env`` (output to ``log``) and exit with its code.

    With ``record``, every store write is logged (its commit kinds, and the statuses of the
    irreversible execution contracts it carries) and written there as JSON at the end.
    """
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.environ.pop(ENV_VAR, None)
    os.environ.update(env)
    commits: list[dict[str, Any]] = []
    if record is not None:
        _record_commits(commits)
    from notebook_bcc.cli import main

    code = 70
    try:
        code = main(list(argv))
    finally:
        if record is not None:
            Path(record).write_text(json.dumps(commits))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _record_commits(commits: list[dict[str, Any]]) -> None:
    from notebook_bcc.store.sqlite import Commit, CommitResult, SqliteStore

    write = SqliteStore._write
    commit = SqliteStore.commit

    def logged_write(self: SqliteStore, fn: Any, *, kinds: frozenset[str] = frozenset()) -> Any:
        commits.append({"kinds": sorted(kinds)})
        return write(self, fn, kinds=kinds)

    def logged_commit(self: SqliteStore, change: Commit) -> CommitResult:
        result = commit(self, change)
        marks = [
            c.status.value
            for c in change.contracts
            if c.irreversible and c.action_type == "cell_execution"
        ]
        if marks:
            commits[-1]["irreversible"] = marks
        return result

    SqliteStore._write = logged_write  # type: ignore[method-assign]
    SqliteStore.commit = logged_commit  # type: ignore[method-assign]


REAP_LOCK = threading.Lock()
"""Held to start, reap and close a child. ``Process.start()`` polls every other live child
(multiprocessing's ``_cleanup``), and polling a forkserver child reads its exit status off a
pipe: a poll in one thread racing ``join`` in another leaves one of them at EOF, which
multiprocessing reports as exit code 255 (CI saw "the run exited 255, expected -9" and
"trace --verify exited 255" for children whose logs showed the kill or the verify)."""


def spawn(
    argv: Sequence[str],
    log: Path,
    *,
    crash_at: str | None = None,
    record: Path | None = None,
) -> int:
    """Run the CLI in a forkserver child and wait; its exit code (-9 when SIGKILLed)."""
    env = {ENV_VAR: crash_at} if crash_at else {}
    process = context().Process(
        target=cli_child,
        args=(list(argv), env, str(log), str(record) if record else None),
        daemon=False,
    )
    with REAP_LOCK:
        process.start()
    # wait without reading the status: the sentinel turns readable when the child exits
    ended = multiprocessing.connection.wait([process.sentinel], CHILD_TIMEOUT)
    with REAP_LOCK:
        if not ended:
            process.kill()
        process.join()
        code = process.exitcode
        process.close()
    if not ended:
        raise TimeoutError(f"{' '.join(argv)} took more than {CHILD_TIMEOUT:.0f} s (log {log})")
    assert code is not None
    return code


# -- one run, as the test sees it ---------------------------------------------------------


@dataclass
class RunLayout:
    """Where one run (reference or kill point) keeps its files."""

    root: Path

    @property
    def notebook(self) -> Path:
        """The notebook the run writes (the same relative layout for every run)."""
        return self.root / "nb" / "crash.ipynb"

    @property
    def state_db(self) -> Path:
        """The run's state database."""
        return self.root / "nb" / "state.sqlite"

    @property
    def ledger(self) -> Path:
        """The irreversible action's side effect (in the notebook's folder, the kernel's cwd)."""
        return self.root / "nb" / "ledger.txt"

    @property
    def log(self) -> Path:
        """Where the children's output goes."""
        return self.root / "children.log"

    def ledger_lines(self) -> list[str]:
        """The side effect's lines."""
        return self.ledger.read_text().splitlines() if self.ledger.exists() else []

    def run_argv(self, blueprint: Path) -> list[str]:
        """``notebook-bcc run`` of ``blueprint`` into this layout, approving confirmations."""
        return [
            "run",
            str(blueprint),
            "--notebook",
            str(self.notebook),
            "--state-db",
            str(self.state_db),
            "--auto-confirm",
        ]

    def resume_argv(self, *answer: str) -> list[str]:
        """``notebook-bcc resume --auto-confirm`` (plus ``--approve`` / ``--reject``)."""
        return ["resume", "--state-db", str(self.state_db), "--auto-confirm", *answer]

    def verify_argv(self) -> list[str]:
        """``notebook-bcc trace --verify``."""
        return ["trace", "--state-db", str(self.state_db), "--verify"]


@dataclass
class PointOutcome:
    """What happened at one kill point: exit codes, decisions, and the final state."""

    point: KillPoint
    killed_code: int
    resume_codes: list[int] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    rerun: bool = False
    kernel_retries: int = 0
    """Children started again because their kernel did not start (see
    :func:`kernel_start_failed`)."""
    verify_code: int | None = None
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line for a failure report."""
        return (
            f"{self.point.spec} (commit {self.point.index}): killed={self.killed_code} "
            f"resumes={self.resume_codes} answers={self.answers} rerun={self.rerun} "
            f"kernel_retries={self.kernel_retries}: " + "; ".join(self.problems)
        )


def kernel_start_failed(code: int, log: Path, offset: int = 0) -> bool:
    """Whether a child exited 2 because its kernel did not start (its output after ``offset``).

    Parallel workers start many kernels at once, and jupyter_client's TCP ports are chosen
    free and bound later by the kernel: two kernels can pick the same port ("Address already
    in use", about one kernel start in a few hundred here). That is not what the suite tests;
    such a child is started again (nothing was recorded: the kernel starts before any commit
    of a resume, and a killed run is started afresh).
    """
    if code != 2 or not log.exists():
        return False
    return b"did not start" in log.read_bytes()[offset:]


def read_commits(path: Path) -> list[dict[str, Any]]:
    """The commit log a recording child wrote."""
    data: list[dict[str, Any]] = json.loads(path.read_text())
    return data
