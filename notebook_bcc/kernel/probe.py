"""The variables probe, caller side: install once per kernel, run silently after a behavior.

The probe runs as its own silent request (``user_expressions`` cannot ride on nbclient's
execute, and come back empty after a cell that raised), reads the JSON the kernel-side function
(:mod:`notebook_bcc.kernel.kernel_side`) returns, and gives a :class:`VariablesReport` of
``VariableInfo`` models: JSON scalars carry their value (D13: ``context.variables.rmse``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from time import monotonic
from typing import Any

from notebook_bcc.kernel.errors import KernelBusyError, KernelDeadError
from notebook_bcc.kernel.probe_install import PROBE_NAME, install_code
from notebook_bcc.kernel.results import VariablesReport
from notebook_bcc.kernel.session import KernelSession
from notebook_bcc.models.snapshot import VariableInfo


@dataclass(frozen=True, slots=True)
class ProbeConfig:
    """Probe bounds: its own timeout, names summarized, repr and scalar-value lengths."""

    timeout: float = 10.0
    max_names: int = 500
    repr_chars: int = 80
    value_chars: int = 200


DEFAULT_PROBE = ProbeConfig()

NOT_INSTALLED = "the variables probe could not be installed"


def probe_expression(check: list[str], config: ProbeConfig) -> str:
    """The ``user_expressions`` entry that runs the installed probe."""
    return (
        f"{PROBE_NAME}({check!r}, {int(config.max_names)}, {int(config.repr_chars)}, "
        f"{int(config.value_chars)})"
    )


def failed_report(check: list[str], began: float, error: str) -> VariablesReport:
    """The report of a probe that gave no answer (``error`` says why)."""
    return VariablesReport(
        variables={},
        present=dict.fromkeys(check),
        total=0,
        omitted=0,
        duration_s=monotonic() - began,
        error=error,
    )


async def _ask(
    session: KernelSession, check: list[str], config: ProbeConfig
) -> dict[str, Any] | None:
    """One probe request; None when the probe is not installed (e.g. after ``%reset``)."""
    reply = await session.silent(
        user_expressions={"probe": probe_expression(check, config)},
        timeout=config.timeout,
        interrupts=1,
    )
    if reply.interrupts:
        raise KernelBusyError(f"the variables probe took longer than {config.timeout:g} s")
    return read_probe((reply.content.get("user_expressions") or {}).get("probe") or {}, config)


def read_probe(result: dict[str, Any], config: ProbeConfig) -> dict[str, Any] | None:
    """The probe's JSON from its ``user_expressions`` answer; None when the probe is not
    installed in the kernel; :class:`KernelBusyError` when it failed or was interrupted."""
    if result.get("status") != "ok":
        if result.get("ename") == "NameError":
            return None
        if result.get("ename") == "KeyboardInterrupt":
            raise KernelBusyError(f"the variables probe took longer than {config.timeout:g} s")
        raise KernelBusyError(
            f"the variables probe failed: {result.get('ename')}: {result.get('evalue')}"
        )
    text = result.get("data", {}).get("text/plain", "")
    payload = json.loads(text)
    return payload if isinstance(payload, dict) else {}


def report_of(payload: dict[str, Any], began: float) -> VariablesReport:
    """A :class:`VariablesReport` from the probe's JSON."""
    raw_variables = payload.get("variables") or {}
    variables = {
        str(name): VariableInfo.model_validate(info) for name, info in raw_variables.items()
    }
    present = {str(k): (str(v) if v else None) for k, v in (payload.get("present") or {}).items()}
    return VariablesReport(
        variables=variables,
        present=present,
        total=int(payload.get("total", len(variables))),
        omitted=int(payload.get("omitted", 0)),
        duration_s=monotonic() - began,
    )


async def install_and_ask(
    session: KernelSession, check: list[str], config: ProbeConfig
) -> dict[str, Any] | None:
    """Install the probe (it was missing, e.g. after ``%reset``) and ask again."""
    await session.silent(install_code(), timeout=config.timeout)
    return await _ask(session, check, config)


async def probe_variables(
    session: KernelSession,
    check: list[str] | tuple[str, ...] = (),
    config: ProbeConfig = DEFAULT_PROBE,
) -> VariablesReport:
    """Summarize the user namespace and say which of ``check`` exist.

    ``check`` holds declared artifacts and required variables: each is reported as a
    ``"variable"``, a ``"file"`` (relative to the kernel's working directory) or missing. A
    probe that times out or finds the kernel dead gives a report with ``error`` set.
    """
    began = monotonic()
    names = [str(name) for name in check]
    try:
        payload = await _ask(session, names, config)
        if payload is None:
            payload = await install_and_ask(session, names, config)
    except KernelBusyError as exc:
        return failed_report(names, began, exc.message)
    except KernelDeadError as exc:
        return failed_report(names, began, f"dead_kernel: {exc.message}")
    if payload is None:
        return failed_report(names, began, NOT_INSTALLED)
    return report_of(payload, began)
