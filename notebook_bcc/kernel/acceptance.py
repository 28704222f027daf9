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


def _fail_all(
    results: dict[str, AcceptanceResult], keys: dict[str, str], message: str
) -> dict[str, AcceptanceResult]:
    sent = set(keys.values())
    failed = AcceptanceResult(status="error", message=message)
    return {c: failed if c in sent else r for c, r in results.items()}


async def evaluate_criteria(
    session: KernelSession, criteria: Sequence[str], *, timeout: float = 10.0
) -> dict[str, AcceptanceResult]:
    """``{criterion: passed | failed | error(message)}``, in the order given."""
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
    if not expressions:
        return results
    try:
        reply = await session.silent(
            user_expressions=expressions, timeout=timeout, interrupts=len(expressions)
        )
    except KernelBusyError:
        return _fail_all(results, keys, f"timed out after {timeout:g} s")
    except KernelDeadError as exc:
        return _fail_all(results, keys, f"dead_kernel: {exc.message}")
    answers = reply.content.get("user_expressions") or {}
    for key, criterion in keys.items():
        answer = answers.get(key) or {}
        if answer.get("status") == "ok":
            text = str(answer.get("data", {}).get("text/plain", ""))
            status = "passed" if text == "True" else "failed"
            results[criterion] = AcceptanceResult(status=status)
        elif answer.get("ename") == "KeyboardInterrupt" and reply.interrupts:
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
