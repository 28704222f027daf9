"""One execution's typed result: outputs -> status, effects and error (no kernel I/O)."""

from __future__ import annotations

from typing import Any

from notebook_bcc.kernel.effects import EffectsConfig, effects_for, error_info
from notebook_bcc.kernel.results import ErrorInfo, ExecResult
from notebook_bcc.kernel.session import RawRun


def _is_interrupt(output: dict[str, Any]) -> bool:
    return output.get("output_type") == "error" and output.get("ename") == "KeyboardInterrupt"


def exec_result(
    cell_id: str,
    outputs: list[dict[str, Any]],
    position: int,
    raw: RawRun,
    *,
    need_output: bool,
    config: EffectsConfig,
) -> ExecResult:
    """The typed result of one execution: status, outputs, effects and the error, if any.

    On a timeout the KeyboardInterrupt our interrupt caused is left out of the effects (the
    outputs keep it) and a ``TimeoutError`` line says what happened; ``dead_kernel`` and
    ``interrupted`` get a line of their own too.
    """
    shown = outputs
    if raw.status == "timeout":
        shown = [out for out in outputs if not _is_interrupt(out)]
    effects = effects_for(shown, position + 1, config) if need_output else []
    error: ErrorInfo | None = None
    if raw.status == "error":
        for out in reversed(outputs):
            if out.get("output_type") == "error":
                error = error_info(out, config.traceback_lines)
                break
    if raw.status in ("timeout", "dead_kernel", "interrupted"):
        label = {"timeout": "TimeoutError", "dead_kernel": "DeadKernelError"}.get(
            raw.status, "KeyboardInterrupt"
        )
        error = ErrorInfo(label, raw.message or raw.status)
        if need_output:
            effects.append(f"{label}: {raw.message or raw.status}")
    return ExecResult(
        cell_id=cell_id,
        status=raw.status,
        outputs=outputs,
        effects=effects,
        execution_count=raw.execution_count,
        started_at=raw.started_at,
        ended_at=raw.ended_at,
        duration_s=raw.duration_s,
        error=error,
        message=raw.message,
        kernel_ready=raw.kernel_ready,
    )
