"""Real-browser harness: a ``jupyter lab`` subprocess per test module, Debian chromium driven by
Python Playwright, and helpers to start workflows over REST, open Lab, open the Workflow panel,
switch themes and take screenshots.

Nothing here downloads a browser: the tests drive ``/usr/bin/chromium`` and skip with the reason
when it is absent, unless ``NOTEBOOK_BCC_REQUIRE_BROWSER=1`` or ``NOTEBOOK_BCC_REQUIRE_ALL=1``
(CI) turn that into a failure. Screenshots go to ``test-artifacts/browser/``.

Waits are on DOM or REST conditions with generous deadlines (a 2-core machine running a
kernel, the server and chromium at once is slow), never on fixed sleeps.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import free_port, require_or_skip, token_request
from tests.server.conftest import EXAMPLES, SERVER_FIXTURES

try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail, when required) with the reason
    expect = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from playwright.sync_api import (
        Browser,
        BrowserContext,
        ConsoleMessage,
        Locator,
        Page,
        Playwright,
    )

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 800}
ARTIFACTS = REPO / "test-artifacts" / "browser"
JUPYTER = Path(sys.executable).parent / "jupyter"
BUILT_LABEXTENSION = REPO / "notebook_bcc" / "labextension"
PANEL_ID = "notebook-bcc-workflow-panel"
LIGHT = "JupyterLab Light"
DARK = "JupyterLab Dark"

# Deadlines in milliseconds for Playwright waits: Lab's first load, a UI reaction, a workflow
# reaching its next stage or decision (a real kernel runs pandas and scikit-learn meanwhile).
LOAD_MS = 90_000
UI_MS = 30_000
PROGRESS_MS = 120_000

REQUIRE_BROWSER = os.environ.get("NOTEBOOK_BCC_REQUIRE_BROWSER") == "1"


def _unavailable(reason: str) -> None:
    require_or_skip(False, reason, switch="NOTEBOOK_BCC_REQUIRE_BROWSER")


# -- the jupyter lab subprocess -------------------------------------------------------------


def python_language_info() -> dict[str, Any]:
    """The ``language_info`` ipykernel reports, so Lab opens a fresh notebook clean."""
    return {
        "codemirror_mode": {"name": "ipython", "version": 3},
        "file_extension": ".py",
        "mimetype": "text/x-python",
        "name": "python",
        "nbconvert_exporter": "python",
        "pygments_lexer": "ipython3",
        "version": sys.version.split()[0],
    }


class RestError(AssertionError):
    """A REST answer that was not the one expected: its status and body."""


COLLAB_SITE = REPO / ".collab-site"
"""Where ``pip install --target`` may have put jupyter-collaboration for these tests (the
``collab`` extra installed into the environment works too)."""


def collaboration_env() -> dict[str, str] | None:
    """Environment for a Lab with jupyter-collaboration, or None when it is not installed."""
    import importlib.util

    if importlib.util.find_spec("jupyter_server_ydoc") is not None:
        return {}
    if not (COLLAB_SITE / "jupyter_server_ydoc").is_dir():
        return None
    return {
        "PYTHONPATH": os.pathsep.join(
            part for part in (os.environ.get("PYTHONPATH", ""), str(COLLAB_SITE)) if part
        ),
        "JUPYTER_PATH": str(COLLAB_SITE / "share" / "jupyter"),
        "JUPYTER_CONFIG_PATH": str(COLLAB_SITE / "etc" / "jupyter"),
    }


class Lab:
    """A real ``jupyter lab`` with notebook-bcc, in a private home, on a free port.

    ``collaborative``: with jupyter-collaboration (``collaboration_env``); otherwise it is
    switched off even when installed, so the plain single-user mode is what gets tested.
    """

    def __init__(self, home: Path, *, collaborative: bool = False) -> None:
        self.collaborative = collaborative
        self.home = home
        self.root = home / "root"
        self.root.mkdir(parents=True)
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/"
        self.log_path = home / "jupyter-lab.log"
        self.store_path = home / "notebook_bcc.sqlite"
        self.process: subprocess.Popen[bytes] | None = None

    # lifecycle

    def start(self) -> None:
        data_dir = self.home / "data"
        if (BUILT_LABEXTENSION / "package.json").exists():
            # Serve the working tree's bundle: the copy an editable install put into the venv
            # is only refreshed by the next pip install. The first labextensions folder that
            # holds a name wins, and inside a venv jupyter_core puts the venv's folders first
            # unless JUPYTER_PREFER_ENV_PATH=0 (set below), which puts this data dir first.
            (data_dir / "labextensions").mkdir(parents=True, exist_ok=True)
            link = data_dir / "labextensions" / "notebook-bcc"
            if not link.is_symlink():
                link.symlink_to(BUILT_LABEXTENSION)
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(self.home / "config"),
            "JUPYTER_DATA_DIR": str(data_dir),
            "JUPYTER_PREFER_ENV_PATH": "0",
            "JUPYTER_RUNTIME_DIR": str(self.home / "runtime"),
        }
        collab = collaboration_env()
        if self.collaborative:
            assert collab is not None, "jupyter-collaboration is not installed"
            env.update(collab)
        elif collab is not None:
            self._switch_off_collaboration()
        with self.log_path.open("ab") as log:  # a restart's log follows the first one's
            self.process = subprocess.Popen(
                [
                    str(JUPYTER),
                    "lab",
                    "--allow-root",
                    "--no-browser",
                    "--ip=127.0.0.1",
                    f"--port={self.port}",
                    "--ServerApp.port_retries=0",
                    f"--IdentityProvider.token={self.token}",
                    f"--ServerApp.root_dir={self.root}",
                    f"--NotebookBccApp.store_path={self.store_path}",
                    # the co-editing conversation (merge plans, acknowledgements) in the log a
                    # failing test prints
                    "--NotebookBccApp.log_level=DEBUG",
                    # window.jupyterapp: the tests switch the theme live through Lab's command
                    "--LabApp.expose_app_in_browser=True",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.root,
            )

    def _switch_off_collaboration(self) -> None:
        """jupyter-collaboration is installed: turn it off for this (single-user) Lab."""
        config = self.home / "config"
        (config / "labconfig").mkdir(parents=True, exist_ok=True)
        off = {"jupyter_server_ydoc": False, "jupyter_collaboration": False}
        (config / "jupyter_server_config.json").write_text(
            json.dumps({"ServerApp": {"jpserver_extensions": off}})
        )
        disabled = dict.fromkeys(
            ("@jupyter/collaboration-extension", "@jupyter/docprovider-extension"), True
        )
        (config / "labconfig" / "page_config.json").write_text(
            json.dumps({"disabledExtensions": disabled})
        )

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"jupyter lab exited at start-up:\n{self.log_tail()}")
            try:
                if self.request("GET", "api/status")[0] == 200:
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.25)
        raise AssertionError(f"jupyter lab did not answer in {timeout} s:\n{self.log_tail()}")

    def crash_and_restart(self) -> None:
        """``kill -9`` the server mid-whatever, then start ``jupyter lab`` again on the same
        port, home and root, as a user does after a crash (its kernels die with it: they
        watch their parent)."""
        process = self.process
        assert process is not None, "no server to kill"
        assert process.poll() is None, "the server already stopped"
        process.kill()
        process.wait(timeout=30)
        self.start()
        self.wait_ready()

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)

    def log_tail(self, chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return "(no log)"

    # REST

    def url(self, path: str, **query: str) -> str:
        """An absolute URL carrying the token (the browser logs in with it)."""
        params = "&".join(f"{key}={value}" for key, value in {**query, "token": self.token}.items())
        return f"{self.base}{path}?{params}"

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """``(status, decoded JSON body)`` of a token-authenticated request."""
        return token_request(self.base, self.token, method, path, body)

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        code, answer = self.request(method, path, body)
        if code >= 300:
            raise RestError(f"{method} {path} -> {code}: {answer}")
        return answer

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """A notebook-bcc API call that must succeed."""
        return self.ok(method, f"notebook-bcc/api/{path}", body)

    # workflows

    def copy_housing(self, folder: str = "housing") -> str:
        """The housing example (blueprint and data) under the root; returns its blueprint path."""
        target = self.root / folder
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(EXAMPLES / "housing" / "workflow.yaml", target / "workflow.yaml")
        shutil.copytree(EXAMPLES / "housing" / "data", target / "data", dirs_exist_ok=True)
        return f"{folder}/workflow.yaml"

    def copy_fixture_blueprint(self, name: str) -> str:
        """One of the server tests' small blueprints under ``blueprints/``; its API path."""
        target = self.root / "blueprints"
        target.mkdir(exist_ok=True)
        shutil.copy(SERVER_FIXTURES / name, target / name)
        return f"blueprints/{name}"

    def start_workflow(
        self,
        notebook: str,
        blueprint: str,
        *,
        problem: str | None = None,
        files: list[str] | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """POST a blueprint workflow (``options`` as in RunOptions); returns its snapshot."""
        body: dict[str, Any] = {
            "notebook_path": notebook,
            "planner": {"kind": "blueprint", "path": blueprint},
            "files": files or [],
            "options": options,
        }
        if problem is not None:
            body["problem"] = problem
        return dict(self.api("POST", "workflows", body))

    def snapshot(self, workflow_id: str) -> dict[str, Any]:
        return dict(self.api("GET", f"workflows/{workflow_id}"))

    def workflows(self, notebook: str) -> list[dict[str, Any]]:
        answer = self.api("GET", f"workflows?notebook_path={urllib.request.quote(notebook)}")
        return [w for w in answer["workflows"] if w["notebook_path"] == notebook]

    def wait_snapshot(
        self,
        workflow_id: str,
        until: Callable[[dict[str, Any]], bool],
        what: str,
        timeout: float = PROGRESS_MS / 1000,
    ) -> dict[str, Any]:
        """Poll the snapshot until ``until`` holds (a failed run fails the wait at once)."""
        deadline = time.monotonic() + timeout
        while True:
            snapshot = self.snapshot(workflow_id)
            if until(snapshot):
                return snapshot
            run = snapshot["run"]
            if run["status"] == "failed":
                raise AssertionError(f"waiting for {what}: the run failed: {run}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"waiting for {what}: timed out; run {run}, fsm {snapshot['fsm']['state']}"
                )
            time.sleep(0.25)

    def next_decision_or_end(self, workflow_id: str) -> dict[str, Any]:
        """The snapshot once the run waits for a decision or has ended."""
        return self.wait_snapshot(
            workflow_id,
            lambda s: (
                s["run"]["status"] in ("waiting", "completed", "cancelled")
                and (s["run"]["status"] != "waiting" or bool(s["run"]["pending"]))
            ),
            "a pending decision or the end of the run",
        )

    def command(self, workflow_id: str, **command: Any) -> tuple[int, Any]:
        return self.request("POST", f"notebook-bcc/api/workflows/{workflow_id}/commands", command)

    def approve(self, snapshot: dict[str, Any], decision_id: str | None = None) -> dict[str, Any]:
        """Approve a pending decision (the first one by default) over REST."""
        pending = snapshot["run"]["pending"]
        target = decision_id or pending[0]["id"]
        code, answer = self.command(
            snapshot["workflow_id"],
            decide=target,
            decision="approve",
            expected_version=snapshot["version"],
        )
        if code != 200:
            raise RestError(f"approve {target} -> {code}: {answer}")
        return dict(answer)

    # notebooks and settings

    def create_notebook(self, path: str) -> None:
        """An empty notebook with its kernelspec and language_info (Lab opens it clean)."""
        content = {
            "cells": [],
            "metadata": {
                "kernelspec": {
                    "display_name": "Python 3 (ipykernel)",
                    "language": "python",
                    "name": "python3",
                },
                "language_info": python_language_info(),
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        parent = "/".join(path.split("/")[:-1])
        if parent:
            self.request("PUT", f"api/contents/{parent}", {"type": "directory"})
        self.ok(
            "PUT",
            f"api/contents/{path}",
            {"type": "notebook", "format": "json", "content": content},
        )

    def notebook_cells(self, path: str) -> list[dict[str, Any]]:
        """The cells of a notebook as the server has it on disk."""
        return list(self.ok("GET", f"api/contents/{path}?content=1")["content"]["cells"])

    def wait_file_cells(
        self,
        path: str,
        until: Callable[[list[dict[str, Any]]], bool],
        what: str,
        timeout: float = UI_MS / 1000,
    ) -> list[dict[str, Any]]:
        """Poll a notebook's cells on disk until ``until`` holds. While the notebook is open
        in Lab (held, no collaboration) Lab saves the workflow's cells after it merged them,
        a moment after the panel showed them."""
        deadline = time.monotonic() + timeout
        while True:
            cells = self.notebook_cells(path)
            if until(cells):
                return cells
            if time.monotonic() > deadline:
                sources = [c["source"] for c in cells]
                raise AssertionError(f"waiting for {what} in {path}: timed out; {sources}")
            time.sleep(0.1)

    def put_setting(self, plugin: str, values: dict[str, Any]) -> None:
        self.ok("PUT", f"lab/api/settings/{plugin}", {"raw": json.dumps(values)})

    def set_theme(self, theme: str) -> None:
        """The theme pages load with from now on (Lab's user settings)."""
        self.put_setting("@jupyterlab/apputils-extension:themes", {"theme": theme})


@pytest.fixture(scope="module")
def browser_available() -> None:
    """Skips (or, when required, fails) the module's tests before anything starts."""
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is absent: apt-get install chromium to run the browser tests")
    if expect is None:
        _unavailable("the playwright package is not installed (pip install -e '.[test]')")
    if not JUPYTER.exists():
        _unavailable(f"{JUPYTER} is not installed")


def started_lab(server: Lab, *, settings: dict[str, dict[str, Any]] | None = None) -> Iterator[Lab]:
    """Start ``server`` (its root prepared by the caller), wait until it answers, put the
    settings every browser test wants (no news toast, the light theme) and ``settings``,
    yield it, and stop it afterwards (a generator for a module fixture to delegate to)."""
    server.start()
    try:
        server.wait_ready()
        # no "get Jupyter news?" toast over the screenshots
        server.put_setting("@jupyterlab/apputils-extension:notification", {"fetchNews": "false"})
        server.set_theme(LIGHT)
        for plugin, values in (settings or {}).items():
            server.put_setting(plugin, values)
        yield server
    finally:
        server.stop()


def lab_of_mode(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Lab:
    """A Lab (not started) for a module fixture parametrized by mode: ``single-user``, or
    ``collaborative`` (with jupyter-collaboration: skipped, or failed when required, without
    it)."""
    request.getfixturevalue("browser_available")
    collaborative = request.param == "collaborative"
    if collaborative:
        require_or_skip(
            collaboration_env() is not None,
            "jupyter-collaboration is not installed (pip install -e '.[collab]')",
        )
    return Lab(tmp_path_factory.mktemp(f"lab-{request.param}"), collaborative=collaborative)


@pytest.fixture(scope="module")
def lab(browser_available: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One ``jupyter lab`` per test module, the housing example copied under its root."""
    server = Lab(tmp_path_factory.mktemp("lab"))
    server.copy_housing()
    yield from started_lab(server)


# -- the browser ----------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def jp_asyncio_loop() -> None:
    """Overrides pytest-jupyter's autouse loop fixture: Playwright's sync API runs its own
    event loop, which that fixture would try to close after every test."""


@pytest.fixture(autouse=True)
def jp_server_cleanup() -> None:
    """Overrides pytest-jupyter's autouse in-process server cleanup: the server here is a
    subprocess, stopped by the ``lab`` fixture."""


@pytest.fixture(scope="module")
def playwright(browser_available: None) -> Iterator[Playwright]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """Debian chromium, headless; each context gets a fresh profile."""
    instance = playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
    )
    try:
        yield instance
    finally:
        instance.close()


@dataclass
class Pages:
    """The pages a test opened (screenshotted when it fails) and their console errors."""

    browser: Browser
    opened: list[Page] = field(default_factory=list)
    contexts: list[BrowserContext] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)
    """The co-editor's console trace lines (its time, UTC, in each), with their page."""

    def new(self) -> Page:
        """A page in a new browser context (its own cookies and storage), 1280x800."""
        context = self.browser.new_context(viewport=VIEWPORT)
        context.set_default_timeout(UI_MS)
        self.contexts.append(context)
        page = context.new_page()
        index = len(self.opened)

        def console(message: ConsoleMessage) -> None:
            if message.type == "error":
                self.errors.append(f"[page {index} console] {message.text}")
            elif message.text.startswith("notebook-bcc co-editing:"):
                self.traces.append(f"[page {index}] {message.text}")

        page.on("console", console)
        page.on("pageerror", lambda error: self.errors.append(f"[page {index} error] {error}"))
        self.opened.append(page)
        return page

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    setattr(item, f"bcc_report_{report.when}", report)
    return report


@pytest.fixture
def pages(browser: Browser, lab: Lab, request: pytest.FixtureRequest) -> Iterator[Pages]:
    """Opens pages for one test; on failure saves their screenshots and prints the server log."""
    for stale in ARTIFACTS.glob(f"FAILED-{request.node.name}-*.png"):
        stale.unlink()
    opened = Pages(browser)
    yield opened
    report = getattr(request.node, "bcc_report_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for index, page in enumerate(opened.opened):
            try:
                page.screenshot(path=str(ARTIFACTS / f"FAILED-{request.node.name}-{index}.png"))
            except Exception as exc:  # the page may be what broke
                print(f"no screenshot of page {index}: {exc}")
        print("\n".join(opened.errors[-40:]) or "(no console errors)")
        print(_where_things_were(lab, opened))
        print("--- the co-editor's trace (last 80) ---")
        print("\n".join(opened.traces[-80:]) or "(none)")
        print(f"--- jupyter lab log (tail) ---\n{lab.log_tail(20000)}")
    opened.close()


def _where_things_were(lab: Lab, opened: Pages) -> str:
    """For a failed test's report: each page's open dialogs and every workflow's state (what
    a screenshot shows only when it is at hand)."""
    lines = ["--- when the test failed ---"]
    for index, page in enumerate(opened.opened):
        try:
            texts = page.locator(".jp-Dialog").all_inner_texts()
        except Exception as exc:  # the page may be what broke
            texts = [f"(not readable: {exc})"]
        lines.append(f"page {index} dialogs: {texts or 'none'}")
    try:
        answer = lab.api("GET", "workflows")
        for w in answer["workflows"]:
            lines.append(
                f"workflow {w['workflow_id']} {w.get('notebook_path')}: {w.get('run_status')}"
                f" {w.get('state')} v{w.get('version')} pending={w.get('pending')}"
                f" running={w.get('running')}"
            )
    except Exception as exc:  # the server may be what broke
        lines.append(f"(workflows not readable: {exc})")
    return "\n".join(lines)


@pytest.fixture
def page(pages: Pages) -> Page:
    """One fresh 1280x800 page."""
    return pages.new()


# -- page helpers ---------------------------------------------------------------------------


def wait_until(condition: Callable[[], bool], what: str, timeout: float = UI_MS / 1000) -> None:
    """Poll a REST-side (or file-side) ``condition`` until it holds: for what no page event
    announces (a server restarting, a file written)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def open_lab(
    page: Page, lab: Lab, notebook: str | None = None, workspace: str | None = None
) -> None:
    """Load Lab (optionally opening ``notebook``) and wait until it is usable.

    Each page gets a workspace of its own (a fresh layout: only ``notebook`` open) unless
    ``workspace`` names one.
    """
    path = f"lab/workspaces/{workspace or 'w' + secrets.token_hex(4)}"
    if notebook is not None:
        path = f"{path}/tree/{notebook}"
    page.goto(lab.url(path), timeout=LOAD_MS)
    page.wait_for_selector("#jp-main-dock-panel", timeout=LOAD_MS)
    page.wait_for_selector(f"#{PANEL_ID}", state="attached", timeout=LOAD_MS)
    wait_splash_gone(page, LOAD_MS)
    if notebook is not None:
        notebook_panel(page).wait_for(timeout=LOAD_MS)
        # the kernel of the notebook's session is attached and idle
        page.locator(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator").first.wait_for(
            state="attached", timeout=LOAD_MS
        )


def wait_splash_gone(page: Page, timeout: float = UI_MS) -> None:
    """Lab shows its splash screen while it loads and while a theme changes."""
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=timeout)


NOTEBOOK_CELLS = ".jp-NotebookPanel .jp-Notebook .jp-Cell"


def notebook_panel(page: Page) -> Locator:
    """The notebook open in the main area (the tests open one per page)."""
    return page.locator(".jp-NotebookPanel").first


def notebook_cells(page: Page) -> Locator:
    """The cells of the open notebook."""
    return page.locator(NOTEBOOK_CELLS)


def wait_cells(page: Page, at_least: int, timeout: float = PROGRESS_MS) -> int:
    """Wait until the open notebook shows ``at_least`` cells; returns how many it shows."""
    page.wait_for_function(
        "([selector, n]) => document.querySelectorAll(selector).length >= n",
        arg=[NOTEBOOK_CELLS, at_least],
        timeout=timeout,
    )
    return notebook_cells(page).count()


def notebook_tab(page: Page, name: str) -> Locator:
    """The main-area tab of the document named ``name`` (its class says whether it is dirty)."""
    return page.locator("#jp-main-dock-panel .lm-TabBar-tab").filter(
        has=page.locator(".lm-TabBar-tabLabel", has_text=re.compile(rf"^{re.escape(name)}$"))
    )


def open_panel(page: Page) -> Locator:
    """Show the Workflow side panel (clicking its right-sidebar tab) and return it."""
    panel = page.locator(f"#{PANEL_ID}")
    # a loading page restores its workspace, the panel open in it too: decide once Lab has
    # (a click on the tab of the panel Lab is opening would close it)
    page.wait_for_function("() => window.jupyterapp?.restored.then(() => true)", timeout=LOAD_MS)
    if not panel.is_visible():
        page.locator(f'.jp-SideBar .lm-TabBar-tab[data-id="{PANEL_ID}"]').click()
    panel.wait_for(state="visible", timeout=UI_MS)
    return panel


def tid(scope: Page | Locator, testid: str) -> Locator:
    """Elements by ``data-testid``."""
    return scope.locator(f'[data-testid="{testid}"]')


def open_section(panel: Locator, testid: str) -> Locator:
    """Expand a collapsible panel section (a <details>) and return it."""
    details = tid(panel, testid)
    expect(details).to_be_visible()
    if details.get_attribute("open") is None:
        details.locator("summary").first.click()
    expect(details).to_have_attribute("open", "")
    return details


BACKGROUND_JS = (
    "() => getComputedStyle(document.body).getPropertyValue('--jp-layout-color0').trim()"
)


def switch_theme(page: Page, theme: str) -> None:
    """Change the theme live (Lab's own command) and wait until it applied."""
    if page.evaluate("() => document.body.dataset.jpThemeName") == theme:
        return
    before = page.evaluate(BACKGROUND_JS)
    page.evaluate(
        "theme => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme
    )
    # applied once Lab names it on <body> and its stylesheet changed the background colour
    page.wait_for_function(
        f"([theme, before]) => document.body.dataset.jpThemeName === theme"
        f" && ({BACKGROUND_JS})() !== before",
        arg=[theme, before],
        timeout=UI_MS,
    )
    wait_splash_gone(page)


def cancel_through(
    page: Page, lab: Lab, workflow_id: str, button: Locator
) -> tuple[list[int], dict[str, Any]]:
    """Press a Cancel ``button``, accept its dialog and wait for the answer that is not a
    conflict, then for the run to be cancelled: (the HTTP statuses of the command POSTs the
    page made, in order, the last one that answer's; the cancelled snapshot)."""
    refused: list[int] = []

    def is_command(response: Any) -> bool:
        return bool(response.url.split("?")[0].endswith("/commands"))

    def answered(response: Any) -> None:
        if is_command(response) and response.status == 409:
            refused.append(response.status)

    page.on("response", answered)
    try:
        with page.expect_response(
            lambda r: is_command(r) and r.status != 409, timeout=PROGRESS_MS
        ) as final:
            button.click()
            page.locator(".jp-Dialog .jp-mod-accept").click()
    finally:
        page.remove_listener("response", answered)
    cancelled = lab.wait_snapshot(
        workflow_id, lambda s: s["run"]["status"] == "cancelled", "the cancel", timeout=60
    )
    return [*refused, final.value.status], cancelled


def shot(page: Page, name: str) -> Path:
    """Save a PNG of the whole window into ``test-artifacts/browser/``."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def scroll_panel_top(page: Page) -> None:
    """Scroll the Workflow panel back to its header."""
    page.locator(f"#{PANEL_ID}").evaluate(
        "panel => { for (let n = panel; n; n = n.parentElement) n.scrollTop = 0; }"
    )


def shots(page: Page, name: str) -> None:
    """``name-light.png`` and ``name-dark.png`` of the same moment (back in light after)."""
    shot(page, f"{name}-light")
    switch_theme(page, DARK)
    shot(page, f"{name}-dark")
    switch_theme(page, LIGHT)


PANEL_LAYOUT_JS = """
panel => {
  const box = panel.getBoundingClientRect();
  const clipped = new Set(['auto', 'scroll', 'hidden', 'clip']);
  const sticking = [];
  for (const el of panel.querySelectorAll('*')) {
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 || rect.right <= box.right + 1) continue;
    let inside = false;
    for (let up = el.parentElement; up && up !== panel; up = up.parentElement) {
      if (clipped.has(getComputedStyle(up).overflowX)) { inside = true; break; }
    }
    if (!inside) {
      sticking.push(`${el.tagName.toLowerCase()}.${el.className} ` +
        `(${el.getAttribute('data-testid') || ''}) right=${Math.round(rect.right)}`);
    }
  }
  const squeezed = [];
  for (const button of panel.querySelectorAll('button')) {
    const rect = button.getBoundingClientRect();
    if (rect.width === 0) continue;
    const style = getComputedStyle(button);
    const line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.3;
    const inner = rect.height - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom)
      - parseFloat(style.borderTopWidth) - parseFloat(style.borderBottomWidth);
    if (inner > line * 2.5 || button.scrollWidth > button.clientWidth + 1) {
      squeezed.push(`${button.getAttribute('data-testid') || button.textContent.trim()} ` +
        `${Math.round(rect.width)}x${Math.round(rect.height)}`);
    }
  }
  const json = [];
  const walker = document.createTreeWalker(panel, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    if (text.startsWith('{"') && !node.parentElement.closest('style')) json.push(text.slice(0, 80));
  }
  return {scrollWidth: panel.scrollWidth, clientWidth: panel.clientWidth,
          panelRight: Math.round(box.right), sticking: sticking.slice(0, 10), squeezed, json};
}
"""


def assert_panel_layout(page: Page) -> None:
    """No horizontal overflow in the panel, no button squeezed until its label breaks (a
    label wider than the button, or stacked over more than two lines), no raw JSON."""
    panel = page.locator(f"#{PANEL_ID}")
    layout = panel.evaluate(PANEL_LAYOUT_JS)
    assert layout["scrollWidth"] <= layout["clientWidth"] + 1, f"panel overflows: {layout}"
    assert not layout["sticking"], f"elements stick out of the panel: {layout}"
    assert not layout["squeezed"], f"buttons squeezed until their label breaks: {layout}"
    assert not layout["json"], f"raw JSON in the panel: {layout['json']}"


def new_notebook_from_the_file_menu(page: Page) -> str:
    """File > New > Notebook (Python 3); returns the path Lab gave it."""
    page.locator('.lm-MenuBar-itemLabel:text-is("File")').click()
    page.locator('.lm-Menu-itemLabel:text-is("New")').first.hover()
    page.locator('.lm-Menu-itemLabel:text-is("Notebook")').first.click()
    notebook_panel(page).wait_for(timeout=LOAD_MS)
    # Lab asks for the kernel of a new notebook: the preselected default (Python 3)
    picker = page.locator(".jp-Dialog", has_text="Select Kernel")
    picker.locator(".jp-Dialog-button.jp-mod-accept").click(timeout=LOAD_MS)
    expect(picker).to_have_count(0)
    page.locator(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator").first.wait_for(
        state="attached", timeout=LOAD_MS
    )
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.context?.isReady", timeout=LOAD_MS
    )
    # ... and its session, which Lab creates after the kernel is picked: a workflow started
    # before it exists would find no session for the path and start a second kernel
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.isReady"
        " && !!window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel",
        timeout=LOAD_MS,
    )
    # ... and the kernel's language, which Lab writes into the notebook's metadata when the
    # kernel's info arrives: arriving during the test's first save, it leaves the tab dirty
    page.wait_for_function(
        "() => !!window.jupyterapp.shell.currentWidget.model.getMetadata('language_info')",
        timeout=LOAD_MS,
    )
    path = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path")
    assert isinstance(path, str), path
    assert path.endswith(".ipynb"), path
    page.evaluate("() => { window.__bccDialogs = []; }")  # the kernel picker does not count
    return path


def panel_width(page: Page, width: int) -> None:
    """Drag the handle between the main area and the right side panel to ``width`` px."""
    panel = page.locator(f"#{PANEL_ID}")
    box = panel.bounding_box()
    assert box is not None
    # the split handle on the panel's left edge (the right side bar's stack sits right of it)
    boxes = [
        b
        for b in (h.bounding_box() for h in page.locator(".lm-SplitPanel-handle").all())
        if b is not None and b["height"] > 100
    ]
    hbox = min(boxes, key=lambda b: abs(b["x"] + b["width"] - box["x"]))
    x, y = hbox["x"] + hbox["width"] / 2, hbox["y"] + hbox["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + (box["width"] - width), y, steps=5)
    page.mouse.up()


# -- the steady run: outputs shown and in the file -----------------------------------------

STEADY = REPO / "tests" / "fixtures" / "browser" / "steady.yaml"
"""A run that prints as it goes and holds on a ``go`` file in the notebook's folder."""

OUTPUTS = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  return w.context.model.sharedModel.cells
    .filter(c => c.cell_type === 'code')
    .map(c => c.toJSON().outputs.map(o => o.text ?? '').join(''));
}"""


def printed(page: Page) -> list[str]:
    """The text each code cell of the open notebook shows as its output, in order."""
    return [str(text).strip() for text in page.evaluate(OUTPUTS)]


def wait_printed(page: Page, wanted: list[str], timeout: float = PROGRESS_MS) -> None:
    """Wait until the open notebook's code cells show ``wanted`` among their outputs, in
    order (the inputs cell prints nothing)."""
    page.wait_for_function(
        f"([wanted]) => {{ const got = ({OUTPUTS})().map(t => t.trim()).filter(t => t);"
        " return JSON.stringify(got) === JSON.stringify(wanted); }",
        arg=[wanted],
        timeout=timeout,
    )


def open_steady(lab: Lab, pages: Pages, notebook: str) -> tuple[Page, Locator]:
    """The steady blueprint under the root, a new ``notebook`` open in a page with the panel
    shown: (page, panel)."""
    (lab.root / "blueprints").mkdir(exist_ok=True)
    shutil.copy(STEADY, lab.root / "blueprints" / "steady.yaml")
    lab.create_notebook(notebook)
    page = pages.new()
    open_lab(page, lab, notebook)
    return page, open_panel(page)


STEADY_HELD = ["first output", "second output", "third output"]
"""What the steady run prints before it holds on its ``go`` file."""
STEADY_ALL = [*STEADY_HELD, "fourth output", "fifth output"]
"""Everything the steady run prints."""


def wait_steady_held(lab: Lab, page: Page, workflow_id: str) -> None:
    """The steady run's first outputs shown in ``page``, and the run holding on its gate."""
    wait_printed(page, STEADY_HELD)
    lab.wait_snapshot(
        workflow_id,
        lambda s: any("while not os.path.exists" in str(c) for c in s["open_contracts"]),
        "the held cell running",
    )


def file_printed(cells: list[dict[str, Any]]) -> list[str]:
    """The non-empty printed text of each code cell of a notebook file, in order."""
    texts = (
        "".join("".join(o.get("text", "")) for o in c.get("outputs", [])).strip()
        for c in cells
        if c["cell_type"] == "code"
    )
    return [text for text in texts if text]
