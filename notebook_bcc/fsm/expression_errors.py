"""The errors of ``when`` expressions: refused at load, or failed while running."""

from __future__ import annotations

from notebook_bcc.errors import NotebookBccError


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


class RunFailure(Exception):
    """Internal: a runtime failure of the interpreter (becomes a :class:`WhenEvaluationError`)."""


class LimitFailure(RunFailure):
    """Internal: a size guard tripped (refused at load when the operands are literals)."""


__all__ = [
    "LimitFailure",
    "RunFailure",
    "UnsafeExpressionError",
    "WhenEvaluationError",
    "WhenExpressionError",
    "WhenSyntaxError",
]
