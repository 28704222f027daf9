"""Outputs -> effects, without a kernel."""

from __future__ import annotations

import base64
from typing import Any

from notebook_bcc.kernel.effects import EffectsConfig, effects_for, error_info, truncate

PNG = base64.b64encode(b"\x89PNG" + b"\0" * (197 * 1024)).decode()


def test_stream_result_and_display_text() -> None:
    outputs: list[dict[str, Any]] = [
        {"output_type": "stream", "name": "stdout", "text": "hello\n"},
        {"output_type": "execute_result", "data": {"text/plain": "42"}, "execution_count": 1},
        {"output_type": "display_data", "data": {"text/plain": ["a\n", "b"]}, "metadata": {}},
    ]
    assert effects_for(outputs, 3) == ["hello\n", "42", "a\nb"]


def test_images_and_html_are_references_never_base64() -> None:
    outputs = [
        {"output_type": "display_data", "data": {"image/png": PNG, "text/plain": "<Figure>"}},
        {"output_type": "display_data", "data": {"text/html": "<b>x</b>" * 400}},
        {"output_type": "display_data", "data": {"text/html": "<table/>", "text/plain": "df"}},
    ]
    effects = effects_for(outputs, 12)
    assert effects[0] == "[image/png 197 KB, cell 12]"
    assert effects[1] == "[text/html 3 KB, cell 12]"
    assert effects[2] == "df"
    assert not any(PNG[:40] in effect for effect in effects)


def test_markdown_display_keeps_its_text() -> None:
    data = {"text/markdown": "**bold**", "text/plain": "<IPython.core.display.Markdown object>"}
    assert effects_for([{"output_type": "display_data", "data": data}], 1) == ["**bold**"]


def test_error_effect_is_name_value_and_trimmed_colourless_traceback() -> None:
    traceback = [
        "\x1b[0;31m---------------------------------------------------------------\x1b[0m",
        "\x1b[0;31mZeroDivisionError\x1b[0m  Traceback (most recent call last)",
        *[f"frame {n}" for n in range(30)],
        "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
    ]
    output = {
        "output_type": "error",
        "ename": "ZeroDivisionError",
        "evalue": "division by zero",
        "traceback": traceback,
    }
    info = error_info(output, traceback_lines=5)
    assert info.traceback == ("frame 25", "frame 26", "frame 27", "frame 28", "frame 29")
    [effect] = effects_for([output], 1, EffectsConfig(traceback_lines=3))
    assert effect.startswith("ZeroDivisionError: division by zero\n")
    assert "\x1b" not in effect
    assert effect.endswith("frame 29")


def test_large_text_is_truncated_with_a_marker_keeping_head_and_tail() -> None:
    text = "HEAD" + "x" * 10_000 + "TAIL"
    clipped = truncate(text, 500)
    assert len(clipped) <= 500
    assert clipped.startswith("HEAD")
    assert clipped.endswith("TAIL")
    removed = len(text) - (len(clipped) - len("\n…[truncated 9999 chars]…\n"))
    assert f"[truncated {removed} chars]" in clipped


def test_budget_is_per_cell_and_drops_later_outputs_visibly() -> None:
    outputs = [{"output_type": "display_data", "data": {"text/plain": "y" * 300}}] * 5
    effects = effects_for(outputs, 1, EffectsConfig(max_chars=700))
    assert sum(len(e) for e in effects[:-1]) <= 700
    assert effects[-1] == "…[2 more outputs omitted]"


def test_adjacent_streams_of_one_name_are_one_effect() -> None:
    outputs: list[dict[str, Any]] = [
        {"output_type": "stream", "name": "stdout", "text": "a"},
        {"output_type": "stream", "name": "stdout", "text": ["b\n", "c"]},
        {"output_type": "stream", "name": "stderr", "text": "warn"},
    ]
    assert effects_for(outputs, 1) == ["ab\nc", "warn"]
