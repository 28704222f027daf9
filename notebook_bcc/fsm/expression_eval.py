"""The run-time half of ``when`` expressions: a small interpreter over plain JSON data, with
size-guarded arithmetic (see :mod:`.expressions`)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

from notebook_bcc.fsm.expression_check import (
    MAX_INT_BITS,
    MAX_ROUND_DIGITS,
    MAX_SEQUENCE_LENGTH,
    UNARY_OPS,
)
from notebook_bcc.fsm.expression_errors import LimitFailure, RunFailure

_PLAIN_TYPES = (dict, list, tuple, str, int, float, bool, type(None))


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # int too large to print, or a cyclic value
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, complex)


def _guard(value: Any) -> Any:
    if isinstance(value, complex):
        raise RunFailure("the result is a complex number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise LimitFailure(f"the result has more than {MAX_INT_BITS} bits")
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_SEQUENCE_LENGTH:
        raise LimitFailure(f"the result is longer than {MAX_SEQUENCE_LENGTH}")
    return value


def _power(base: Any, exponent: Any) -> Any:
    if not (_number(base) and _number(exponent)):
        raise RunFailure(
            f"'**' needs numbers, got {type(base).__name__} and {type(exponent).__name__}"
        )
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        bits = (abs(base).bit_length() - 1) * exponent
        if exponent > MAX_INT_BITS or bits > MAX_INT_BITS:
            raise LimitFailure(f"'**' would produce more than {MAX_INT_BITS} bits")
    return _guard(base**exponent)


def _multiply(left: Any, right: Any) -> Any:
    if isinstance(left, int) and isinstance(right, int):
        if left.bit_length() + right.bit_length() > MAX_INT_BITS + 1:
            raise LimitFailure(f"'*' would produce more than {MAX_INT_BITS} bits")
        return left * right
    for seq, count in ((left, right), (right, left)):
        if isinstance(seq, (list, tuple)) and isinstance(count, int):
            # Repeated containers share their items, so comparing two of them can cost
            # len(a) * len(item) steps: only strings may be repeated.
            raise LimitFailure("'*' repeats strings only, not lists or tuples")
        if isinstance(seq, str) and isinstance(count, int):
            if count > 0 and len(seq) * count > MAX_SEQUENCE_LENGTH:
                raise LimitFailure(f"'*' would build a string longer than {MAX_SEQUENCE_LENGTH}")
            return seq * count
    if _number(left) and _number(right):
        return _guard(left * right)
    raise RunFailure(f"'*' does not apply to {type(left).__name__} and {type(right).__name__}")


def _add(left: Any, right: Any) -> Any:
    if (
        isinstance(left, (str, list, tuple))
        and isinstance(right, (str, list, tuple))
        and len(left) + len(right) > MAX_SEQUENCE_LENGTH
    ):
        raise LimitFailure(f"'+' would build a sequence longer than {MAX_SEQUENCE_LENGTH}")
    return _guard(left + right)


def _modulo(left: Any, right: Any) -> Any:
    if not (_number(left) and _number(right)):
        raise RunFailure("'%' applies to numbers only")
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
            raise RunFailure(f"'in' needs a string, list or dict, got {type(right).__name__}")
        found = left in right
        return found if isinstance(op, ast.In) else not found
    if isinstance(op, ast.Is):
        return left is right
    return left is not right


def _call(name: str, args: list[Any]) -> Any:
    if name == "len":
        (value,) = args
        if not isinstance(value, (str, list, tuple, dict)):
            raise RunFailure(f"len() needs a string, list or dict, got {type(value).__name__}")
        return len(value)
    if name == "abs":
        (value,) = args
        if not _number(value):
            raise RunFailure(f"abs() needs a number, got {type(value).__name__}")
        return abs(value)
    if name in ("min", "max"):
        pick = min if name == "min" else max
        if len(args) == 1:
            (items,) = args
            if not isinstance(items, (list, tuple)):
                raise RunFailure(
                    f"{name}() of one argument needs a list, got {type(items).__name__}"
                )
            if not items:
                raise RunFailure(f"{name}() of an empty list")
            return pick(items)
        return pick(args)
    value = args[0]
    if not _number(value):
        raise RunFailure(f"round() needs a number, got {type(value).__name__}")
    if len(args) == 1:
        return round(value)
    digits = args[1]
    if not isinstance(digits, int) or isinstance(digits, bool):
        raise RunFailure("round()'s second argument must be an integer")
    if abs(digits) > MAX_ROUND_DIGITS:
        raise LimitFailure(f"round() digits must be within +-{MAX_ROUND_DIGITS}")
    return round(value, digits)


class Interpreter:
    """Evaluates a checked tree over plain JSON data; every read is a dict key or list index."""

    def __init__(self, namespace: Mapping[str, Any]) -> None:
        self.namespace = namespace

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self.namespace:
                raise RunFailure(f"name {node.id!r} is not available here")
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
                raise RunFailure(f"unary '{UNARY_OPS[type(node.op)]}' needs a number")
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
        raise RunFailure(f"unsupported expression {type(node).__name__}")  # unreachable if checked

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
            raise RunFailure(
                f"cannot read {key!r} of {ast.unparse(target)}: it is a "
                f"{type(container).__name__}, not a mapping"
            )
        if key not in container:
            raise RunFailure(f"{ast.unparse(target)} has no key {key!r}")
        return self.plain(container[key], f"{ast.unparse(target)}.{key}")

    def subscript(self, node: ast.Subscript) -> Any:
        if isinstance(node.slice, ast.Slice):
            container = self.value(node.value)
            if not isinstance(container, (str, list, tuple)):
                raise RunFailure(f"cannot slice a {type(container).__name__}")
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
                raise RunFailure(f"a {type(key).__name__} cannot be a key of {where}")
            if key not in container:
                raise RunFailure(f"{where} has no key {_short(key)}")
            return self.plain(container[key], f"{where}[{_short(key)}]")
        if isinstance(container, (list, tuple, str)):
            if not isinstance(key, int):
                raise RunFailure(f"index into {where} must be an integer, got {_short(key)}")
            if not -len(container) <= key < len(container):
                raise RunFailure(
                    f"index {key} is out of range for {where} (length {len(container)})"
                )
            return self.plain(container[key], f"{where}[{key}]")
        raise RunFailure(f"cannot index a {type(container).__name__} ({where})")

    @staticmethod
    def plain(value: Any, where: str) -> Any:
        if not isinstance(value, _PLAIN_TYPES):
            raise RunFailure(f"{where} is a {type(value).__name__}, not plain JSON data")
        return value


__all__ = ["Interpreter"]
