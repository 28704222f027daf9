"""Typed errors of the kernel layer.

Execution outcomes (a cell that raised, timed out or lost its kernel) are *results*, not errors:
see :mod:`notebook_bcc.kernel.results`. The errors here are for things the caller must handle
differently: a kernel that cannot start, a session used after it died, a notebook file that
cannot be written.
"""

from __future__ import annotations

from notebook_bcc.errors import NotebookBccError


class KernelError(NotebookBccError):
    """Base of the kernel layer's errors."""

    code = "kernel_error"


class KernelStartError(KernelError):
    """The kernel did not start or did not answer ``kernel_info`` in time."""

    code = "kernel_start_failed"


class KernelDeadError(KernelError):
    """The session's kernel is gone (killed, culled or shut down); nothing can run on it."""

    code = "dead_kernel"


class KernelBusyError(KernelError):
    """A silent request (probe, acceptance) did not get its reply within its timeout."""

    code = "kernel_timeout"


class NotebookWriteError(KernelError):
    """The ``.ipynb`` could not be materialized (I/O error or an invalid cell)."""

    code = "notebook_write_failed"
