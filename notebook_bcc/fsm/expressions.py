"""Safe ``when`` expressions for declarative transitions (seed 004, D13, design §7).

A ``when`` is a Python *expression* checked once, at load, against an allow-list, then
evaluated by a small interpreter over plain JSON data (dicts, lists, strings, numbers, booleans,
None). Python's ``eval``/``compile`` are never used, so nothing in an expression can reach a
Python object's attributes: ``a.b`` and ``a['b']`` both read the key ``b`` of the dict ``a``.

The allow-list (anything else is refused with :class:`UnsafeExpressionError`):

- names: only the D13 roots ``context``, ``output``, ``variables``, ``acceptance``,
  ``effects``, ``stage``, ``event``; literals ``True``, ``False``, ``None``;
- literals: ``str``, ``int``, ``float``; lists, tuples and dicts of allowed expressions
  (no ``**`` unpacking, no sets);
- reads: attribute and subscript (index or slice) on an allowed expression; a name or
  attribute starting with ``_`` is refused;
- operators: ``and``, ``or``, ``not``; ``==  !=  <  <=  >  >=  in  not in``; ``is`` /
  ``is not`` only against ``None``, ``True`` or ``False``; unary ``-  +``; binary
  ``+  -  *  /  //  %  **`` (``%`` is numeric only, never string formatting; ``*`` repeats
  strings, not lists); the conditional ``x if c else y``;
- calls: only ``len(x)``, ``abs(x)``, ``min(...)``, ``max(...)``, ``round(x[, n])`` with
  positional arguments; no method calls, keywords or ``*``/``**`` arguments.

Also refused: lambda, comprehensions, generator expressions, f-strings, walrus, starred,
await, yield, bit operators, bytes/complex/Ellipsis literals, and anything longer than
:data:`MAX_SOURCE_LENGTH` characters, deeper than :data:`MAX_DEPTH` or larger than
:data:`MAX_NODES` nodes. Arithmetic is size-guarded (``**`` and ``*`` are checked *before* they
run, so ``10**10**10`` or ``'a' * 10**9`` are refused at load when their operands are literals
and fail at run time otherwise).

Runtime errors (a missing key, a type mismatch, a division by zero, a guard tripped by data)
raise :class:`WhenEvaluationError`; what a rule machine does with it is its ``when_errors``
policy (see :mod:`notebook_bcc.fsm.rules`).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from notebook_bcc.errors import NotebookBccError

ALLOWED_ROOTS: frozenset[str] = frozenset(
    {"context", "output", "variables", "acceptance", "effects", "stage", "event"}
)
"""The only names an expression may use (D13): the context, the output and their shorthands."""

ALLOWED_FUNCTIONS: dict[str, tuple[int, int]] = {
    "len": (1, 1),
    "abs": (1, 1),
    "min": (1, 16),
    "max": (1, 16),
    "round": (1, 2),
}
"""The callable built-ins and their (min, max) positional argument counts."""

MAX_SOURCE_LENGTH = 1000
"""Longest accepted expression, in characters."""
MAX_DEPTH = 32
"""Deepest accepted syntax tree (an ``a + b + ...`` chain of 30 terms still fits)."""
MAX_NODES = 300
"""Most syntax-tree nodes an expression may have."""
MAX_INT_BITS = 4096
"""Largest integer an operation may produce, in bits."""
MAX_SEQUENCE_LENGTH = 100_000
"""Longest string, list or tuple ``+`` or ``*`` may produce."""
MAX_ROUND_DIGITS = 30
"""Largest ``|n|`` accepted by ``round(x, n)``."""

_PLAIN_TYPES = (dict, list, tuple, str, int, float, bool, type(None))


class WhenExpressionError(NotebookBccError):
    """Base of the ``when`` expression errors; names the expression, the node and the column.

    ``column`` is 1-based within the (stripped) expression text, or None when unknown.
    """

    code = "when_expression"

    def __init__(
        self, reason: str, *, expression: str, node: str | None = None, column: int | None = None
    ) -> None:
        where = f" at column {column}" if column is not None else ""
        super().__init__(
            f"when {expression!r}: {reason}{where}",
            details={"expression": expression, "node": node, "column": column, "reason": reason},
        )
        self.reason = reason
        self.expression = expression
        self.node = node
        self.column = column


class WhenSyntaxError(WhenExpressionError):
    """The expression is not a single well-formed Python expression."""

    code = "when_syntax"


class UnsafeExpressionError(WhenExpressionError):
    """The expression uses something outside the allow-list (or is too big to run safely)."""

    code = "unsafe_expression"


class WhenEvaluationError(NotebookBccError):
    """A checked expression failed while running: missing key, wrong type, guard tripped.

    Raised bare by :meth:`WhenExpression.evaluate`; the rule resolver re-raises it through
    :meth:`for_rule` so the message names the rule and its line (D13 strict policy).
    """

    code = "when_evaluation"

    def __init__(
        self,
        reason: str,
        *,
        expression: str,
        rule_index: int | None = None,
        line: int | None = None,
        rule_label: str | None = None,
    ) -> None:
        where = ""
        if rule_index is not None:
            where = f"transitions[{rule_index}]"
            if rule_label:
                where += f" ({rule_label})"
            if line is not None:
                where += f" at line {line}"
            where += ": "
        super().__init__(
            f"{where}when {expression!r} failed: {reason}",
            details={
                "expression": expression,
                "reason": reason,
                "rule_index": rule_index,
                "line": line,
            },
        )
        self.reason = reason
        self.expression = expression
        self.rule_index = rule_index
        self.line = line

    def for_rule(
        self, rule_index: int, line: int | None, rule_label: str | None = None
    ) -> WhenEvaluationError:
        """The same failure, attributed to the rule at ``rule_index`` (and its YAML line)."""
        return WhenEvaluationError(
            self.reason,
            expression=self.expression,
            rule_index=rule_index,
            line=line,
            rule_label=rule_label,
        )


class _Failure(Exception):
    """Internal: a runtime failure of the interpreter."""


class _LimitFailure(_Failure):
    """Internal: a size guard tripped (refused at load when the operands are literals)."""


def _column(node: ast.AST) -> int | None:
    offset = getattr(node, "col_offset", None)
    return offset + 1 if isinstance(offset, int) else None


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # int too large to print, or a cyclic value
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


_REFUSED_NODES: dict[type[ast.AST], str] = {
    ast.Lambda: "lambda",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string",
    ast.NamedExpr: "assignment expression (:=)",
    ast.Starred: "starred expression",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
    ast.Set: "set literal",
}

_BIN_OPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}
_UNARY_OPS: dict[type[ast.unaryop], str] = {ast.Not: "not", ast.USub: "-", ast.UAdd: "+"}
_COMPARE_OPS: tuple[type[ast.cmpop], ...] = (
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.In,
    ast.NotIn,
    ast.Is,
    ast.IsNot,
)


def _is_singleton_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, bool))


class _Checker:
    """Walks a parsed expression iteratively and refuses anything off the allow-list."""

    def __init__(self, source: str) -> None:
        self.source = source

    def refuse(self, reason: str, node: ast.AST, description: str) -> UnsafeExpressionError:
        return UnsafeExpressionError(
            reason, expression=self.source, node=description, column=_column(node)
        )

    def run(self, tree: ast.Expression) -> None:
        stack: list[tuple[ast.AST, int]] = [(tree.body, 1)]
        count = 0
        while stack:
            node, depth = stack.pop()
            count += 1
            if count > MAX_NODES:
                raise self.refuse(f"expression has more than {MAX_NODES} nodes", node, "size")
            if depth > MAX_DEPTH:
                raise self.refuse(f"expression nests deeper than {MAX_DEPTH}", node, "depth")
            stack.extend((child, depth + 1) for child in self.children(node))

    def children(self, node: ast.AST) -> list[ast.AST]:
        refused = _REFUSED_NODES.get(type(node))
        if refused is not None:
            raise self.refuse(f"{refused} is not allowed", node, refused)
        if isinstance(node, ast.Constant):
            if node.value is None or isinstance(node.value, (bool, int, float, str)):
                return []
            kind = type(node.value).__name__
            raise self.refuse(f"{kind} literals are not allowed", node, f"{kind} literal")
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise self.refuse(
                    f"attribute {node.attr!r} starts with '_'", node, f"attribute {node.attr}"
                )
            return [node.value]
        if isinstance(node, ast.Subscript):
            if isinstance(node.slice, ast.Slice):
                parts = (node.slice.lower, node.slice.upper, node.slice.step)
                return [node.value, *(part for part in parts if part is not None)]
            return [node.value, node.slice]
        if isinstance(node, ast.BoolOp):
            return list(node.values)
        if isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY_OPS:
                raise self.refuse("operator '~' is not allowed", node, "operator ~")
            return [node.operand]
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BIN_OPS:
                name = type(node.op).__name__
                raise self.refuse(f"operator {name} is not allowed", node, f"operator {name}")
            return [node.left, node.right]
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.IfExp):
            return [node.test, node.body, node.orelse]
        if isinstance(node, (ast.List, ast.Tuple)):
            return list(node.elts)
        if isinstance(node, ast.Dict):
            if any(key is None for key in node.keys):
                raise self.refuse("'**' unpacking is not allowed", node, "dict unpacking")
            return [part for part in (*node.keys, *node.values) if part is not None]
        name = type(node).__name__
        raise self.refuse(f"{name} is not allowed", node, name)

    def name(self, node: ast.Name) -> list[ast.AST]:
        if node.id.startswith("_"):
            raise self.refuse(f"name {node.id!r} starts with '_'", node, f"name {node.id}")
        if node.id in ALLOWED_FUNCTIONS:
            raise self.refuse(f"function {node.id!r} may only be called", node, f"name {node.id}")
        if node.id not in ALLOWED_ROOTS:
            known = ", ".join(sorted(ALLOWED_ROOTS))
            raise self.refuse(
                f"name {node.id!r} is not available; use one of {known}", node, f"name {node.id}"
            )
        return []

    def compare(self, node: ast.Compare) -> list[ast.AST]:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if not isinstance(op, _COMPARE_OPS):
                name = type(op).__name__
                raise self.refuse(f"comparison {name} is not allowed", node, name)
            is_identity = isinstance(op, (ast.Is, ast.IsNot))
            if is_identity and not (_is_singleton_literal(left) or _is_singleton_literal(right)):
                raise self.refuse(
                    "'is' / 'is not' may only compare with None, True or False", node, "is"
                )
            left = right
        return [node.left, *node.comparators]

    def call(self, node: ast.Call) -> list[ast.AST]:
        func = node.func
        if isinstance(func, ast.Attribute):
            raise self.refuse(
                f"method call '.{func.attr}(...)' is not allowed", node, f"call .{func.attr}"
            )
        if not isinstance(func, ast.Name):
            raise self.refuse("calling a computed value is not allowed", node, "call")
        if func.id not in ALLOWED_FUNCTIONS:
            allowed = ", ".join(ALLOWED_FUNCTIONS)
            raise self.refuse(
                f"call to {func.id!r} is not allowed; callable: {allowed}", node, f"call {func.id}"
            )
        if node.keywords:
            raise self.refuse(
                f"keyword or '**' arguments to {func.id}() are not allowed",
                node,
                f"call {func.id}",
            )
        low, high = ALLOWED_FUNCTIONS[func.id]
        if not low <= len(node.args) <= high:
            raise self.refuse(
                f"{func.id}() takes {low} to {high} positional arguments, got {len(node.args)}",
                node,
                f"call {func.id}",
            )
        return list(node.args)


def _parse(source: str) -> ast.Expression:
    if len(source) > MAX_SOURCE_LENGTH:
        raise UnsafeExpressionError(
            f"expression is longer than {MAX_SOURCE_LENGTH} characters",
            expression=source[:80] + "...",
            node="length",
        )
    text = source.strip()
    if not text:
        raise WhenSyntaxError("empty expression", expression=source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. invalid escape sequences in a string literal
            return ast.parse(text, mode="eval")
    except SyntaxError as exc:
        reason = exc.msg or "invalid syntax"
        if "too many nested" in reason:
            raise UnsafeExpressionError(
                f"expression nests too deeply ({reason})", expression=text, node="depth"
            ) from None
        raise WhenSyntaxError(reason, expression=text, node="syntax", column=exc.offset) from None
    except (RecursionError, MemoryError):
        raise UnsafeExpressionError(
            "expression nests too deeply", expression=text, node="depth"
        ) from None
    except ValueError as exc:  # null bytes on some Python versions
        raise WhenSyntaxError(str(exc), expression=text, node="syntax") from None


@dataclass(frozen=True)
class WhenExpression:
    """A checked ``when`` expression, ready to evaluate over a D13 namespace."""

    source: str
    tree: ast.Expression

    def evaluate(self, namespace: Mapping[str, Any]) -> Any:
        """The expression's value over ``namespace``; raises :class:`WhenEvaluationError`."""
        try:
            return _Interpreter(namespace).value(self.tree.body)
        except _Failure as exc:
            raise WhenEvaluationError(str(exc), expression=self.source) from None
        except (ArithmeticError, TypeError, ValueError, LookupError, RecursionError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            raise WhenEvaluationError(reason, expression=self.source) from None

    def matches(self, namespace: Mapping[str, Any]) -> bool:
        """Whether the expression is truthy over ``namespace``."""
        return bool(self.evaluate(namespace))


def check_expression(source: str) -> ast.Expression:
    """Parse ``source`` and check it against the allow-list; returns the checked tree.

    Raises :class:`WhenSyntaxError` or :class:`UnsafeExpressionError`. Sub-expressions made only
    of literals are computed once here, so a size guard they trip is a load-time refusal.
    """
    if not isinstance(source, str):
        raise WhenSyntaxError(
            f"expected a string, got {type(source).__name__}", expression=repr(source)
        )
    tree = _parse(source)
    text = source.strip()
    _Checker(text).run(tree)
    _fold_constants(text, tree.body)
    return tree


@lru_cache(maxsize=2048)
def compile_when(source: str) -> WhenExpression:
    """Check ``source`` (see :func:`check_expression`) and return it ready to evaluate.

    Cached by source text: rules that share an expression share one checked tree.
    """
    return WhenExpression(source.strip(), check_expression(source))


def _fold_constants(source: str, node: ast.expr) -> bool:
    """Evaluate literal-only operations; a tripped size guard becomes an UnsafeExpressionError.

    Returns whether ``node`` is literal-only. Other failures are left for run time.
    """
    if isinstance(node, ast.Call):
        children: list[ast.expr] = list(node.args)  # the callee is a name, not a value
    else:
        children = [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)]
    constant = True
    for child in children:
        constant = _fold_constants(source, child) and constant
    if isinstance(node, ast.Name):
        return False
    if constant and isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call)):
        try:
            _Interpreter({}).value(node)
        except _LimitFailure as exc:
            raise UnsafeExpressionError(
                str(exc), expression=source, node=ast.unparse(node)[:60], column=_column(node)
            ) from None
        except (_Failure, ArithmeticError, TypeError, ValueError, LookupError):
            pass
    return constant


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, complex)


