"""The scripted test servers as a user starts them (``python -m notebook_bcc.testing.NAME
DIR --port N``): a port another process holds, or one that is no port, is one ``error:`` line
naming it and a non-zero exit, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

SERVERS = [
    pytest.param("scripted_dslc", FIXTURES / "dslc", id="dslc"),
    pytest.param("scripted_llm", FIXTURES / "llm" / "conversation", id="llm"),
]


def _serve(module: str, folder: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``python -m notebook_bcc.testing.MODULE FOLDER FLAGS``, output captured (a server that
    did start would run until the timeout: the test then fails instead of hanging)."""
    return subprocess.run(
        [sys.executable, "-m", f"notebook_bcc.testing.{module}", str(folder), *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(("module", "folder"), SERVERS)
def test_a_port_in_use_is_one_line_naming_it(module: str, folder: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = _serve(module, folder, "--port", str(port))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: cannot listen on 127.0.0.1 port {port}: ")
    assert f"port {port} is already in use by another process" in line
    assert done.stdout == ""


@pytest.mark.parametrize(("module", "folder"), SERVERS)
def test_a_port_out_of_range_is_refused_by_the_flag(module: str, folder: Path) -> None:
    done = _serve(module, folder, "--port", "70000")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "argument --port: 70000 is not a port number (0 to 65535)" in done.stderr
