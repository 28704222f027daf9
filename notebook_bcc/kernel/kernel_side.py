"""Code that runs *inside the user's kernel*: the variables probe.

This module is never imported by notebook-bcc itself: :mod:`notebook_bcc.kernel.probe` reads its
text and executes it once per kernel, silently, in a throw-away namespace. It installs one
callable under the hidden name ``_notebook_bcc_probe`` (registered in IPython's
``user_ns_hidden``, so ``%who`` and the probe itself skip it) and adds nothing else to the user's
namespace.

The probe's cost is bounded by the number of names, not the size of the data: frames and arrays
report shape and dtypes (never ``repr``), containers use a size-capped ``reprlib``, and pandas /
numpy are looked up in ``sys.modules`` -- the probe never imports them.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import reprlib
import sys
import types
from itertools import islice
from typing import Any

NAME = "_notebook_bcc_probe"
MAX_DTYPES = 50

_short = reprlib.Repr()
_short.maxlevel = 2
_short.maxlist = 5
_short.maxtuple = 5
_short.maxdict = 5
_short.maxset = 5
_short.maxfrozenset = 5
_short.maxstring = 60
_short.maxother = 60

_SCALARS = (bool, int, float, str, type(None))
_CONTAINERS = (list, tuple, dict, set, frozenset, bytes, bytearray, range)
_CALLABLES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    type,
    types.LambdaType,
)


class JsonText:
    """A value whose ``text/plain`` form is exactly the JSON text it holds."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.text)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _scalar(value: Any, kind: type, info: dict[str, Any], limits: tuple[int, int]) -> None:
    repr_chars, value_chars = limits
    if kind is str:
        info["length"] = len(value)
        info["value"] = value if len(value) <= value_chars else None
        info["repr"] = _clip(repr(value[: repr_chars + 1]), repr_chars)
        return
    if kind is float and not math.isfinite(value):
        info["value"] = None
    else:
        info["value"] = value
    info["repr"] = _clip(repr(value), repr_chars)


def _frame(value: Any, info: dict[str, Any]) -> None:
    rows, cols = value.shape
    info["shape"] = [int(rows), int(cols)]
    info["length"] = int(rows)
    info["dtypes"] = {str(k): str(v) for k, v in islice(value.dtypes.items(), MAX_DTYPES)}
    info["repr"] = f"DataFrame {rows}x{cols}"


def _series(value: Any, info: dict[str, Any]) -> None:
    length = len(value)
    info["shape"] = [int(length)]
    info["length"] = int(length)
    info["dtypes"] = {str(value.name): str(value.dtype)}
    info["repr"] = f"{type(value).__name__} {length} {value.dtype}"


def _array(value: Any, info: dict[str, Any]) -> None:
    shape = [int(n) for n in value.shape]
    info["shape"] = shape
    if shape:
        info["length"] = shape[0]
    names = value.dtype.names
    if names:
        info["dtypes"] = {str(n): str(value.dtype[n]) for n in islice(names, MAX_DTYPES)}
    else:
        info["dtypes"] = {"dtype": str(value.dtype)}
    info["repr"] = f"ndarray{tuple(shape)} {value.dtype}"


def _numpy_scalar(value: Any, info: dict[str, Any], limits: tuple[int, int]) -> None:
    plain = value.item()
    info["dtypes"] = {"dtype": str(value.dtype)}
    if isinstance(plain, _SCALARS):
        _scalar(plain, type(plain), info, limits)
    else:
        info["repr"] = _clip(repr(value), limits[0])


def _other(value: Any, kind: type, info: dict[str, Any], repr_chars: int) -> None:
    if issubclass(kind, _CONTAINERS):
        info["length"] = len(value)
        info["repr"] = _clip(_short.repr(value), repr_chars)
        return
    if issubclass(kind, _CALLABLES):
        info["repr"] = f"<{kind.__name__} {getattr(value, '__qualname__', '?')}>"
        return
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        info["shape"] = list(shape)
    if hasattr(kind, "__len__"):
        with contextlib.suppress(Exception):
            info["length"] = len(value)
    try:
        info["repr"] = _clip(repr(value), repr_chars)
    except Exception as exc:
        info["repr"] = f"<repr failed: {type(exc).__name__}>"


def describe(value: Any, limits: tuple[int, int], pd: Any, np: Any) -> dict[str, Any]:
    """One variable's summary: type, and value/shape/dtypes/length/repr as they apply."""
    kind = type(value)
    info: dict[str, Any] = {"type": kind.__name__}
    if kind in _SCALARS:
        _scalar(value, kind, info, limits)
    elif pd is not None and isinstance(value, pd.DataFrame):
        _frame(value, info)
    elif pd is not None and isinstance(value, (pd.Series, pd.Index)):
        _series(value, info)
    elif np is not None and isinstance(value, np.ndarray):
        _array(value, info)
    elif np is not None and isinstance(value, np.generic):
        _numpy_scalar(value, info, limits)
    elif isinstance(value, _SCALARS):
        base: Any = next(b for b in kind.__mro__ if b in _SCALARS)
        _scalar(base(value), base, info, limits)
    else:
        _other(value, kind, info, limits[0])
    return info


def probe(
    check: list[str], max_names: int = 500, repr_chars: int = 80, value_chars: int = 200
) -> JsonText:
    """Summarize the user namespace and say which of ``check`` exist (variable or file)."""
    from IPython import get_ipython

    shell = get_ipython()
    namespace = shell.user_ns
    hidden = shell.user_ns_hidden
    pd = sys.modules.get("pandas")
    np = sys.modules.get("numpy")
    limits = (repr_chars, value_chars)
    variables: dict[str, Any] = {}
    total = 0
    for name, value in list(namespace.items()):
        if name[:1] == "_" or type(value) is types.ModuleType:
            continue
        if name in hidden and hidden[name] is value:
            continue
        total += 1
        if total > max_names:
            continue
        try:
            variables[name] = describe(value, limits, pd, np)
        except Exception as exc:
            variables[name] = {"type": type(value).__name__, "repr": f"<probe failed: {exc!r}>"}
    present: dict[str, str | None] = {}
    for name in check:
        if name in namespace:
            present[name] = "variable"
        elif os.path.exists(name):
            present[name] = "file"
        else:
            present[name] = None
    payload = {
        "variables": variables,
        "present": present,
        "total": total,
        "omitted": max(0, total - max_names),
    }
    return JsonText(json.dumps(payload, default=str))


def install() -> None:
    """Register :func:`probe` under its hidden name in the running IPython kernel."""
    from IPython import get_ipython

    shell = get_ipython()
    shell.user_ns[NAME] = probe
    shell.user_ns_hidden[NAME] = probe


if __name__ == "__notebook_bcc__":
    install()