def _guard(value: Any) -> Any:
    if isinstance(value, complex):
        raise _Failure("the result is a complex number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise _LimitFailure(f"the result has more than {MAX_INT_BITS} bits")
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_SEQUENCE_LENGTH:
        raise _LimitFailure(f"the result is longer than {MAX_SEQUENCE_LENGTH}")
    return value


def _power(base: Any, exponent: Any) -> Any:
    if not (_number(base) and _number(exponent)):
        raise _Failure(
            f"'**' needs numbers, got {type(base).__name__} and {type(exponent).__name__}"
        )
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        bits = (abs(base).bit_length() - 1) * exponent
        if exponent > MAX_INT_BITS or bits > MAX_INT_BITS:
            raise _LimitFailure(f"'**' would produce more than {MAX_INT_BITS} bits")
    return _guard(base**exponent)


def _multiply(left: Any, right: Any) -> Any:
    if isinstance(left, int) and isinstance(right, int):
        if left.bit_length() + right.bit_length() > MAX_INT_BITS + 1:
            raise _LimitFailure(f"'*' would produce more than {MAX_INT_BITS} bits")
        return left * right
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, (list, tuple)) and isinstance(count, int):
            # Repeated containers share their items, so comparing two of them can cost
            # len(a) * len(item) steps: only strings may be repeated.
            raise _LimitFailure("'*' repeats strings only, not lists or tuples")
        if isinstance(seq, str) and isinstance(count, int):
            if count > 0 and len(seq) * count > MAX_SEQUENCE_LENGTH:
                raise _LimitFailure(f"'*' would build a string longer than {MAX_SEQUENCE_LENGTH}")
            return seq * count
    if _number(left) and _number(right):
        return _guard(left * right)
    raise _Failure(f"'*' does not apply to {type(left).__name__} and {type(right).__name__}")


