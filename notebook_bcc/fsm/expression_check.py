"""The load-time half of ``when`` expressions: the allow-list, the limits, and the checker that
walks a parsed expression and refuses anything off the list (see :mod:`.expressions`)."""

from __future__ import annotations

import ast
import warnings

from notebook_bcc.fsm.expression_errors import UnsafeExpressionError, WhenSyntaxError

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


def column_of(node: ast.AST) -> int | None:
    """The 1-based column of ``node`` (None when the node has none)."""
    offset = getattr(node, "col_offset", None)
    return offset + 1 if isinstance(offset, int) else None


REFUSED_NODES: dict[type[ast.AST], str] = {
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

BIN_OPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}
UNARY_OPS: dict[type[ast.unaryop], str] = {ast.Not: "not", ast.USub: "-", ast.UAdd: "+"}
COMPARE_OPS: tuple[type[ast.cmpop], ...] = (
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


class Checker:
    """Walks a parsed expression iteratively and refuses anything off the allow-list."""

    def __init__(self, source: str) -> None:
        self.source = source

    def refuse(self, reason: str, node: ast.AST, description: str) -> UnsafeExpressionError:
        return UnsafeExpressionError(
            reason, expression=self.source, node=description, column=column_of(node)
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
        refused = REFUSED_NODES.get(type(node))
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
            if type(node.op) not in UNARY_OPS:
                raise self.refuse("operator '~' is not allowed", node, "operator ~")
            return [node.operand]
        if isinstance(node, ast.BinOp):
            if type(node.op) not in BIN_OPS:
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
            if not isinstance(op, COMPARE_OPS):
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


def parse_source(source: str) -> ast.Expression:
    """``source`` parsed as one expression; too long or malformed text is refused."""
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


__all__ = [
    "ALLOWED_FUNCTIONS",
    "ALLOWED_ROOTS",
    "MAX_DEPTH",
    "MAX_INT_BITS",
    "MAX_NODES",
    "MAX_ROUND_DIGITS",
    "MAX_SEQUENCE_LENGTH",
    "MAX_SOURCE_LENGTH",
    "Checker",
    "column_of",
    "parse_source",
]
