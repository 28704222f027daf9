"""The YAML budget (issue 19.4): alias, merge-key and tag bombs refused before they cost memory.

Each hostile document is refused with a :class:`BlueprintError` naming the line, both by the
loader and by ``notebook-bcc validate`` / ``run`` (exit 2, ``FILE:LINE:``, no traceback), and
the peak memory of refusing it stays near the size of the text.
"""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.blueprint.issues import BlueprintError
from notebook_bcc.blueprint.loader import load_blueprint_text
from notebook_bcc.blueprint.yaml_guard import MAX_EXPANDED_CHARS, MAX_EXPANDED_NODES


def alias_scalar_bomb(refs: int = 1_000, size: int = 1_000_000) -> str:
    """A ``size``-character anchored scalar named ``refs`` times (the issue's 1 MB -> 2.85 GB)."""
    return f"name: &a {'x' * size}\nstates:\n  s:\n    steps: [{', '.join(['*a'] * refs)}]\n"


def merge_key_bomb(levels: int = 30) -> str:
    """Each level merges the previous one twice: 2**levels keys once expanded."""
    lines = ["m0: &m0 {a: 1, b: 2}"]
    lines += [f"m{i}: &m{i}\n  <<: [*m{i - 1}, *m{i - 1}]\n  k{i}: 1" for i in range(1, levels)]
    return "\n".join(lines) + "\nstates: {s: {}}\n"


def _refusal(text: str) -> BlueprintError:
    with pytest.raises(BlueprintError) as info:
        load_blueprint_text(text, "hostile.yaml")
    return info.value


def test_an_alias_to_a_large_scalar_is_refused_within_bounded_memory() -> None:
    text = alias_scalar_bomb(1_000, 300_000)  # 300 MB once expanded
    tracemalloc.start()
    try:
        error = _refusal(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.issues[0].line == 4  # the list of aliases
    assert f"more than {MAX_EXPANDED_CHARS} characters" in error.issues[0].message
    assert peak < 20 * len(text), f"peak {peak} bytes for a {len(text)}-byte file"


def test_a_merge_key_bomb_is_refused_within_bounded_memory() -> None:
    tracemalloc.start()
    try:
        error = _refusal(merge_key_bomb())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"more than {MAX_EXPANDED_NODES} values" in error.issues[0].message
    assert error.issues[0].line is not None
    assert peak < 50_000_000


def test_a_few_aliases_and_merge_keys_still_load() -> None:
    text = (
        "name: ok\n"
        "states:\n"
        "  s:\n"
        "    steps:\n"
        "      - id: one\n"
        "        behaviors:\n"
        "          - &b {id: b, actions: [{code: 'x = 1'}]}\n"
        "      - id: two\n"
        "        behaviors:\n"
        "          - <<: *b\n"
        "            id: c\n"
    )
    assert load_blueprint_text(text, "fine.yaml").blueprint.name == "ok"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("states: {s: {}}\nname: !!python/object/apply:os.system ['id']\n", 2),
        ("states: {s: {}}\nname: !!python/object/new:os.system ['id']\n", 2),
        ("states: {s: {}}\nname: !!python/name:os.system\n", 2),
        ("states: {s: {}}\nx:\n  y: !!python/tuple [1, 2]\n", 3),
        ("states: {s: {}}\nname: !!binary aGk=\n", 2),
        ("states: {s: {}}\nname: !custom x\n", 2),
        ("states: {s: {}}\nname: !!set {a, b}\n", 2),
    ],
)
def test_unknown_tags_are_refused_naming_the_line(text: str, line: int) -> None:
    error = _refusal(text)
    assert error.issues[0].line == line
    assert "unsupported YAML value (tag" in error.issues[0].message
    assert error.message.startswith(f"hostile.yaml:{line}: ")


def test_a_cyclic_merge_is_refused() -> None:
    error = _refusal("a: &a\n  <<: *a\n  x: 1\nstates: {s: {}}\n")
    assert "refers to itself" in error.issues[0].message or "YAML" in error.issues[0].message


@given(st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=12))
def test_alias_fanout_is_refused_exactly_when_over_budget(width: int, levels: int) -> None:
    lines = ["l0: &l0 v"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    text = "\n".join(lines) + "\nstates: {s: {}}\n"
    # nodes once expanded: E0 = 1 scalar, Ei = the list + width copies of E(i-1); the document
    # is its mapping + each key and value + `states: {s: {}}` (4 nodes)
    expanded = [1]
    for _ in range(1, levels):
        expanded.append(1 + width * expanded[-1])
    document = 1 + sum(1 + size for size in expanded) + 4
    with pytest.raises(BlueprintError) as info:  # l0..ln are unknown keys in any case
        load_blueprint_text(text, "fan.yaml")
    over_budget = "more than" in info.value.message
    assert over_budget == (document > MAX_EXPANDED_NODES), (document, info.value.message)


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize(
    ("case", "line"),
    [("python_tag", 2), ("merge_bomb", None), ("alias_bomb", 4)],
)
def test_the_cli_exits_2_naming_file_and_line(
    tmp_path: Path, command: str, case: str, line: int | None
) -> None:
    texts = {
        "python_tag": "states: {s: {}}\nname: !!python/object/apply:os.system ['id']\n",
        "merge_bomb": merge_key_bomb(),
        "alias_bomb": alias_scalar_bomb(100, 100_000),
    }
    path = tmp_path / f"{case}.yaml"
    path.write_text(texts[case], encoding="utf-8")
    args = [sys.executable, "-m", "notebook_bcc", command, str(path)]
    if command == "run":
        args += ["--notebook", str(tmp_path / "nb.ipynb"), "--state-db", str(tmp_path / "s.db")]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    prefix = f"{path}:{line}:" if line is not None else f"{path}:"
    assert prefix in done.stderr, done.stderr
    assert not (tmp_path / "nb.ipynb").exists()