def _add(left: Any, right: Any) -> Any:
    if (
        isinstance(left, (str, list, tuple))
        and isinstance(right, (str, list, tuple))
        and len(left) + len(right) > MAX_SEQUENCE_LENGTH
    ):
        raise _LimitFailure(f"'+' would build a sequence longer than {MAX_SEQUENCE_LENGTH}")
    return _guard(left + right)


def _modulo(left: Any, right: Any) -> Any:
    if not (_number(left) and _number(right)):
        raise _Failure("'%' applies to numbers only")
    return left % right


_ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: _add,
    ast.Sub: lambda a, b: _guard(a - b),
    ast.Mult: _multiply,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: _modulo,
    ast.Pow: _power,
}


def _compare(op: ast.cmpop, left: Any, right: Any) -> bool:
    if isinstance(op, ast.Eq):
        return bool(left == right)
    if isinstance(op, ast.NotEq):
        return bool(left != right)
    if isinstance(op, ast.Lt):
        return bool(left < right)
    if isinstance(op, ast.LtE):
        return bool(left <= right)
    if isinstance(op, ast.Gt):
        return bool(left > right)
    if isinstance(op, ast.GtE):
        return bool(left >= right)
    if isinstance(op, (ast.In, ast.NotIn)):
        if not isinstance(right, (str, list, tuple, dict)):
            raise _Failure(f"'in' needs a string, list or dict, got {type(right).__name__}")
        found = left in right
        return found if isinstance(op, ast.In) else not found
    if isinstance(op, ast.Is):
        return left is right
    return left is not right


