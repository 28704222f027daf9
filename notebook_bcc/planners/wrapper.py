"""A transparent planner around another one, for wrappers that observe every call.

The recording planner (``--record``: a transcript) and the exchange log (the store's
``planner_exchanges``) both sit between the engine and a planner and must look exactly like
it: the same ``kind``, settings and optional capabilities, and every decision point handed
through one hook, :meth:`PlannerWrapper._around`, which calls the wrapped planner and notes
what happened. This base holds that delegation once; each wrapper writes only its hook (and
``route_stage``, whose call is not a plain request/reply).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from notebook_bcc.planners.base import Planner, PlannerReply, PlannerRequest

Call = Callable[[PlannerRequest], Awaitable[PlannerReply | None]]
"""One decision point of the wrapped planner."""


class PlannerWrapper:
    """Forwards everything to ``inner``; every decision point goes through :meth:`_around`."""

    def __init__(self, inner: Planner) -> None:
        self.inner = inner
        self.kind: str = inner.kind
        """The wrapped planner's kind (the wrapper is transparent)."""

    def __getattr__(self, name: str) -> Any:
        """Forward what the engine, the server or the CLI looks up on the wrapped planner."""
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def settings(self) -> dict[str, Any]:
        """The wrapped planner's settings."""
        return self.inner.settings()

    async def _around(self, request: PlannerRequest, call: Call) -> PlannerReply | None:
        """Call ``call`` for ``request`` and note it (each wrapper's own job)."""
        raise NotImplementedError

    async def _required(
        self,
        request: PlannerRequest,
        call: Callable[[PlannerRequest], Awaitable[PlannerReply]],
    ) -> PlannerReply:
        reply = await self._around(request, call)
        assert reply is not None, "the wrapped planner returned None where a reply is required"
        return reply

    # -- the decision points --------------------------------------------------------------

    async def plan_stages(self, request: PlannerRequest) -> PlannerReply:
        """The wrapped planner's stages."""
        return await self._required(request, self.inner.plan_stages)

    async def plan_steps(self, request: PlannerRequest) -> PlannerReply:
        """The wrapped planner's steps."""
        return await self._required(request, self.inner.plan_steps)

    async def plan_behavior(self, request: PlannerRequest) -> PlannerReply | None:
        """The wrapped planner's behavior (None: an exchange without a body)."""
        return await self._around(request, self.inner.plan_behavior)

    async def generate_actions(self, request: PlannerRequest) -> PlannerReply:
        """The wrapped planner's actions."""
        return await self._required(request, self.inner.generate_actions)

    async def reflect_behavior(self, request: PlannerRequest) -> PlannerReply:
        """The wrapped planner's behavior reflection."""
        return await self._required(request, self.inner.reflect_behavior)

    async def reflect_stage(self, request: PlannerRequest) -> PlannerReply:
        """The wrapped planner's stage reflection."""
        return await self._required(request, self.inner.reflect_stage)

    async def aclose(self) -> None:
        """Close the wrapped planner."""
        await self.inner.aclose()


__all__ = ["Call", "PlannerWrapper"]
