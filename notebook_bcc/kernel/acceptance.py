"""Acceptance criteria evaluated silently in the kernel (DESIGN §5).

Each criterion is a Python expression. It is checked here first (it must parse as one
expression; the walrus operator is refused, since it would assign in the user's namespace), then
all of them go to the kernel as the ``user_expressions`` of one silent request: no history, no
execution count, no ``_``. The kernel guards each expression on its own, so one that raises
does not hide the others. A criterion that hangs is interrupted after the timeout and reported
as an error; the ones after it still run.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from notebook_bcc.kernel.errors import KernelBusyError, KernelDeadError
from notebook_bcc.kernel.session import KernelSession
from notebook_bcc.models.snapshot import AcceptanceResult


def criterion_problem(expression: str) -> str | None:
    """Why ``expression`` cannot be evaluated as a criterion, or None when it can."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        return f"not a Python expression: {exc.msg}"
    for node in ast.walk(tree):
        if isinstance(node, ast.NamedExpr):
            return "the walrus operator (:=) is not allowed in acceptance criteria"
    return None


def _wrapped(expression: str) -> str:
    # Newlines keep a trailing comment in the criterion from swallowing the parenthesis.
    return f"bool((\n{expression.strip()}\n))"


@dataclass(frozen=True, slots=True)
class PreparedCriteria:
    """Criteria checked and wrapped for the kernel: ``expressions`` by key (``c0``, ...),
    ``keys`` back to the criterion, and ``results`` so far (refused ones already final)."""

    results: dict[str, AcceptanceResult]
    expressions: dict[str, str]
    keys: dict[str, str]


def prepare_criteria(criteria: Sequence[str]) -> PreparedCriteria:
    """Check each criterion and wrap the good ones as guarded ``user_expressions``."""
    results: dict[str, AcceptanceResult] = {}
    expressions: dict[str, str] = {}
    keys: dict[str, str] = {}
    for number, criterion in enumerate(criteria):
        problem = criterion_problem(criterion)
        if problem is not None:
            results[criterion] = AcceptanceResult(status="error", message=problem)
            continue
        key = f"c{number}"
        expressions[key] = _wrapped(criterion)
        keys[key] = criterion
        results[criterion] = AcceptanceResult(status="error", message="not evaluated")
    return PreparedCriteria(results, expressions, keys)


def fail_criteria(prepared: PreparedCriteria, message: str) -> dict[str, AcceptanceResult]:
    """Every criterion sent to the kernel as an error with ``message`` (no usable reply)."""
    sent = set(prepared.keys.values())
    failed = AcceptanceResult(status="error", message=message)
    return {c: failed if c in sent else r for c, r in prepared.results.items()}


def read_criteria(
    prepared: PreparedCriteria,
    answers: dict[str, Any],
    *,
    interrupted: bool,
    timeout: float,
) -> dict[str, AcceptanceResult]:
    """The results from a reply's ``user_expressions`` (``interrupted``: the kernel was
    interrupted at least once while evaluating them)."""
    results = dict(prepared.results)
    for key, criterion in prepared.keys.items():
        answer = answers.get(key) or {}
        if answer.get("status") == "ok":
            text = str(answer.get("data", {}).get("text/plain", ""))
            status = "passed" if text == "True" else "failed"
            results[criterion] = AcceptanceResult(status=status)
        elif answer.get("ename") == "KeyboardInterrupt" and interrupted:
            results[criterion] = AcceptanceResult(
                status="error", message=f"timed out after {timeout:g} s"
            )
        elif answer:
            results[criterion] = AcceptanceResult(
                status="error", message=f"{answer.get('ename')}: {answer.get('evalue')}"
            )
        else:
            results[criterion] = AcceptanceResult(
                status="error", message="the kernel returned no result"
            )
    return results


async def evaluate_criteria(
    session: KernelSession, criteria: Sequence[str], *, timeout: float = 10.0
) -> dict[str, AcceptanceResult]:
    """``{criterion: passed | failed | error(message)}``, in the order given."""
    prepared = prepare_criteria(criteria)
    if not prepared.expressions:
        return prepared.results
    try:
        reply = await session.silent(
            user_expressions=prepared.expressions,
            timeout=timeout,
            interrupts=len(prepared.expressions),
        )
    except KernelBusyError:
        return fail_criteria(prepared, f"timed out after {timeout:g} s")
    except KernelDeadError as exc:
        return fail_criteria(prepared, f"dead_kernel: {exc.message}")
    answers = reply.content.get("user_expressions") or {}
    return read_criteria(prepared, answers, interrupted=bool(reply.interrupts), timeout=timeout)
