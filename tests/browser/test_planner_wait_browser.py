"""A slow planner in a real browser: while a DSLC server takes its time to answer, the panel
says the run waits for it, which one, for what and for how long, counting up live; the line
goes once the answer came.
"""

from __future__ import annotations

import re
import shutil
import threading

import pytest

from tests.browser.conftest import (
    PROGRESS_MS,
    UI_MS,
    Lab,
    Pages,
    assert_panel_layout,
    expect,
    open_lab,
    open_panel,
    shot,
    tid,
)
from tests.conftest import FIXTURES
from tests.planners.dslc_server import DslcResponder, Received, Scripted, ScriptedServer

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

HOLD_S = 120.0
"""The longest the scripted server keeps its first answer back (the test releases it)."""


class HeldFirstGenerating:
    """The scripted DSLC workflow, its first ``/generating`` answer held until released."""

    def __init__(self) -> None:
        self.play = DslcResponder()
        self.release = threading.Event()
        self.held = threading.Event()

    def __call__(self, received: Received) -> Scripted:
        if received.path == "/generating" and not self.held.is_set():
            self.held.set()
            self.release.wait(HOLD_S)  # the server's own thread: only this planner waits
        return self.play(received)


def seconds(text: str) -> int:
    found = re.search(r"— (\d+) s$", text.strip())
    assert found, text
    return int(found.group(1))


def test_the_panel_says_the_run_waits_for_a_slow_planner_and_for_how_long(
    lab: Lab, pages: Pages
) -> None:
    notebook = "dslc/prices.ipynb"
    lab.create_notebook(notebook)
    shutil.copy(FIXTURES / "dslc" / "prices.csv", lab.root / "dslc" / "prices.csv")
    responder = HeldFirstGenerating()
    with ScriptedServer(responder) as server:
        try:
            started = lab.api(
                "POST",
                "workflows",
                {
                    "notebook_path": notebook,
                    "planner": {"kind": "http", "url": server.url},
                    "problem": "Describe the house prices",
                    "files": ["dslc/prices.csv"],
                    "options": {"auto_confirm": True},
                },
            )
            page = pages.new()
            open_lab(page, lab, notebook)
            panel = open_panel(page)
            waiting = tid(panel, "bcc-planner-wait")
            line = re.compile(
                rf"^Waiting for the planner \(DSLC at {re.escape(server.url)}\) "
                r"for the next cells — \d+ s$"
            )
            expect(waiting).to_have_text(line, timeout=PROGRESS_MS)
            assert responder.held.is_set(), "the planner is being asked"
            first = waiting.inner_text()
            # it counts up by itself, with no event from the server meanwhile
            expect(waiting).not_to_have_text(first, timeout=UI_MS)
            assert seconds(waiting.inner_text()) > seconds(first)
            expect(tid(panel, "bcc-badge")).to_have_attribute("data-status", "running")
            assert_panel_layout(page)
            shot(page, "item3-waiting-for-the-planner")
        finally:
            responder.release.set()
        done = lab.wait_snapshot(
            started["workflow_id"],
            lambda s: s["run"]["status"] in ("completed", "failed"),
            "the DSLC run's end",
        )
    assert done["run"]["status"] == "completed", done["run"]
    expect(tid(panel, "bcc-badge")).to_have_attribute("data-status", "completed", timeout=UI_MS)
    expect(waiting).to_have_count(0)
    shot(page, "item3-planner-answered")
