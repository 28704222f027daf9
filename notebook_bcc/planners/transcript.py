"""The transcript of a recorded run: ``DIR/transcript.jsonl`` plus the inputs in ``DIR/inputs/``.

One JSON object per line, in order:

- a ``header``: the recorded planner (kind and settings), the problem text, the input files
  (copied under ``inputs/``), the workflow id, whether steps with gaps fail (D15);
- one ``exchange`` per answer: the decision point, the FSM state and ``location.current`` it
  was asked in, how many answers the run had before (``calls``, to find the place again on
  resume), the SHA-256 of the canonical request JSON (informational: observations hold
  timestamps), then the body as received with its Content-Type and the decoded payload model
  (``payload``, the protocol layer's JSON dump). ``route_stage`` exchanges hold the
  :class:`~notebook_bcc.planners.base.StageRoute` fields instead (and the human's ``decided``);
- an ``error`` line where the planner failed (informational; replay skips it).

Every exchange's answer is decoded when the transcript is read (:func:`decoded_payload`, the
parser the replay answers with), so a recording with a bad answer is refused before a run
starts, naming the file and line, instead of failing the run at that answer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from notebook_bcc.planners.base import PlannerError, PlannerRequest, StageRoute

TRANSCRIPT = "transcript.jsonl"
"""The transcript's file name inside the record directory."""

INPUTS = "inputs"
"""The folder (inside the record directory) holding copies of the run's input files."""

MAX_TRANSCRIPT_BYTES = 64_000_000
"""Largest ``transcript.jsonl`` read back (a long LLM run records a few MB)."""

FORMAT = "notebook-bcc-transcript"
VERSION = 1
"""The version this release writes."""

SUPPORTED_VERSIONS: tuple[int, ...] = (VERSION,)
"""The header ``version`` numbers this release reads; any other is refused on load."""


class TranscriptError(PlannerError):
    """A transcript that cannot be read or written (names the file and line).

    A planner error, so a transcript that cannot be written fails the run with its reason
    (D1) instead of crashing the engine.
    """

    code = "transcript_error"


class UnsupportedTranscriptVersionError(TranscriptError):
    """A header whose ``version`` is not one this release reads (a newer or unknown number,
    or not a number at all): refused when the transcript is loaded, so a replay never plays a
    format it does not understand as if it were its own."""

    code = "transcript_version"


class _Line(BaseModel):
    model_config = ConfigDict(extra="ignore")


class RecordedFile(_Line):
    """An input file: where it was (``source``) and its copy (``path``, relative to DIR)."""

    source: str
    path: str | None = Field(default=None, description="None when the file could not be copied.")


class TranscriptHeader(_Line):
    """The first line: what was recorded and with which inputs."""

    type: Literal["header"] = "header"
    format: str = FORMAT
    version: int = VERSION
    planner: dict[str, Any] = Field(description="{kind, settings} of the recorded planner.")
    problem: str | None = None
    files: list[RecordedFile] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="The run's parameters (-p); a replay uses them."
    )
    workflow_id: str | None = None
    fail_steps_on_gaps: bool = False
    recorded_at: str | None = None


class Exchange(_Line):
    """One answer of the planner, where it was asked and what it was."""

    type: Literal["exchange"] = "exchange"
    n: int = Field(description="1-based position among the exchanges.")
    point: str
    fsm_state: str
    location: dict[str, Any]
    calls: int = Field(description="Planner answers the run had counted before this request.")
    request_digest: str
    at: str | None = None
    body: str | None = None
    content_type: str | None = None
    payload: dict[str, Any] | None = None
    repairs: list[str] = Field(
        default_factory=list, description="What the parser repaired in the body, one a line."
    )
    decided: str | None = None
    route: dict[str, Any] | None = None
    stage_item: dict[str, Any] | None = None


class ErrorEntry(_Line):
    """A planner failure seen while recording (informational)."""

    type: Literal["error"] = "error"
    after: int = Field(description="How many exchanges were recorded before it.")
    point: str
    fsm_state: str
    location: dict[str, Any]
    code: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)
    at: str | None = None


class Transcript(BaseModel):
    """A transcript read back: header, exchanges in order, errors."""

    header: TranscriptHeader | None = None
    exchanges: list[Exchange] = Field(default_factory=list)
    errors: list[ErrorEntry] = Field(default_factory=list)


