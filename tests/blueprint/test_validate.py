"""``validate_file`` / ``validate_text``: reports, summaries, issue formatting."""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_bcc.blueprint.validate import Issue, validate_file, validate_text
from tests.conftest import FIXTURES

BLUEPRINTS = FIXTURES / "blueprints"


def test_issue_format() -> None:
    assert Issue(12, "boom").format("f.yaml") == "f.yaml:12: boom"
    assert Issue(12, "boom").format("f.yaml", prefix="warning: ") == "f.yaml:12: warning: boom"
    assert Issue(None, "boom").format("f.yaml") == "f.yaml: boom"
    assert Issue(3, "x") == (3, "x")


def test_valid_blueprint_summary() -> None:
    path = str(BLUEPRINTS / "housing.yaml")
    report = validate_file(path)
    assert report.ok
    assert report.errors == []
    assert report.warnings == []
    assert report.summary == (
        f"{path}: valid blueprint 'housing': 5 stages, 5 steps, 5 behaviors, 5 transitions, "
        "start data_existence, ends: done, failed"
    )
    assert report.loaded is not None
    assert report.loaded.kind == "blueprint"


def test_seed004_machine_summary_and_warning() -> None:
    path = str(BLUEPRINTS / "seed004.yaml")
    report = validate_file(path)
    assert report.ok
    assert report.summary == (
        f"{path}: valid state machine 'orchestrate': 5 states, 5 transitions, "
        "start clarification, ends: done, failed (1 warning)"
    )
    assert report.warnings == [Issue(17, "state 'done' is unreachable from 'clarification'")]


def test_warnings_fixture() -> None:
    report = validate_file(BLUEPRINTS / "warnings.yaml")
    assert report.ok
    assert [issue.line for issue in report.warnings] == [7, 15]
    assert "never fires" in report.warnings[1].message


def test_bad_rules_report_every_rule_error_with_its_line() -> None:
    report = validate_file(BLUEPRINTS / "bad_rules.yaml")
    assert not report.ok
    assert [(issue.line, issue.message.split(" ")[0]) for issue in report.errors] == [
        (13, "transitions[1]"),
        (17, "transitions[2].on:"),
        (21, "transitions[3]"),
        (25, "transitions[4]"),
    ]
    assert report.summary.endswith("invalid: 4 errors")


@pytest.mark.parametrize(
    ("name", "count"),
    [("bad_structure.yaml", 7), ("bad_syntax.yaml", 1), ("not_mapping.yaml", 1)],
)
def test_broken_fixtures_fail_with_lines(name: str, count: int) -> None:
    report = validate_file(BLUEPRINTS / name)
    assert len(report.errors) == count
    assert all(issue.line is not None for issue in report.errors)


def test_missing_file_is_one_error_without_traceback(tmp_path: Path) -> None:
    report = validate_file(tmp_path / "absent.yaml")
    assert len(report.errors) == 1
    assert report.errors[0].line is None
    assert "cannot read" in report.errors[0].message


def test_directory_is_one_error(tmp_path: Path) -> None:
    report = validate_file(tmp_path)
    assert len(report.errors) == 1


def test_validate_text_unnamed() -> None:
    report = validate_text("states: {a: {}}\n")
    assert report.ok
    assert report.summary.startswith("<string>: valid blueprint: 1 stage, 0 steps")
    assert report.summary.endswith("ends: after the last state")


def test_skip_policy_is_accepted() -> None:
    report = validate_text("states: {a: {}}\nwhen_errors: skip\n", "x.yaml")
    assert report.ok
    assert report.loaded is not None
    assert report.loaded.machine.when_errors == "skip"
