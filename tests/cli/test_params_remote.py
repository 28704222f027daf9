"""Parameter typing and checking (papermill's rules, a blueprint's declarations), the
parameters cell's code, and remote paths through fsspec's ``memory://`` filesystem."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.blueprint.parameters import ParameterError, ParameterSpec, resolve
from notebook_bcc.cli.params import typed_value
from notebook_bcc.cli.remote import RemotePathError, is_url, local_name, remote_file
from notebook_bcc.engine.parameters import parameters_source

finite = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | finite | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
names = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda n: n not in {"if", "in", "is", "or", "as", "def", "del", "for", "and", "not", "try"}
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("True", True),
        ("False", False),
        ("None", None),
        ("12", 12),
        ("-3", -3),
        ("1.5", 1.5),
        ("1e3", 1000.0),
        ("true", "true"),
        ("007", 7),
        ("nan", "nan"),
        ("inf", "inf"),
        ("hello world", "hello world"),
    ],
)
def test_p_values_are_typed_as_papermill_types_them(text: str, value: Any) -> None:
    assert typed_value(text) == value
    assert type(typed_value(text)) is type(value)


@given(st.text(max_size=30))
def test_any_text_types_to_a_finite_json_scalar(text: str) -> None:
    value = typed_value(text)
    assert value is None or isinstance(value, bool | int | float | str)
    if isinstance(value, str):
        assert value == text
    if isinstance(value, float):
        assert math.isfinite(value)


@given(st.dictionaries(names, json_values, max_size=6))
def test_the_parameters_cell_assigns_exactly_the_values(parameters: dict[str, Any]) -> None:
    code = parameters_source(parameters)
    tree = ast.parse(code)
    assigned = {}
    for node in tree.body:
        assert isinstance(node, ast.Assign)
        (target,) = node.targets
        assert isinstance(target, ast.Name)
        assigned[target.id] = ast.literal_eval(node.value)
    assert assigned == parameters


def test_declared_parameters_take_defaults_coerce_and_refuse() -> None:
    declared = {
        "n": ParameterSpec(type="int"),
        "rate": ParameterSpec(type="float", default=0.5),
        "tag": ParameterSpec(type="str", default="x"),
        "opts": ParameterSpec(type="dict", default={}),
    }
    assert resolve({"n": 3, "rate": 1, "tag": 7}, declared, raw={"tag": "007"}) == {
        "n": 3,
        "rate": 1.0,
        "tag": "007",
        "opts": {},
    }
    for given_values, message in [
        ({"n": True}, "parameter 'n': expected int, got bool"),
        ({"n": 1, "opts": [1]}, "parameter 'opts': expected dict, got list"),
        ({"n": 1, "other": 1}, "parameter 'other' is not declared by the blueprint"),
        ({}, "parameter 'n' is required by the blueprint"),
        ({"n": 1, "class": 2}, "parameter 'class': not a Python identifier"),
    ]:
        with pytest.raises(ParameterError, match=message.replace("(", r"\(")):
            resolve(given_values, declared)


def test_without_a_section_any_plain_parameter_is_taken() -> None:
    assert resolve({"anything": [1, {"a": None}]}, None) == {"anything": [1, {"a": None}]}
    with pytest.raises(ParameterError, match="not a finite number"):
        resolve({"x": float("inf")}, None)
    with pytest.raises(ParameterError, match="is not a plain JSON value"):
        resolve({"x": {1, 2}}, None)


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("s3://bucket/x.ipynb", True),
        ("file:///tmp/x.ipynb", True),
        ("memory://x.ipynb", True),
        ("out/x.ipynb", False),
        ("C://x.ipynb", False),
        ("/abs/x.ipynb", False),
    ],
)
def test_urls_are_told_from_paths(text: str, url: bool) -> None:
    assert is_url(text) is url


def test_a_memory_url_is_downloaded_then_uploaded(tmp_path: Path) -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/runs/existing.ipynb", b'{"cells": []}')
    target = remote_file("memory://runs/existing.ipynb", tmp_path / "existing.ipynb")
    assert target.download_if_exists()
    assert (tmp_path / "existing.ipynb").read_bytes() == b'{"cells": []}'
    (tmp_path / "existing.ipynb").write_text('{"cells": [1]}')
    assert target.upload()
    assert fs.cat("/runs/existing.ipynb") == b'{"cells": [1]}'
    assert target.uploads == 1
    fresh = remote_file("memory://runs/new/report.md", tmp_path / "report.md")
    assert not fresh.download_if_exists()
    assert local_name("s3://bucket/dir/run.ipynb?version=2") == "run.ipynb"


def test_a_url_without_its_filesystem_is_a_typed_error() -> None:
    with pytest.raises(RemotePathError, match="s3fs"):
        remote_file("s3://bucket/run.ipynb", Path("run.ipynb"))


def test_the_notebook_is_uploaded_after_a_stage_completes(tmp_path: Path) -> None:
    import asyncio

    import fsspec

    from notebook_bcc.cli.remote import FlushUploader
    from notebook_bcc.models import WorkflowEvent

    fs = fsspec.filesystem("memory")
    target = remote_file("memory://flush/nb.ipynb", tmp_path / "nb.ipynb")
    (tmp_path / "nb.ipynb").write_text("after stage one")
    uploader = FlushUploader(target)

    def event(to: str) -> WorkflowEvent:
        return WorkflowEvent(
            workflow_id="wf",
            seq=1,
            version=1,
            at="2026-01-01T00:00:00Z",
            kind="transition",
            to=to,
            run_status="running",
        )

    async def scenario() -> None:
        uploader.on_event(event("step_completed"))
        assert uploader._pending is None, "not a flush point"
        uploader.on_event(event("stage_completed"))
        await uploader._pending

    asyncio.run(scenario())
    assert fs.cat("/flush/nb.ipynb") == b"after stage one"
    assert target.uploads == 1
