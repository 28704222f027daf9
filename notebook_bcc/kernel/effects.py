"""Outputs -> effects: the short text a planner reads about what a cell did (DESIGN §5, D12).

Stream text, the ``text/plain`` of results and displays, and ``ename: evalue`` plus a trimmed
traceback for errors. Images, HTML and other rich outputs stay in the notebook and appear here
only as short references (``[image/png 197 KB, cell 12]``), never as base64. Everything is held
to a per-cell character budget with a visible truncation marker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from notebook_bcc.kernel.results import ErrorInfo

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_IMAGE_PREFIX = "image/"
_TEXT_AS_IS = ("text/markdown", "text/latex")
"""Text mimetypes whose content is more telling than their ``text/plain`` stand-in."""


@dataclass(frozen=True, slots=True)
class EffectsConfig:
    """Budgets for effects: total characters per cell and traceback lines kept."""

    max_chars: int = 4000
    traceback_lines: int = 12


DEFAULT_EFFECTS = EffectsConfig()


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (IPython colours its tracebacks)."""
    return _ANSI.sub("", text)


def _text(value: Any) -> str:
    """A mimebundle or stream value as one string (files store them as lists of lines)."""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else str(value)


def _size_label(mime: str, value: Any) -> str:
    """Approximate payload size: base64 images count their decoded bytes."""
    text = _text(value)
    if mime.startswith(_IMAGE_PREFIX) and mime != "image/svg+xml":
        size = len(text) * 3 // 4
    else:
        size = len(text.encode("utf-8"))
    kib = max(1, round(size / 1024))
    return f"{kib} KB"


def mime_reference(mime: str, value: Any, cell_number: int) -> str:
    """The short stand-in for a rich output: ``[image/png 197 KB, cell 12]``."""
    return f"[{mime} {_size_label(mime, value)}, cell {cell_number}]"


def error_info(output: Mapping[str, Any], traceback_lines: int) -> ErrorInfo:
    """An ``error`` output as :class:`ErrorInfo` with its last traceback lines, colour-free."""
    ename = str(output.get("ename", ""))
    evalue = str(output.get("evalue", ""))
    raw = output.get("traceback") or []
    lines = strip_ansi("\n".join(str(line) for line in raw)).splitlines()
    lines = [line for line in lines if line.strip() and line.strip("-")]
    header = f"{ename}: {evalue}"
    if lines and lines[-1].strip() == header.strip():
        lines.pop()
    kept = tuple(lines[-traceback_lines:]) if traceback_lines > 0 else ()
    return ErrorInfo(ename=ename, evalue=evalue, traceback=kept)


def _display_effect(data: Mapping[str, Any], cell_number: int) -> str | None:
    """The effect of one ``execute_result`` / ``display_data`` bundle."""
    for mime, value in data.items():
        if mime.startswith(_IMAGE_PREFIX):
            return mime_reference(mime, value, cell_number)
    for mime in _TEXT_AS_IS:
        if mime in data:
            return _text(data[mime])
    if "text/plain" in data:
        return _text(data["text/plain"])
    for mime, value in data.items():
        return mime_reference(mime, value, cell_number)
    return None


def _one_effect(output: Mapping[str, Any], cell_number: int, config: EffectsConfig) -> str | None:
    kind = output.get("output_type")
    if kind == "stream":
        return _text(output.get("text", ""))
    if kind in ("execute_result", "display_data"):
        data = output.get("data") or {}
        return _display_effect(data, cell_number) if isinstance(data, Mapping) else None
    if kind == "error":
        info = error_info(output, config.traceback_lines)
        head = f"{info.ename}: {info.evalue}"
        return head + ("\n" + "\n".join(info.traceback) if info.traceback else "")
    return None


def truncate(text: str, budget: int) -> str:
    """``text`` cut to about ``budget`` characters, keeping its head and tail with a marker.

    The tail matters as much as the head: training logs print their final metric last.
    """
    if len(text) <= budget:
        return text
    widest = f"\n…[truncated {len(text)} chars]…\n"
    keep = max(0, budget - len(widest))
    marker = f"\n…[truncated {len(text) - keep} chars]…\n"
    head = keep * 2 // 3
    tail = keep - head
    return text[:head] + marker + (text[-tail:] if tail else "")


def _merged_streams(outputs: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Adjacent stream outputs of the same name as one (the kernel flushes in chunks)."""
    merged: list[Mapping[str, Any]] = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and output.get("output_type") == "stream"
            and previous.get("output_type") == "stream"
            and previous.get("name") == output.get("name")
        ):
            text = _text(previous.get("text", "")) + _text(output.get("text", ""))
            merged[-1] = {**previous, "text": text}
        else:
            merged.append(output)
    return merged


def effects_for(
    outputs: Iterable[Mapping[str, Any]],
    cell_number: int,
    config: EffectsConfig = DEFAULT_EFFECTS,
) -> list[str]:
    """The effects of one executed cell's outputs, in order, within ``config.max_chars``.

    ``cell_number`` (1-based position in the notebook) names the cell in rich-output references.
    """
    effects: list[str] = []
    remaining = config.max_chars
    dropped = 0
    for output in _merged_streams(outputs):
        text = _one_effect(output, cell_number, config)
        if not text:
            continue
        if remaining <= 0:
            dropped += 1
            continue
        clipped = truncate(text, remaining)
        effects.append(clipped)
        remaining -= len(clipped)
    if dropped:
        effects.append(f"…[{dropped} more outputs omitted]")
    return effects
