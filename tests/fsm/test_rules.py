"""Declarative transition rules (seed 004): resolution, checks, policy, hops."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from notebook_bcc.errors import UnknownNameError
from notebook_bcc.fsm.expressions import UnsafeExpressionError, WhenEvaluationError
from notebook_bcc.fsm.rules import (
    OUTCOMES,
    WILDCARD,
    HopAllowed,
    HopCapExceeded,
    HopCapExceededError,
    RuleMachine,
    TransitionRule,
    check_hop,
    check_machine,
    enter_state,
    resolve,
    successors,
    when_namespace,
)


def rule(source: str, on: str, to: str, when: str | None = None) -> TransitionRule:
    return TransitionRule.model_validate({"from": source, "on": on, "to": to, "when": when})


def machine(*rules: TransitionRule, **fields: Any) -> RuleMachine:
    data: dict[str, Any] = {
        "states": ["clarify", "discover", "review"],
        "end_states": ["done", "failed"],
        "transitions": list(rules),
    }
    data.update(fields)
    return RuleMachine.model_validate(data)


def ns(event: str = "success", **variables: Any) -> dict[str, Any]:
    return when_namespace(event=event, variables=variables, stage_id="clarify", visits=1)


# --------------------------------------------------------------------------- model


def test_rule_accepts_from_alias_and_yaml11_true_key() -> None:
    parsed = TransitionRule.model_validate({"from": "a", True: "pause", "to": "a"})
    assert parsed.from_state == "a"
    assert parsed.on == "pause"
    assert parsed.model_dump(by_alias=True) == {"from": "a", "on": "pause", "to": "a", "when": None}


@pytest.mark.parametrize("bad", ["done", "SUCCESS", "", None, 1])
def test_bad_on_is_refused(bad: Any) -> None:
    with pytest.raises(ValidationError, match="on"):
        TransitionRule.model_validate({"from": "a", "on": bad, "to": "b"})


def test_start_state_defaults_to_the_first_state() -> None:
    assert machine().start_state == "clarify"
    assert machine(start_state="review").start_state == "review"


def test_max_hops_is_ten_per_state() -> None:
    assert machine().max_hops == 30


def test_next_in_file_order() -> None:
    m = machine()
    assert m.next_in_file_order("clarify") == "discover"
    assert m.next_in_file_order("review") is None
    assert m.next_in_file_order("done") is None


def test_line_is_kept_out_of_the_wire_form() -> None:
    lined = rule("a", "success", "b").at_line(12)
    assert lined.line == 12
    assert "line" not in lined.model_dump()
    assert rule("a", "success", "b").line is None


# --------------------------------------------------------------------------- resolution


def test_first_match_wins() -> None:
    m = machine(
        rule("clarify", "success", "discover"),
        rule("clarify", "success", "review"),
    )
    result = resolve(m, "clarify", "success", ns())
    assert result.index == 0
    assert result.target == "discover"


def test_wildcard_matches_any_state() -> None:
    m = machine(rule("clarify", "success", "discover"), rule(WILDCARD, "failure", "failed"))
    for state in ("clarify", "discover", "review"):
        assert resolve(m, state, "failure", ns("failure")).target == "failed"
    assert not resolve(m, "discover", "success", ns()).matched


def test_when_true_takes_the_rule_and_false_falls_through() -> None:
    m = machine(
        rule("clarify", "success", "review", when="context.variables.rmse > 5"),
        rule("clarify", "success", "discover"),
    )
    taken = resolve(m, "clarify", "success", ns(rmse=9.0))
    assert (taken.index, taken.target) == (0, "review")
    skipped = resolve(m, "clarify", "success", ns(rmse=1.0))
    assert (skipped.index, skipped.target) == (1, "discover")


def test_when_sees_the_event_and_output() -> None:
    m = machine(rule("*", "failure", "failed", when="output.event == 'failure' and event"))
    assert resolve(m, "review", "failure").target == "failed"


def test_pause_re_entry_returns_the_state_to_resume_in() -> None:
    m = machine(rule("clarify", "pause", "clarify"), rule("clarify", "success", "discover"))
    paused = resolve(m, "clarify", "pause", ns("pause"))
    assert paused.resume_state == "clarify"
    assert resolve(m, "clarify", "success", ns()).resume_state is None


def test_no_match_is_not_an_error() -> None:
    result = resolve(machine(), "clarify", "success", ns())
    assert not result.matched
    assert result.rule is None
    assert result.index is None
    assert result.target is None


def test_unknown_event_is_refused() -> None:
    with pytest.raises(UnknownNameError):
        resolve(machine(), "clarify", "done", ns())


def test_strict_policy_raises_naming_rule_and_line() -> None:
    failing = rule("clarify", "success", "review", when="context.variables.rmse > 5").at_line(42)
    m = machine(failing, rule("clarify", "success", "discover"))
    with pytest.raises(WhenEvaluationError) as info:
        resolve(m, "clarify", "success", ns())
    error = info.value
    assert error.rule_index == 0
    assert error.line == 42
    assert "transitions[0]" in error.message
    assert "line 42" in error.message
    assert "no key 'rmse'" in error.message


def test_skip_policy_warns_and_moves_on() -> None:
    failing = rule("clarify", "success", "review", when="context.variables.rmse > 5").at_line(7)
    m = machine(failing, rule("clarify", "success", "discover"), when_errors="skip")
    result = resolve(m, "clarify", "success", ns())
    assert result.target == "discover"
    assert len(result.warnings) == 1
    assert "line 7" in result.warnings[0]
    assert "skipped" in result.warnings[0]


def test_skip_policy_with_nothing_left_is_no_match_with_warning() -> None:
    m = machine(rule("clarify", "success", "review", when="1 / 0 > 1"), when_errors="skip")
    result = resolve(m, "clarify", "success", ns())
    assert not result.matched
    assert result.warnings


def test_unchecked_unsafe_rule_is_refused_at_resolution() -> None:
    m = machine(rule("clarify", "success", "review", when="__import__('os')"))
    with pytest.raises(UnsafeExpressionError, match=r"transitions\[0\]"):
        resolve(m, "clarify", "success", ns())


# --------------------------------------------------------------------------- checks


def _messages(m: RuleMachine, severity: str) -> list[str]:
    return [issue.message for issue in check_machine(m) if issue.severity == severity]


def test_valid_machine_has_no_errors() -> None:
    m = machine(
        rule("clarify", "pause", "clarify"),
        rule("clarify", "success", "discover", when="context.variables.ok"),
        rule("discover", "success", "review"),
        rule("review", "success", "done"),
        rule("*", "failure", "failed"),
    )
    assert _messages(m, "error") == []
    assert _messages(m, "warning") == []


def test_unknown_from_and_to_are_errors_with_rule_index() -> None:
    m = machine(rule("nowhere", "success", "review"), rule("clarify", "success", "elsewhere"))
    issues = [issue for issue in check_machine(m) if issue.severity == "error"]
    assert [(i.rule_index, i.field) for i in issues] == [(0, "from"), (1, "to")]
    assert "'nowhere' is not a state" in issues[0].message
    assert "'elsewhere' is not a state or end state" in issues[1].message


def test_end_state_needs_no_body_but_cannot_be_left() -> None:
    ok = machine(rule("review", "success", "done"))
    assert _messages(ok, "error") == []
    bad = machine(rule("done", "success", "review"))
    assert any("end state without a body" in message for message in _messages(bad, "error"))


def test_rule_numbers_keep_source_positions() -> None:
    m = machine(rule("nowhere", "success", "review"))
    (issue,) = [i for i in check_machine(m, rule_numbers=[4]) if i.severity == "error"]
    assert issue.rule_index == 4
    assert "transitions[4]" in issue.message
    with pytest.raises(ValueError, match="one entry per rule"):
        check_machine(m, rule_numbers=[])


def test_bad_when_is_an_error() -> None:
    m = machine(rule("clarify", "success", "review", when="open('x')"))
    (issue,) = [i for i in check_machine(m) if i.severity == "error"]
    assert (issue.rule_index, issue.field) == (0, "when")


def test_start_state_must_have_a_body() -> None:
    assert any("start_state" in m for m in _messages(machine(start_state="nope"), "error"))
    assert any(
        "end state without a body" in m for m in _messages(machine(start_state="done"), "error")
    )


def test_no_states_and_reserved_names_are_errors() -> None:
    assert _messages(RuleMachine(states=[], start_state="x"), "error")
    assert _messages(machine(states=["a", "*"]), "error")
    assert _messages(machine(states=["a", "a"]), "error")


def test_shadowed_rules_warn() -> None:
    m = machine(
        rule("*", "failure", "failed"),
        rule("clarify", "failure", "review"),
        rule("clarify", "success", "discover"),
        rule("clarify", "success", "review"),
        rule("discover", "success", "review", when="event"),
        rule("discover", "success", "done"),
    )
    shadowed = [issue.rule_index for issue in check_machine(m) if "never fires" in issue.message]
    assert shadowed == [1, 3]


def test_rule_from_an_end_state_with_a_body_warns() -> None:
    m = machine(rule("review", "success", "clarify"), end_states=["review"])
    assert any("stays terminal" in message for message in _messages(m, "warning"))


def test_unreachable_and_dead_end_states_warn() -> None:
    m = machine(
        rule("clarify", "success", "discover"),
        rule("clarify", "failure", "discover"),
        rule("discover", "success", "clarify"),
        rule("discover", "failure", "clarify"),
        rule("review", "success", "done"),
    )
    warnings = _messages(m, "warning")
    assert "state 'review' is unreachable from 'clarify'" in warnings
    assert "state 'failed' is unreachable from 'clarify'" in warnings
    assert "state 'clarify' has no path to an end state" in warnings
    assert "state 'discover' has no path to an end state" in warnings
    assert "state 'review' has no path to an end state" not in warnings


def test_file_order_fallback_counts_as_an_edge() -> None:
    m = machine(end_states=[])
    assert _messages(m, "warning") == []
    assert successors(m, "review") == {None}
    assert successors(m, "clarify") == {"discover"}


# --------------------------------------------------------------------------- hops


def test_hops_allowed_until_the_cap() -> None:
    assert check_hop(0, 3) == HopAllowed(hop=1, cap=3)
    assert check_hop(2, 3) == HopAllowed(hop=3, cap=3)
    assert check_hop(2, 3).remaining == 0  # type: ignore[union-attr]


def test_hop_cap_exhausted_is_an_explicit_outcome() -> None:
    outcome = check_hop(3, 3)
    assert isinstance(outcome, HopCapExceeded)
    assert isinstance(outcome.error(), HopCapExceededError)
    with pytest.raises(HopCapExceededError, match="cap is 3"):
        enter_state(3, 3)
    assert enter_state(0, 3) == 1


def test_hop_cap_loop_simulation() -> None:
    m = machine(rule("clarify", "success", "discover"), rule("discover", "success", "clarify"))
    state, hops = m.start_state, enter_state(0, m.max_hops)
    for _ in range(m.max_hops - 1):
        target = resolve(m, state, "success", ns()).target
        assert target is not None
        hops = enter_state(hops, m.max_hops)
        state = target
    assert hops == m.max_hops
    assert isinstance(check_hop(hops, m.max_hops), HopCapExceeded)
    with pytest.raises(HopCapExceededError):
        enter_state(hops, m.max_hops)


def test_negative_hops_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="hops_taken"):
        check_hop(-1, 3)


# --------------------------------------------------------------------------- properties

STATES = ["a", "b", "c"]
_rules = st.builds(
    rule,
    st.sampled_from([*STATES, WILDCARD]),
    st.sampled_from(OUTCOMES),
    st.sampled_from(STATES),
    st.sampled_from([None, "variables.flag", "not variables.flag"]),
)


@given(
    st.lists(_rules, max_size=8),
    st.sampled_from(STATES),
    st.sampled_from(OUTCOMES),
    st.booleans(),
)
def test_resolve_returns_the_first_matching_rule(
    rules: list[TransitionRule], state: str, event: str, flag: bool
) -> None:
    m = RuleMachine(states=STATES, start_state="a", transitions=rules)
    namespace = when_namespace(event=event, variables={"flag": flag})
    expected = None
    for index, candidate in enumerate(rules):
        holds = {None: True, "variables.flag": flag, "not variables.flag": not flag}[candidate.when]
        if candidate.on == event and candidate.from_state in (state, WILDCARD) and holds:
            expected = index
            break
    result = resolve(m, state, event, namespace)
    assert result.index == expected
    assert result.rule is (rules[expected] if expected is not None else None)


@given(st.lists(_rules, max_size=8))
def test_checks_never_crash_and_shadowed_rules_never_win(rules: list[TransitionRule]) -> None:
    m = RuleMachine(states=STATES, start_state="a", transitions=rules)
    shadowed = {i.rule_index for i in check_machine(m) if "always matches first" in i.message}
    for state in STATES:
        for event in OUTCOMES:
            for flag in (True, False):
                namespace = when_namespace(event=event, variables={"flag": flag})
                assert resolve(m, state, event, namespace).index not in shadowed - {None}
