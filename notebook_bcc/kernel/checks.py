"""After a behavior: the variables probe and its acceptance criteria in one silent request.

Both are ``user_expressions`` (the probe first, then each criterion, every one guarded on its
own by the kernel), so the behavior boundary costs one kernel round trip instead of two. What
each part reports is what :func:`~notebook_bcc.kernel.probe.probe_variables` and
:func:`~notebook_bcc.kernel.acceptance.evaluate_criteria` report on their own: a criterion that
hangs is interrupted and the ones after it still run; a probe missing from the kernel (after
``%reset``) is installed and asked again.
"""

from __future__ import annotations

from collections.abc import Sequence
from time import monotonic

from notebook_bcc.kernel.acceptance import fail_criteria, prepare_criteria, read_criteria
from notebook_bcc.kernel.errors import KernelBusyError, KernelDeadError
from notebook_bcc.kernel.probe import (
    NOT_INSTALLED,
    ProbeConfig,
    failed_report,
    install_and_ask,
    probe_expression,
    read_probe,
    report_of,
)
from notebook_bcc.kernel.results import VariablesReport
from notebook_bcc.kernel.session import KernelSession
from notebook_bcc.models.snapshot import AcceptanceResult

PROBE_KEY = "probe"


async def behavior_checks(
    session: KernelSession,
    check: Sequence[str],
    criteria: Sequence[str],
    config: ProbeConfig,
    *,
    timeout: float = 10.0,
) -> tuple[VariablesReport, dict[str, AcceptanceResult]]:
    """The variables report (``check``: names that must exist) and ``{criterion: result}``."""
    began = monotonic()
    names = [str(name) for name in check]
    prepared = prepare_criteria(criteria)
    expressions = {PROBE_KEY: probe_expression(names, config), **prepared.expressions}
    wait = max(timeout, config.timeout)
    try:
        reply = await session.silent(
            user_expressions=expressions, timeout=wait, interrupts=len(expressions)
        )
    except KernelBusyError:
        message = f"timed out after {wait:g} s"
        return failed_report(names, began, message), fail_criteria(prepared, message)
    except KernelDeadError as exc:
        message = f"dead_kernel: {exc.message}"
        return failed_report(names, began, message), fail_criteria(prepared, message)
    answers = reply.content.get("user_expressions") or {}
    results = read_criteria(prepared, answers, interrupted=bool(reply.interrupts), timeout=wait)
    try:
        payload = read_probe(answers.get(PROBE_KEY) or {}, config)
        if payload is None:
            payload = await install_and_ask(session, names, config)
    except KernelBusyError as exc:
        return failed_report(names, began, exc.message), results
    except KernelDeadError as exc:
        return failed_report(names, began, f"dead_kernel: {exc.message}"), results
    if payload is None:
        return failed_report(names, began, NOT_INSTALLED), results
    return report_of(payload, began), results
