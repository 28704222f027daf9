"""The setup cells' namespace is in the snapshot from the start, not from the first boundary.

The inputs cell (``user_problem``, ``user_submit_files``) and the parameters cell run before
any action; the Variables view, planners and ``when`` expressions read
``snapshot.variables``. Checked at the moment the first action starts, on a real kernel.
"""

from __future__ import annotations

from notebook_bcc.engine.engine import Engine
from notebook_bcc.engine.headless import HeadlessRun, open_headless
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.snapshot import VariableInfo
from tests.engine.conftest import EngineHarness, run_once


def test_inputs_and_parameters_are_variables_before_the_first_action(
    harness: EngineHarness,
) -> None:
    seen: list[dict[str, VariableInfo]] = []

    async def scenario() -> None:
        engine: Engine = await open_headless(
            HeadlessRun(
                planner=harness.planner("confirm"),
                notebook=harness.notebook,
                state_db=harness.state_db,
                problem="Predict the price",
                parameters={"alpha": 0.5, "label": "x"},
                options=EngineOptions(),
            )
        )

        def on_event(event: WorkflowEvent) -> None:
            if event.kind == "transition" and event.event == "START_ACTION" and not seen:
                seen.append(dict(engine.snapshot.variables))

        engine.subscribe(on_event)
        await run_once(engine, "waiting")

    harness.run(scenario)
    (variables,) = seen
    assert variables["user_problem"].value == "Predict the price"
    assert variables["user_problem"].source == "kernel"
    assert variables["user_submit_files"].type == "list"
    assert variables["alpha"].value == 0.5
    assert variables["label"].value == "x"
    assert "reviewed" not in variables  # the first action had not run yet
