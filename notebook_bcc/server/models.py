"""The REST API's own wire models: request bodies and the documents the endpoints answer.

The workflow itself travels as the shared models (:class:`WorkflowSnapshot`, the D3
:class:`Command`, the D4 :class:`WorkflowEvent`); what is here wraps them for HTTP. Every model
refuses unknown keys (``WireModel``), so a misspelt option is a 400 naming it instead of a
silently ignored setting. ``openapi.json`` is generated from these models.

Planner specs are a tagged union on ``kind``: ``blueprint``, ``replay``, ``http`` and ``llm``
(a kind an installation cannot run is answered 501 ``planner_unavailable``). Specs never
carry secrets: an LLM key is read from the server's environment (``api_key_env`` names the
variable; by default ``NOTEBOOK_BCC_LLM_API_KEY``, else ``OPENAI_API_KEY``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt

from notebook_bcc.blueprint.parameters import MAX_PARAMETERS
from notebook_bcc.models.base import WireModel
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import RunStatus, WorkflowSnapshot
from notebook_bcc.server.limits import (
    MAX_FILES,
    MAX_NAME_CHARS,
    MAX_PATH_CHARS,
    MAX_PROBLEM_CHARS,
    MAX_URL_CHARS,
)


class BlueprintPlannerSpec(WireModel):
    """``{"kind": "blueprint", "path": P}``: a D14 YAML blueprint at API path ``P``."""

    kind: Literal["blueprint"]
    path: str = Field(
        min_length=1,
        max_length=MAX_PATH_CHARS,
        description="API path of the blueprint, under the root.",
    )


class ReplayPlannerSpec(WireModel):
    """``{"kind": "replay", "path": P}``: answers recorded in a transcript (not available yet)."""

    kind: Literal["replay"]
    path: str = Field(
        min_length=1, max_length=MAX_PATH_CHARS, description="API path of the recorded transcript."
    )


class HttpPlannerSpec(WireModel):
    """``{"kind": "http", "url": U}``: a DSLC-compatible planning server (not available yet)."""

    kind: Literal["http"]
    url: str = Field(
        pattern=r"^https?://",
        max_length=MAX_URL_CHARS,
        description="Base URL of the planning server.",
    )
    timeout: float | None = Field(default=None, gt=0, description="Seconds per request.")
    state_case: Literal["upper", "lower"] | None = Field(
        default=None, description="Case of FSM state names sent to the server (D21)."
    )


class LlmPlannerSpec(WireModel):
    """``{"kind": "llm", "model": M, "base_url": U}``: an OpenAI-compatible chat API.

    ``base_url`` includes the API version (``http://127.0.0.1:11434/v1``); it may come from
    the server's ``default_planner``, and a spec without one is refused (400).
    """

    kind: Literal["llm"]
    model: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    base_url: str | None = Field(
        default=None,
        pattern=r"^https?://",
        max_length=MAX_URL_CHARS,
        description="The API root with its version; requests go to {base_url}/chat/completions.",
    )
    api_key_env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        max_length=MAX_NAME_CHARS,
        description="Name of the server environment variable holding the API key (default: "
        "NOTEBOOK_BCC_LLM_API_KEY, else OPENAI_API_KEY).",
    )
    temperature: float | None = Field(default=None, ge=0, le=2)
    stream: bool | None = Field(default=None, description="Stream answers (default: true).")
    max_tokens: int | None = Field(default=None, ge=1, description="Cap on reply tokens.")
    max_parse_retries: int | None = Field(
        default=None,
        ge=0,
        le=10,
        description="Times an unusable reply is sent back with its error before the run "
        "fails (default: 2).",
    )
    templates: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_PATH_CHARS,
        description="A folder under the server root (API path) whose <agent-id>.md and "
        "feedback.md files replace the shipped prompt templates.",
    )


PlannerSpec = Annotated[
    BlueprintPlannerSpec | ReplayPlannerSpec | HttpPlannerSpec | LlmPlannerSpec,
    Field(discriminator="kind"),
]
"""Where a workflow's decisions come from."""


MAX_HOPS = 100_000
"""The largest stage-entry cap a client may ask for."""
MAX_CELL_TIMEOUT = 7 * 24 * 3600.0
"""The longest per-cell timeout a client may ask for (a week); larger values overflowed."""


class RunOptions(WireModel):
    """Per-workflow options; an omitted key takes the server's configured default."""

    auto_confirm: StrictBool | None = Field(
        default=None,
        description="Approve updates, stage and irreversible confirmations and kernel rebuilds "
        "as they arise (never an in-doubt action, D3).",
    )
    confirm_irreversible: StrictBool | None = Field(
        default=None, description="Ask a human before an irreversible action runs (D9)."
    )
    max_hops: StrictInt | None = Field(
        default=None, ge=1, le=MAX_HOPS, description="Cap on stage entries (D16)."
    )
    cell_timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_CELL_TIMEOUT,
        allow_inf_nan=False,
        description="Seconds per cell (at most a week).",
    )


