"""``examples/ci``: the command the GitHub Actions and GitLab CI jobs run, run here, and the
artifacts they publish checked (JUnit valid and complete, report with its summary, notebook
complete)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from lxml import etree
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / "examples" / "ci"
JUNIT_XSD = ROOT / "tests" / "fixtures" / "cli" / "junit.xsd"
COMMAND = "sh examples/ci/run.sh ci-out"
STAGES = [
    "data_existence",
    "data_cleaning",
    "exploration",
    "feature_engineering",
    "modelling",
    "results",
]


def load_yaml(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text())


def test_both_jobs_run_the_script_and_publish_its_artifacts() -> None:
    github = load_yaml(CI / "github-actions.yml")
    steps = github["jobs"]["replay"]["steps"]
    assert COMMAND in [step.get("run") for step in steps]
    junit_step = next(s for s in steps if "junit" in str(s.get("uses", "")))
    assert junit_step["with"]["report_paths"] == "ci-out/junit.xml"
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload"))
    assert {"ci-out/housing-ai.ipynb", "ci-out/report.html"} <= set(upload["with"]["path"].split())
    gitlab = load_yaml(CI / "gitlab-ci.yml")["notebook-bcc-replay"]
    assert COMMAND in gitlab["script"]
    assert gitlab["artifacts"]["reports"]["junit"] == "ci-out/junit.xml"
    assert {"ci-out/housing-ai.ipynb", "ci-out/report.html"} <= set(gitlab["artifacts"]["paths"])


def test_the_ci_script_replays_offline_and_leaves_valid_artifacts(tmp_path: Path) -> None:
    out = tmp_path / "ci-out"
    env = {**os.environ, "NOTEBOOK_BCC": f"{sys.executable} -m notebook_bcc"}
    done = subprocess.run(
        ["sh", str(CI / "run.sh"), str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    schema = etree.XMLSchema(etree.parse(str(JUNIT_XSD)))
    doc = etree.parse(str(out / "junit.xml"))
    assert schema.validate(doc), schema.error_log
    root = doc.getroot()
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [f"{stage} (visit 1)" for stage in STAGES]
    assert (root.get("failures"), root.get("errors"), root.get("skipped")) == ("0", "0", "0")
    assert int(root.get("tests")) >= len(STAGES)
    for suite in suites:
        assert suite.find("properties/property[@name='outcome']").get("value") == "success"
    # the exploration behavior failed once (KeyError) and passed on its retry: it passes,
    # and its earlier iteration is kept in the case
    retried = [
        case
        for case in root.iter("testcase")
        if case.find("system-err") is not None and "KeyError" in case.find("system-err").text
    ]
    assert len(retried) == 1
    assert retried[0].get("classname") == "housing-ai.exploration"
    assert "passed on attempt 2 (iteration 2 of its step)" in retried[0].find("system-out").text

    page = (out / "report.html").read_text()
    body = page[page.index("<body") :]
    assert body.index("notebook-bcc run: housing-ai") < body.index("jp-CodeCell")
    for text in ("completed", "Planner usage", "irreversible_confirmation", "Data existence"):
        assert text in body

    notebook = json.loads((out / "housing-ai.ipynb").read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert code
    assert all(isinstance(c["execution_count"], int) for c in code), "every code cell ran"
    assert (
        "model export"
        in "".join(
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in notebook["cells"]
        ).lower()
    )
    assert (out / "state.sqlite").exists()
