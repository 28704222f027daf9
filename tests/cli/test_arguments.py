"""Mistyped command lines: one line that names the mistake (and the option meant), exit 2."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["run", "examples/housing", "--auto-confrim"],
            "notebook-bcc run: error: unrecognized arguments: --auto-confrim "
            "(did you mean --auto-confirm?)",
        ),
        (
            ["resume", "--state-db", "s.sqlite", "--aprove"],
            "notebook-bcc resume: error: unrecognized arguments: --aprove "
            "(did you mean --approve?)",
        ),
        (
            ["run", "examples/housing", "--max-hops", "abc"],
            "notebook-bcc run: error: argument --max-hops: invalid int value: 'abc'",
        ),
        (
            ["status", "--state-db", "s.sqlite", "extra"],
            "notebook-bcc status: error: unrecognized arguments: extra",
        ),
    ],
)
def test_a_mistyped_command_line_says_what_is_wrong_in_one_line(argv: list[str], said: str) -> None:
    answered = run_cli(*argv)
    assert answered.returncode == 2, answered.stderr
    lines = answered.stderr.splitlines()
    assert lines[0] == said, answered.stderr
    assert lines[1:] == [f"(see notebook-bcc {argv[0]} --help)"], answered.stderr
    assert answered.stdout == ""
