"""The ``notebook_bcc`` server extension application.

A good citizen of jupyter_server: it authenticates through the server, runs kernels through
the server's session and kernel managers, reads and writes notebooks through its contents
manager, and takes its settings from Jupyter config (``c.NotebookBccApp.<trait>`` in
``jupyter_server_config.py``, or ``--NotebookBccApp.<trait>=`` on the command line). The
workflow service is built in :meth:`initialize_settings`, the routes in
:meth:`initialize_handlers`; background work lives and dies with the extension
(:meth:`stop_extension` interrupts running workflows the D1 way before the server shuts its
kernels down).
"""

from __future__ import annotations

import gc
import logging
import os
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir
from jupyter_server.extension.application import ExtensionApp
from traitlets import (
    Bool,
    CaselessStrEnum,
    Dict,
    Float,
    Integer,
    List,
    Unicode,
    default,
    validate,
)

from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.server.coedit import Coediting, ydoc_extension
from notebook_bcc.server.coedit_handlers import COEDIT_SETTING, coedit_routes
from notebook_bcc.server.contents import Contents
from notebook_bcc.server.event_handlers import event_routes
from notebook_bcc.server.exchange_handlers import exchange_routes
from notebook_bcc.server.file_ids import DB_NAME as FILE_IDS_DB
from notebook_bcc.server.file_ids import FILE_IDS_SETTING, FileIdFollower, crawled_file_ids
from notebook_bcc.server.follow import NotebookFollower
from notebook_bcc.server.handlers import SERVICE_SETTING, route_table
from notebook_bcc.server.kernels import Kernels
from notebook_bcc.server.replace_save import install_replace_on_save
from notebook_bcc.server.service import ServiceSettings, WorkflowService
from notebook_bcc.server.store_place import (
    claim_store,
    default_store_path,
    legacy_store,
    legacy_store_notice,
)
from notebook_bcc.store.errors import StoreUnavailableError


