"""The orphan-kernel sweep of a restarted server acts only on what its own kernel manager made.

The kernel record comes from the store, which nothing vouches for between two servers: a record
naming any process and any file must not make the next server kill that process or delete that
file. Real processes stand in for kernels (a kernel is a process started with ``-f PATH``).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from notebook_bcc.models.snapshot import KernelRecord
from notebook_bcc.server.orphans import end_orphan

SLEEPER = "import sys, time; time.sleep(120)"


@pytest.fixture
def spawn() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def _process(started: list[subprocess.Popen[bytes]], *args: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([sys.executable, "-c", SLEEPER, *args], start_new_session=True)
    started.append(process)
    return process


def _end(record: KernelRecord, connection_dir: Path) -> str:
    outcome = asyncio.run(
        end_orphan(record, live_kernel_ids=set(), connection_dir=str(connection_dir))
    )
    return outcome.status


def test_a_kernel_started_with_its_connection_file_here_is_ended_and_its_file_removed(
    tmp_path: Path, spawn: list[subprocess.Popen[bytes]]
) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    connection = runtime / "kernel-abc.json"
    connection.write_text("{}")
    kernel = _process(spawn, "-f", str(connection))
    record = KernelRecord(kernel_id="abc", connection_file=str(connection), pid=kernel.pid)
    assert _end(record, runtime) == "killed"
    assert kernel.wait(timeout=10) == -9
    assert not connection.exists()


def test_a_record_pointing_outside_the_runtime_directory_ends_nothing_and_removes_nothing(
    tmp_path: Path, spawn: list[subprocess.Popen[bytes]]
) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    elsewhere = tmp_path / "decoy"
    elsewhere.mkdir()
    victim_file = elsewhere / "walkdecoy"
    victim_file.write_text("precious")
    victim = _process(spawn, str(victim_file))
    record = KernelRecord(kernel_id="abc", connection_file=str(victim_file), pid=victim.pid)
    assert _end(record, runtime) == "none"
    assert victim.poll() is None, "a process the store named was killed"
    assert victim_file.read_text() == "precious"


def test_a_process_that_only_mentions_the_file_name_is_not_taken_for_the_kernel(
    tmp_path: Path, spawn: list[subprocess.Popen[bytes]]
) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    connection = runtime / "kernel-abc.json"
    connection.write_text("{}")
    bystander = _process(spawn, "kernel-abc.json")
    record = KernelRecord(kernel_id="abc", connection_file=str(connection), pid=bystander.pid)
    assert _end(record, runtime) == "gone"
    assert bystander.poll() is None, "a process merely naming the file was killed"
    assert not connection.exists(), "the stale connection file in the runtime dir is removed"
