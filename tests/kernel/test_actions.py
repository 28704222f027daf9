"""Action semantics on a real kernel: every JSON action type -> cells, metadata and events."""

from __future__ import annotations

import pytest

from notebook_bcc.kernel.cells import bcc_of
from notebook_bcc.models.actions import (
    AddAction,
    AddTextAction,
    CommentResultAction,
    CommunicationAction,
    ExecAction,
    FinishThinkingAction,
    IsThinkingAction,
    NewChapterAction,
    NewSectionAction,
    NewStepAction,
    SetEffectAsThinkingAction,
    UpdateLastTextAction,
    UpdateTitleAction,
)
from notebook_bcc.protocol.signals import MarkStepCompleteSignal
from tests.kernel.conftest import KernelHarness, path

pytestmark = pytest.mark.timeout(60)


def test_markdown_merges_into_previous_markdown_of_the_same_behavior(kh: KernelHarness) -> None:
    runner, sink = kh.runner()
    first = kh.act(runner, AddAction(content="Intro.", shot_type="markdown"), path(0))
    second = kh.act(runner, AddTextAction(content="More."), path(1))
    third = kh.act(runner, AddAction(content="Dialogue.", shot_type="dialogue"), path(2))
    assert first.change == "created"
    assert second.cell_id == third.cell_id == first.cell_id
    assert second.change == third.change == "updated"
    [cell] = runner.document.cells
    assert cell["source"] == "Intro.\n\nMore.\n\nDialogue."
    bcc = bcc_of(cell)
    assert bcc is not None
    assert bcc["merged"] == [path(1).key, path(2).key]
    assert sink.cells[first.cell_id or ""]["source"] == "Intro.\n\nMore.\n\nDialogue."


