"""The suite cannot pass by skipping (issue 19.6).

Every skip for something missing goes through ``tests.conftest.require_or_skip`` (or its
``requires`` mark), which ``NOTEBOOK_BCC_REQUIRE_ALL=1`` turns into a failure. This test reads
the test sources and refuses any other ``pytest.skip`` / ``skipif`` / ``importorskip``; the few
allowed ones are listed with why. It also checks the switch itself, in a child pytest.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

ALLOWED = {
    "conftest.py": "the helper itself",
    "release/test_wheel.py": "a NOTEBOOK_BCC_SLOW gate, not a missing binary",
    "engine/test_lost_state.py": "a NOTEBOOK_BCC_SLOW gate, not a missing binary",
    "server/test_server_crash.py": "a NOTEBOOK_BCC_SLOW gate (CI kills one chained run instead)",
    "kernel/test_probe.py": "a kernel already holding pandas (test order), not a missing binary",
}

_SKIP = re.compile(r"pytest\.skip\(|\.skipif\(|importorskip\(|pytest\.mark\.skip\b")


def test_every_skip_goes_through_require_or_skip() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        relative = path.relative_to(TESTS).as_posix()
        if relative in ALLOWED or path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if _SKIP.search(line):
                offenders.append(f"tests/{relative}:{number}: {line.strip()}")
    assert offenders == [], "use tests.conftest.require_or_skip / requires:\n" + "\n".join(
        offenders
    )


def _child_pytest(target: Path | str, env: dict[str, str], *extra: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(target), "-q", "-p", "no:cacheprovider", *extra],
        cwd=TESTS.parent,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return done.returncode, done.stdout


_SEED = re.compile(r"hypothesis seed: (\d+) \(replay: pytest --hypothesis-seed=\1\)")


def test_the_require_switch_fails_missing_binaries_and_each_session_has_a_fresh_seed(
    pytestconfig: pytest.Config,
) -> None:
    probe = TESTS / "_require_probe_test.py"
    probe.write_text(
        "from tests.conftest import require_or_skip, requires\n\n\n"
        "@requires(False, 'no such binary (mark)')\n"
        "def test_marked():\n    pass\n\n\n"
        "def test_called():\n    require_or_skip(False, 'no such binary (call)')\n",
        encoding="utf-8",
    )
    try:
        on = _child_pytest(probe, {"NOTEBOOK_BCC_REQUIRE_ALL": "1", "CI": "true"})
        off = _child_pytest(probe, {"NOTEBOOK_BCC_REQUIRE_ALL": "0"}, "--hypothesis-seed=12345")
    finally:
        probe.unlink()
    assert off[0] == 0, off[1]
    assert "2 skipped" in off[1]
    assert on[0] == 1, on[1]
    assert "1 failed, 1 error" in on[1], "the mark fails in setup, the call in the test"
    for which in ("mark", "call"):
        assert (
            f"no such binary ({which}) (NOTEBOOK_BCC_REQUIRE_ALL=1: a missing binary is a failure)"
            in on[1]
        )
    seed = _SEED.search(on[1])
    assert seed, on[1]
    ours = pytestconfig.getoption("hypothesis_seed")
    assert seed.group(1) != ours, "a fresh seed each session (this one's differs)"
    assert "hypothesis seed: 12345 (replay: pytest --hypothesis-seed=12345)" in off[1]


def test_the_ci_profile_is_not_derandomised() -> None:
    from hypothesis import settings

    assert settings.get_profile("notebook_bcc_ci").derandomize is False
    assert settings.get_profile("notebook_bcc_ci").deadline is None
