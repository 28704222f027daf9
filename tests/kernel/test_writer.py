"""NotebookWriter: valid files, atomic replace, debouncing and external-edit protection."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from notebook_bcc.kernel import (
    ActionRunner,
    CellRecord,
    KernelSession,
    MemorySink,
    NotebookDocument,
    NotebookWriteError,
    NotebookWriter,
)
from notebook_bcc.kernel import writer as writer_module
from notebook_bcc.models.actions import AddAction, AddTextAction, ExecAction
from tests.kernel.conftest import KernelHarness, LoopThread, path

pytestmark = pytest.mark.timeout(60)


def offline_runner(document: NotebookDocument | None = None) -> ActionRunner:
    """A runner whose kernel never starts: enough for actions that run no code."""
    return ActionRunner(KernelSession(), document or NotebookDocument(workflow_id="wf"))


def add_cells(runner: ActionRunner, start: int, count: int, behavior: str = "b1") -> list[str]:
    """``count`` code cells (no merging) at action indexes ``start``..; their ids."""
    ids = []
    for index in range(start, start + count):
        outcome = runner.apply(
            AddAction(content=f"v{index} = {index}", shot_type="action"),
            path(index, behavior=behavior),
        )
        ids.append(outcome.cell_id or "")
    return ids


def read(target: Path) -> Any:
    """The notebook at ``target``, validated."""
    nb = nbformat.read(str(target), as_version=4)
    nbformat.validate(nb)
    return nb


def test_a_real_run_writes_a_valid_notebook_with_kernel_metadata(
    kh: KernelHarness, tmp_path: Path
) -> None:
    runner, _ = kh.runner()
    target = tmp_path / "analysis.ipynb"
    writer = NotebookWriter(target, runner.document)
    runner.sinks.append(writer)
    kh.act(runner, AddTextAction(content="# Title\n\nSome *text*."), path(0))
    kh.act(runner, AddAction(content="print('a\\nb')\n{'k': 1}", shot_type="action"), path(1))
    kh.act(runner, ExecAction(codecell_id="lastAddedCellId"), path(2))
    report = kh.run(writer.flush_async())
    assert report.written
    assert report.cells == 2
    nb = read(target)
    assert nb.nbformat == 4
    assert nb.nbformat_minor == 5
    assert nb.metadata.kernelspec.name == "python3"
    assert nb.metadata.language_info.name == "python"
    assert "version" in nb.metadata.language_info
    assert nb.metadata.notebook_bcc.workflow_id == "wf-test"
    assert [cell.id for cell in nb.cells] == [cell["id"] for cell in runner.document.cells]
    assert nb.cells[1].outputs[0].text == "a\nb\n"
    assert nb.cells[1].metadata.notebook_bcc.status == "ok"
    # Same JSON as nbformat would write: the file round-trips to itself.
    assert target.read_text() == nbformat.writes(nb) + "\n"


def test_unchanged_cells_are_not_serialized_or_validated_again(tmp_path: Path) -> None:
    runner = offline_runner()
    writer = NotebookWriter(tmp_path / "n.ipynb", runner.document, fsync=False)
    runner.sinks.append(writer)
    add_cells(runner, 0, 5)
    assert writer.flush().validated == 5
    add_cells(runner, 5, 2)
    report = writer.flush()
    assert report.validated == 2
    assert report.cells == 7
    assert not report.external_change


def test_an_invalid_cell_fails_the_write_and_names_the_cell(tmp_path: Path) -> None:
    runner = offline_runner()
    [cell_id] = add_cells(runner, 0, 1)
    runner.document.cells[0]["execution_count"] = "not a number"
    with pytest.raises(NotebookWriteError, match=cell_id):
        NotebookWriter(tmp_path / "n.ipynb", runner.document).flush()


def test_writes_are_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "n.ipynb"
    runner = offline_runner()
    writer = NotebookWriter(target, runner.document)
    runner.sinks.append(writer)
    add_cells(runner, 0, 2)
    writer.flush()
    before = target.read_bytes()

    def failing_replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer_module.os, "replace", failing_replace)  # type: ignore[attr-defined]
    add_cells(runner, 2, 3)
    with pytest.raises(NotebookWriteError, match="No space left"):
        writer.flush()
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.ipynb"]
    monkeypatch.undo()
    assert writer.flush().cells == 5
    assert len(read(target).cells) == 5


def test_changes_are_debounced_into_one_write(tmp_path: Path, loop_thread: LoopThread) -> None:
    target = tmp_path / "n.ipynb"

    async def scenario() -> tuple[int, int]:
        runner = offline_runner()
        writer = NotebookWriter(target, runner.document, debounce=0.2, fsync=False)
        runner.sinks.append(writer)
        writes = 0
        original = writer._replace

        def counting(data: bytes) -> None:
            nonlocal writes
            writes += 1
            original(data)

        writer._replace = counting  # type: ignore[method-assign]
        add_cells(runner, 0, 20)
        assert not target.exists()
        for _ in range(500):  # the debounced write lands 0.2 s after the first change
            if writer.last_report is not None:
                break
            await asyncio.sleep(0.01)
        assert not writer.dirty, "nothing is left to write: no second write is pending"
        first = writes
        add_cells(runner, 20, 5)
        await writer.aclose()
        return first, writes

    first, total = loop_thread.run(scenario())
    assert first == 1
    assert total == 2
    assert len(read(target).cells) == 25


def test_external_edits_are_kept_and_reported(tmp_path: Path) -> None:
    target = tmp_path / "n.ipynb"
    runner = offline_runner()
    writer = NotebookWriter(target, runner.document)
    runner.sinks.append(writer)
    ids = add_cells(runner, 0, 4)
    writer.flush()

    nb = nbformat.read(str(target), as_version=4)
    user_note = nbformat.v4.new_markdown_cell("my note")
    nb.cells.insert(2, user_note)  # between our cells 1 and 2
    nb.cells[0].source = "v0 = 'edited by the user'"
    del nb.cells[4]  # our cell 3
    nb.metadata["user_key"] = {"keep": True}
    nbformat.write(nb, str(target))

    runner.document.cells[1]["source"] = "v1 = 'changed by the workflow'"
    runner.document.cells[0]["source"] = "v0 = 'the workflow also changed it'"
    for cell_id in ids[:2]:  # tell the writer, as the runner's sink calls would
        writer.put(CellRecord(cell_id, 0, "updated", {}, None))
    new = add_cells(runner, 4, 1)
    report = writer.flush()

    assert report.external_change
    assert report.detached == [ids[0]]
    assert report.deleted == [ids[3]]
    result = read(target)
    assert [cell.id for cell in result.cells] == [ids[0], ids[1], user_note.id, ids[2], new[0]]
    assert result.cells[0].source == "v0 = 'edited by the user'"
    assert result.cells[1].source == "v1 = 'changed by the workflow'"
    assert result.cells[2].source == "my note"
    assert result.metadata["user_key"] == {"keep": True}
    assert result.metadata["notebook_bcc"]["workflow_id"] == "wf"

    # Nothing changed on disk since: the next write keeps the same layout.
    add_cells(runner, 5, 1)
    again = writer.flush()
    assert not again.external_change
    assert [cell.id for cell in read(target).cells][:4] == [ids[0], ids[1], user_note.id, ids[2]]


def test_a_file_that_is_not_a_notebook_is_never_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "n.ipynb"
    runner = offline_runner()
    writer = NotebookWriter(target, runner.document)
    add_cells(runner, 0, 1)
    writer.flush()
    target.write_text("{ half a notebook")
    add_cells(runner, 1, 1)
    with pytest.raises(NotebookWriteError, match="not a readable notebook"):
        writer.flush()
    assert target.read_text() == "{ half a notebook"


def test_a_deleted_file_is_written_afresh(tmp_path: Path) -> None:
    target = tmp_path / "n.ipynb"
    runner = offline_runner()
    writer = NotebookWriter(target, runner.document)
    add_cells(runner, 0, 2)
    writer.flush()
    target.unlink()
    report = writer.flush()
    assert report.external_change
    assert report.cells == 2
    assert len(read(target).cells) == 2


def test_an_existing_notebook_keeps_its_cells_and_ours_follow(tmp_path: Path) -> None:
    target = tmp_path / "existing.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("user_code = 1"), nbformat.v4.new_markdown_cell("hi")]
    nb.metadata["authors"] = [{"name": "Ada"}]
    nbformat.write(nb, str(target))
    document = NotebookDocument.read(target, workflow_id="wf")
    runner = offline_runner(document)
    assert document.last_added_id is None  # the user's cells are never "last added"
    merged = runner.apply(AddTextAction(content="ours"), path(0))
    assert merged.change == "created"  # not merged into the user's markdown
    writer = NotebookWriter(target, document)
    report = writer.flush()
    assert report.external_change
    assert report.detached == []
    assert report.cells == 3
    result = read(target)
    assert [cell.source for cell in result.cells] == ["user_code = 1", "hi", "ours"]
    assert result.metadata["authors"] == [{"name": "Ada"}]


def test_memory_and_jsonl_sinks_receive_copies(tmp_path: Path) -> None:
    from notebook_bcc.kernel import JsonlSink, read_jsonl_cells

    memory = MemorySink()
    jsonl = JsonlSink(tmp_path / "cells.jsonl")
    runner = offline_runner()
    runner.sinks.extend([memory, jsonl])
    first = runner.apply(AddTextAction(content="one"), path(0)).cell_id or ""
    runner.apply(AddTextAction(content="two"), path(1))
    jsonl.close()
    assert memory.cells[first]["source"] == "one\n\ntwo"
    assert memory.changes == [(first, "created"), (first, "updated")]
    runner.document.cells[0]["source"] = "mutated later"
    assert memory.cells[first]["source"] == "one\n\ntwo"
    assert read_jsonl_cells(tmp_path / "cells.jsonl")[first]["source"] == "one\n\ntwo"
    lines = (tmp_path / "cells.jsonl").read_text().splitlines()
    assert [json.loads(line)["change"] for line in lines] == ["created", "updated"]


def test_replayed_cells_replace_their_earlier_copies_on_disk(tmp_path: Path) -> None:
    target = tmp_path / "n.ipynb"
    first_run = offline_runner()
    ids = add_cells(first_run, 0, 3)
    NotebookWriter(target, first_run.document).flush()
    with_note = nbformat.read(str(target), as_version=4)
    with_note.cells.append(nbformat.v4.new_markdown_cell("user note at the end"))
    nbformat.write(with_note, str(target))

    second_run = offline_runner()
    writer = NotebookWriter(target, second_run.document)
    add_cells(second_run, 0, 1)
    writer.flush()
    add_cells(second_run, 1, 3)
    report = writer.flush()
    result = read(target)
    cell_ids = [cell.id for cell in result.cells]
    assert len(cell_ids) == len(set(cell_ids))
    assert cell_ids[:3] == ids
    assert result.cells[3].source == "user note at the end"
    assert report.cells == 5


def test_a_document_rebuilt_from_stored_cells_continues_where_it_was(tmp_path: Path) -> None:
    memory = MemorySink()
    runner = offline_runner()
    runner.sinks.append(memory)
    runner.apply(AddTextAction(content="intro"), path(0), contract_id="c0")
    add_cells(runner, 1, 2)
    stored = list(memory.cells.values())
    rebuilt = NotebookDocument.from_cells(stored, {"title": "T"}, workflow_id="wf")
    assert [c["id"] for c in rebuilt.cells] == [c["id"] for c in runner.document.cells]
    assert rebuilt.is_ours(stored[0]["id"])
    assert rebuilt.last_added_id == stored[-1]["id"]
    assert rebuilt.title == "T"
    again = offline_runner(rebuilt).apply(AddAction(content="v1 = 1", shot_type="action"), path(1))
    assert again.change is None  # a replayed action is an upsert


def test_records_carry_position_path_and_contract(tmp_path: Path) -> None:
    records: list[CellRecord] = []

    class ListSink:
        def put(self, record: CellRecord) -> None:
            records.append(record)

        def metadata_changed(self, metadata: object) -> None:
            """Not needed here."""

    runner = offline_runner()
    runner.sinks.append(ListSink())
    runner.apply(AddTextAction(content="a"), path(0), contract_id="c-1")
    runner.apply(AddAction(content="b = 1", shot_type="action"), path(1), contract_id="c-2")
    assert [(r.index, r.path, r.contract_id, r.change) for r in records] == [
        (0, path(0).key, "c-1", "created"),
        (1, path(1).key, "c-2", "created"),
    ]


def test_cell_validation_is_per_cell_against_the_4_5_schema() -> None:
    from notebook_bcc.kernel.serialize import CellValidationError, validate_cell

    good = {"id": "ok-1", "cell_type": "markdown", "metadata": {}, "source": "x"}
    validate_cell(good)
    with pytest.raises(CellValidationError):
        validate_cell({**good, "id": "has space"})
    with pytest.raises(CellValidationError):
        validate_cell({key: value for key, value in good.items() if key != "id"})
    with pytest.raises(CellValidationError):
        validate_cell({**good, "cell_type": "widget"})
