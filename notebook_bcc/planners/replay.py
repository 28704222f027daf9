"""``--planner replay``: a recorded run's answers played back, offline.

:class:`ReplayPlanner` reads ``DIR/transcript.jsonl`` (written by ``--record DIR``) and answers
each request with the next recorded exchange: the decoded payload model as it was applied
(the body and Content-Type come along), or the recorded stage route. Each request must come
in the recorded decision point, FSM state and ``location.current``; a mismatch is a
:class:`~notebook_bcc.planners.base.PlannerError` naming the exchange, so the run fails there
(D1) instead of wandering off the recording. The request digest is informational
(observations hold timestamps): :attr:`ReplayPlanner.digest_mismatches` counts differences.
Error lines of the recording are skipped: replay plays decisions, not outages.

Resume: a replay planner rebuilt for a stored run finds its place from the number of answers
the run has counted (``usage.calls``, recorded with each exchange) and the request's point,
state and location. The run's inputs are the recorded ones: :attr:`ReplayPlanner.problem`
and :meth:`ReplayPlanner.files` (copies under ``DIR/inputs/``).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Literal

from notebook_bcc.models.snapshot import PlanItem
from notebook_bcc.planners.base import PlannerError, PlannerReply, PlannerRequest, StageRoute
from notebook_bcc.planners.transcript import (
    TRANSCRIPT,
    Exchange,
    Transcript,
    TranscriptError,
    decoded_payload,
    read_transcript,
    request_digest,
    route_from_json,
    where,
)


def _describe(point: str, state: str, location: dict[str, Any]) -> str:
    parts = [f"{key}={location[key]}" for key in sorted(location) if location[key] is not None]
    return f"{point} at {state} ({', '.join(parts) or 'no location'})"


class ReplayPlanner:
    """Plays a transcript back (see the module docstring)."""

    kind = "replay"

    def __init__(self, directory: Path) -> None:
        self.directory = directory.resolve()
        transcript: Transcript = read_transcript(self.directory)
        if transcript.header is None:
            raise TranscriptError(
                f"{self.directory / TRANSCRIPT}: no recording here (record one with --record DIR)"
            )
        self.header = transcript.header
        self.exchanges: list[Exchange] = transcript.exchanges
        self.fail_steps_on_gaps = self.header.fail_steps_on_gaps
        """As the recorded planner (D15: blueprint steps with gaps fail without asking)."""
        self.digest_mismatches = 0
        """Requests whose digest differs from the recorded one (informational)."""
        self._cursor: int | None = None

    # -- metadata -------------------------------------------------------------------------

    @property
    def problem(self) -> str | None:
        """The recorded run's problem text."""
        return self.header.problem

    @property
    def parameters(self) -> dict[str, Any]:
        """The recorded run's parameters (``-p``), used again by the replay."""
        return dict(self.header.parameters)

    def files(self) -> list[Path]:
        """The recorded run's input files (their copies under ``DIR/inputs/``)."""
        missing = [f.source for f in self.header.files if f.path is None]
        if missing:
            raise TranscriptError(
                f"{self.directory}: input file(s) were not copied when recording: "
                + ", ".join(missing)
            )
        paths = []
        for index, recorded in enumerate(self.header.files):
            if recorded.path is None:
                continue
            rel = PurePosixPath(recorded.path.replace("\\", "/"))
            if rel.is_absolute() or ".." in rel.parts or not rel.parts:
                raise TranscriptError(
                    f"{self.directory / TRANSCRIPT}: header files[{index}].path "
                    f"{recorded.path!r} must be relative to the record folder, without '..'"
                )
            paths.append(self.directory.joinpath(*rel.parts))
        return paths

    def settings(self) -> dict[str, Any]:
        """``transcript`` (the directory), what was recorded and its hop cap."""
        recorded = self.header.planner
        settings: dict[str, Any] = {
            "transcript": str(self.directory),
            "recorded_kind": recorded.get("kind"),
        }
        hops = (recorded.get("settings") or {}).get("max_hops")
        if isinstance(hops, int):
            settings["max_hops"] = hops
        return settings

    @property
    def position(self) -> int:
        """Exchanges played so far (0 before the first request)."""
        return self._cursor or 0

    # -- finding the exchange -------------------------------------------------------------

    def _locate(self, request: PlannerRequest) -> int:
        calls = request.snapshot.usage.calls
        state, location = where(request)
        later = [i for i, ex in enumerate(self.exchanges) if ex.calls >= calls]
        for index in later:
            ex = self.exchanges[index]
            if ex.calls != calls:
                break
            if (ex.point, ex.fsm_state, ex.location) == (request.point, state, location):
                return index
        return later[0] if later else len(self.exchanges)

    def _next(self, request: PlannerRequest) -> Exchange:
        if self._cursor is None:
            self._cursor = self._locate(request)
        state, location = where(request)
        asked = _describe(request.point, state, location)
        if self._cursor >= len(self.exchanges):
            raise PlannerError(
                f"replay: the recording ends after exchange {len(self.exchanges)}; "
                f"the run asks {asked}",
                details={"exchange": len(self.exchanges) + 1, "asked": asked},
            )
        ex = self.exchanges[self._cursor]
        if (ex.point, ex.fsm_state, ex.location) != (request.point, state, location):
            recorded = _describe(ex.point, ex.fsm_state, ex.location)
            raise PlannerError(
                f"replay: exchange {ex.n} was recorded as {recorded}, but the run asks {asked}",
                details={"exchange": ex.n, "recorded": recorded, "asked": asked},
            )
        if ex.request_digest != request_digest(request):
            self.digest_mismatches += 1
        self._cursor += 1
        return ex

    # -- answers --------------------------------------------------------------------------

    def _reply(self, ex: Exchange) -> PlannerReply | None:
        payload = decoded_payload(ex)
        if payload is None:
            return None
        return PlannerReply(payload, ex.body or "", ex.content_type or "")

    def _required(self, request: PlannerRequest) -> PlannerReply:
        ex = self._next(request)
        reply = self._reply(ex)
        if reply is None:
            raise PlannerError(f"replay: exchange {ex.n} holds no answer for {request.point}")
        return reply

    async def plan_stages(self, request: PlannerRequest) -> PlannerReply:
        """The recorded stages."""
        return self._required(request)

    async def plan_steps(self, request: PlannerRequest) -> PlannerReply:
        """The recorded steps."""
        return self._required(request)

    async def plan_behavior(self, request: PlannerRequest) -> PlannerReply | None:
        """The recorded behavior (None where the recorded planner kept the current one)."""
        return self._reply(self._next(request))

    async def generate_actions(self, request: PlannerRequest) -> PlannerReply:
        """The recorded actions."""
        return self._required(request)

    async def reflect_behavior(self, request: PlannerRequest) -> PlannerReply:
        """The recorded behavior reflection."""
        return self._required(request)

    async def reflect_stage(self, request: PlannerRequest) -> PlannerReply:
        """The recorded stage reflection."""
        return self._required(request)

    async def route_stage(
        self, request: PlannerRequest, *, decided: Literal["success", "failure"] | None = None
    ) -> StageRoute:
        """The recorded stage route; a different human answer than recorded is a mismatch."""
        ex = self._next(request)
        if ex.decided != decided and self._answered_next(ex, decided):
            # the recorded pause (no answer yet) was played by the process that stopped for
            # the human; this one, resumed with the answer, takes the answered route after it
            ex = self._next(request)
        if ex.route is None:
            raise PlannerError(f"replay: exchange {ex.n} holds no stage route")
        if ex.decided != decided:
            raise PlannerError(
                f"replay: exchange {ex.n} was routed with the human answer {ex.decided!r}, "
                f"but the run answered {decided!r}",
                details={"exchange": ex.n},
            )
        return route_from_json(ex.route)

    def _answered_next(self, ex: Exchange, decided: str | None) -> bool:
        """Whether the exchange after ``ex`` is the same stage route, answered ``decided``."""
        if self._cursor is None or self._cursor >= len(self.exchanges):
            return False
        following = self.exchanges[self._cursor]
        return (
            ex.decided is None
            and following.decided == decided
            and (following.point, following.fsm_state, following.location)
            == (ex.point, ex.fsm_state, ex.location)
        )

    def stage_item(self, stage_id: str) -> PlanItem | None:
        """The plan item recorded with a route to ``stage_id`` (None when none was)."""
        for ex in self.exchanges:
            if ex.stage_item is not None and ex.stage_item.get("id") == stage_id:
                return PlanItem.model_validate(ex.stage_item)
        return None

    async def aclose(self) -> None:
        """Nothing to release."""


__all__ = ["ReplayPlanner"]
