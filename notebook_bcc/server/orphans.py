"""Kernels a dead server left behind: found from the store and ended before anything resumes.

A server killed with SIGKILL cannot shut its kernels down. ipykernel's parent poller ends an
orphan about a second later when it watches its parent, but not every kernel does (a kernel
started through a wrapper, with ``parent_handle`` off, or not ipykernel at all), and an orphan
that goes on may still be finishing an irreversible cell nobody observes. So before a recovered
workflow settles its in-doubt actions, the kernel its snapshot names is checked: when that
process still runs here and is that kernel (its command line names the recorded connection
file), its process group is killed and the connection file removed. The workflow then runs on a
new session kernel whose state is rebuilt by replaying the completed reversible cells (D11).

A kernel on another host (a kernel gateway) is left to its owner and reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from dataclasses import dataclass
from pathlib import Path
from time import monotonic

from notebook_bcc.models.snapshot import KernelRecord

log = logging.getLogger(__name__)

GONE_TIMEOUT = 5.0
"""Seconds to wait for a killed orphan to disappear."""


@dataclass(frozen=True)
class OrphanOutcome:
    """What became of a workflow's recorded kernel: ``none`` (no record or not ours to
    judge), ``gone`` (already ended), ``killed``, or ``kept`` (this server runs it)."""

    status: str
    detail: str


def _alive(pid: int) -> bool:
    """True when ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def _is_kernel(pid: int, record: KernelRecord) -> bool:
    """True when process ``pid`` is the recorded kernel (pid reuse would name another): one of
    its arguments is the recorded connection file's full path (``-f PATH``, ``-f=PATH``,
    ``--f=PATH``), not merely a command line that mentions its name somewhere. A record
    without a connection file names no process this server may judge."""
    if not record.connection_file:
        return False
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    wanted = os.fsencode(record.connection_file)
    return any(arg == wanted or arg.split(b"=", 1)[-1] == wanted for arg in argv[1:])


def _ours(record: KernelRecord, connection_dir: str | None) -> bool:
    """Whether the recorded connection file is one this server's kernel manager would have
    written: a ``.json`` file directly in its connection (runtime) directory. The record
    comes from the store, which nothing vouches for between two servers; a record pointing
    elsewhere must not make this server kill a process or delete a file."""
    if not record.connection_file or not connection_dir:
        return False
    try:
        path = Path(record.connection_file)
        folder = Path(connection_dir).resolve()
    except (OSError, ValueError):
        return False
    return (
        path.is_absolute()
        and path.suffix == ".json"
        and ".." not in path.parts
        and path.parent.resolve() == folder
        and not path.is_symlink()
    )


def _kill(pid: int) -> None:
    """SIGKILL the kernel's process group (it was started in a session of its own), or just
    the process when it leads no group."""
    try:
        group = os.getpgid(pid)
    except ProcessLookupError:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group == pid:
            os.killpg(group, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)


def _by_connection_file(record: KernelRecord) -> int | None:
    """The live process started with the recorded connection file (a kernel restarted under
    the same id keeps its connection file but gets a new pid)."""
    if not record.connection_file:
        return None
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            pid = int(entry.name)
            if _is_kernel(pid, record) and _alive(pid):
                return pid
    return None


async def end_orphan(
    record: KernelRecord | None, *, live_kernel_ids: set[str], connection_dir: str | None
) -> OrphanOutcome:
    """End the kernel ``record`` names if a dead server left it running (module docstring).
    Only a kernel whose connection file lies in ``connection_dir`` (this server's kernel
    manager's) is judged; any other record is reported and left alone."""
    if record is None:
        return OrphanOutcome("none", "no kernel recorded")
    if record.kernel_id in live_kernel_ids:
        return OrphanOutcome("kept", f"kernel {record.kernel_id} belongs to this server")
    if record.host is not None and record.host != socket.gethostname():
        return OrphanOutcome("none", f"kernel {record.kernel_id} ran on host {record.host}")
    if not _ours(record, connection_dir):
        return OrphanOutcome(
            "none",
            f"kernel {record.kernel_id}: its recorded connection file "
            f"{record.connection_file!r} is not in this server's runtime directory "
            f"{connection_dir}; no process was ended and no file removed",
        )
    outcome = OrphanOutcome("gone", f"kernel {record.kernel_id} had ended")
    pid = record.pid
    if pid is None or not (_alive(pid) and _is_kernel(pid, record)):
        pid = _by_connection_file(record)
    if pid is not None and _alive(pid) and _is_kernel(pid, record):
        _kill(pid)
        deadline = monotonic() + GONE_TIMEOUT
        while _alive(pid) and monotonic() < deadline:
            await asyncio.sleep(0.05)
        if _alive(pid):
            return OrphanOutcome("none", f"orphan kernel {record.kernel_id} (pid {pid}) survived")
        outcome = OrphanOutcome("killed", f"orphan kernel {record.kernel_id} (pid {pid}) killed")
    if record.connection_file:
        with contextlib.suppress(OSError):
            Path(record.connection_file).unlink()
    return outcome


__all__ = ["OrphanOutcome", "end_orphan"]
