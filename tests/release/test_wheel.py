"""What ``pip install .`` ships: the production JupyterLab bundle and the package data.

Building a wheel runs the labextension's production build (``jlpm build:prod`` through
hatch-jupyter-builder) in a copy of the source tree and takes a minute or two, so it runs only
with ``NOTEBOOK_BCC_SLOW=1`` (the README's slow modes).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import SLOW

REPO = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", ".venv", "node_modules", "lib", "build-test", "out", "test-artifacts"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not SLOW, reason="builds the wheel; set NOTEBOOK_BCC_SLOW=1"),
]


def _ignore(folder: str, names: list[str]) -> set[str]:
    skipped = {n for n in names if n in SKIP_DIRS or n.endswith(".egg-info")}
    if Path(folder).resolve() == REPO / "notebook_bcc":
        skipped.add("labextension")  # the working tree's (development) build: rebuilt here
    return skipped


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    source = tmp_path_factory.mktemp("source") / "notebook-bcc"
    shutil.copytree(REPO, source, ignore=_ignore)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), "."],
        cwd=source,
        check=True,
    )
    (built,) = out.glob("notebook_bcc-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_ships_the_production_bundle(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    (package_json,) = [n for n in names if n.endswith("labextensions/notebook-bcc/package.json")]
    prefix = package_json.removesuffix("package.json")
    meta = json.loads(wheel.read(package_json))
    load = meta["jupyterlab"]["_build"]["load"]
    assert prefix + load in names, "the federated entry point the package.json names is shipped"
    static = [n for n in names if n.startswith(prefix + "static/")]
    assert any(n.endswith("style.js") for n in static)
    assert not [n for n in static if n.endswith(".map")], "a production build has no source maps"
    scripts = [n for n in static if n.endswith(".js") and not n.endswith("style.js")]
    assert scripts
    for name in scripts:
        # a development build names its chunks after modules (lib_index_js.<hash>.js) and
        # points at source maps; a production one numbers them and has neither
        chunk = name.rsplit("/", 1)[1]
        assert not chunk.startswith(("lib_", "style_index")), f"{chunk}: a development chunk"
        assert b"//# sourceMappingURL=" not in wheel.read(name), f"{chunk} points at a map"
    assert prefix + "install.json" in names, "jupyter labextension list reads it"
    install = json.loads(wheel.read(prefix + "install.json"))
    assert install["packageName"] == "notebook-bcc"


def test_the_wheel_ships_the_package_data(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "notebook_bcc/py.typed" in names
    templates = {n for n in names if n.startswith("notebook_bcc/planners/llm/templates/")}
    assert "notebook_bcc/planners/llm/templates/feedback.md" in templates
    assert len(templates) >= 7, templates
    config = [n for n in names if n.endswith("jupyter_server_config.d/notebook_bcc.json")]
    assert config, "the server extension is enabled on install"
    assert not [n for n in names if "/tests/" in n or n.startswith("tests/")]
