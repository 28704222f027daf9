"""The ``injected-parameters`` cell: a run's parameters, set in the kernel before any action.

Papermill's convention: a code cell tagged ``injected-parameters`` assigns each parameter.
Here it is added right after the inputs cell (an existing notebook's own cells, a user cell
tagged ``parameters`` included, all come before it, D19) and executed under its own contract
like the inputs cell, so the notebook runs on its own later. The values also enter
``snapshot.variables`` (source ``user``) at once, so ``when`` expressions
(``context.variables.NAME``) and planners see them before the first probe.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from notebook_bcc.kernel.cell_ids import ActionPath
from notebook_bcc.models.snapshot import VariableInfo
from notebook_bcc.protocol.action_models import AddAction, ExecAction

if TYPE_CHECKING:
    from notebook_bcc.engine.actions import ActionExecutor

INJECTED_TAG = "injected-parameters"
"""papermill's tag for the cell holding the run's parameters."""
PARAMETERS_PATH = ActionPath("_inputs", 1, "_inputs", "parameters", 1, 0)
"""The path of the parameters cell (scoped to the workflow when used)."""


def parameters_source(parameters: dict[str, Any]) -> str:
    """The cell's code: one assignment per parameter, in the order given."""
    lines = ["# Parameters (notebook-bcc: injected from the command line or the request)"]
    lines += [f"{name} = {value!r}" for name, value in parameters.items()]
    return "\n".join(lines) + "\n"


def parameter_variables(parameters: dict[str, Any]) -> dict[str, VariableInfo]:
    """The parameters as snapshot variables (JSON values, source ``user``)."""
    names = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}
    return {
        name: VariableInfo(
            type=names.get(type(value), "NoneType"),
            value=value,
            repr=repr(value)[:200],
            source="user",
        )
        for name, value in parameters.items()
    }


async def inject_parameters(executor: ActionExecutor) -> None:
    """Add and run the parameters cell when the run has parameters (after the inputs cell)."""
    engine = executor.engine
    snap = engine.snapshot
    if not snap.parameters or snap.run.status == "failed":
        return
    add = AddAction(
        content=parameters_source(snap.parameters),
        shot_type="action",
        metadata={"tags": [INJECTED_TAG]},
    )
    path = dataclasses.replace(PARAMETERS_PATH, scope=snap.workflow_id)
    outcome = engine.runtime.runner.apply(add, path)
    if outcome.cell_id is None:
        await engine.fail_run(f"could not add the parameters cell: {outcome.refused}")
        return
    await executor._execute(
        ExecAction(codecell_id=outcome.cell_id),
        path,
        cell_id=outcome.cell_id,
        irreversible=False,
        reason=None,
        complete=False,
    )
    after = engine.snapshot
    if after.run.status == "failed":
        return
    variables = {**after.variables, **parameter_variables(after.parameters)}
    await engine.commit(after.model_copy(update={"variables": variables}))
