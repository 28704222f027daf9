"""The setup cells: the inputs cell, then the ``injected-parameters`` cell, before any action.

Both are added and executed by one code path (:func:`run_setup_cell`). The inputs cell holds
``user_problem`` / ``user_submit_files``; the parameters cell a run's parameters.

Papermill's convention: a code cell tagged ``injected-parameters`` assigns each parameter.
Here it is added right after the inputs cell (an existing notebook's own cells, a user cell
tagged ``parameters`` included, all come before it, D19) and executed under its own contract
like the inputs cell, so the notebook runs on its own later. The values also enter
``snapshot.variables`` (source ``user``) at once, so ``when`` expressions
(``context.variables.NAME``) and planners see them before the first probe.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notebook_bcc.kernel.cell_ids import ActionPath
from notebook_bcc.models.actions import AddAction, ExecAction
from notebook_bcc.models.snapshot import VariableInfo

if TYPE_CHECKING:
    from notebook_bcc.engine.actions import ActionExecutor
    from notebook_bcc.engine.host import EngineHost

INPUTS_TAG = "notebook-bcc-inputs"
"""The tag of the inputs cell (papermill-style tools find cells by tag)."""
INPUTS_PATH = ActionPath("_inputs", 1, "_inputs", "inputs", 1, 0)
"""The path of the inputs cell (scoped to the workflow when used)."""
INJECTED_TAG = "injected-parameters"
"""papermill's tag for the cell holding the run's parameters."""
PARAMETERS_PATH = ActionPath("_inputs", 1, "_inputs", "parameters", 1, 0)
"""The path of the parameters cell (scoped to the workflow when used)."""


def portable_path(path: str, folder: Path) -> str:
    """``path`` relative to ``folder`` when it is absolute and on the same drive."""
    if not os.path.isabs(path):
        return path
    try:
        return os.path.relpath(path, folder)
    except ValueError:
        return path


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


async def run_setup_cell(
    executor: ActionExecutor, source: str, tag: str, path: ActionPath, what: str
) -> bool:
    """Add a tagged setup code cell (inputs, parameters) at ``path`` scoped to the workflow
    and execute it under its own contract; the one code path of both setup cells. False when
    the cell could not be added (the run is then failed)."""
    engine = executor.engine
    scoped = dataclasses.replace(path, scope=engine.snapshot.workflow_id)
    add = AddAction(content=source, shot_type="action", metadata={"tags": [tag]})
    outcome = engine.runtime.runner.apply(add, scoped)
    if outcome.cell_id is None:
        await engine.fail_run(f"could not add the {what} cell: {outcome.refused}")
        return False
    await executor.run_setup(ExecAction(codecell_id=outcome.cell_id), scoped, outcome.cell_id)
    return True


async def inject_parameters(executor: ActionExecutor) -> None:
    """Add and run the parameters cell when the run has parameters (after the inputs cell)."""
    engine = executor.engine
    snap = engine.snapshot
    if not snap.parameters or snap.run.status == "failed":
        return
    source = parameters_source(snap.parameters)
    await run_setup_cell(executor, source, INJECTED_TAG, PARAMETERS_PATH, "parameters")


async def setup_variables(engine: EngineHost) -> None:
    """The namespace the setup cells left, in ``snapshot.variables`` at once (one commit).

    The run's parameters enter as given (source ``user``); then the kernel is probed, as at
    every behavior boundary, so the Variables view, planners and ``when`` expressions see
    ``user_problem``, ``user_submit_files`` and the parameters from the start rather than from
    the end of the first behavior. A probe that fails leaves the parameters; the boundary's
    probe reports its own failure.
    """
    snap = engine.snapshot
    if snap.run.status == "failed":
        return
    variables = {**snap.variables, **parameter_variables(snap.parameters)}
    report = await engine.runtime.runner.probe()
    if report.error is None:
        variables = {name: info for name, info in variables.items() if info.source != "kernel"}
        variables.update(report.variables)
    if variables != snap.variables:
        await engine.commit(snap.model_copy(update={"variables": variables}))


async def inputs_done(engine: EngineHost) -> bool:
    """True once this workflow's inputs cell was started under a contract (any status)."""
    workflow_id = engine.snapshot.workflow_id
    key = INPUTS_PATH.key
    contracts = await engine.store.call(lambda s: s.contracts(workflow_id))
    return any(
        c.action_type == "cell_execution" and c.metadata.get("path") == key for c in contracts
    )


def inputs_source(engine: EngineHost) -> str:
    """The inputs cell's code: the problem and the input files, relative to the notebook.

    Paths are relative to the kernel's working directory (the notebook's folder unless
    ``--cwd`` says otherwise), so the notebook stays portable: it runs again wherever the
    folder is copied. A file on another drive stays absolute.
    """
    snap = engine.snapshot
    runtime = engine.runtime
    folder = runtime.session.cwd or runtime.notebook_path.parent
    files = [portable_path(path, folder) for path in snap.files]
    return (
        "# notebook-bcc inputs: the problem to solve and the submitted files\n"
        f"user_problem = {snap.problem!r}\n"
        f"user_submit_files = {files!r}\n"
    )


async def inputs_cell(executor: ActionExecutor) -> None:
    """The inputs cell (``user_problem`` / ``user_submit_files``, seed 000), run first.

    Written on every start, whatever the notebook holds: after the user's cells, or in
    place of the blank cell JupyterLab puts in a new notebook. Tagged ``INPUTS_TAG`` so
    tools (and a parameters cell) can find it. Executed under its own contract like any
    action, so the notebook runs on its own later.
    """
    runtime = executor.engine.runtime
    blank = runtime.document.blank_trailing_cell()
    if blank is not None:
        runtime.document.remove(blank)
        runtime.writer.absorb(blank)
    source = inputs_source(executor.engine)
    if await run_setup_cell(executor, source, INPUTS_TAG, INPUTS_PATH, "inputs"):
        await inject_parameters(executor)
        await setup_variables(executor.engine)
