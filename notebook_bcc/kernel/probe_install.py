"""The silent cell that installs the variables probe in a kernel (once per kernel)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from notebook_bcc.kernel import kernel_side

PROBE_NAME = kernel_side.NAME
"""The hidden name the probe lives under in the user's namespace."""


@lru_cache(maxsize=1)
def install_code() -> str:
    """Code that runs the kernel-side module in a fresh dict; it adds only the probe's name."""
    source = Path(kernel_side.__file__).read_text(encoding="utf-8")
    return (
        f"exec(compile({source!r}, '<notebook-bcc probe>', 'exec'), "
        "{'__name__': '__notebook_bcc__'})"
    )
