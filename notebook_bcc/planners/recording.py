"""``--record DIR``: any planner, its answers written down as they are given.

:class:`RecordingPlanner` wraps a planner (the blueprint, the HTTP planner, even a replay) and
appends each exchange to ``DIR/transcript.jsonl`` (format in :mod:`.transcript`) before handing
the answer to the engine. On the first request it writes the header and copies the run's input
files to ``DIR/inputs/``, so the directory alone is enough to replay the run offline
(``notebook-bcc run DIR --planner replay``). Stage routes are recorded too, so a blueprint's
loops replay the same way. The wrapper is transparent: ``kind`` is the wrapped planner's, and
attributes the engine looks up on a planner (``fail_steps_on_gaps``, ``stage_item``) are
forwarded; its settings add ``record`` so ``resume`` keeps recording into the same directory.
"""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.models.base import utc_now_iso
from notebook_bcc.models.snapshot import PlanItem, WorkflowSnapshot
from notebook_bcc.planners.base import (
    Planner,
    PlannerReply,
    PlannerRequest,
    RejectedReply,
    StageRoute,
)
from notebook_bcc.planners.capabilities import fails_steps_on_gaps
from notebook_bcc.planners.transcript import (
    INPUTS,
    TRANSCRIPT,
    ErrorEntry,
    Exchange,
    RecordedFile,
    TranscriptError,
    TranscriptHeader,
    append_line,
    read_transcript,
    request_digest,
    route_json,
    where,
)
from notebook_bcc.planners.wrapper import PlannerWrapper
from notebook_bcc.workflow.damage import repair_lines

ERROR_DETAIL_CHARS = 20_000
"""Longest string kept in an error line's details (bodies of refused responses)."""


REPLY_REJECTED = "reply_rejected"
"""Error-line code of a reply the planner could not use and sent back (the LLM planner's
parse-feedback retries): the body is in ``details``, the answer that followed is the next
exchange."""


