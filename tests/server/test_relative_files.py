"""``files_relative_to: notebook`` (what the panel's start form sends): input files named from
the notebook's folder, still confined to the server root (``..``, absolute paths, symlinks),
errors naming API paths only; the default stays ``root`` (API paths)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import Api

BLUEPRINT = {"kind": "blueprint", "path": "blueprints/quick.yaml"}


def _body(files: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "notebook_path": "proj/nb/a.ipynb",
        "planner": BLUEPRINT,
        "files": files,
        "files_relative_to": "notebook",
        **extra,
    }


@pytest.fixture
def project(root: Path) -> Path:
    folder = root / "proj" / "nb"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "train.csv").write_text("a\n1\n")
    (root / "proj" / "shared.csv").write_text("b\n2\n")
    return folder


async def test_notebook_relative_files_are_accepted_and_reach_the_kernel_relative(
    api: Api, project: Path
) -> None:
    code, snapshot = await api.call(
        "POST", "workflows", body=_body(["data/train.csv", "../shared.csv"])
    )
    assert code == 201, snapshot
    # the kernel runs in the notebook's folder: it sees the paths as the user typed them
    assert snapshot["files"] == ["data/train.csv", "../shared.csv"]
    await api.wait_status(snapshot["workflow_id"], "completed", "failed")


async def test_the_default_is_still_api_paths(api: Api, project: Path) -> None:
    body = _body(["data/train.csv"])
    del body["files_relative_to"]
    code, answer = await api.call("POST", "workflows", body=body)
    assert code == 400, answer
    assert answer["details"] == {"missing": ["data/train.csv"]}


async def test_a_missing_relative_file_is_named_by_its_api_path(
    api: Api, project: Path, root: Path
) -> None:
    code, answer = await api.call("POST", "workflows", body=_body(["data/none.csv"]))
    assert code == 400, answer
    assert answer["details"] == {"missing": ["proj/nb/data/none.csv"]}
    assert str(root) not in answer["message"]
    assert not (project / "a.ipynb").exists()


@pytest.mark.parametrize(
    "name", ["../../../secret.csv", "/etc/passwd", "../..", "../../..", "a\\b.csv"]
)
async def test_relative_escapes_are_refused(api: Api, project: Path, name: str) -> None:
    code, answer = await api.call("POST", "workflows", body=_body([name]))
    assert code == 400, answer
    assert answer["code"] == "bad_path", answer
    assert not (project / "a.ipynb").exists()


async def test_a_relative_symlink_out_of_the_root_is_forbidden(
    api: Api, project: Path, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("s\n1\n")
    os.symlink(outside, project / "link")
    code, answer = await api.call("POST", "workflows", body=_body(["link/secret.csv"]))
    assert code == 403, answer
    assert answer["code"] == "forbidden_path"
    assert str(tmp_path) not in answer["message"]
    assert str(root) not in answer["message"]


async def test_an_unknown_base_is_400(api: Api, project: Path) -> None:
    code, answer = await api.call(
        "POST", "workflows", body=_body(["data/train.csv"], files_relative_to="home")
    )
    assert code == 400, answer
    assert "/files_relative_to" in answer["message"]
