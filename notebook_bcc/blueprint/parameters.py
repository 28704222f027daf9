"""Run parameters: the blueprint's ``parameters:`` section and the check of given values.

A blueprint may declare the parameters a run takes (papermill's ``-p NAME VALUE``)::

    parameters:
      threshold: {type: float, default: 0.5, description: the decision threshold}
      region: {type: str}            # no default: the run must give it

With the section, a run refuses a parameter it does not declare and a value of the wrong
type, and fills in the defaults; without it, any parameter is taken as given (papermill's
behaviour). Values are plain JSON (strings, numbers, booleans, null, lists, mappings).
"""

from __future__ import annotations

import keyword
import math
from typing import Any, Literal

from pydantic import Field, model_validator

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.models.base import WireModel

ParameterType = Literal["str", "int", "float", "bool", "list", "dict", "any"]

MAX_PARAMETERS = 200
"""Most parameters one run takes."""
MAX_VALUE_CHARS = 100_000
"""Longest ``repr`` of one parameter value (it becomes a line of the injected cell)."""
MAX_DEPTH = 20
"""Deepest nesting of lists and mappings in a value."""


class ParameterError(NotebookBccError, ValueError):
    """A parameter that is not a name, not declared, of the wrong type, or missing."""

    code = "bad_parameter"


class ParameterSpec(WireModel):
    """One declared parameter: its type, its default (absent = required), what it is."""

    type: ParameterType = Field(default="any", description="The JSON type a value must have.")
    default: Any = Field(default=None, description="Used when the run does not give it.")
    description: str | None = None

    @property
    def required(self) -> bool:
        """True when no default is declared."""
        return "default" not in self.model_fields_set

    @model_validator(mode="after")
    def _default_matches(self) -> ParameterSpec:
        if not self.required and self.default is not None:
            problem = type_problem(self.default, self.type)
            if problem:
                raise ValueError(f"default {self.default!r}: {problem}")
        return self


def check_name(name: str) -> None:
    """A parameter name must be a Python identifier that is not a keyword."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ParameterError(
            f"parameter {name!r}: not a Python identifier", details={"parameter": name}
        )


def plain_json_problem(value: Any, depth: int = 0) -> str | None:
    """Why ``value`` is not plain finite JSON, or None."""
    if depth > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels"
    if value is None or isinstance(value, bool | int | str):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value!r} is not a finite number"
    if isinstance(value, list):
        for item in value:
            problem = plain_json_problem(item, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"mapping key {key!r} is not a string"
            problem = plain_json_problem(item, depth + 1)
            if problem:
                return problem
        return None
    return f"a {type(value).__name__} is not a plain JSON value"


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "list": (list,),
    "dict": (dict,),
}


def type_problem(value: Any, wanted: ParameterType) -> str | None:
    """Why ``value`` does not have the declared type, or None (``null`` fits any type)."""
    if wanted == "any" or value is None:
        return None
    if wanted == "bool":
        return None if isinstance(value, bool) else f"expected bool, got {_kind(value)}"
    if isinstance(value, bool):
        return f"expected {wanted}, got bool"
    if isinstance(value, _PYTHON_TYPES[wanted]):
        return None
    return f"expected {wanted}, got {_kind(value)}"


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def resolve(
    given: dict[str, Any],
    declared: dict[str, ParameterSpec] | None,
    *,
    raw: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The run's parameters: ``given`` checked against ``declared`` with the defaults filled in.

    ``raw`` holds the text of ``-p NAME VALUE`` values: a declared ``str`` parameter takes the
    text as it was typed (``-p region 01`` stays ``"01"``), and a declared ``float`` turns an
    int into a float. ``declared`` None (no ``parameters:`` section) takes any parameter.
    Raises :class:`ParameterError` naming the first bad parameter.
    """
    if len(given) > MAX_PARAMETERS:
        raise ParameterError(f"too many parameters ({len(given)}; at most {MAX_PARAMETERS})")
    raw = raw or {}
    out: dict[str, Any] = {}
    for name, value in given.items():
        check_name(name)
        problem = plain_json_problem(value)
        if problem:
            raise ParameterError(f"parameter {name!r}: {problem}", details={"parameter": name})
        if len(repr(value)) > MAX_VALUE_CHARS:
            raise ParameterError(
                f"parameter {name!r}: value longer than {MAX_VALUE_CHARS} characters",
                details={"parameter": name},
            )
        if declared is not None:
            spec = declared.get(name)
            if spec is None:
                known = ", ".join(declared) or "none"
                raise ParameterError(
                    f"parameter {name!r} is not declared by the blueprint (declared: {known})",
                    details={"parameter": name, "declared": list(declared)},
                )
            out[name] = _coerce(name, value, spec, raw.get(name))
        else:
            out[name] = value
    if declared is not None:
        for name, spec in declared.items():
            if name in out:
                continue
            if spec.required:
                raise ParameterError(
                    f"parameter {name!r} is required by the blueprint (it has no default)",
                    details={"parameter": name},
                )
            out[name] = spec.default
    return out


def _coerce(name: str, value: Any, spec: ParameterSpec, text: str | None) -> Any:
    if spec.type == "str" and text is not None:
        return text
    if spec.type == "float" and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    problem = type_problem(value, spec.type)
    if problem:
        raise ParameterError(
            f"parameter {name!r}: {problem} ({value!r})",
            details={"parameter": name, "type": spec.type},
        )
    return value
