"""A bounded digest of a notebook's cells: title, headings, the first line of each code cell,
and the newest cells in full (sources clipped), as the reference sends ``notebook.cells``.

An Action-Generator reads it to avoid duplicating cells even when the whole notebook does not
fit in its context. Two ways in, both bounded:

- :class:`NotebookDigest` is incremental: the engine feeds it each cell once (``add``, O(1) per
  cell: only the start of the source is read) and keeps it; it remembers the title, up to
  ``max_headings`` headings and the last ``max_code`` code first lines.
- :func:`digest_cells` digests a list of cells on demand, newest first, visiting at most a
  fixed number of cells whatever the notebook's length; older cells are counted, not read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_LINE_CHARS = 120
DEFAULT_RECENT = 40
"""How many of the newest cells :class:`NotebookDigest` keeps in full."""
DEFAULT_RECENT_CHARS = 4000
"""How much of each kept cell's source it keeps."""
_SCAN_PARTS = 50


def source_text(source: str | Sequence[str], limit: int) -> str:
    """A cell source as text, at most ``limit`` characters read (``… [N more chars]`` mark)."""
    if isinstance(source, str):
        text, total = source[: limit + 1], len(source)
    else:
        parts: list[str] = []
        size = 0
        total = 0
        for part in source:
            piece = str(part)
            total += len(piece)
            if size <= limit:
                parts.append(piece)
                size += len(piece)
        text = "".join(parts)
    if total <= limit:
        return text[:limit]
    return f"{text[:limit]}… [{total - limit} more chars]"


def recent_cells(
    entries: Sequence[tuple[int, str, str]], count: int, chars: int
) -> list[dict[str, Any]]:
    """The last ``count`` of ``(index, cell_type, source)`` entries as cell objects."""
    shown = list(entries)[-count:] if count > 0 else []
    return [
        {"index": index, "cell_type": cell_type, "source": source_text(source, chars)}
        for index, cell_type, source in shown
    ]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def first_line(source: str | Sequence[str], limit: int = DEFAULT_LINE_CHARS) -> str:
    """The first non-blank line of a cell source, clipped to ``limit`` (bounded work).

    ``source`` is a string or nbformat's on-disk list of lines; only the start is read.
    """
    if not isinstance(source, str):
        for part in list(source[:_SCAN_PARTS]):
            line = first_line(str(part), limit)
            if line:
                return line
        return ""
    window = source[: max(limit * 8, 256)]
    for line in window.splitlines():
        stripped = line.strip()
        if stripped:
            return _clip(stripped, limit)
    return ""


def cell_parts(cell: Any) -> tuple[str, str | Sequence[str]]:
    """``(cell_type, source)`` of a pair or an nbformat-like mapping."""
    if isinstance(cell, Mapping):
        return str(cell.get("cell_type", "")), cell.get("source", "")
    cell_type, source = cell
    return str(cell_type), source


def _heading(cell_type: str, line: str) -> bool:
    return cell_type == "markdown" and line.startswith("#")


def _title(cell_type: str, line: str) -> str | None:
    if cell_type == "markdown" and line.startswith("# "):
        return line[2:].strip() or None
    return None


def _more(count: int) -> str | None:
    return f"{count} more cells not shown" if count > 0 else None


class NotebookDigest:
    """An incremental digest; feed every cell once with :meth:`add` (O(1) per cell)."""

    def __init__(
        self,
        *,
        max_headings: int = 200,
        max_code: int = 60,
        line_chars: int = DEFAULT_LINE_CHARS,
        max_recent: int = DEFAULT_RECENT,
        recent_chars: int = DEFAULT_RECENT_CHARS,
    ) -> None:
        self.max_headings = max_headings
        self.recent_chars = recent_chars
        self.recent: deque[tuple[int, str, str]] = deque(maxlen=max_recent)
        self.line_chars = line_chars
        self.title: str | None = None
        self.cell_count = 0
        self.headings: list[str] = []
        self.headings_dropped = 0
        self.code: deque[str] = deque(maxlen=max_code)

    def add(self, cell_type: str, source: str | Sequence[str]) -> None:
        """Account for one more cell at the end of the notebook."""
        self.cell_count += 1
        if cell_type not in ("markdown", "code"):
            return
        self.recent.append((self.cell_count, cell_type, source_text(source, self.recent_chars)))
        line = first_line(source, self.line_chars)
        if not line:
            return
        entry = _clip(f"[{self.cell_count}] {line}", self.line_chars)
        if cell_type == "code":
            self.code.append(entry)
        elif _heading(cell_type, line):
            if self.title is None:
                self.title = _title(cell_type, line)
            if len(self.headings) < self.max_headings:
                self.headings.append(entry)
            else:
                self.headings_dropped += 1

    def extend(self, cells: Sequence[Any]) -> NotebookDigest:
        """Add every cell of ``cells`` (pairs or nbformat-like mappings); returns ``self``."""
        for cell in cells:
            self.add(*cell_parts(cell))
        return self

    def cells(self, count: int, chars: int) -> list[dict[str, Any]]:
        """The newest ``count`` cells kept, sources clipped to ``chars``."""
        return recent_cells(self.recent, count, chars)

    def view(self, entries: int, line_chars: int = DEFAULT_LINE_CHARS) -> dict[str, Any]:
        """At most ``entries`` lines: headings first (outline), then the latest code lines."""
        headings = self.headings[: max(entries // 2, 1)] if entries > 0 else []
        room = max(entries - len(headings), 0)
        code = list(self.code)[-room:] if room else []
        shown = len(headings) + len(code)
        return {
            "title": self.title,
            "cell_count": self.cell_count,
            "headings": [_clip(h, line_chars) for h in headings],
            "code": [_clip(c, line_chars) for c in code],
            "more": _more(self.cell_count - shown),
        }


def last_cells(cells: Sequence[Any], count: int, chars: int) -> list[dict[str, Any]]:
    """The newest ``count`` markdown and code cells of ``cells`` (pairs or mappings)."""
    entries: list[tuple[int, str, str]] = []
    index = len(cells) - 1
    while index >= 0 and len(entries) < count:
        cell_type, source = cell_parts(cells[index])
        if cell_type in ("markdown", "code"):
            entries.append((index + 1, cell_type, source_text(source, chars)))
        index -= 1
    return recent_cells(entries[::-1], count, chars)


def digest_cells(
    cells: Sequence[Any], entries: int, line_chars: int = DEFAULT_LINE_CHARS
) -> dict[str, Any]:
    """Digest ``cells`` newest first, reading at most ``2 * entries`` cells (+ the first one).

    The title comes from the first cell when it is a ``#`` heading; headings and code first
    lines are collected from the end backwards; the rest is counted in ``more``.
    """
    count = len(cells)
    title = None
    if count:
        cell_type, source = cell_parts(cells[0])
        title = _title(cell_type, first_line(source, line_chars))
    headings: list[str] = []
    code: list[str] = []
    visit = min(count, max(entries, 0) * 2)
    for index in range(count - 1, count - 1 - visit, -1):
        if len(headings) + len(code) >= entries:
            break
        cell_type, source = cell_parts(cells[index])
        if cell_type not in ("markdown", "code"):
            continue
        line = first_line(source, line_chars)
        if not line:
            continue
        entry = _clip(f"[{index + 1}] {line}", line_chars)
        if cell_type == "code":
            code.append(entry)
        elif _heading(cell_type, line):
            headings.append(entry)
    shown = len(headings) + len(code)
    return {
        "title": title,
        "cell_count": count,
        "headings": headings[::-1],
        "code": code[::-1],
        "more": _more(count - shown),
    }
