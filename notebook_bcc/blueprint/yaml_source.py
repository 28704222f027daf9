"""YAML text -> plain JSON-like data plus a line map, with ruamel.yaml's round-trip loader.

The round-trip loader keeps where every key and item was written (``.lc``), so any error can
name its line. It never builds Python objects from tags, and the conversion to plain data is
bounded twice: :mod:`~notebook_bcc.blueprint.yaml_guard` measures the composed node graph
(aliases, merge keys, tags) before any value is built; then aliases that would expand to
more than :data:`MAX_NODES` nodes (billion laughs), cyclic aliases, nesting deeper than
:data:`MAX_NESTING` and unknown tags are refused while converting.
"""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from notebook_bcc.blueprint.issues import BlueprintError, Issue
from notebook_bcc.blueprint.yaml_guard import (
    MAX_EXPANDED_NODES,
    GuardedConstructor,
    YamlBudgetError,
)

MAX_NODES = MAX_EXPANDED_NODES
"""Most values a document may expand to (aliases included)."""
MAX_NESTING = 64
"""Deepest nesting of mappings and lists."""


@dataclass(frozen=True)
class YamlDocument:
    """Plain data (dicts, lists, str, int, float, bool, None) and the ruamel tree for lines."""

    data: Any
    root: Any
    warnings: list[Issue] = field(default_factory=list)

    def line_of(self, loc: Sequence[Any]) -> int | None:
        """The 1-based line of the deepest part of ``loc`` (keys and indexes) that exists."""
        return line_of(self.root, loc)


def line_of(root: Any, loc: Sequence[Any]) -> int | None:
    """Walk ``loc`` through a ruamel tree; the line of the last key or item found.

    A ``"on"`` step also finds a key read as the boolean True (YAML 1.1's unquoted ``on:``).
    """
    line = _start_line(root)
    node = root
    for part in loc:
        if isinstance(node, CommentedMap):
            key = part
            if key not in node and part == "on" and True in node:
                key = True
            if key not in node:
                break
            line = _key_line(node, key, line)
            node = node[key]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            line = node.lc.item(part)[0] + 1
            node = node[part]
        else:
            break
    return line


def _key_line(node: Any, key: Any, default: Any) -> Any:
    """The 1-based line of ``key`` in a mapping; ``default`` for a key a merge (``<<``) brought,
    which ruamel records no position for."""
    if not isinstance(node, CommentedMap):
        return default
    try:
        return int(node.lc.key(key)[0]) + 1
    except (KeyError, TypeError, AttributeError):
        return default


def _start_line(node: Any) -> int | None:
    if isinstance(node, (CommentedMap, CommentedSeq)) and node.lc.line is not None:
        return int(node.lc.line) + 1
    return None


def parse_yaml(text: str, filename: str) -> YamlDocument:
    """Parse ``text``; raises :class:`BlueprintError` with the line of a syntax error."""
    yaml = YAML(typ="rt")
    yaml.Constructor = GuardedConstructor  # measures aliases and tags before building values
    noticed: list[Issue] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            root = yaml.load(text)
        noticed.extend(Issue(None, f"YAML: {item.message}") for item in caught)
    except YamlBudgetError as exc:
        raise BlueprintError(filename, [exc.issue]) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        reason = " ".join(part for part in (exc.context, exc.problem) if part)
        raise BlueprintError(filename, [Issue(line, f"YAML syntax: {reason}")]) from None
    except YAMLError as exc:
        raise BlueprintError(filename, [Issue(None, f"YAML: {exc}")]) from None
    except RecursionError:
        raise BlueprintError(filename, [Issue(None, "YAML: nesting too deep")]) from None
    converter = _Converter()
    data = converter.convert(root, _start_line(root) or 1, 0)
    if converter.issues:
        raise BlueprintError(filename, converter.issues, noticed)
    return YamlDocument(data, root, noticed)


class _Converter:
    """Turns ruamel values into plain ones, collecting problems instead of raising."""

    def __init__(self) -> None:
        self.count = 0
        self.issues: list[Issue] = []
        self.active: set[int] = set()

    def convert(self, node: Any, line: int, depth: int) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            if self.count == MAX_NODES + 1:
                self.issues.append(
                    Issue(line, f"document expands to more than {MAX_NODES} values (aliases?)")
                )
            return None
        if isinstance(node, (dict, list)):
            if depth >= MAX_NESTING:
                self.issues.append(Issue(line, f"nesting deeper than {MAX_NESTING} levels"))
                return None
            if id(node) in self.active:
                self.issues.append(Issue(line, "an alias refers to itself (cyclic document)"))
                return None
            self.active.add(id(node))
            try:
                if isinstance(node, dict):
                    return self.mapping(node, line, depth)
                return self.sequence(node, line, depth)
            finally:
                self.active.discard(id(node))
        return self.scalar(node, line)

    def mapping(self, node: dict[Any, Any], line: int, depth: int) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key, value in node.items():
            key_line = _key_line(node, key, line)
            plain_key = self.scalar(key, key_line)
            try:
                hash(plain_key)
            except TypeError:
                self.issues.append(Issue(key_line, "a mapping key must be a plain value"))
                continue
            result[plain_key] = self.convert(value, key_line, depth + 1)
        return result

    def sequence(self, node: list[Any], line: int, depth: int) -> list[Any]:
        result: list[Any] = []
        for index, value in enumerate(node):
            item_line = line
            if isinstance(node, CommentedSeq):
                item_line = node.lc.item(index)[0] + 1
            result.append(self.convert(value, item_line, depth + 1))
        return result

    def scalar(self, value: Any, line: int) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if type(value).__name__ == "ScalarBoolean":
            return bool(value)
        if isinstance(value, str):
            return str(value)
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            return float(value)
        if isinstance(value, (datetime.date, datetime.datetime)):
            return value.isoformat()
        tag = getattr(value, "tag", None)
        described = f"tag {getattr(tag, 'value', tag)}" if tag is not None else type(value).__name__
        self.issues.append(Issue(line, f"unsupported YAML value ({described})"))
        return None
