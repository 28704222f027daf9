"""Issue 20, item 7 in a real browser: for an LLM-planned run (a scripted OpenAI-compatible
server on loopback), opening a behavior shows the planner exchange behind its cells -- the
request summary, the raw reply, tokens and latency; a blueprint run says it has none.
"""

from __future__ import annotations

import shutil

import pytest

from notebook_bcc.testing.scripted_llm import ScriptedLlmServer, tokens
from tests.browser.conftest import (
    PANEL_ID,
    PROGRESS_MS,
    Lab,
    Pages,
    assert_panel_layout,
    expect,
    open_lab,
    open_panel,
    panel_width,
    shot,
    tid,
)
from tests.conftest import FIXTURES

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CONVERSATION = FIXTURES / "llm" / "conversation"


def test_a_behavior_of_an_llm_run_shows_its_request_reply_tokens_and_latency(
    lab: Lab, pages: Pages
) -> None:
    notebook = "llm/prices.ipynb"
    lab.create_notebook(notebook)
    shutil.copy(FIXTURES / "dslc" / "prices.csv", lab.root / "llm" / "prices.csv")
    with ScriptedLlmServer(CONVERSATION) as server:
        started = lab.api(
            "POST",
            "workflows",
            {
                "notebook_path": notebook,
                "planner": {"kind": "llm", "model": "scripted", "base_url": server.base_url},
                "problem": "Describe the house prices",
                "files": ["llm/prices.csv"],
                "options": {"auto_confirm": True},
            },
        )
        done = lab.wait_snapshot(
            started["workflow_id"],
            lambda s: s["run"]["status"] in ("completed", "failed"),
            "the LLM run's end",
        )
    assert done["run"]["status"] == "completed", done["run"]
    # the run's last behavior (the panel's "Last behavior" section) got its cells from 009
    reply = (CONVERSATION / "009-action-generator.txt").read_text(encoding="utf-8")

    page = pages.new()
    open_lab(page, lab, notebook)
    panel = open_panel(page)
    exchange = tid(tid(panel, "bcc-behavior"), "bcc-exchange")
    expect(exchange).to_have_attribute("data-behavior-id", "mean_b1")
    exchange.locator("summary").first.click()
    cards = tid(exchange, "bcc-exchange-card")
    expect(cards).to_have_count(3, timeout=PROGRESS_MS)
    actions = exchange.locator('[data-testid="bcc-exchange-card"][data-point="generate_actions"]')
    expect(actions).to_contain_text("Actions (the cells) · iteration 1")
    facts = tid(actions, "bcc-exchange-facts")
    expect(facts).to_contain_text(f"in · {tokens(reply)} out")
    expect(facts).to_contain_text("Latency")
    shown = tid(actions, "bcc-exchange-reply")
    assert shown.inner_text().rstrip("\n") == reply.rstrip("\n")
    # the raw reply scrolls, it never wraps
    assert shown.evaluate("el => getComputedStyle(el).whiteSpace") == "pre"
    request = actions.locator("details", has_text="Request summary").locator("summary")
    request.click()
    expect(tid(actions, "bcc-exchange-request")).to_contain_text(
        "decision: generate_actions at behavior_running"
    )
    request.click()  # folded again: the shots show the facts and the reply together
    expect(tid(actions, "bcc-exchange-request")).to_be_hidden()
    top = "el => el.scrollIntoView({block: 'center'})"
    actions.evaluate(top)
    assert_panel_layout(page)
    shot(page, "20-7-planner-exchange")
    panel_width(page, 300)
    actions.evaluate(top)
    assert_panel_layout(page)
    shot(page, "20-7-planner-exchange-300px")
    # the open section survives the panel's re-renders and stays filled
    page.locator(f"#{PANEL_ID}").evaluate("p => p.scrollTop = 0")
    expect(tid(exchange, "bcc-exchange-card")).to_have_count(3)


def test_a_blueprint_behavior_says_there_is_no_planner_exchange(lab: Lab, pages: Pages) -> None:
    blueprint = lab.copy_fixture_blueprint("quick.yaml")
    notebook = "bp/quick.ipynb"
    lab.create_notebook(notebook)
    started = lab.start_workflow(notebook, blueprint)
    lab.wait_snapshot(
        started["workflow_id"],
        lambda s: s["run"]["status"] in ("completed", "failed"),
        "the blueprint run's end",
    )
    page = pages.new()
    open_lab(page, lab, notebook)
    panel = open_panel(page)
    exchange = tid(tid(panel, "bcc-behavior"), "bcc-exchange")
    exchange.locator("summary").first.click()
    expect(exchange).to_contain_text("No planner exchange: this run is planned by a blueprint")
    expect(tid(exchange, "bcc-exchange-card")).to_have_count(0)
    shot(page, "20-7-planner-exchange-blueprint")