def canonical_json(value: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 characters kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def request_digest(request: PlannerRequest) -> str:
    """SHA-256 of the canonical JSON of what the planner was shown."""
    doc = {"observation": request.observation, "behavior_feedback": request.behavior_feedback}
    return hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


def where(request: PlannerRequest) -> tuple[str, dict[str, Any]]:
    """(FSM state, ``location.current`` as JSON) of a request."""
    snapshot = request.snapshot
    return snapshot.fsm.state.value, snapshot.location.current.model_dump(mode="json")


def route_json(route: StageRoute) -> dict[str, Any]:
    """A stage route as JSON."""
    data = asdict(route)
    data["warnings"] = list(route.warnings)
    return data


def route_from_json(data: dict[str, Any]) -> StageRoute:
    """A stage route back from :func:`route_json`."""
    values = dict(data)
    values["warnings"] = tuple(values.get("warnings") or ())
    return StageRoute(**values)


def read_transcript(directory: Path) -> Transcript:
    """Read ``DIR/transcript.jsonl``; a missing file gives an empty transcript."""
    path = directory / TRANSCRIPT
    transcript = Transcript()
    if not path.exists():
        return transcript
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read the transcript: {exc.strerror}") from None
    if size > MAX_TRANSCRIPT_BYTES:
        raise TranscriptError(
            f"{path}: the transcript is {size} bytes; the limit is {MAX_TRANSCRIPT_BYTES}"
        )
    if not path.is_file():
        raise TranscriptError(f"{path}: not a file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read the transcript: {exc.strerror}") from None
    for number, encoded in enumerate(raw.splitlines(), start=1):
        try:
            line = encoded.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TranscriptError(
                f"{path}:{number}: not UTF-8 text (byte {exc.start + 1} of the line)"
            ) from None
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            kind = data.get("type") if isinstance(data, dict) else None
            if kind == "header":
                if transcript.header is not None:
                    raise TranscriptError(f"{path}:{number}: a second header")
                _check_version(path, number, data)
                transcript.header = TranscriptHeader.model_validate(data)
            elif kind == "exchange":
                exchange = Exchange.model_validate(data)
                _check_answer(path, number, exchange)
                transcript.exchanges.append(exchange)
            elif kind == "error":
                transcript.errors.append(ErrorEntry.model_validate(data))
            else:
                raise TranscriptError(f"{path}:{number}: unknown line type {kind!r}")
        except ValidationError as exc:
            raise TranscriptError(
                f"{path}:{number}: not a transcript line: {_first_error(exc)}"
            ) from None
        except ValueError as exc:
            raise TranscriptError(f"{path}:{number}: not a transcript line: {exc}") from None
    if transcript.header is not None and transcript.header.format != FORMAT:
        raise TranscriptError(f"{path}: not a notebook-bcc transcript")
    return transcript


def decoded_payload(exchange: Exchange) -> Any | None:
    """The typed payload a recorded answer replays as (None when it holds no answer): the
    stored ``payload`` model, else its ``body`` parsed again. Used by the replay and, on
    load, to refuse a transcript holding an answer it could not play back."""
    from notebook_bcc.protocol.parse import parse_payload
    from notebook_bcc.protocol.payloads import PayloadModel

    if exchange.payload is not None:
        return PayloadModel.model_validate(exchange.payload).root
    if exchange.body is not None:
        return parse_payload(exchange.body, "auto")
    return None


def _check_answer(path: Path, number: int, exchange: Exchange) -> None:
    """Refuse (naming the file and line) an exchange whose answer cannot be replayed."""
    from notebook_bcc.protocol.errors import ProtocolError

    what = f"{path}:{number}: exchange {exchange.n} ({exchange.point})"
    try:
        decoded_payload(exchange)
    except ValidationError as exc:
        raise TranscriptError(f"{what}: bad recorded payload: {_first_error(exc)}") from None
    except ProtocolError as exc:
        raise TranscriptError(f"{what}: bad recorded body: {exc.message}") from None


def _check_version(path: Path, number: int, header: dict[str, Any]) -> None:
    """Refuse a header of this format whose ``version`` is not in :data:`SUPPORTED_VERSIONS`
    (an integer, not ``"1"`` or ``true``); a header of another format is refused as such
    later, one without a version reads as the current one."""
    if header.get("format", FORMAT) != FORMAT or "version" not in header:
        return
    version = header["version"]
    if type(version) is int and version in SUPPORTED_VERSIONS:
        return
    shown = json.dumps(version, ensure_ascii=False)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    supported = ", ".join(str(number) for number in SUPPORTED_VERSIONS)
    raise UnsupportedTranscriptVersionError(
        f"{path}:{number}: unsupported transcript version {shown}; this notebook-bcc reads "
        f"version {supported}",
        details={
            "path": str(path),
            "line": number,
            "version": version,
            "supported": list(SUPPORTED_VERSIONS),
        },
    )


def _first_error(exc: ValidationError) -> str:
    """A validation error in one line: where and what of the first problem."""
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "the line"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


def append_line(directory: Path, line: BaseModel) -> None:
    """Append one line to ``DIR/transcript.jsonl`` and flush it."""
    path = directory / TRANSCRIPT
    text = line.model_dump_json(exclude_none=False)
    try:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text + "\n")
            handle.flush()
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot write the transcript: {exc}") from exc