class NotebookBccApp(ExtensionApp):
    """Jupyter server extension that hosts the workflow FSM per notebook.

    It runs inside ``jupyter lab`` / ``jupyter server`` next to the other extensions
    (``load_other_extensions``), so the JupyterLab panel and the workflow engine share the
    server's kernels, contents and authentication.
    """

    name = "notebook_bcc"
    description = "Run DSLC workflows in real notebooks, driven from a JupyterLab panel."
    load_other_extensions = True

    store_path = Unicode(
        help="The SQLite file holding every workflow's state, history and trace. The default "
        "is a folder of its own per server root under jupyter_data_dir() (survives reboots, "
        "unlike the runtime dir). A store belongs to one root: a server with another root "
        "refuses it."
    ).tag(config=True)

    default_planner = Dict(
        help='The planner used when a request names none, e.g. {"kind": "blueprint", '
        '"path": "workflow.yaml"}; for a request naming the same kind, its keys fill the ones '
        "the request omits. Never put secrets here: name the environment variable instead."
    ).tag(config=True)

    allowed_planners = List(
        CaselessStrEnum(["blueprint", "replay", "http", "llm"]),
        default_value=["blueprint", "replay", "http", "llm"],
        help="Planner kinds clients may start. The http and llm planners make this server "
        "call other servers; drop them to forbid that. A refused kind answers 501 with the "
        "reason, and the panel shows it greyed out.",
    ).tag(config=True)

    llm_key_envs = List(
        Unicode(),
        default_value=["NOTEBOOK_BCC_LLM_API_KEY", "OPENAI_API_KEY"],
        help="The environment variables a client may name as an llm planner's api_key_env. "
        "The key is sent to the base_url the client chooses, so any other variable of this "
        "server's environment (a hub token, a cloud key) is refused with a 400.",
    ).tag(config=True)

    auto_confirm = Bool(
        False,
        help="Default for options.auto_confirm: approve updates, stage and irreversible "
        "confirmations and kernel rebuilds as they arise (never an in-doubt action).",
    ).tag(config=True)

    confirm_irreversible = Bool(
        True,
        help="Default for options.confirm_irreversible: ask a human before an irreversible "
        "action runs (D9).",
    ).tag(config=True)

    max_hops = Integer(
        None,
        allow_none=True,
        help="Default cap on stage entries (D16); None: 10 x the number of stages.",
    ).tag(config=True)

    max_iterations = Integer(
        3, help="Default cap on a behavior's iterations within a step (D15)."
    ).tag(config=True)

    cell_timeout = Float(
        None,
        allow_none=True,
        help="Default seconds a cell may run before the kernel is interrupted; None: no limit.",
    ).tag(config=True)

    kernel_name = Unicode(
        "python3",
        help="Kernel spec for a notebook that has no session yet (an open notebook's "
        "session kernel is reused whatever its spec).",
    ).tag(config=True)

    write_debounce = Float(
        1.0,
        help="Seconds a notebook change waits before it is saved through the contents "
        "manager (it is also saved at every behavior boundary).",
    ).tag(config=True)

    restart_policy = CaselessStrEnum(
        ["resume", "wait"],
        default_value="resume",
        help="What to do at start-up with workflows an earlier server left running: 'resume' "
        "them or leave them 'wait'ing for a client.",
    ).tag(config=True)

    stream_buffer = Integer(
        1000,
        help="Events queued per websocket client; a client that falls further behind gets a "
        "fresh snapshot instead of the events it missed.",
    ).tag(config=True)

    replace_on_save = Bool(
        True,
        help="Make the server's file contents manager save by writing a temporary file and "
        "renaming it over the target, so a notebook being saved (a workflow saves after every "
        "cell) is never read half written by JupyterLab or anyone else. Off: jupyter_server's "
        "own in-place writing. Has no effect with use_atomic_writing off or non-file backends.",
    ).tag(config=True)

    stop_timeout = Float(
        10.0,
        help="Seconds to wait for a running cell to finish when a workflow is deleted or the "
        "server stops, before cancelling it.",
    ).tag(config=True)

    freeze_gc_at_start = Bool(
        True,
        help="Once the server has started, move every object it holds then (the modules of "
        "jupyter_server, JupyterLab and their extensions) out of the garbage collector's reach "
        "(gc.freeze). Those objects live as long as the server anyway; without this each full "
        "collection walks them all again, about 0.1 s of a held event loop every few seconds "
        "while workflows run, which shows as latency spikes in every request and event. Off: "
        "the interpreter's default.",
    ).tag(config=True)

    @default("store_path")
    def _default_store_path(self) -> str:
        root = self.serverapp.root_dir if self.serverapp is not None else os.getcwd()
        return str(default_store_path(jupyter_data_dir(), root))

    @validate("max_hops", "max_iterations", "stream_buffer")
    def _positive_int(self, proposal: Any) -> Any:
        value = proposal["value"]
        if value is not None and value < 1:
            raise ValueError(f"{proposal['trait'].name} must be at least 1, got {value}")
        return value

    @validate("cell_timeout", "write_debounce", "stop_timeout")
    def _non_negative(self, proposal: Any) -> Any:
        value = proposal["value"]
        if value is not None and value < 0:
            raise ValueError(f"{proposal['trait'].name} must not be negative, got {value}")
        return value

    service: WorkflowService | None = None

    def service_settings(self) -> ServiceSettings:
        """The service's settings from this app's traits."""
        return ServiceSettings(
            store_path=Path(self.store_path),
            server_root=self.serverapp.root_dir if self.serverapp is not None else None,
            engine=EngineOptions(
                auto_confirm=self.auto_confirm,
                confirm_irreversible=self.confirm_irreversible,
                max_hops=self.max_hops,
                cell_timeout=self.cell_timeout or None,
                max_iterations=self.max_iterations,
                kernel_name=self.kernel_name,
                write_debounce=self.write_debounce,
            ),
            default_planner=dict(self.default_planner),
            stream_buffer=self.stream_buffer,
            stop_timeout=self.stop_timeout,
            restart_policy=self.restart_policy,
            allowed_planners=tuple(kind.lower() for kind in self.allowed_planners),
            llm_key_envs=tuple(self.llm_key_envs),
        )

    def initialize_settings(self) -> None:
        """Build the workflow service on the server's contents, session and kernel managers."""
        assert self.serverapp is not None
        server = self.serverapp
        self._route_package_log()
        if self.replace_on_save and install_replace_on_save(server.contents_manager):
            self.log.info("notebook_bcc: the contents manager saves by rename (replace_on_save)")
        self.service = WorkflowService(
            self.service_settings(),
            Contents(server.contents_manager),
            Kernels(server.session_manager, server.kernel_manager),
        )
        self.settings[SERVICE_SETTING] = self.service
        self.service.coedit = Coediting(ydoc=ydoc_extension(server))
        self.settings[COEDIT_SETTING] = self.service.coedit
        root, db = server.root_dir, Path(self.store_path).parent / FILE_IDS_DB
        try:
            claim_store(Path(self.store_path), root)
        except StoreUnavailableError as exc:
            # every request answers this (503); the file ids beside that store are another
            # root's, so they are neither crawled nor followed here
            self.log.error("notebook_bcc: %s", exc.message)
            return
        self.log.info("notebook_bcc: the workflow store of this root is %s", self.store_path)
        legacy = legacy_store(jupyter_data_dir(), Path(self.store_path))
        if legacy is not None:
            self.log.warning("notebook_bcc: %s", legacy_store_notice(legacy, Path(self.store_path)))
        follower = NotebookFollower(self.service)
        follower.install(server.event_logger)
        # the file-id manager is built once the loop runs, on a worker thread (its crawl of
        # the root would hold up the server's start); checks and writes wait for it
        self.service.file_ids = FileIdFollower(follower, build=lambda: crawled_file_ids(root, db))
        self.settings[FILE_IDS_SETTING] = self.service.file_ids

    def _route_package_log(self) -> None:
        """Send the package's module loggers (``notebook_bcc.server.writer``, ...) to this
        app's log, at its level: a module logger has no handler of its own, so without this
        its info and debug lines went nowhere and its warnings reached stderr unformatted."""
        package = logging.getLogger("notebook_bcc")
        package.setLevel(self.log.level)
        package.propagate = False
        # this app's handlers, not added to an earlier app's (one process may start several)
        package.handlers = list(self.log.handlers)

    def initialize_handlers(self) -> None:
        """Register the routes; ExtensionApp prefixes each with the server's base_url."""
        self.handlers.extend(
            [*coedit_routes(), *exchange_routes(), *event_routes(), *route_table()]
        )

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Once the event loop runs: open the store and apply the restart policy."""
        if self.service is not None:
            if isinstance(self.service.file_ids, FileIdFollower):
                self.service.file_ids.start()
            try:
                await self.service.start()
            except StoreUnavailableError as exc:
                self.log.error("notebook_bcc: the workflow store did not open: %s", exc.message)
        if self.freeze_gc_at_start:
            gc.freeze()
            self.log.info(
                "notebook_bcc: %d objects of the started server moved out of the garbage "
                "collector's reach (freeze_gc_at_start)",
                gc.get_freeze_count(),
            )

    def current_activity(self) -> list[dict[str, Any]] | None:
        """Running workflows, so an idle-shutdown server does not stop in the middle of one."""
        if self.service is None:
            return None
        return self.service.activity() or None

    async def stop_extension(self) -> None:
        """Interrupt running workflows (the running cell finishes), close the store."""
        if self.service is not None:
            await self.service.close()
            if self.service.file_ids is not None:
                self.service.file_ids.close()
