"""``--junit-xml FILE``: the run as a JUnit report, for CI test-result readers.

Layout (the common Jenkins / GitLab / GitHub-action readers' subset):

- ``<testsuites>`` for the run, with totals;
- one ``<testsuite>`` per stage visit, named ``<stage> (visit N)``, with its timestamp, time
  and ``<properties>`` (the stage's outcome, and each behavior's acceptance criteria with
  their results);
- one ``<testcase>`` per behavior (``<step>.<behavior>``, ``classname``
  ``<workflow>.<stage>``) whose outcome is its last attempt's: a behavior that failed and
  passed on a retry passes, its earlier attempts listed in ``<system-err>``; the behaviors a
  step runs one after the other are cases of their own (a step's next iteration after a
  passed behavior is its next behavior, not a retry);
  a failing cell is an ``<error>`` carrying its ``ename``, ``evalue`` and traceback, a failed
  acceptance criterion a ``<failure>`` naming it, a behavior never reached ``<skipped>``; the
  criteria are also listed in the case's ``<system-out>``.
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from pathlib import Path

from notebook_bcc.cli.ledger import BehaviorRun, RunLedger, StageVisit

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(value: object) -> str:
    """Text XML 1.0 can carry (control characters dropped)."""
    return _INVALID_XML.sub("", str(value))


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _case_name(run: BehaviorRun) -> str:
    return f"{run.step_id}.{run.behavior_id}" if run.behavior_id else run.step_id


def _earlier_lines(run: BehaviorRun) -> list[str]:
    """What the earlier iterations of a retried behavior ended with."""
    lines = []
    for attempt, earlier in enumerate(run.previous, start=1):
        what = [f"{e.ename}: {e.evalue}" for e in earlier.errors]
        what += [
            f"acceptance {status}: {criterion}"
            for criterion, (status, _) in earlier.acceptance.items()
            if status != "passed"
        ]
        lines.append(
            f"attempt {attempt} (iteration {earlier.iteration} of its step): {earlier.outcome}"
            + (f" ({'; '.join(what)})" if what else "")
        )
    return lines


def _criteria_lines(run: BehaviorRun) -> list[str]:
    return [
        f"acceptance {status}: {criterion}" + (f" ({message})" if message else "")
        for criterion, (status, message) in run.acceptance.items()
    ]


def _case(parent: ET.Element, visit: StageVisit, run: BehaviorRun, workflow: str) -> None:
    case = ET.SubElement(
        parent,
        "testcase",
        name=_text(_case_name(run)),
        classname=_text(f"{workflow}.{visit.stage_id}"),
        time=_seconds(run.seconds),
    )
    outcome = run.outcome
    if outcome == "skipped":
        why = "not reached" if not run.reached else "the run stopped before it finished"
        ET.SubElement(case, "skipped", message=why)
        return
    for error in run.errors:
        element = ET.SubElement(
            case,
            "error",
            message=_text(f"{error.ename}: {error.evalue}"),
            type=_text(error.ename),
        )
        element.text = _text(error.traceback)
    for criterion, (status, message) in run.acceptance.items():
        if status == "passed":
            continue
        tag = "failure" if status == "failed" else "error"
        element = ET.SubElement(
            case,
            tag,
            message=_text(f"acceptance criterion {status}: {criterion}"),
            type="AcceptanceCriterion" if status == "failed" else "AcceptanceError",
        )
        element.text = _text(
            f"criterion: {criterion}\nresult: {status}" + (f"\n{message}" if message else "")
        )
    lines = _criteria_lines(run)
    if run.previous and outcome == "passed":
        lines.append(
            f"passed on attempt {len(run.previous) + 1} (iteration {run.iteration} of its step)"
        )
    if lines:
        ET.SubElement(case, "system-out").text = _text("\n".join(filter(None, lines)))
    earlier = _earlier_lines(run)
    if earlier:
        ET.SubElement(case, "system-err").text = _text("\n".join(earlier))


def _suite(parent: ET.Element, visit: StageVisit, workflow: str, hostname: str) -> dict[str, int]:
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for run in visit.behaviors:
        counts["tests"] += 1
        outcome = run.outcome
        if outcome == "skipped":
            counts["skipped"] += 1
        elif run.errors or any(s == "error" for s, _ in run.acceptance.values()):
            counts["errors"] += 1
            if any(s == "failed" for s, _ in run.acceptance.values()):
                counts["failures"] += 1
        elif outcome == "failed":
            counts["failures"] += 1
    name = f"{visit.stage_id} (visit {visit.visit})" if visit.reached else visit.stage_id
    attrs = {
        "name": _text(name),
        "tests": str(counts["tests"]),
        "failures": str(counts["failures"]),
        "errors": str(counts["errors"]),
        "skipped": str(counts["skipped"]),
        "time": _seconds(visit.seconds),
        "hostname": _text(hostname),
    }
    if visit.started_at:
        attrs["timestamp"] = visit.started_at.rstrip("Z").split(".")[0]
    suite = ET.SubElement(parent, "testsuite", attrs)
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="stage", value=_text(visit.stage_id))
    if visit.title:
        ET.SubElement(properties, "property", name="title", value=_text(visit.title))
    ET.SubElement(properties, "property", name="outcome", value=_text(visit.status))
    for run in visit.behaviors:
        for criterion, (status, message) in run.acceptance.items():
            ET.SubElement(
                properties,
                "property",
                name=_text(f"{_case_name(run)} acceptance: {criterion}"),
                value=_text(status + (f": {message}" if message else "")),
            )
    for run in visit.behaviors:
        _case(suite, visit, run, workflow)
    return counts


def junit_tree(ledger: RunLedger, *, name: str) -> ET.ElementTree[ET.Element]:
    """The JUnit document of a finished run (``name``: the workflow's name)."""
    root = ET.Element("testsuites", name=_text(f"notebook-bcc {name}"))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    hostname = socket.gethostname()
    for visit in ledger.visits:
        counts = _suite(root, visit, name, hostname)
        for key, value in counts.items():
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    began, ended = ledger.began, ledger.ended if ledger.ended is not None else ledger.began
    root.set("time", _seconds(max(0.0, ended - began)))
    return ET.ElementTree(root)


def write_junit(ledger: RunLedger, path: Path, *, name: str) -> None:
    """Write the JUnit report to ``path`` (UTF-8, with an XML declaration)."""
    tree = junit_tree(ledger, name=name)
    ET.indent(tree)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
