"""Shared test configuration: Hypothesis profiles and seed, the require switch, fixture paths.

- **Hypothesis.** Profiles keep ``deadline=None``. Every session runs the property tests with
  one fresh random seed, printed in the session header (``hypothesis seed: N``); replay a run
  with ``pytest --hypothesis-seed=N``. CI is never derandomised, so each CI run explores new
  inputs (and ``print_blob`` prints how to reproduce a failing example).
- **Nothing passes by skipping.** A test that needs a binary that may be missing (a gateway,
  Jupyter Lab, a browser, ``jupyter-server``) calls :func:`require_or_skip` or carries the
  :func:`requires` mark. It skips when the binary is absent, except with
  ``NOTEBOOK_BCC_REQUIRE_ALL=1`` (set by ``.ci/run``), where the skip is a failure.
  ``tests/test_skips.py`` keeps every other ``pytest.skip`` / ``skipif`` out of the suite.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["pytest_jupyter.jupyter_server"]

FIXTURES = Path(__file__).parent / "fixtures"

settings.register_profile(
    "notebook_bcc",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    max_examples=100,
)
settings.register_profile(
    "notebook_bcc_ci",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    max_examples=100,
    print_blob=True,
    derandomize=False,  # Hypothesis derandomises under CI by default: a fresh seed each run
)
settings.register_profile(
    "notebook_bcc_slow",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    max_examples=10_000,
)
if os.environ.get("NOTEBOOK_BCC_SLOW") == "1":
    settings.load_profile("notebook_bcc_slow")
elif os.environ.get("CI"):
    settings.load_profile("notebook_bcc_ci")
else:
    settings.load_profile("notebook_bcc")

SLOW = os.environ.get("NOTEBOOK_BCC_SLOW") == "1"
"""Stress modes (>= 10,000 fuzz cases, every crash point) run only when this is set."""

REQUIRE_ALL = os.environ.get("NOTEBOOK_BCC_REQUIRE_ALL") == "1"
"""Set by ``.ci/run``: a test that would skip for a missing binary fails instead."""


def require_or_skip(available: bool, reason: str, *, switch: str | None = None) -> None:
    """Skip the running test unless ``available``; under ``NOTEBOOK_BCC_REQUIRE_ALL=1`` (or the
    narrower ``switch`` variable set to 1) fail it instead, naming ``reason``."""
    if available:
        return
    if REQUIRE_ALL or (switch is not None and os.environ.get(switch) == "1"):
        names = "NOTEBOOK_BCC_REQUIRE_ALL=1" if REQUIRE_ALL else f"{switch}=1"
        pytest.fail(f"{reason} ({names}: a missing binary is a failure)", pytrace=False)
    pytest.skip(reason)


def requires(available: bool, reason: str) -> pytest.MarkDecorator:
    """A mark (for a test or a module's ``pytestmark``) applying :func:`require_or_skip`."""
    return pytest.mark.notebook_bcc_requires(available=available, reason=reason)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register the ``requires`` mark; give Hypothesis this session's seed.

    Runs before Hypothesis' own ``pytest_configure``, which then forces the seed.
    """
    config.addinivalue_line(
        "markers", "notebook_bcc_requires(available, reason): see tests.conftest.requires"
    )
    if config.getoption("hypothesis_seed", default=None) is None:
        config.option.hypothesis_seed = str(secrets.randbelow(2**32))


def pytest_sessionstart(session: pytest.Session) -> None:
    """Print this session's Hypothesis seed and how to replay it (also under ``-q``)."""
    config = session.config
    seed = config.getoption("hypothesis_seed", default=None)
    required = "; NOTEBOOK_BCC_REQUIRE_ALL=1: missing binaries fail" if REQUIRE_ALL else ""
    line = f"hypothesis seed: {seed} (replay: pytest --hypothesis-seed={seed}){required}"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line)


LONG_FILES = (
    "tests/browser/test_coediting.py",
    "tests/durability/test_crash_suite.py",
    "tests/server/test_server_crash_chain.py",
    "tests/cli/test_run_ci_cli.py",
    "tests/browser/test_panel_actions.py",
    "tests/journeys/test_decisions.py",
    "tests/journeys/test_readme.py",
    "tests/cli/test_run_planners_cli.py",
    "tests/engine/test_lost_state.py",
    "tests/cli/test_run_cli.py",
    "tests/server/test_restart.py",
    "tests/browser/test_panel_views.py",
    "tests/server/test_server_crash.py",
    "tests/browser/test_workflows_list.py",
    "tests/browser/test_panel_words.py",
    "tests/browser/test_start_replaces.py",
    "tests/server/test_workflows.py",
    "tests/durability/test_interruptions.py",
    "tests/blueprint/test_yaml_guard.py",
    "tests/examples/test_housing_ai.py",
)
"""The test files that take longest (>= 40 s each, measured on two xdist workers), longest
first. Under pytest-xdist (``make pytest``: ``--dist loadfile --no-loadscope-reorder``) each
worker collects them first, so the workers start on the long files and finish on short ones
instead of one worker running a minutes-long file alone at the end. A stale list costs time,
never a test: only the order changes (a file's tests stay together, in their own order)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under an xdist worker, move the :data:`LONG_FILES` to the front (a stable sort, the
    same on every worker); a plain ``pytest`` keeps the collection order."""
    if not hasattr(config, "workerinput"):
        return
    rank = {name: index for index, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Apply the ``notebook_bcc_requires`` marks of a test (and its module)."""
    for mark in item.iter_markers(name="notebook_bcc_requires"):
        require_or_skip(bool(mark.kwargs["available"]), str(mark.kwargs["reason"]))


@pytest.fixture
def fixtures_dir() -> Path:
    """The ``tests/fixtures`` folder."""
    return FIXTURES


def run_cli(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``notebook-bcc ARGS`` as a user runs it: a new process, output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "notebook_bcc", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        env=env,
    )


COLLABORATION_EXTENSIONS = ("jupyter_server_ydoc", "jupyter_collaboration", "jupyter_server_fileid")
"""The server extensions the ``collab`` extra installs (jupyter-collaboration)."""


def collaboration_off(config_dir: Path) -> None:
    """Switch jupyter-collaboration off for a test server using ``config_dir`` (when it is
    installed, every ``jupyter server`` loads it; tests of other things don't want its rooms
    or its shutdown logging)."""
    config_dir.mkdir(parents=True, exist_ok=True)
    path = config_dir / "jupyter_server_config.json"
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    extensions = data.setdefault("ServerApp", {}).setdefault("jpserver_extensions", {})
    for name in COLLABORATION_EXTENSIONS:
        extensions.setdefault(name, False)
    path.write_text(json.dumps(data))


def free_port() -> int:
    """A loopback TCP port nothing listens on right now (for a server a test starts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def token_request(
    base: str, token: str, method: str, path: str, body: Any = None
) -> tuple[int, Any]:
    """``(status, decoded JSON body)`` of a token-authenticated request to a Jupyter server
    a test started as a subprocess (a body that is not JSON comes back as text)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        base + path,
        data=data,
        method=method,
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw or b"null")
        except ValueError:
            return exc.code, raw.decode(errors="replace")


class StdoutWatch:
    """Reads a process's stdout in a thread and sets ``seen`` once a line holds ``fragment``
    (a test acts once the process said it reached a point, not after a fixed sleep)."""

    def __init__(self, process: subprocess.Popen[str], fragment: str) -> None:
        self.seen = threading.Event()
        self.lines: list[str] = []

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                self.lines.append(line)
                if fragment in line:
                    self.seen.set()

        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()
