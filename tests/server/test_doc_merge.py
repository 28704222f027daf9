"""plan_merge: the workflow's cells into an open document, under the writer's D10 rules."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.server.doc_merge import WorkflowCell, apply_ops, plan_merge


def wf(*cells: tuple[str, str]) -> list[WorkflowCell]:
    return [WorkflowCell(cid, src, f"d-{cid}-{src}") for cid, src in cells]


def test_new_cells_go_after_the_previous_workflow_cell_not_after_the_users_scratch_cell() -> None:
    doc: list[tuple[str | None, str]] = [("u1", "mine"), ("a", "x = 1"), ("u2", "scratch")]
    cells = wf(("a", "x = 1"), ("b", "y = 2"))
    plan = plan_merge(doc, cells, baseline={"a": "x = 1"}, placed={"a"}, applied={"a": "d-a-x = 1"})
    after = apply_ops(doc, plan.ops, {"b": "y = 2"})
    assert [cid for cid, _ in after] == ["u1", "a", "b", "u2"]


def test_first_cell_is_appended_after_the_users_cells() -> None:
    plan = plan_merge([("u1", "mine")], wf(("a", "1")), baseline={}, placed=set(), applied={})
    assert [(op.op, op.index) for op in plan.ops] == [("insert", 1)]


def test_first_cell_takes_the_place_of_labs_blank_cell() -> None:
    doc: list[tuple[str | None, str]] = [("u1", "mine"), ("blank", "")]
    plan = plan_merge(doc, wf(("a", "1"), ("b", "2")), baseline={}, placed=set(), applied={})
    assert [(op.op, op.index) for op in plan.ops] == [("replace", 1), ("insert", 2)]
    after = apply_ops(doc, plan.ops, {"a": "1", "b": "2"})
    assert [cid for cid, _ in after] == ["u1", "a", "b"]
    # once a workflow cell is in the document, a blank cell of the user's is left alone
    again = plan_merge(
        [("a", "1"), ("blank", "")],
        wf(("a", "1"), ("b", "2")),
        baseline={"a": "1"},
        placed={"a"},
        applied={"a": "d-a-1"},
    )
    assert [(op.op, op.index) for op in again.ops] == [("insert", 1)]


def test_edited_cell_is_detached_and_deleted_cell_stays_deleted() -> None:
    doc: list[tuple[str | None, str]] = [("a", "x = 1  # mine")]
    cells = wf(("a", "x = 1"), ("b", "y"))
    plan = plan_merge(doc, cells, baseline={"a": "x = 1", "b": "y"}, placed={"a", "b"}, applied={})
    assert plan.ops == []
    assert plan.detached == {"a"}
    assert plan.deleted == {"b"}


def test_unedited_cell_with_new_outputs_is_updated_in_place() -> None:
    doc: list[tuple[str | None, str]] = [("u", ""), ("a", "x = 1")]
    cells = [WorkflowCell("a", "x = 1", "with-outputs")]
    plan = plan_merge(doc, cells, baseline={"a": "x = 1"}, placed={"a"}, applied={"a": "old"})
    assert [(op.op, op.index, op.cell_id) for op in plan.ops] == [("update", 1, "a")]
    again = plan_merge(
        doc, cells, baseline={"a": "x = 1"}, placed={"a"}, applied={"a": "with-outputs"}
    )
    assert again.ops == []


ids = st.sampled_from([f"w{i}" for i in range(6)])
users = st.lists(st.sampled_from([f"u{i}" for i in range(4)]), unique=True, max_size=4)


@given(
    order=st.lists(ids, unique=True, min_size=1, max_size=6),
    shown=st.lists(st.booleans(), min_size=6, max_size=6),
    placed=st.lists(st.booleans(), min_size=6, max_size=6),
    user=users,
    seed=st.randoms(use_true_random=False),
)
def test_every_cell_once_user_cells_kept_in_order_deletions_respected(
    order: list[str], shown: list[bool], placed: list[bool], user: list[str], seed: object
) -> None:
    import random

    assert isinstance(seed, random.Random)
    present = [cid for i, cid in enumerate(order) if shown[i]]
    was_placed = {cid for i, cid in enumerate(order) if placed[i] or shown[i]}
    doc_ids = present + user
    seed.shuffle(doc_ids)
    doc: list[tuple[str | None, str]] = [(cid, cid) for cid in doc_ids]
    cells = wf(*[(cid, cid) for cid in order])
    plan = plan_merge(
        doc, cells, baseline={c: c for c in was_placed}, placed=was_placed, applied={}
    )
    after = [cid for cid, _ in apply_ops(doc, plan.ops, {c: c for c in order})]
    assert len(after) == len(set(after))  # nothing twice
    assert [c for c in after if c.startswith("u")] == [c for c in doc_ids if c.startswith("u")]
    for cid in order:
        expected = cid in present or cid not in was_placed
        assert (cid in after) == expected, cid
    assert plan.deleted == {c for c in order if c in was_placed and c not in present}
