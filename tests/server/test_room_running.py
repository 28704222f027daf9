"""``mark_running`` on a real jupyter_ydoc shared notebook (what a collaboration room holds):
the cell the kernel runs now is ``running`` (Lab's ``[*]``), the one before ``idle`` again."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from notebook_bcc.server.room_running import mark_running
from tests.conftest import requires

pytestmark = requires(
    importlib.util.find_spec("jupyter_ydoc") is not None,
    "jupyter_ydoc is not installed (pip install -e '.[collab]')",
)


def _room(*cells: tuple[str, str]) -> Any:
    from jupyter_ydoc import YNotebook

    room = YNotebook()
    room.set(
        {
            "cells": [
                {"id": cell_id, "cell_type": kind, "source": "", "metadata": {}}
                | ({"outputs": [], "execution_count": None} if kind == "code" else {})
                for cell_id, kind in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    return room


def _states(room: Any) -> dict[str, Any]:
    return {str(c.get("id")): c.get("execution_state") for c in room.ycells}


def test_the_running_cell_is_marked_and_the_one_before_is_idle_again() -> None:
    room = _room(("a", "code"), ("m", "markdown"), ("b", "code"))
    assert _states(room) == {"a": "idle", "m": None, "b": "idle"}
    assert mark_running(room, "a", None) == 1
    assert _states(room) == {"a": "running", "m": None, "b": "idle"}
    assert mark_running(room, "b", "a") == 2
    assert _states(room) == {"a": "idle", "m": None, "b": "running"}
    assert mark_running(room, "b", "b") == 0, "already running: nothing written"
    assert mark_running(room, None, "b") == 1
    assert _states(room) == {"a": "idle", "m": None, "b": "idle"}


@pytest.mark.parametrize(("now", "before"), [("gone", None), ("m", None), (None, None)])
def test_a_cell_not_in_the_room_or_not_code_changes_nothing(now: Any, before: Any) -> None:
    room = _room(("a", "code"), ("m", "markdown"))
    assert mark_running(room, now, before) == 0
    assert _states(room) == {"a": "idle", "m": None}