def _bounded(value: Any) -> Any:
    if isinstance(value, str) and len(value) > ERROR_DETAIL_CHARS:
        return value[:ERROR_DETAIL_CHARS]
    if isinstance(value, dict):
        return {str(k): _bounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_bounded(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


class RecordingPlanner(PlannerWrapper):
    """Records every answer of ``inner`` to ``directory`` (see the module docstring).

    ``append=False`` (a new run) refuses a directory that already holds a transcript;
    ``append=True`` (``resume``) continues it.
    """

    def __init__(self, inner: Planner, directory: Path, *, append: bool = False) -> None:
        super().__init__(inner)
        self.directory = directory.resolve()
        existing = read_transcript(self.directory)
        if not append and (existing.header is not None or existing.exchanges):
            raise TranscriptError(
                f"{self.directory / TRANSCRIPT} already holds a recording; "
                "choose an empty directory for --record"
            )
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TranscriptError(f"cannot create {self.directory}: {exc}") from exc
        self._header_written = existing.header is not None
        self._count = len(existing.exchanges)

    def settings(self) -> dict[str, Any]:
        """The wrapped planner's settings plus ``record`` (this directory)."""
        return {**self.inner.settings(), "record": str(self.directory)}

    @property
    def exchanges(self) -> int:
        """Exchanges recorded so far."""
        return self._count

    # -- recording ------------------------------------------------------------------------

    def _ensure_header(self, snapshot: WorkflowSnapshot) -> None:
        if self._header_written:
            return
        inputs = self.directory / INPUTS
        recorded: list[RecordedFile] = []
        used: set[str] = set()
        for source in snapshot.files:
            path = Path(source)
            if not path.is_file():
                recorded.append(RecordedFile(source=source))
                continue
            name = path.name
            stem, suffix, counter = path.stem, path.suffix, 1
            while name in used:
                counter += 1
                name = f"{stem}-{counter}{suffix}"
            used.add(name)
            try:
                inputs.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, inputs / name)
            except OSError as exc:
                raise TranscriptError(f"cannot copy input {path} to {inputs}: {exc}") from exc
            recorded.append(RecordedFile(source=source, path=f"{INPUTS}/{name}"))
        header = TranscriptHeader(
            planner={"kind": self.inner.kind, "settings": self.inner.settings()},
            problem=snapshot.problem,
            files=recorded,
            parameters=dict(snapshot.parameters),
            workflow_id=snapshot.workflow_id,
            fail_steps_on_gaps=fails_steps_on_gaps(self.inner),
            recorded_at=utc_now_iso(),
        )
        append_line(self.directory, header)
        self._header_written = True

    def _exchange(self, request: PlannerRequest, **fields: Any) -> Exchange:
        state, location = where(request)
        self._count += 1
        return Exchange(
            n=self._count,
            point=request.point,
            fsm_state=state,
            location=location,
            calls=request.snapshot.usage.calls,
            request_digest=request_digest(request),
            at=utc_now_iso(),
            **fields,
        )

    def _error_line(
        self, request: PlannerRequest, code: str, message: str, details: dict[str, Any]
    ) -> None:
        state, location = where(request)
        append_line(
            self.directory,
            ErrorEntry(
                after=self._count,
                point=request.point,
                fsm_state=state,
                location=location,
                code=code,
                message=message,
                details=_bounded(details),
                at=utc_now_iso(),
            ),
        )

    def _error(self, request: PlannerRequest, exc: NotebookBccError) -> None:
        self._error_line(request, exc.code, exc.message, exc.details)

    def _rejected(self, request: PlannerRequest, number: int, rejected: RejectedReply) -> None:
        """An unusable reply that came before the answer (replay skips it, as any error line)."""
        self._error_line(
            request, REPLY_REJECTED, rejected.error, {"reply": number, "body": rejected.body}
        )

    async def _around(
        self,
        request: PlannerRequest,
        call: Callable[[PlannerRequest], Awaitable[PlannerReply | None]],
    ) -> PlannerReply | None:
        self._ensure_header(request.snapshot)
        try:
            reply = await call(request)
        except NotebookBccError as exc:
            self._error(request, exc)
            raise
        if reply is None:
            line = self._exchange(request)
        else:
            for number, rejected in enumerate(reply.rejected, start=1):
                self._rejected(request, number, rejected)
            line = self._exchange(
                request,
                body=reply.body,
                content_type=reply.content_type,
                payload=reply.payload.model_dump(mode="json"),
                repairs=repair_lines(reply.payload),
            )
        append_line(self.directory, line)
        return reply

    async def route_stage(
        self, request: PlannerRequest, *, decided: Literal["success", "failure"] | None = None
    ) -> StageRoute:
        """The wrapped planner's stage route, recorded with the plan item of its target."""
        self._ensure_header(request.snapshot)
        try:
            route = await self.inner.route_stage(request, decided=decided)
        except NotebookBccError as exc:
            self._error(request, exc)
            raise
        fields: dict[str, Any] = {"decided": decided, "route": route_json(route)}
        item = self._stage_item(request.snapshot, route.target)
        if item is not None:
            fields["stage_item"] = item.model_dump(mode="json")
        reply = getattr(self.inner, "last_route_reply", None)
        if isinstance(reply, PlannerReply):
            fields.update(
                body=reply.body,
                content_type=reply.content_type,
                payload=reply.payload.model_dump(mode="json"),
                repairs=repair_lines(reply.payload),
            )
        append_line(self.directory, self._exchange(request, **fields))
        return route

    def _stage_item(self, snapshot: WorkflowSnapshot, target: str | None) -> PlanItem | None:
        """The plan item the engine will need for ``target`` when the plan does not hold it."""
        maker = getattr(self.inner, "stage_item", None)
        if target is None or maker is None:
            return None
        stages = snapshot.location.progress.stages
        planned = [*stages.remaining, *stages.completed]
        if stages.current is not None:
            planned.append(stages.current)
        if any(item.id == target for item in planned):
            return None
        try:
            made = maker(target)
        except NotebookBccError:
            return None
        return made if isinstance(made, PlanItem) else None


__all__ = ["RecordingPlanner"]
