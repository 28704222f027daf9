"""Run parameters over REST (``POST /workflows`` ``parameters``), as the CLI's ``-p``: checked
against the blueprint's ``parameters:`` section, its defaults filled in, a bad one a 400 naming
it and nothing started; the values reach the kernel through the ``injected-parameters`` cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.server.conftest import Api, ApiError

pytestmark = pytest.mark.timeout(120)


def code_sources(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


async def test_declared_defaults_are_filled_in_and_given_values_used(api: Api, root: Path) -> None:
    defaults = await api.start("params/defaults.ipynb", "blueprints/params.yaml")
    assert defaults["parameters"] == {"n": 3, "label": "run"}
    done = await api.wait_status(defaults["workflow_id"], "completed", "failed")
    assert done["run"]["status"] == "completed", done["run"]
    given = await api.start(
        "params/given.ipynb", "blueprints/params.yaml", parameters={"n": 5, "label": "five"}
    )
    assert given["parameters"] == {"n": 5, "label": "five"}
    done = await api.wait_status(given["workflow_id"], "completed", "failed")
    assert done["run"]["status"] == "completed", done["run"]
    assert done["acceptance"]["double"]["doubled == 2 * n"]["status"] == "passed"
    sources = code_sources(root / "params" / "given.ipynb")
    assert any("n = 5" in text and "label = 'five'" in text for text in sources), sources


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        ({"n": "three"}, "parameters: parameter 'n': expected int, got str"),
        ({"m": 1}, "parameters: parameter 'm' is not declared by the blueprint (declared: n, "),
        ({"label": 7}, "parameters: parameter 'label': expected str, got int"),
    ],
)
async def test_a_bad_parameter_is_a_400_naming_it_and_starts_nothing(
    api: Api, root: Path, parameters: dict[str, object], expected: str
) -> None:
    with pytest.raises(ApiError) as refused:
        await api.start("params/bad.ipynb", "blueprints/params.yaml", parameters=parameters)
    assert refused.value.code == 400, refused.value.body
    assert refused.value.body["message"].startswith(expected), refused.value.body
    assert not (root / "params" / "bad.ipynb").exists()
    assert (await api.ok("GET", "workflows"))["workflows"] == []
