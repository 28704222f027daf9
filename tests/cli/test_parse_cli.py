"""``notebook-bcc parse`` and the protocol models in ``notebook-bcc schema``."""

from __future__ import annotations

import io
import json
import sys

import pytest

from notebook_bcc.cli import main
from tests.conftest import FIXTURES

PROTOCOL = FIXTURES / "protocol"


def test_parse_prints_the_normalized_model(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["parse", str(PROTOCOL / "actions_raw.xml")])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    model = json.loads(out)
    assert model["kind"] == "actions"
    assert model["actions"][4]["type"] == "add-code2run"
    assert "small = df_raw[df_raw.LotArea < 5000 & mask]\nok = a<b\n" in model["actions"][4]["code"]
    assert model["document"]["tag"] == "actions"
    assert model["document"]["children"][0]["text"] == "Ames Housing — Price Prediction"


def test_parse_with_explicit_kind(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["parse", "--kind", "planning", str(PROTOCOL / "planning_stream.ndjson")])
    out, _ = capsys.readouterr()
    assert code == 0
    model = json.loads(out)
    assert (model["kind"], len(model["actions"])) == ("planning", 5)


def test_parse_reads_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b'{"type": "mark_step_complete"}'), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    code = main(["parse", "-"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert json.loads(out)["kind"] == "signals"


def test_bad_input_exits_2_with_file_line_element(capsys: pytest.CaptureFixture[str]) -> None:
    path = PROTOCOL / "bad_action.ndjson"
    code = main(["parse", str(path)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == f"error: {path}:3: add: content: Field required (at /content)\n"


def test_several_issues_give_several_lines(capsys: pytest.CaptureFixture[str]) -> None:
    path = PROTOCOL / "bad_planning.json"
    assert main(["parse", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[1] for line in lines] == [f"{path}:5", f"{path}:6"]


def test_wrong_root_and_doctype(capsys: pytest.CaptureFixture[str]) -> None:
    wrong = PROTOCOL / "wrong_root.txt"
    assert main(["parse", "--kind", "reflection", str(wrong)]) == 2
    assert capsys.readouterr().err == (
        f"error: {wrong}:3: stage_reflection: expected a <reflection> document, "
        "found <stage_reflection>\n"
    )
    xxe = PROTOCOL / "doctype_xxe.xml"
    assert main(["parse", str(xxe)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {xxe}:2: !DOCTYPE: ")


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "/nonexistent/payload.xml"]) == 2
    assert capsys.readouterr().err.startswith("error: /nonexistent/payload.xml: ")


def test_schema_lists_the_protocol_models(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schemas = json.loads(capsys.readouterr().out)
    for name in (
        "payload",
        "payload_stages",
        "payload_workflow",
        "payload_steps",
        "payload_behavior",
        "payload_actions",
        "payload_reflection",
        "payload_stage_reflection",
        "payload_json_actions",
        "payload_signals",
        "payload_planning",
        "json_action",
        "xml_action",
        "xml_element",
        "planning_response",
        "control_signal",
        "behavior_feedback",
    ):
        assert name in schemas
    assert "targetAchieved" in schemas["planning_response"]["properties"]
    assert schemas["payload_actions"]["properties"]["kind"]["const"] == "actions"


def test_cli_kind_choices_are_the_protocol_kinds() -> None:
    from notebook_bcc.cli.parse_cmd import KINDS
    from notebook_bcc.protocol import PAYLOAD_KINDS

    assert tuple(KINDS) == tuple(PAYLOAD_KINDS)
