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

The rooms: :mod:`.expression_check` (allow-list, limits, checker), :mod:`.expression_eval` (the
interpreter and its guarded arithmetic), :mod:`.expression_errors`; this module compiles.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from notebook_bcc.fsm.expression_check import (
    ALLOWED_FUNCTIONS,
    ALLOWED_ROOTS,
    MAX_DEPTH,
    MAX_INT_BITS,
    MAX_NODES,
    MAX_ROUND_DIGITS,
    MAX_SEQUENCE_LENGTH,
    MAX_SOURCE_LENGTH,
    Checker,
    column_of,
    parse_source,
)
from notebook_bcc.fsm.expression_errors import (
    LimitFailure,
    RunFailure,
    UnsafeExpressionError,
    WhenEvaluationError,
    WhenExpressionError,
    WhenSyntaxError,
)
from notebook_bcc.fsm.expression_eval import Interpreter


@dataclass(frozen=True)
class WhenExpression:
    """A checked ``when`` expression, ready to evaluate over a D13 namespace."""

    source: str
    tree: ast.Expression

    def evaluate(self, namespace: Mapping[str, Any]) -> Any:
        """The expression's value over ``namespace``; raises :class:`WhenEvaluationError`."""
        try:
            return Interpreter(namespace).value(self.tree.body)
        except RunFailure as exc:
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
    tree = parse_source(source)
    text = source.strip()
    Checker(text).run(tree)
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
            Interpreter({}).value(node)
        except LimitFailure as exc:
            raise UnsafeExpressionError(
                str(exc), expression=source, node=ast.unparse(node)[:60], column=column_of(node)
            ) from None
        except (RunFailure, ArithmeticError, TypeError, ValueError, LookupError):
            pass
    return constant


__all__ = [
    "ALLOWED_FUNCTIONS",
    "ALLOWED_ROOTS",
    "MAX_DEPTH",
    "MAX_INT_BITS",
    "MAX_NODES",
    "MAX_ROUND_DIGITS",
    "MAX_SEQUENCE_LENGTH",
    "MAX_SOURCE_LENGTH",
    "UnsafeExpressionError",
    "WhenEvaluationError",
    "WhenExpression",
    "WhenExpressionError",
    "WhenSyntaxError",
    "check_expression",
    "compile_when",
]