def _call(name: str, args: list[Any]) -> Any:
    if name == "len":
        (value,) = args
        if not isinstance(value, (str, list, tuple, dict)):
            raise _Failure(f"len() needs a string, list or dict, got {type(value).__name__}")
        return len(value)
    if name == "abs":
        (value,) = args
        if not _number(value):
            raise _Failure(f"abs() needs a number, got {type(value).__name__}")
        return abs(value)
    if name in ("min", "max"):
        pick = min if name == "min" else max
        if len(args) == 1:
            (items,) = args
            if not isinstance(items, (list, tuple)):
                raise _Failure(f"{name}() of one argument needs a list, got {type(items).__name__}")
            if not items:
                raise _Failure(f"{name}() of an empty list")
            return pick(items)
        return pick(args)
    value = args[0]
    if not _number(value):
        raise _Failure(f"round() needs a number, got {type(value).__name__}")
    if len(args) == 1:
        return round(value)
    digits = args[1]
    if not isinstance(digits, int) or isinstance(digits, bool):
        raise _Failure("round()'s second argument must be an integer")
    if abs(digits) > MAX_ROUND_DIGITS:
        raise _LimitFailure(f"round() digits must be within +-{MAX_ROUND_DIGITS}")
    return round(value, digits)


class _Interpreter:
    """Evaluates a checked tree over plain JSON data; every read is a dict key or list index."""

    def __init__(self, namespace: Mapping[str, Any]) -> None:
        self.namespace = namespace

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self.namespace:
                raise _Failure(f"name {node.id!r} is not available here")
            return self.plain(self.namespace[node.id], node.id)
        if isinstance(node, ast.Attribute):
            return self.read(node.value, node.attr)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.BoolOp):
            return self.bool_op(node)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            if isinstance(node.op, ast.Not):
                return not operand
            if not _number(operand):
                raise _Failure(f"unary '{_UNARY_OPS[type(node.op)]}' needs a number")
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BinOp):
            left = self.value(node.left)
            right = self.value(node.right)
            return _ARITHMETIC[type(node.op)](left, right)
        if isinstance(node, ast.Compare):
            left = self.value(node.left)
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = self.value(comparator)
                if not _compare(op, left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)  # guaranteed by the checker
            return _call(node.func.id, [self.value(arg) for arg in node.args])
        if isinstance(node, ast.IfExp):
            chosen = node.body if self.value(node.test) else node.orelse
            return self.value(chosen)
        if isinstance(node, ast.List):
            return [self.value(item) for item in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(self.value(item) for item in node.elts)
        if isinstance(node, ast.Dict):
            result: dict[Any, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                assert key is not None  # '**' is refused by the checker
                result[self.value(key)] = self.value(item)
            return result
        raise _Failure(f"unsupported expression {type(node).__name__}")  # unreachable if checked

    def bool_op(self, node: ast.BoolOp) -> Any:
        result: Any = None
        for item in node.values:
            result = self.value(item)
            if isinstance(node.op, ast.And) and not result:
                return result
            if isinstance(node.op, ast.Or) and result:
                return result
        return result

    def read(self, target: ast.expr, key: str) -> Any:
        container = self.value(target)
        if not isinstance(container, dict):
            raise _Failure(
                f"cannot read {key!r} of {ast.unparse(target)}: it is a "
                f"{type(container).__name__}, not a mapping"
            )
        if key not in container:
            raise _Failure(f"{ast.unparse(target)} has no key {key!r}")
        return self.plain(container[key], f"{ast.unparse(target)}.{key}")

    def subscript(self, node: ast.Subscript) -> Any:
        if isinstance(node.slice, ast.Slice):
            container = self.value(node.value)
            if not isinstance(container, (str, list, tuple)):
                raise _Failure(f"cannot slice a {type(container).__name__}")
            bounds = [
                None if part is None else self.value(part)
                for part in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            return container[slice(*bounds)]
        key = self.value(node.slice)
        container = self.value(node.value)
        where = ast.unparse(node.value)
        if isinstance(container, dict):
            if not isinstance(key, (str, int, float, bool, type(None))):
                raise _Failure(f"a {type(key).__name__} cannot be a key of {where}")
            if key not in container:
                raise _Failure(f"{where} has no key {_short(key)}")
            return self.plain(container[key], f"{where}[{_short(key)}]")
        if isinstance(container, (list, tuple, str)):
            if not isinstance(key, int):
                raise _Failure(f"index into {where} must be an integer, got {_short(key)}")
            if not -len(container) <= key < len(container):
                raise _Failure(f"index {key} is out of range for {where} (length {len(container)})")
            return self.plain(container[key], f"{where}[{key}]")
        raise _Failure(f"cannot index a {type(container).__name__} ({where})")

    @staticmethod
    def plain(value: Any, where: str) -> Any:
        if not isinstance(value, _PLAIN_TYPES):
            raise _Failure(f"{where} is a {type(value).__name__}, not plain JSON data")
        return value
