"""Acceptance criteria evaluated silently in a real kernel."""

from __future__ import annotations

import pytest

from notebook_bcc.kernel import ProbeConfig, criterion_problem, evaluate_criteria
from notebook_bcc.kernel.checks import behavior_checks
from notebook_bcc.models.actions import AddAction, ExecAction
from tests.kernel.conftest import KernelHarness, path

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module", autouse=True)
def _variables(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    source = (
        "rmse = 24000.0\nrows = 506\nimport time\ndef slow():\n    time.sleep(20)\n    return True"
    )
    kh.act(runner, AddAction(content=source, shot_type="action"), path(0))
    assert kh.act(runner, ExecAction(codecell_id="lastAddedCellId"), path(1)).ok


def test_pass_fail_and_error_each_on_its_own(kh: KernelHarness) -> None:
    results = kh.run(
        evaluate_criteria(
            kh.session,
            ["rmse < 25000", "rows > 1000", "undefined_name > 1", "rows == 506  # comment"],
        )
    )
    assert results["rmse < 25000"].status == "passed"
    assert results["rows > 1000"].status == "failed"
    assert results["undefined_name > 1"].status == "error"
    assert "NameError" in (results["undefined_name > 1"].message or "")
    assert results["rows == 506  # comment"].status == "passed"
    assert list(results) == [
        "rmse < 25000",
        "rows > 1000",
        "undefined_name > 1",
        "rows == 506  # comment",
    ]


def test_walrus_and_statements_are_refused_before_reaching_the_kernel(kh: KernelHarness) -> None:
    assert criterion_problem("(x := 1)") is not None
    assert criterion_problem("import os") is not None
    assert criterion_problem("rows > 1") is None
    results = kh.run(evaluate_criteria(kh.session, ["(leak := rows) > 0", "x = 1"]))
    assert results["(leak := rows) > 0"].status == "error"
    assert "walrus" in (results["(leak := rows) > 0"].message or "")
    assert results["x = 1"].status == "error"
    assert kh.value("'leak' in globals()") == "False"


def test_a_hanging_criterion_times_out_alone(kh: KernelHarness) -> None:
    results = kh.run(evaluate_criteria(kh.session, ["rows > 1", "slow()", "rmse > 0"], timeout=1.0))
    assert results["rows > 1"].status == "passed"
    assert results["slow()"].status == "error"
    assert "timed out" in (results["slow()"].message or "")
    assert results["rmse > 0"].status == "passed"
    assert kh.value("rows") == "506"


def test_evaluation_leaves_namespace_history_and_counter_alone(kh: KernelHarness) -> None:
    probe = "(len(In), get_ipython().execution_count, repr(_), sorted(globals())[:0])"
    before = kh.value(probe)
    kh.run(evaluate_criteria(kh.session, ["rmse < 25000", "rows"]))
    assert kh.value(probe) == before


def test_runner_acceptance_is_the_same_evaluation(kh: KernelHarness) -> None:
    runner, _ = kh.runner()
    results = kh.run(runner.acceptance(["rows == 506"]))
    assert results["rows == 506"].status == "passed"


def test_probe_and_criteria_in_one_request_each_answered_on_its_own(kh: KernelHarness) -> None:
    """The behavior boundary's one silent request: the variables report and every criterion,
    a hanging one interrupted alone (the probe before it and the criterion after it answer)."""
    report, results = kh.run(
        behavior_checks(
            kh.session,
            ["rows", "not_there"],
            ["rows > 1", "slow()", "rmse > 0", "undefined_name"],
            ProbeConfig(timeout=1.0),
            timeout=1.0,
        )
    )
    assert report.error is None
    assert report.variables["rows"].type == "int"
    assert report.present == {"rows": "variable", "not_there": None}
    assert [(c, r.status) for c, r in results.items()] == [
        ("rows > 1", "passed"),
        ("slow()", "error"),
        ("rmse > 0", "passed"),
        ("undefined_name", "error"),
    ]
    assert "timed out" in (results["slow()"].message or "")
    assert "NameError" in (results["undefined_name"].message or "")
