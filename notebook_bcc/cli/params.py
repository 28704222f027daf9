"""``-p NAME VALUE``, ``-y YAML`` and ``-f FILE.yaml``: run parameters the papermill way.

Values from ``-p`` are typed as papermill types them: ``True``/``False`` -> bool, ``None`` ->
None, an int, a float, else the text. ``-y`` and ``-f`` give a YAML mapping. Later sources win:
every ``-f`` in order, then every ``-y``, then every ``-p`` (papermill's order).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from notebook_bcc.errors import NotebookBccError

MAX_PARAMETER_FILE_BYTES = 1_000_000
"""Largest ``-f`` file read."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The parameter flags (papermill's names and short options, plus dashed aliases)."""
    group = parser.add_argument_group(
        "parameters",
        "papermill-style run parameters, injected into a code cell tagged "
        "`injected-parameters` after the inputs cell and run before the first action",
    )
    group.add_argument(
        "-p",
        "--parameter",
        "--parameters",
        dest="parameters",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="a parameter, typed as papermill types it (int, float, True/False, None, else str)",
    )
    group.add_argument(
        "-y",
        "--parameters-yaml",
        "--parameters_yaml",
        dest="parameters_yaml",
        action="append",
        default=[],
        metavar="YAML",
        help="parameters as a YAML mapping (repeatable)",
    )
    group.add_argument(
        "-f",
        "--parameters-file",
        "--parameters_file",
        dest="parameters_file",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="parameters from a YAML file holding a mapping (repeatable)",
    )


def typed_value(text: str) -> Any:
    """A ``-p`` value typed as papermill types it."""
    if text == "True":
        return True
    if text == "False":
        return False
    if text == "None":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    # papermill keeps 'nan'/'inf' as floats; they are not JSON, so they stay text here
    return number if math.isfinite(number) else text


def _error(message: str) -> NotebookBccError:
    """A ``ParameterError`` (imported lazily: pydantic stays out of ``--help``)."""
    from notebook_bcc.blueprint.parameters import ParameterError

    return ParameterError(message)


def _mapping(text: str, where: str, *, file: Path | None = None) -> dict[str, Any]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        data = YAML(typ="safe", pure=True).load(text)
    except MarkedYAMLError as exc:
        # one line naming the place as a blueprint error does (FILE:LINE), not ruamel's
        # multi-line report about "<unicode string>"
        mark = exc.problem_mark or exc.context_mark
        opened = exc.context_mark
        context = exc.context
        if context and opened is not None and opened is not mark:
            context += f" opened at line {opened.line + 1}, column {opened.column + 1}"
        reason = "; ".join(part for part in (context, exc.problem) if part)
        if mark is None:
            raise _error(f"{where}: not valid YAML: {reason}") from None
        at = f"line {mark.line + 1}, column {mark.column + 1}"
        if file is not None:
            raise _error(f"-f {file}:{mark.line + 1}: not valid YAML ({at}): {reason}") from None
        raise _error(f"{where}, {at}: not valid YAML: {reason}") from None
    except YAMLError as exc:
        raise _error(f"{where}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _error(f"{where}: expected a mapping of parameters, got {type(data).__name__}")
    bad = [repr(key) for key in data if not isinstance(key, str)]
    if bad:
        raise _error(f"{where}: parameter names must be text, got {', '.join(bad)}")
    return dict(data)


def _read_file(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_PARAMETER_FILE_BYTES:
            raise _error(f"{path}: larger than {MAX_PARAMETER_FILE_BYTES} bytes")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _error(f"{path}: cannot read the parameters file: {exc}") from None


def gather(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, str]]:
    """The parameters the command line gives, and the raw text of the ``-p`` ones.

    Raises ``ParameterError`` (exit 2) naming the flag and what is wrong.
    """
    given: dict[str, Any] = {}
    raw: dict[str, str] = {}
    for path in args.parameters_file:
        given.update(_mapping(_read_file(path), f"-f {path}", file=path))
    for number, text in enumerate(args.parameters_yaml, 1):
        given.update(_mapping(text, f"-y (#{number})"))
    for name, text in args.parameters:
        given[name] = typed_value(text)
        raw[name] = text
    return given, raw
