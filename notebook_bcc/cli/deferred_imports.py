"""Keep a third-party import that costs seconds, and that the CLI never uses, off its start.

nbformat imports jsonschema, and jsonschema imports the optional ``rfc3987_syntax`` (its
``iri`` format checker) when it is itself imported; that package builds an Earley parser for
the RFC 3987 grammar at import: 1-2 s of CPU at every ``notebook-bcc`` start on this
project's machines, more than the rest of the start together (python-jsonschema/jsonschema
issue 1428). Nothing in a CLI process checks the ``iri`` format, so before anything imports
jsonschema, :func:`defer_iri_grammar` registers a stand-in ``rfc3987_syntax`` whose
``is_valid_syntax`` imports the real package at its first call and answers with it: an
``iri`` check gives the same answer as before, and only a process that makes one pays for
the grammar.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types

IRI_PACKAGE = "rfc3987_syntax"

_lock = threading.Lock()


def _real_is_valid_syntax(term: str, value: str) -> bool:
    """Import the real package in place of the stand-in (once), then ask it."""
    with _lock:
        module = sys.modules.get(IRI_PACKAGE)
        if module is None or getattr(module, "__notebook_bcc_stand_in__", False):
            sys.modules.pop(IRI_PACKAGE, None)
            module = importlib.import_module(IRI_PACKAGE)
    answer: bool = module.is_valid_syntax(term, value)
    return answer


def defer_iri_grammar() -> bool:
    """Register the stand-in when it can matter; True when it was registered.

    Nothing is done when jsonschema or the package is already imported (too late, or
    nothing to save) or when the package is not installed (jsonschema then skips the
    ``iri`` checker itself, as it would anyway).
    """
    if "jsonschema" in sys.modules or IRI_PACKAGE in sys.modules:
        return False
    if importlib.util.find_spec(IRI_PACKAGE) is None:
        return False
    stand_in = types.ModuleType(IRI_PACKAGE, "Stand-in: imports rfc3987_syntax when first used.")
    stand_in.__notebook_bcc_stand_in__ = True  # type: ignore[attr-defined]
    stand_in.is_valid_syntax = _real_is_valid_syntax  # type: ignore[attr-defined]
    sys.modules[IRI_PACKAGE] = stand_in
    return True
