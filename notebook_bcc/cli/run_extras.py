"""The papermill / ``jupyter execute`` habits of ``notebook-bcc run``: kernel choice, working
directory, timeouts, live cell output, and the artifacts CI reads (JUnit, report), with
remote output paths.

:func:`add_arguments` declares the flags, :func:`check` refuses bad values before anything
starts (exit 2), :class:`RunExtras` wires them around one headless run.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notebook_bcc.errors import NotebookBccError

if TYPE_CHECKING:
    from notebook_bcc.cli.ledger import Plan
    from notebook_bcc.cli.remote import RemoteFile
    from notebook_bcc.engine.engine import Engine


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``-k``, ``--cwd``, ``--start-timeout``, ``--log-output``, ``--junit-xml``, ``--report``."""
    group = parser.add_argument_group("kernel and reports (papermill / jupyter execute habits)")
    group.add_argument(
        "-k",
        "--kernel",
        "--kernel-name",
        dest="kernel",
        metavar="NAME",
        help="the kernelspec to run the notebook with (default: python3)",
    )
    group.add_argument(
        "--cwd",
        type=Path,
        metavar="DIR",
        help="the kernel's working directory (default: the notebook's folder)",
    )
    group.add_argument(
        "--start-timeout",
        type=float,
        metavar="S",
        help="seconds the kernel may take to start (default 60)",
    )
    group.add_argument(
        "--log-output",
        action="store_true",
        help="stream each cell's stdout/stderr while it runs (with --json: `cell` events "
        "with event `output`)",
    )
    group.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="stop as waiting on a `budget` decision once the planner used N tokens "
        "(approving allows N more)",
    )
    group.add_argument(
        "--max-planner-calls",
        type=int,
        metavar="N",
        help="stop as waiting on a `budget` decision before planner call N+1 "
        "(approving allows N more)",
    )
    add_report_arguments(group)


def add_report_arguments(group: Any) -> None:
    """``--junit-xml`` and ``--report``: the reports CI reads, for ``run`` and ``resume``."""
    group.add_argument(
        "--junit-xml",
        metavar="FILE",
        help="write a JUnit report: a test suite per stage visit, a test case per behavior",
    )
    group.add_argument(
        "--report",
        metavar="FILE.html|FILE.md",
        help="write the executed notebook rendered with nbconvert, after a run summary "
        "(a local path or an fsspec URL)",
    )


def kernel_problem(name: str) -> str | None:
    """Why kernelspec ``name`` cannot be used (naming the installed ones), or None."""
    from jupyter_client.kernelspec import KernelSpecManager

    installed = sorted(KernelSpecManager().find_kernel_specs())
    if name in installed:
        return None
    return f"no kernel named {name!r} (installed: {', '.join(installed) or 'none'})"


def unwritable(path: Path) -> str | None:
    """Why a report file cannot be written at ``path`` (checked before the run, not after
    it), or None: a folder there, or a folder on its way that is a file or read-only."""
    if path.is_dir():
        return "is a directory"
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if not os.access(parent, os.W_OK):
        return f"{parent} is not writable"
    return None


