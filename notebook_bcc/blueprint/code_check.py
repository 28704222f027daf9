"""Python syntax of a blueprint's code actions and acceptance criteria, checked at load.

A typo in a code action used to pass ``validate`` and fail the run three retries later; a
criterion that does not parse failed only when evaluated in the kernel. Every code action is
compiled as a module and every acceptance criterion as an expression (nothing is executed);
a syntax error is an :class:`Issue` at the YAML line of the offending code line, so
``validate`` prints ``FILE:LINE: ...`` and ``run`` refuses the file before a kernel starts.
``when`` expressions are checked by :mod:`notebook_bcc.fsm.expressions` already.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from notebook_bcc.blueprint.issues import Issue
from notebook_bcc.blueprint.models import Blueprint
from notebook_bcc.blueprint.yaml_source import YamlDocument


def _block_offset(text: str, key_line: int) -> int:
    """Lines from the key to the code's first line: 1 for ``code: |`` blocks, else 0."""
    lines = text.splitlines()
    if not 0 < key_line <= len(lines):
        return 0
    after = lines[key_line - 1].split(":", 1)[-1].strip()
    return 1 if after[:1] in ("|", ">") else 0


def _syntax_issue(
    what: str, code: str, mode: str, loc: Sequence[Any], *, source: YamlDocument, text: str
) -> Issue | None:
    try:
        compile(code, f"<{what}>", mode, dont_inherit=True)
    except SyntaxError as exc:
        key_line = source.line_of(loc)
        line = None
        if key_line is not None:
            line = key_line + _block_offset(text, key_line) + max((exc.lineno or 1) - 1, 0)
        detail = exc.msg
        if exc.text and exc.text.strip():
            detail += f": {exc.text.strip()}"
        return Issue(line, f"{what}: Python syntax error: {detail}")
    except ValueError as exc:  # e.g. a NUL byte in the source
        return Issue(source.line_of(loc), f"{what}: not compilable: {exc}")
    return None


def _checks(
    document: Blueprint, top: tuple[Any, ...]
) -> Iterator[tuple[str, str, str, tuple[Any, ...]]]:
    for stage_id, stage in document.states.items():
        base = (*top, "states", stage_id)
        for n, criterion in enumerate(stage.acceptance):
            yield f"stage {stage_id} acceptance[{n}]", criterion, "eval", (*base, "acceptance", n)
        for i, step in enumerate(stage.steps):
            for j, behavior in enumerate(step.behaviors):
                where = (*base, "steps", i, "behaviors", j)
                name = f"{stage_id}/{step.id}/{behavior.id}"
                for n, criterion in enumerate(behavior.acceptance):
                    yield f"{name} acceptance[{n}]", criterion, "eval", (*where, "acceptance", n)
                for k, action in enumerate(behavior.actions):
                    if action.code is not None:
                        yield (
                            f"{name} actions[{k}]",
                            action.code,
                            "exec",
                            (
                                *where,
                                "actions",
                                k,
                                "code",
                            ),
                        )


def code_issues(
    document: Blueprint, source: YamlDocument, top: tuple[Any, ...], text: str
) -> list[Issue]:
    """One issue per code action or acceptance criterion that is not valid Python."""
    issues: list[Issue] = []
    for what, code, mode, loc in _checks(document, top):
        issue = _syntax_issue(what, code, mode, loc, source=source, text=text)
        if issue is not None:
            issues.append(issue)
    return issues