class CreateWorkflowRequest(WireModel):
    """``POST /workflows``: start a workflow on a notebook (created when missing)."""

    notebook_path: str = Field(
        min_length=1,
        max_length=MAX_PATH_CHARS,
        description="API path of the .ipynb, relative to the server root.",
    )
    planner: PlannerSpec | None = Field(
        default=None, description="Omitted: the server's configured default planner."
    )
    problem: str | None = Field(
        default=None, max_length=MAX_PROBLEM_CHARS, description="The user's problem statement."
    )
    files: list[Annotated[str, Field(max_length=MAX_PATH_CHARS)]] = Field(
        default_factory=list,
        max_length=MAX_FILES,
        description="Input files as API paths; the kernel sees them relative to the "
        "notebook's folder (user_submit_files).",
    )
    files_relative_to: Literal["root", "notebook"] = Field(
        default="root",
        description="How `files` are named: `root` (API paths, the default) or `notebook` "
        "(relative to the notebook's folder, `..` allowed while the result stays under the "
        "server root; what the panel's start form sends).",
    )
    planner_paths_relative_to: Literal["root", "notebook"] = Field(
        default="root",
        description="How the planner's paths given here (`planner.path` of a blueprint or a "
        "replay, `planner.templates`) are named: `root` (API paths, the default) or "
        "`notebook` (relative to the notebook's folder, as `files_relative_to`; what the "
        "panel's start form sends, so a blueprint and input files typed next to each other "
        "resolve from the same folder).",
    )
    parameters: dict[str, Any] = Field(
        default_factory=dict,
        max_length=MAX_PARAMETERS,
        description="Run parameters (papermill's `-p NAME VALUE`): plain JSON values, checked "
        "against a blueprint's `parameters:` section (undeclared, mistyped or missing ones are "
        "a 400 naming the parameter; declared defaults are filled in); a replay uses the "
        "recorded ones. Injected into the `injected-parameters` cell before the first action.",
    )
    options: RunOptions = Field(default_factory=RunOptions)
    fresh_kernel: StrictBool | None = Field(
        default=None,
        description="Restart the notebook's kernel before the run starts. Omitted: restarted "
        "only when it still holds the state of an earlier workflow of this notebook (a re-run "
        "must not read the variables the last run left behind); `false` keeps it as it is.",
    )


class PlannerKind(WireModel):
    """One planner kind and whether this server runs it (the panel greys out the others)."""

    kind: Literal["blueprint", "replay", "http", "llm"]
    available: bool
    reason: str | None = Field(default=None, description="Why it is not available.")
    defaults: dict[str, Any] = Field(
        default_factory=dict,
        description="The server's default_planner keys for this kind (never secrets).",
    )


class PlannerList(WireModel):
    """``GET /planners``: every planner kind of the API, in a stable order."""

    planners: list[PlannerKind]


class NotRecovered(WireModel):
    """Why a restarted server does not drive an active workflow (its commands answer 409)."""

    reason: Literal["altered", "not_recovered"] = Field(
        description="'altered': the store fails its checks (tampered or damaged); "
        "'not_recovered': its settings could not be taken up (e.g. a planner path outside "
        "the server root)."
    )
    message: str = Field(description="Why, in words (its commands' 409 message ends with it).")


class WorkflowSummary(WireModel):
    """One line of ``GET /workflows``."""

    workflow_id: str
    notebook_path: str | None
    version: int
    state: str = Field(description="The FSM state.")
    run_status: RunStatus
    reason: str | None = None
    pending: int = Field(description="How many decisions wait for a human.")
    active: bool = Field(description="Holds its notebook (one active workflow per notebook).")
    released: Literal["finished", "deleted", "replaced"] | None = Field(
        default=None,
        description="Why it no longer holds its notebook (null while it does): 'finished' (its "
        "run completed or was cancelled; the notebook is free for a new workflow), 'deleted' "
        "(DELETE, the panel's Delete) or 'replaced' (a newer workflow started on its notebook).",
    )
    live: bool = Field(description="An engine drives it in this server process.")
    running: bool = Field(description="Its run loop is executing right now.")
    recovering: bool = Field(
        default=False,
        description=(
            "This server is bringing it back after a restart (its engine and kernel prepared, "
            "completed cells replayed): live once that ends; commands and its stream wait."
        ),
    )
    last_activity: str | None = Field(
        default=None, description="When its FSM or run status last changed (ISO 8601)."
    )
    kernel_id: str | None = Field(
        default=None, description="The session kernel it runs on (live workflows only)."
    )
    not_recovered: NotRecovered | None = Field(
        default=None,
        description="Set when this server, at start-up, refused to recover it (and why).",
    )


class WorkflowList(WireModel):
    """``GET /workflows``: the workflows the store knows, oldest first."""

    workflows: list[WorkflowSummary]


class TraceDocument(WireModel):
    """``GET /workflows/{id}/trace``: the full FSM history and the execution trace."""

    workflow_id: str
    history: list[HistoryEntry]
    trace: list[TraceRecord]


class DiagramDocument(WireModel):
    """``GET /workflows/{id}/diagram``: a Mermaid ``stateDiagram-v2`` with the current state
    marked by the ``current`` class."""

    workflow_id: str
    machine: Literal["fsm", "stages"]
    current: str | None
    mermaid: str


class FsmTransition(WireModel):
    """One row of seed 003's table."""

    from_: str = Field(alias="from")
    event: str
    to: str


class FsmDocument(WireModel):
    """``GET /fsm``: the 14 states, 22 events and 46 transitions (seed 003 and one beyond it)."""

    states: list[str]
    events: list[str]
    transitions: list[FsmTransition]


class StreamSnapshot(WireModel):
    """A websocket message that is not a D4 event: the whole snapshot.

    Sent first on every connection (``reason: "hello"``), again when a client read too slowly
    and events were dropped for it (``"resync"``), and last when the workflow leaves this
    server (``"closed"``). Every other message is a bare :class:`WorkflowEvent`; a client tells
    them apart by the ``type`` key, which events never have. Events whose ``version`` is not
    above the last snapshot's are already reflected in it.
    """

    type: Literal["snapshot"] = "snapshot"
    reason: Literal["hello", "resync", "closed"]
    snapshot: WorkflowSnapshot


class ErrorBody(WireModel):
    """Every error answer: ``{code, message, details}``."""

    code: str = Field(description="Machine-readable: bad_request, conflict, not_found, ...")
    message: str
    details: dict[str, Any] = Field(default_factory=dict)
