"""Loading blueprints and bare seed 004 machines from YAML, with line numbers."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from notebook_bcc.blueprint import (
    ActionSpec,
    Blueprint,
    BlueprintError,
    StateMachineSpec,
    blueprint_mermaid,
    load_blueprint_file,
    load_blueprint_text,
)
from notebook_bcc.blueprint.issues import Issue
from notebook_bcc.blueprint.loader import looks_like_blueprint
from notebook_bcc.fsm.expressions import WhenEvaluationError
from notebook_bcc.fsm.rules import resolve, when_namespace
from notebook_bcc.schema import json_schema
from tests.conftest import FIXTURES

BLUEPRINTS = FIXTURES / "blueprints"


def load(text: str) -> Blueprint | StateMachineSpec:
    return load_blueprint_text(textwrap.dedent(text), "t.yaml").document


def errors_of(text: str) -> list[Issue]:
    with pytest.raises(BlueprintError) as info:
        load_blueprint_text(textwrap.dedent(text), "t.yaml")
    issues: list[Issue] = info.value.issues
    return issues


def test_housing_blueprint_loads() -> None:
    loaded = load_blueprint_file(BLUEPRINTS / "housing.yaml")
    assert loaded.kind == "blueprint"
    blueprint = loaded.blueprint
    assert list(blueprint.states) == ["data_existence", "cleaning", "modeling", "tuning", "export"]
    assert blueprint.states["export"].confirm == "Write the predictions to disk?"
    action = blueprint.states["export"].steps[0].behaviors[0].actions[0]
    assert action == ActionSpec(code="clean_df.to_csv('predictions.csv')", irreversible=True)
    assert blueprint.states["data_existence"].steps[0].behaviors[0].acceptance == [
        "'raw_df' in dir()"
    ]
    assert loaded.machine.end_states == ["done", "failed"]
    assert [rule.line for rule in loaded.machine.transitions] == [87, 91, 94, 97, 100]
    assert loaded.resolved_files() == [(BLUEPRINTS / "housing.csv").resolve()]
    assert loaded.warnings == ()


def test_housing_conditional_branch_both_ways() -> None:
    machine = load_blueprint_file(BLUEPRINTS / "housing.yaml").machine

    def after_modeling(**variables: object) -> str | None:
        namespace = when_namespace(event="success", variables=variables, stage_id="modeling")
        return resolve(machine, "modeling", "success", namespace).target

    assert after_modeling(rmse=80000.0) == "tuning"
    assert after_modeling(rmse=20000.0) == "export"
    with pytest.raises(WhenEvaluationError) as info:
        after_modeling()
    assert info.value.line == 87


def test_seed004_list_form_loads_as_a_bare_machine() -> None:
    loaded = load_blueprint_file(BLUEPRINTS / "seed004.yaml")
    assert loaded.kind == "state machine"
    assert isinstance(loaded.document, StateMachineSpec)
    assert loaded.machine.start_state == "clarification"
    assert loaded.machine.transitions[0].line == 20
    paused = resolve(loaded.machine, "clarification", "pause")
    assert paused.resume_state == "clarification"
    with pytest.raises(BlueprintError, match="not a runnable blueprint"):
        _ = loaded.blueprint
    assert loaded.resolved_files() == []


def test_unquoted_on_under_yaml_1_1_is_accepted() -> None:
    loaded = load_blueprint_text(
        "%YAML 1.1\n---\nstates:\n  a: {}\n  b: {}\ntransitions:\n"
        "  - from: a\n    on: success\n    to: b\n",
        "t.yaml",
    )
    assert loaded.machine.transitions[0].on == "success"


def test_yaml_1_1_bad_on_reports_its_line() -> None:
    with pytest.raises(BlueprintError) as info:
        load_blueprint_text(
            "%YAML 1.1\n---\nstates:\n  a: {}\ntransitions:\n"
            "  - from: a\n    on: finished\n    to: a\n",
            "t.yaml",
        )
    assert info.value.issues[0].line == 7


def test_start_state_defaults_to_first_and_bodies_may_be_empty() -> None:
    document = load(
        """
        states:
          first:
          second: {}
        """
    )
    assert document.rule_machine().start_state == "first"


def test_unknown_from_and_to_report_lines() -> None:
    issues = errors_of(
        """
        states:
          a: {}
        end_states: [done]
        transitions:
          - from: a
            on: success
            to: done
          - from: ghost
            on: success
            to: a
          - from: a
            on: failure
            to: phantom
        """
    )
    assert [(i.line, i.message.split(":")[0]) for i in issues] == [
        (9, "transitions[1] (ghost --success--> a)"),
        (14, "transitions[2] (a --failure--> phantom)"),
    ]


def test_bad_when_reports_the_when_line() -> None:
    issues = errors_of(
        """
        states:
          a: {}
        transitions:
          - from: a
            on: success
            to: a
            when: "().__class__.__bases__[0]"
        """
    )
    assert issues[0].line == 8
    assert "'__bases__' starts with '_'" in issues[0].message or "__class__" in issues[0].message


def test_rule_errors_survive_structural_errors() -> None:
    issues = errors_of(
        """
        states:
          a: {titel: oops}
        transitions:
          - {from: a, on: later, to: a}
          - {from: a, on: success, to: nowhere}
        """
    )
    assert [i.line for i in issues] == [3, 5, 6]
    assert "transitions[1]" in issues[2].message


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("states: {a: {steps: [{id: s, behaviors: [{id: b, max_iterations: 0}]}]}}", 1, "greater"),
        (
            "states:\n  a:\n    steps:\n      - id: s\n        behaviors:\n"
            "          - id: b\n            max_iterations: 1.5\n",
            7,
            "integer",
        ),
        (
            "states:\n  a:\n    steps:\n      - id: s\n        behaviors:\n"
            "          - id: b\n            max_iterations: true\n",
            7,
            "integer",
        ),
        ("states:\n  a:\n    steps:\n      - id: s\n      - id: s\n", 2, "duplicate step id"),
        (
            "states:\n  a:\n    steps:\n      - id: s\n        behaviors:\n"
            "          - id: b\n          - id: b\n",
            4,
            "duplicate behavior id",
        ),
        (
            "states:\n  a:\n    steps:\n      - id: s\n        behaviors:\n          - id: b\n"
            "            actions:\n              - {markdown: hi, code: x}\n",
            8,
            "not both",
        ),
        (
            "states:\n  a:\n    steps:\n      - id: s\n        behaviors:\n          - id: b\n"
            "            actions:\n              - code: ''\n",
            8,
            "empty",
        ),
        (
            "states:\n  a:\n    steps:\n      - id: s\n        behaviors:\n          - id: b\n"
            "            actions:\n              - markdown: hi\n"
            "                irreversible: true\n",
            8,
            "code actions only",
        ),
        ("states:\n  a:\n    confirm: 3\n", 3, "confirm"),
        ("states:\n  a:\n    goal: g\n    color: red\n", 4, "unknown key 'color'"),
        ("states:\n  'a/b': {}\n", 2, "name 'a/b'"),
        ("states: {}\n", 1, "at least 1"),
        ("name: x\n", 1, "missing required key 'states'"),
        ("states: [a, b]\n", 1, "dictionary"),
        ("states: {a: {}}\nwhen_errors: sometimes\n", 2, "strict"),
        ("states: {a: {}}\ntransitions:\n  - {from: a, to: a}\n", 3, "missing required key 'on'"),
        (
            "states: {a: {}}\ntransitions:\n  - {from: a, on: success, to: a, if: x}\n",
            3,
            "unknown key 'if'",
        ),
        ("states: {a: {}}\nbogus: 1\n", 2, "unknown key 'bogus'"),
        ("states: {a: {}}\nname: !custom x\n", 2, "unsupported YAML value"),
    ],
)
def test_structural_errors_have_lines(text: str, line: int, fragment: str) -> None:
    issues = errors_of(text)
    assert any(i.line == line and fragment in i.message for i in issues), issues


def test_all_errors_are_collected() -> None:
    with pytest.raises(BlueprintError) as info:
        load_blueprint_file(BLUEPRINTS / "bad_structure.yaml")
    assert len(info.value.issues) == 7
    assert info.value.message.startswith(f"{BLUEPRINTS / 'bad_structure.yaml'}:3: ")
    assert "(and 6 more errors)" in info.value.message


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("states: {a: [}\n", 1, "YAML syntax"),
        ("states:\n  a: 1\n  a: 2\n", 3, "duplicate key"),
        ("- 1\n- 2\n", 1, "list of 2"),
        ("just a string\n", None, "a str"),
        ("", None, "empty"),
        ("a: &x [*x]\n", 1, ""),
        ("a: !!python/object:os.system x\n", 1, "unsupported YAML value"),
    ],
)
def test_malformed_yaml_is_one_typed_error(text: str, line: int | None, fragment: str) -> None:
    with pytest.raises(BlueprintError) as info:
        load_blueprint_text(text, "t.yaml")
    first = info.value.issues[0]
    assert first.line == line
    assert fragment in first.message


def test_billion_laughs_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    with pytest.raises(BlueprintError, match="more than"):
        load_blueprint_text("\n".join(lines) + "\n", "bomb.yaml")


def test_missing_file_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(BlueprintError) as info:
        load_blueprint_file(tmp_path / "nope.yaml")
    assert len(info.value.issues) == 1
    assert info.value.issues[0].line is None


def test_non_utf8_file_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"states:\n  a: {title: caf\xe9}\n")
    with pytest.raises(BlueprintError) as info:
        load_blueprint_file(path)
    assert info.value.issues == [Issue(2, "the file is not UTF-8 text")]


def test_bare_or_blueprint_detection() -> None:
    assert not looks_like_blueprint({"states": {"a": {"steps": [{"name": "x", "uses": "y"}]}}})
    assert looks_like_blueprint({"states": {"a": {"steps": [{"id": "x"}]}}})
    assert looks_like_blueprint({"states": {"a": {"title": "t"}}})
    assert looks_like_blueprint({"states": {"a": {}}})
    assert looks_like_blueprint({"states": {"a": None}, "files": []})
    assert looks_like_blueprint({"states": [1]})


def test_blueprint_json_schema_is_registered() -> None:
    schema = json_schema("blueprint")
    assert schema["title"] == "Blueprint"
    assert "transitions" in schema["properties"]
    assert "from" in schema["$defs"]["TransitionRule"]["properties"]


def test_mermaid_shows_rules_and_the_next_fallback() -> None:
    loaded = load_blueprint_file(BLUEPRINTS / "housing.yaml")
    diagram = blueprint_mermaid(loaded, current="modeling")
    lines = diagram.splitlines()
    assert lines[0] == "stateDiagram-v2"
    assert "    [*] --> data_existence" in lines
    assert "    modeling --> tuning : success [context.variables.rmse > 50000]" in lines
    assert "    modeling --> export : success" in lines
    assert "    data_existence --> cleaning : next" in lines
    assert "    data_existence --> failed : failure" in lines
    assert not any(line.startswith("    modeling --> tuning : next") for line in lines)
    assert "    done --> [*]" in lines
    assert "    class modeling current" in lines
    assert blueprint_mermaid(loaded.blueprint) == blueprint_mermaid(loaded.machine, None)


def test_mermaid_last_state_falls_off_the_end() -> None:
    document = load("states:\n  a: {}\n  b: {}\n")
    diagram = blueprint_mermaid(document)
    assert "    a --> b : next" in diagram
    assert "    b --> [*]" in diagram
