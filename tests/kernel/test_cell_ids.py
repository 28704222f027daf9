"""Deterministic cell ids from action paths (D10)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.kernel.cell_ids import CELL_ID_PATTERN, ActionPath, cell_id_for

names = st.text(min_size=0, max_size=80)
small = st.integers(min_value=0, max_value=10**9)


def test_same_path_same_id_and_readable_prefix() -> None:
    first = ActionPath("explore", 1, "load", "read_csv", 0, 3)
    again = ActionPath("explore", 1, "load", "read_csv", 0, 3)
    assert cell_id_for(first) == cell_id_for(again) == first.cell_id()
    assert first.cell_id().startswith("read_csv-3-")
    assert first.key == "explore/1/load/read_csv/0/3"


def test_retry_and_revisit_give_new_ids() -> None:
    base = ActionPath("explore", 1, "load", "read_csv", 0, 3)
    retried = ActionPath("explore", 1, "load", "read_csv", 1, 3)
    revisited = ActionPath("explore", 2, "load", "read_csv", 0, 3)
    assert len({base.cell_id(), retried.cell_id(), revisited.cell_id()}) == 3


def test_slashes_in_parts_do_not_collide() -> None:
    one = ActionPath("a/b", 1, "c", "d", 0, 0)
    two = ActionPath("a", 1, "b/c", "d", 0, 0)
    assert one.key == "a/b/1/c/d/0/0"
    assert one.cell_id() != two.cell_id()


@given(st.builds(ActionPath, names, small, names, names, small, small))
def test_every_id_is_a_valid_nbformat_id(action_path: ActionPath) -> None:
    cell_id = action_path.cell_id()
    assert CELL_ID_PATTERN.match(cell_id), cell_id
