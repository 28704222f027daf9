"""A kernel we own that dies while starting (a port race) is started again, not fatal."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from notebook_bcc.kernel.errors import KernelStartError
from notebook_bcc.kernel.session import START_ATTEMPTS, KernelSession


class DeadOnArrival:
    """A kernel manager whose kernels never come up; counts shutdowns."""

    def __init__(self) -> None:
        self.shutdowns = 0

    async def shutdown_kernel(self, now: bool = False) -> None:
        self.shutdowns += 1


def test_a_failed_start_is_retried_each_time_on_a_new_manager(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each failed attempt's manager is shut down (which destroys its zmq context), so the next
    attempt makes a new one, as ``_start_once`` does when the session holds none."""
    session = KernelSession()
    managers: list[DeadOnArrival] = []

    async def flaky() -> Any:
        if session._km is None:
            session._km = DeadOnArrival()
        managers.append(session._km)
        if len(managers) < START_ATTEMPTS:
            raise KernelStartError("Address already in use")
        return "started"

    monkeypatch.setattr(session, "_start_once", flaky)
    assert asyncio.run(session._start()) == "started"
    assert len(managers) == START_ATTEMPTS
    assert len({id(m) for m in managers}) == START_ATTEMPTS, "a new manager per attempt"
    assert [m.shutdowns for m in managers] == [1] * (START_ATTEMPTS - 1) + [0]


def test_a_start_that_keeps_failing_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    session = KernelSession()
    session._km = DeadOnArrival()

    async def dead() -> Any:
        raise KernelStartError("kernel died")

    monkeypatch.setattr(session, "_start_once", dead)
    with pytest.raises(KernelStartError, match="kernel died"):
        asyncio.run(session._start())


def test_a_borrowed_kernel_is_not_restarted(monkeypatch: pytest.MonkeyPatch) -> None:
    manager = DeadOnArrival()
    session = KernelSession(km=manager)
    calls: list[int] = []

    async def dead() -> Any:
        calls.append(1)
        raise KernelStartError("kernel died")

    monkeypatch.setattr(session, "_start_once", dead)
    with pytest.raises(KernelStartError):
        asyncio.run(session._start())
    assert calls == [1]
    assert manager.shutdowns == 0
