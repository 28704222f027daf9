"""Prompt templates: golden renders for the six agents, overrides and template errors.

Regenerate the golden files with ``NOTEBOOK_BCC_UPDATE_GOLDEN=1`` after a deliberate change
(and review the diff): any difference fails otherwise.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from notebook_bcc.planners.llm.agents import (
    AGENT_IDS,
    ANY_AGENT,
    agent_for_address,
    agent_line,
    agent_of_line,
)
from notebook_bcc.planners.llm.errors import TemplateError
from notebook_bcc.planners.llm.prompts import (
    AgentMessage,
    load_templates,
    parse_template,
    progress_band,
    prompt_values,
    shipped_template_dir,
)
from tests.planners.llm_helpers import GOLDEN, request_for

UPDATE = os.environ.get("NOTEBOOK_BCC_UPDATE_GOLDEN") == "1"

MESSAGES: dict[str, list[AgentMessage]] = {
    "behavior-reflection": [
        AgentMessage(
            "behavior-reflection",
            "action-generator",
            "The file has a header row; rows holds dicts.",
            "load_b1",
        )
    ],
}


def rendered(agent_id: str) -> str:
    request = request_for(agent_id)
    values = prompt_values(request, agent_id, MESSAGES.get(agent_id, []))
    messages = load_templates().render(agent_id, values)
    return "".join(f"=== {m['role']} ===\n{m['content']}\n" for m in messages)


@pytest.mark.parametrize("agent_id", AGENT_IDS)
def test_golden_prompt(agent_id: str) -> None:
    path = GOLDEN / f"{agent_id}.txt"
    text = rendered(agent_id)
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with NOTEBOOK_BCC_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), (
        f"the {agent_id} prompt changed; review it and regenerate {path} with "
        "NOTEBOOK_BCC_UPDATE_GOLDEN=1"
    )


@pytest.mark.parametrize("agent_id", AGENT_IDS)
def test_every_prompt_names_its_agent_first_and_carries_the_observation(agent_id: str) -> None:
    request = request_for(agent_id)
    system, user = load_templates().render(agent_id, prompt_values(request, agent_id))
    assert system["role"] == "system"
    assert system["content"].split("\n", 1)[0] == f"# notebook-bcc agent: {agent_id}"
    assert agent_of_line(system["content"].split("\n", 1)[0]) == agent_id
    assert user["role"] == "user"
    assert '"FSM": {"state": "' in user["content"], "the observation is in the user message"
    assert "{{" not in system["content"] + user["content"]


def test_what_the_agents_are_told() -> None:
    stage = rendered("stage-planner")
    assert "6 to 8 stages" in stage
    assert "Describe the house prices" in stage
    assert "/data/prices.csv" in stage
    step = rendered("step-planner")
    assert "3 to 7" in step
    assert "<pcs_considerations>" in step
    assert '<steps stage_id="explore">' in step
    behavior = rendered("behavior-arrangement")
    assert '<behavior id="load_b1" step_id="load">' in behavior
    actions = rendered("action-generator")
    assert 'irreversible="true"' in actions
    assert "The code comes last" in actions
    assert "- rows (list)" in actions, "the variables that exist are listed"
    assert "[5] import csv" in actions, "the notebook digest is shown"
    reflection = rendered("behavior-reflection")
    assert "- from action-generator (behavior load_b1): The file has a header row" in reflection
    assert '"actions_executed": 1' in reflection, "behavior_feedback is shown"
    stage_reflection = rendered("stage-reflection")
    assert "Stage progress: 1/2 steps (50%)" in stage_reflection
    assert "Progress is early" in stage_reflection
    assert "Progress is late" not in stage_reflection


@pytest.mark.parametrize(
    ("done", "total", "remaining", "band"),
    [
        (1, 4, 3, "early"),
        (2, 4, 2, "early"),
        (3, 5, 2, "mid"),
        (4, 5, 1, "late"),
        (1, 2, 0, "late"),
    ],
)
def test_progress_bands(done: int, total: int, remaining: int, band: str) -> None:
    assert progress_band(done, total, remaining) == band


def test_the_late_band_asks_for_the_stage_experience() -> None:
    request = request_for("stage-reflection")
    steps = request.snapshot.location.progress.steps.model_copy(update={"remaining": []})
    progress = request.snapshot.location.progress.model_copy(update={"steps": steps})
    location = request.snapshot.location.model_copy(update={"progress": progress})
    snapshot = request.snapshot.model_copy(update={"location": location})
    late = request_for("stage-reflection", snapshot)
    _, user = load_templates().render("stage-reflection", prompt_values(late, "stage-reflection"))
    assert "Progress is late" in user["content"]
    assert '<stage_experience from="explore">' in user["content"]
    assert "steps remaining: none (this was the last step)" in user["content"]


def copy_shipped(folder: Path, name: str) -> Path:
    folder.mkdir(exist_ok=True)
    target = folder / f"{name}.md"
    with shipped_template_dir().joinpath(f"{name}.md").open("rb") as source:
        target.write_bytes(source.read())
    return target


def test_an_override_folder_takes_precedence(tmp_path: Path) -> None:
    path = copy_shipped(tmp_path / "t", "action-generator")
    path.write_text(
        "<!-- section: system -->\nWrite cells.\n<!-- section: user -->\n"
        "Obs: {{ observation }} $R^2$ {not a placeholder}\n",
        encoding="utf-8",
    )
    prompts = load_templates(tmp_path / "t")
    assert prompts.source("action-generator") == str(path)
    assert prompts.source("stage-planner").endswith("templates/stage-planner.md")
    request = request_for("action-generator")
    system, user = prompts.render("action-generator", prompt_values(request, "action-generator"))
    assert system["content"] == "# notebook-bcc agent: action-generator\n\nWrite cells."
    assert user["content"].startswith('Obs: {"observation": ')
    assert user["content"].endswith(" $R^2$ {not a placeholder}")


def test_values_are_not_expanded_again(tmp_path: Path) -> None:
    request = request_for("stage-planner")
    snapshot = request.snapshot.model_copy(update={"problem": "say {{observation}} $x"})
    values = prompt_values(request_for("stage-planner", snapshot), "stage-planner")
    _, user = load_templates().render("stage-planner", values)
    assert "say {{observation}} $x" in user["content"]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "step-planner",
            "<!-- section: system -->\nA\n<!-- section: user -->\n{{observation}}\n{{colour}}\n",
            "step-planner.md:5: unknown placeholder {{colour}}",
        ),
        ("step-planner", "<!-- section: user -->\n{{observation}}\n", "no '<!-- section: system"),
        (
            "step-planner",
            "<!-- section: system -->\nA\n<!-- section: user -->\nB\n",
            "{{observation}}",
        ),
        (
            "step-planner",
            "<!-- section: system -->\n<!-- section: user -->\n{{observation}}\n"
            "<!-- section: extra -->\n",
            "step-planner.md:4: unknown section 'extra'",
        ),
        (
            "step-planner",
            "<!-- section: system -->\n<!-- section: system -->\n",
            "step-planner.md:2: section 'system' appears twice",
        ),
        (
            "stage-reflection",
            "<!-- section: system -->\n<!-- section: user -->\n{{observation}}\n"
            "{{progress_guidance}}\n<!-- section: early -->\nE\n",
            "needs the sections '<!-- section: mid -->', '<!-- section: late -->'",
        ),
        (
            "stage-reflection",
            "<!-- section: system -->\n<!-- section: user -->\n{{observation}}\n"
            "<!-- section: early -->\n{{progress_guidance}}\n",
            "stage-reflection.md:5: unknown placeholder {{progress_guidance}}",
        ),
        ("feedback", "<!-- section: user -->\nTry again.\n", "must use {{error}}"),
        ("feedback", "<!-- section: system -->\n{{error}}\n", "unknown section 'system'"),
    ],
)
def test_template_errors_name_the_file_and_line(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    (tmp_path / f"{name}.md").write_text(text, encoding="utf-8")
    with pytest.raises(TemplateError) as caught:
        load_templates(tmp_path)
    assert message in caught.value.message
    assert str(tmp_path / f"{name}.md") in caught.value.message


def test_unknown_or_unreadable_templates_and_missing_folders(tmp_path: Path) -> None:
    (tmp_path / "stage_planner.md").write_text("x", encoding="utf-8")
    with pytest.raises(TemplateError, match=r"unknown template 'stage_planner.md' \(expected: "):
        load_templates(tmp_path)
    with pytest.raises(TemplateError, match="the templates folder does not exist"):
        load_templates(tmp_path / "nowhere")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "feedback.md").write_bytes(b"\xff\xfe")
    with pytest.raises(TemplateError, match=r"feedback\.md: cannot read the template"):
        load_templates(bad)


def test_other_files_in_the_folder_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "README.txt").write_text("notes", encoding="utf-8")
    shutil.copy(GOLDEN / "stage-planner.txt", tmp_path / "stage-planner.txt")
    assert load_templates(tmp_path).source("stage-planner").endswith("templates/stage-planner.md")


def test_the_preamble_is_ignored_and_crlf_is_read() -> None:
    template = parse_template(
        "feedback",
        "Notes {{anything}}\r\n<!-- section: user -->\r\n\r\nFix: {{error}}\r\n",
        "f.md",
    )
    assert template.sections == {"user": "Fix: {{error}}"}
    assert template.lines == {"user": 4}


@pytest.mark.parametrize(
    ("address", "agent"),
    [
        ("behavior-reflection", "behavior-reflection"),
        ("Behaviour_Reflection Agent", "behavior-reflection"),
        ("the stage planner", "stage-planner"),
        ("StageReflection", "stage-reflection"),
        ("ACTION_GENERATOR", "action-generator"),
        ("reflection", "behavior-reflection"),
        ("generator", "action-generator"),
        ("Stage Reflection", "stage-reflection"),
        ("someone else", ANY_AGENT),
        (None, ANY_AGENT),
        ("", ANY_AGENT),
    ],
)
def test_addressees_are_matched_leniently(address: str | None, agent: str) -> None:
    assert agent_for_address(address) == agent


def test_agent_lines() -> None:
    assert agent_line("step-planner") == "# notebook-bcc agent: step-planner"
    assert agent_of_line("# notebook-bcc agent: nobody") is None
    assert agent_of_line("# notebook-bcc agent step-planner") is None