def check(args: argparse.Namespace) -> str | None:
    """Why the extra flags cannot be used as given, or None."""
    if args.start_timeout is not None and args.start_timeout <= 0:
        return "--start-timeout must be positive"
    for flag in ("max_tokens", "max_planner_calls"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            return f"--{flag.replace('_', '-')} must be at least 1"
    if args.cwd is not None and not args.cwd.is_dir():
        return f"--cwd {args.cwd}: not a directory"
    problem = check_reports(args)
    if problem is not None:
        return problem
    if args.kernel is not None:
        return kernel_problem(args.kernel)
    return None


def check_reports(args: argparse.Namespace) -> str | None:
    """Why ``--junit-xml`` / ``--report`` cannot be written as given (before anything runs),
    or None; shared by ``run`` and ``resume``."""
    if args.junit_xml is not None:
        problem = unwritable(Path(args.junit_xml))
        if problem is not None:
            return f"--junit-xml {args.junit_xml}: {problem}"
    if args.report is not None:
        from notebook_bcc.cli.report import report_format

        try:
            report_format(args.report)
        except NotebookBccError as exc:
            return exc.message
    return None


class RunExtras:
    """Everything around one run the extra flags ask for (see the module docstring)."""

    def __init__(self, args: argparse.Namespace, *, name: str, plan: Plan | None) -> None:
        from notebook_bcc.cli.ledger import RunLedger

        self.args = args
        self.name = name
        self.ledger = RunLedger(plan)
        self.notebook_remote: RemoteFile | None = None
        self.report_remote: RemoteFile | None = None
        self.engine: Engine | None = None

    # -- paths ----------------------------------------------------------------------------

    def notebook_path(self, given: str | None, default: Path) -> Path:
        """The local notebook the run writes; a URL is materialised under ``out/NAME/``."""
        from notebook_bcc.cli.remote import is_url, local_name, remote_file

        if given is None:
            return default
        if not is_url(given):
            return Path(given)
        local = default.parent / local_name(given)
        self.notebook_remote = remote_file(given, local)
        self.notebook_remote.download_if_exists()
        return local

    def check_report_target(self, notebook: Path) -> None:
        """Resolve a remote ``--report`` now, so a missing filesystem stops the run early."""
        from notebook_bcc.cli.remote import is_url, local_name, remote_file

        report = self.args.report
        if report is not None and is_url(report):
            self.report_remote = remote_file(report, notebook.parent / local_name(report))

    def report_path(self) -> Path | None:
        """Where the report is written locally (None without ``--report``)."""
        if self.args.report is None:
            return None
        if self.report_remote is not None:
            return self.report_remote.local
        return Path(self.args.report)

    async def attach_resumed(self, engine: Engine) -> None:
        """``resume``: attach to a stored run's engine, the ledger first filled with what the
        run did before (so the reports describe the whole run, not only what follows)."""
        from notebook_bcc.cli.run_planners import plan
        from notebook_bcc.planners.capabilities import BlueprintBacked

        snapshot = engine.snapshot
        workflow_id = snapshot.workflow_id
        planner = engine.planner
        stem = Path(snapshot.notebook_path or "run").stem
        if isinstance(planner, BlueprintBacked):
            self.name = planner.loaded.blueprint.name or stem
        else:
            self.name = stem  # run's default notebook is out/NAME/NAME.ipynb
        self.ledger.plan = dict(plan(planner) or {})
        events = await engine.store.call(lambda s: s.events(workflow_id))
        self.ledger.seed(snapshot, list(engine.runtime.document.cells), events)
        self.attach(engine)

    # -- during the run -------------------------------------------------------------------

    def output_listener(self, view: Any) -> Any:
        """The cell-output callback for ``--log-output`` (None without it)."""
        if not self.args.log_output:
            return None
        from notebook_bcc.cli.log_output import CellOutputLog

        log = CellOutputLog(view, json_lines=self.args.json)
        self._log = log
        return log

    def attach(self, engine: Engine) -> None:
        """Subscribe the ledger (and the remote notebook's uploader) to the engine."""
        self.engine = engine
        self.ledger.attach(engine)
        log = getattr(self, "_log", None)
        if log is not None:
            log.engine = engine
            engine.subscribe(log.on_event)
        if self.notebook_remote is not None:
            from notebook_bcc.cli.remote import FlushUploader

            engine.subscribe(FlushUploader(self.notebook_remote).on_event)

    # -- after the run --------------------------------------------------------------------

    def finish(self, exit_code: int) -> int:
        """Write the JUnit report and the report, upload remote files; the exit code to use.

        A report that cannot be written is an error on stderr and exit 1 when the run itself
        succeeded (CI must notice); the run's own exit code wins otherwise.
        """
        engine = self.engine
        if engine is None:
            return exit_code
        snapshot = engine.snapshot
        self.ledger.finish(snapshot)
        problems: list[str] = []
        if self.args.junit_xml:
            from notebook_bcc.cli.junit import write_junit

            try:
                write_junit(self.ledger, Path(self.args.junit_xml), name=self.name)
            except OSError as exc:
                problems.append(f"--junit-xml {self.args.junit_xml}: {exc}")
        report = self.report_path()
        if report is not None:
            from notebook_bcc.cli.report import report_format, write_report

            try:
                write_report(
                    report,
                    notebook_path=Path(snapshot.notebook_path or ""),
                    snapshot=snapshot,
                    ledger=self.ledger,
                    name=self.name,
                    exit_code=exit_code,
                    fmt=report_format(self.args.report),
                )
            except (OSError, ValueError) as exc:
                problems.append(f"--report {self.args.report}: {exc}")
        for remote in (self.notebook_remote, self.report_remote):
            if remote is not None and not remote.upload():
                problems.append(f"upload to {remote.url} failed: {'; '.join(remote.errors)}")
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if problems and exit_code == 0:
            return 1
        return exit_code