def test_markdown_does_not_merge_into_a_heading_code_or_other_behavior(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    kh.act(runner, NewSectionAction(content="Data"), path(0))
    after_heading = kh.act(runner, AddTextAction(content="Text."), path(1))
    assert after_heading.change == "created"
    kh.act(runner, AddAction(content="x = 1", shot_type="action"), path(2))
    after_code = kh.act(runner, AddTextAction(content="After code."), path(3))
    assert after_code.change == "created"
    other = kh.act(runner, AddTextAction(content="Next behavior."), path(0, behavior="b2"))
    assert other.change == "created"
    assert len(runner.document) == 5


def test_headings_chapter_section_step(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    kh.act(runner, NewChapterAction(content="Report"), path(0))
    kh.act(runner, NewSectionAction(content="## Data"), path(1))
    kh.act(runner, NewStepAction(content="Load"), path(2))
    sources = [cell["source"] for cell in runner.document.cells]
    assert sources == ["# Report", "## Data", "### Load"]
    kinds = [bcc_of(cell)["kind"] for cell in runner.document.cells]  # type: ignore[index]
    assert kinds == ["heading"] * 3


def test_code_add_runs_nothing_and_carries_full_metadata(kh: KernelHarness) -> None:
    runner, sink = kh.runner()
    added = kh.act(
        runner,
        AddAction(content="never_run = 1", shot_type="action", irreversible=True),
        path(4),
        contract_id="c-42",
    )
    assert added.execution is None
    cell = runner.document.get(added.cell_id or "")
    assert cell is not None
    assert cell["cell_type"] == "code"
    assert cell["outputs"] == []
    assert cell["execution_count"] is None
    assert cell["id"] == path(4).cell_id()
    bcc = bcc_of(cell)
    assert bcc is not None
    assert bcc["workflow_id"] == "wf-test"
    assert (bcc["stage_id"], bcc["visit"], bcc["step_id"], bcc["behavior_id"]) == (
        "s1",
        1,
        "st1",
        "b1",
    )
    assert (bcc["iteration"], bcc["action_index"], bcc["path"]) == (0, 4, path(4).key)
    assert (bcc["contract_id"], bcc["status"], bcc["irreversible"]) == ("c-42", "pending", True)
    assert kh.value("'never_run' in globals()") == "False"
    assert sink.changes == [(added.cell_id, "created")]


def test_exec_by_id_and_last_added_record_status_and_timings(kh: KernelHarness) -> None:
    runner, sink = kh.runner()
    first = kh.act(runner, AddAction(content="a_val = 2", shot_type="action"), path(0))
    kh.act(runner, AddAction(content="b_val = a_val * 3\nb_val", shot_type="action"), path(1))
    ran_first = kh.act(runner, ExecAction(codecell_id=first.cell_id or ""), path(2))
    ran_last = kh.act(runner, ExecAction(codecell_id="lastAddedCellId"), path(3), contract_id="c9")
    assert ran_first.ok
    assert ran_last.ok
    assert ran_last.execution is not None
    assert ran_last.execution.effects == ["6"]
    assert isinstance(ran_last.execution.execution_count, int)
    bcc = bcc_of(runner.document.cells[1])
    assert bcc is not None
    assert bcc["status"] == "ok"
    assert bcc["contract_id"] == "c9"
    assert bcc["exec_path"] == path(3).key
    assert bcc["duration_s"] >= 0
    assert bcc["started_at"] <= bcc["ended_at"]
    assert (ran_last.cell_id, "executed") in sink.changes


def test_exec_refusals(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    nothing = kh.act(runner, ExecAction(codecell_id="lastAddedCellId"), path(0))
    assert nothing.refused
    assert "no cell" in nothing.refused
    kh.act(runner, AddTextAction(content="text"), path(1))
    markdown = kh.act(runner, ExecAction(codecell_id="lastAddedCellId"), path(2))
    assert markdown.refused
    assert "not code" in markdown.refused
    unknown = kh.act(runner, ExecAction(codecell_id="no-such-cell"), path(3))
    assert unknown.refused
    assert "no-such-cell" in unknown.refused
    assert not unknown.ok


def test_update_title_sets_notebook_metadata_and_reports_an_event(kh: KernelHarness) -> None:
    runner, sink = kh.runner()
    outcome = kh.act(runner, UpdateTitleAction(content="Housing prices"), path(0))
    assert runner.document.title == "Housing prices"
    assert sink.metadata["title"] == "Housing prices"
    assert [(e.kind, e.data) for e in outcome.events] == [("title", {"title": "Housing prices"})]
    assert outcome.cell_id is None


def test_update_last_text_replaces_the_last_markdown_cell(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    empty = kh.act(runner, UpdateLastTextAction(text="x"), path(0))
    assert empty.refused
    made = kh.act(runner, AddTextAction(content="draft"), path(1))
    kh.act(runner, AddAction(content="z = 0", shot_type="action"), path(2))
    outcome = kh.act(runner, UpdateLastTextAction(text="final"), path(3))
    assert outcome.cell_id == made.cell_id
    assert runner.document.cells[0]["source"] == "final"


def test_thinking_markers_live_in_metadata_and_finish_keeps_content(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    early = kh.act(
        runner, IsThinkingAction(thinking_text="planning", agent_name="Planner"), path(0)
    )
    assert early.cell_id is None  # no cell yet: the marker waits for the first cell
    assert early.events[0].kind == "thinking"
    made = kh.act(runner, AddTextAction(content="Visible text."), path(1))
    cell = runner.document.get(made.cell_id or "")
    assert cell is not None
    marker = bcc_of(cell)["thinking"]  # type: ignore[index]
    assert marker["thinking_text"] == "planning"
    assert marker["finished_at"] is None
    done = kh.act(runner, FinishThinkingAction(), path(2))
    assert done.events[0].kind == "thinking_finished"
    assert bcc_of(cell)["thinking"]["finished_at"]  # type: ignore[index]
    assert cell["source"] == "Visible text."
    assert len(runner.document) == 1


def test_set_effect_as_thinking_marks_the_last_code_cell(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    refused = kh.act(runner, SetEffectAsThinkingAction(thinking_text="hm"), path(0))
    assert refused.refused
    code = kh.act(runner, AddAction(content="q = 1", shot_type="action"), path(1))
    kh.act(runner, AddTextAction(content="after"), path(2))
    outcome = kh.act(runner, SetEffectAsThinkingAction(thinking_text="checking"), path(3))
    assert outcome.cell_id == code.cell_id
    assert bcc_of(runner.document.cells[0])["effect_as_thinking"] == "checking"  # type: ignore[index]


def test_communication_is_recorded_in_metadata_and_returned(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    kh.act(runner, AddTextAction(content="text"), path(0))
    outcome = kh.act(runner, CommunicationAction(to="Reviewer", content="please check"), path(1))
    [message] = bcc_of(runner.document.cells[0])["messages"]  # type: ignore[index]
    assert (message["to"], message["content"]) == ("Reviewer", "please check")
    assert outcome.events[0].data == {"to": "Reviewer", "content": "please check"}


def test_comment_result_makes_a_cell_and_an_event_for_the_engine(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    kh.act(runner, AddTextAction(content="before"), path(0))
    outcome = kh.act(runner, CommentResultAction(content="RMSE is fine."), path(1))
    assert outcome.change == "created"
    assert [e.kind for e in outcome.events] == ["comment_result"]
    assert outcome.events[0].data["content"] == "RMSE is fine."
    after = kh.act(runner, AddTextAction(content="after"), path(2))
    assert after.change == "created"  # never merged into a comment


def test_non_notebook_actions_are_refused(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    outcome = kh.act(runner, MarkStepCompleteSignal(), path(0))
    assert outcome.refused
    assert "not a notebook action" in outcome.refused


def test_replayed_actions_change_nothing(kh: KernelHarness) -> None:
    runner, sink = kh.runner()
    kh.act(runner, AddTextAction(content="one"), path(0))
    kh.act(runner, AddTextAction(content="two"), path(1))
    kh.act(runner, AddAction(content="r = 1", shot_type="action"), path(2))
    before = [dict(cell) for cell in runner.document.cells]
    changes = len(sink.changes)
    for index, action in enumerate(
        [
            AddTextAction(content="one"),
            AddTextAction(content="two"),
            AddAction(content="r = 1", shot_type="action"),
        ]
    ):
        outcome = kh.act(runner, action, path(index))
        assert outcome.change is None
    assert [dict(cell) for cell in runner.document.cells] == before
    assert len(sink.changes) == changes


def test_action_metadata_is_kept_but_cannot_override_ours(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    outcome = kh.act(
        runner,
        AddAction(
            content="m = 1",
            shot_type="action",
            metadata={"tags": ["setup"], "notebook_bcc": {"status": "forged"}},
        ),
        path(0),
    )
    cell = runner.document.get(outcome.cell_id or "")
    assert cell is not None
    assert cell["metadata"]["tags"] == ["setup"]
    assert bcc_of(cell)["status"] == "pending"  # type: ignore[index]
