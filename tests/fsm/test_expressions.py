"""Safe ``when`` expressions: the allow-list at load, the interpreter at run time."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.expressions import (
    ALLOWED_FUNCTIONS,
    ALLOWED_ROOTS,
    MAX_SOURCE_LENGTH,
    UnsafeExpressionError,
    WhenEvaluationError,
    WhenExpressionError,
    WhenSyntaxError,
    check_expression,
    compile_when,
)

NAMESPACE: dict[str, Any] = {
    "context": {
        "variables": {"rmse": 3.5, "rows": 120, "name": "housing", "cols": ["a", "b", "c"]},
        "acceptance": {"rmse < 5": "passed"},
        "effects": {"current": ["ok"], "history": []},
        "stage": {"id": "modeling", "visits": 2},
    },
    "output": {"event": "success", "last_output": {"score": 0.8}},
    "variables": {"rmse": 3.5},
    "acceptance": {},
    "effects": {"current": ["ok"]},
    "stage": {"id": "modeling", "visits": 2},
    "event": "success",
}

ESCAPES = [
    "().__class__.__bases__[0].__subclasses__()",
    "().__class__",
    "__import__('os')",
    "__import__('os').system('ls')",
    "lambda: 1",
    "(lambda x: x)(1)",
    "[x for x in context.variables]",
    "{x for x in context.variables}",
    "{k: 1 for k in context.variables}",
    "any(x for x in context.variables)",
    "(x for x in context.variables)",
    "f'{context.variables}'",
    "f'{context.__class__}'",
    "getattr(context, 'variables')",
    "eval('1')",
    "exec('x = 1')",
    "open('/etc/passwd')",
    "compile('1', 'f', 'eval')",
    "(x := 1)",
    "context.__dict__",
    "context.variables.__globals__",
    "context.get.__globals__['os']",
    "output.__class__.__init__.__globals__",
    "_private",
    "context._secret",
    "[*context.variables]",
    "len(*context.variables.cols)",
    "type(context)",
    "len(context, key=1)",
    "max(**context)",
    "'a'.join(['b'])",
    "context.variables.keys()",
    "context.variables.get('rmse')",
    "10**10**10",
    "2 ** 100000",
    "'a' * 10**9",
    "[0] * 10**8",
    "[[0] * 1000] * 1000 == [[0] * 1000] * 1000",
    "(1,) * 2",
    "9 ** 9 ** 9",
    "(10 ** 1000) * (10 ** 1000)",
    "-" * 200 + "1",
    "[" * 60 + "]" * 60,
    "(" * 300 + "1" + ")" * 300,
    "os.system('id')",
    "globals()",
    "vars()",
    "__builtins__",
    "print('x')",
    "1 << 100000",
    "~event",
    "{1, 2}",
    "b'bytes'",
    "1j",
    "...",
    "event is 'x'",
    "len",
    "round(1.5, 10**9)",
    "{**context}",
    "x" * (MAX_SOURCE_LENGTH + 1),
]


@pytest.mark.parametrize("source", ESCAPES)
def test_escape_attempts_are_refused_at_load(source: str) -> None:
    with pytest.raises(UnsafeExpressionError) as info:
        compile_when(source)
    assert isinstance(info.value, NotebookBccError)
    assert info.value.node


def test_refusal_names_the_node_and_column() -> None:
    with pytest.raises(UnsafeExpressionError) as info:
        compile_when("event == 'x' and context.__dict__")
    assert info.value.column == 18
    assert info.value.node == "attribute __dict__"
    assert "__dict__" in info.value.message
    assert info.value.to_json()["details"]["column"] == 18


@pytest.mark.parametrize("source", ["", "   ", "event ==", "1 +", "a b", "event = 1", "if x"])
def test_syntax_errors_are_typed(source: str) -> None:
    with pytest.raises(WhenSyntaxError):
        check_expression(source)


def test_a_non_string_is_a_syntax_error() -> None:
    with pytest.raises(WhenSyntaxError):
        check_expression(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("context.variables.rmse < 5", True),
        ("context.variables['rmse'] < 5", True),
        ("context.variables.rmse == context.variables['rmse']", True),
        ("variables.rmse > 5", False),
        ("len(context.variables.cols) == 3", True),
        ("context.variables.cols[-1]", "c"),
        ("context.variables.cols[1:]", ["b", "c"]),
        ("'rmse' in context.variables", True),
        ("'nope' not in context.variables and event == 'success'", True),
        ("output.last_output.score >= 0.5", True),
        ("context.stage.visits < 3 and stage.id == 'modeling'", True),
        ("abs(-2) + max(1, 2) + min([3, 4]) + round(2.4)", 9),
        ("round(2.567, 2)", 2.57),
        ("context.variables.rows // 7 % 5", 2),
        ("2 ** 10", 1024),
        ("'ab' * 3", "ababab"),
        ("context.variables.name + '!'", "housing!"),
        ("'yes' if context.variables.rmse < 5 else 'no'", "yes"),
        ("not effects.current", False),
        ("context.acceptance['rmse < 5'] == 'passed'", True),
        ("output.last_output is not None", True),
        ("{'a': 1}.a", 1),
        ("(1, 2)[0]", 1),
        ("1 < context.variables.rmse < 4", True),
        ("event == 'failure' or None", None),
    ],
)
def test_evaluation(source: str, expected: Any) -> None:
    assert compile_when(source).evaluate(NAMESPACE) == expected


@pytest.mark.parametrize(
    "source",
    [
        "context.variables.missing",
        "context.variables['missing']",
        "context.variables.cols[10]",
        "context.variables.cols['a']",
        "context.variables.rmse.value",
        "context.variables.name < 3",
        "1 / 0",
        "context.variables.cols * 10**6",
        "context.variables.name % 2",
        "len(context.variables.rmse)",
        "min([])",
        "(-8) ** 0.5",
        "10.0 ** 400",
        "scratch",
        "1 in context.variables.rmse",
    ],
)
def test_runtime_errors_are_typed(source: str) -> None:
    try:
        expression = compile_when(source)
    except UnsafeExpressionError:
        assert source == "scratch"  # an unknown name is refused at load already
        return
    with pytest.raises(WhenEvaluationError) as info:
        expression.evaluate(NAMESPACE)
    assert info.value.expression == source


def test_missing_root_is_a_runtime_error() -> None:
    with pytest.raises(WhenEvaluationError, match="not available"):
        compile_when("stage.id").evaluate({"context": {}})


def test_non_plain_data_is_never_read() -> None:
    class Secret:
        password = "hunter2"

    with pytest.raises(WhenEvaluationError, match="not plain JSON"):
        compile_when("context.obj").evaluate({"context": {"obj": Secret()}})


def test_attribute_reads_dict_keys_only() -> None:
    namespace = {"context": {"variables": {"keys": 7}}}
    assert compile_when("context.variables.keys").evaluate(namespace) == 7
    with pytest.raises(WhenEvaluationError):
        compile_when("context.variables.items").evaluate(namespace)


def test_compile_is_cached_by_text() -> None:
    assert compile_when("event == 'success'") is compile_when("event == 'success'")


# --------------------------------------------------------------------------- properties

_leaves = st.one_of(
    st.sampled_from(sorted(ALLOWED_ROOTS)),
    st.sampled_from(["True", "False", "None", "0", "1", "-3", "2.5", "'a'", "''", "10**3"]),
    st.integers(-(10**6), 10**6).map(str),
    st.text(alphabet="abcxyz_ ", max_size=5).map(repr),
)


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.sampled_from(
        ["+", "-", "*", "/", "//", "%", "**", "and", "or", "==", "!=", "<", ">=", "in", "not in"]
    )
    keys = st.sampled_from(["variables", "rmse", "id", "visits", "event", "x", "0"])
    return st.one_of(
        st.tuples(children, binary, children).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["not ", "-", "+"]), children).map(lambda t: f"({t[0]}{t[1]})"),
        st.tuples(children, keys).map(lambda t: f"{t[0]}.{t[1]}" if t[1][0].isalpha() else t[0]),
        st.tuples(children, children).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(st.sampled_from(sorted(ALLOWED_FUNCTIONS)), children).map(
            lambda t: f"{t[0]}({t[1]})"
        ),
        st.lists(children, max_size=3).map(lambda items: f"[{', '.join(items)}]"),
        st.tuples(children, children).map(lambda t: f"{t[0]}[{t[1]}:]"),
    )


EXPRESSIONS = st.recursive(_leaves, _combine, max_leaves=12)

_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**9), 10**9),
        st.floats(allow_nan=False),
        st.text(max_size=5),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)
NAMESPACES = st.fixed_dictionaries(dict.fromkeys(sorted(ALLOWED_ROOTS), _json))


@given(EXPRESSIONS, NAMESPACES)
def test_allowed_grammar_only_raises_typed_errors(source: str, namespace: dict[str, Any]) -> None:
    try:
        expression = compile_when(source)
    except WhenExpressionError:
        return  # e.g. too deep, or a literal guard tripped: refused, typed
    with contextlib.suppress(WhenEvaluationError):
        expression.evaluate(namespace)


@given(
    st.text(
        alphabet=st.sampled_from(list("abcxyz_.()[]{}'\"+-*/%<>=!:,0123456789 \\@~^&|;`\n#$")),
        max_size=40,
    )
)
def test_arbitrary_text_never_escapes_the_typed_errors(source: str) -> None:
    try:
        expression = compile_when(source)
    except WhenExpressionError:
        return
    with contextlib.suppress(WhenEvaluationError):
        expression.evaluate(NAMESPACE)
