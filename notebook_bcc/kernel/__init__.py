"""The kernel-side client: actions -> nbformat cells -> nbclient on a live kernel -> results.

A library the engine (and the server, with its own kernels) calls; it knows nothing of the
workflow FSM. Importing it imports nbformat (~1 s): keep it out of ``--help`` paths.

- :class:`KernelSession` -- one warm kernel, executed the D22 way (signal handlers untouched);
- :class:`NotebookDocument` -- the in-memory notebook the workflow builds;
- :class:`ActionRunner` -- applies protocol actions, runs ``exec`` once, returns outcomes;
- :func:`probe_variables`, :func:`evaluate_criteria` -- silent variables / acceptance probes;
- :class:`CellSink`, :class:`MemorySink`, :class:`JsonlSink`, :class:`NotebookWriter` --
  where finished cells go;
- :func:`open_notebook_kernel` -- all of the above wired for one notebook path.
"""

from notebook_bcc.kernel.acceptance import criterion_problem, evaluate_criteria
from notebook_bcc.kernel.cell_ids import ActionPath, cell_id_for
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.effects import EffectsConfig, effects_for
from notebook_bcc.kernel.errors import (
    KernelBusyError,
    KernelDeadError,
    KernelError,
    KernelStartError,
    NotebookWriteError,
)
from notebook_bcc.kernel.open import NotebookKernel, open_notebook_kernel
from notebook_bcc.kernel.probe import ProbeConfig, probe_variables
from notebook_bcc.kernel.probe_install import install_code
from notebook_bcc.kernel.results import (
    ActionOutcome,
    CellRecord,
    ErrorInfo,
    ExecResult,
    ExecStatus,
    KernelEvent,
    VariablesReport,
)
from notebook_bcc.kernel.runner import ActionRunner
from notebook_bcc.kernel.session import KernelInfo, KernelSession, RawRun, default_cwd
from notebook_bcc.kernel.sinks import CellSink, JsonlSink, MemorySink, read_jsonl_cells
from notebook_bcc.kernel.writer import NotebookWriter, WriteReport

__all__ = [
    "ActionOutcome",
    "ActionPath",
    "ActionRunner",
    "CellRecord",
    "CellSink",
    "EffectsConfig",
    "ErrorInfo",
    "ExecResult",
    "ExecStatus",
    "JsonlSink",
    "KernelBusyError",
    "KernelDeadError",
    "KernelError",
    "KernelEvent",
    "KernelInfo",
    "KernelSession",
    "KernelStartError",
    "MemorySink",
    "NotebookDocument",
    "NotebookKernel",
    "NotebookWriteError",
    "NotebookWriter",
    "ProbeConfig",
    "RawRun",
    "VariablesReport",
    "WriteReport",
    "cell_id_for",
    "criterion_problem",
    "default_cwd",
    "effects_for",
    "evaluate_criteria",
    "install_code",
    "open_notebook_kernel",
    "probe_variables",
    "read_jsonl_cells",
]
