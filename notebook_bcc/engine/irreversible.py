"""Where irreversibility comes from (D8): the planner's flag plus code patterns.

Whatever the planner said, code matching one of these patterns is treated as irreversible:
writes to databases, HTTP calls that change things, e-mail, and file deletion. The list is
configurable (``EngineOptions.irreversible_patterns``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

DEFAULT_PATTERNS: tuple[str, ...] = (
    # databases
    r"\.to_sql\s*\(",
    r"(?i)\b(insert\s+into|delete\s+from|drop\s+table|truncate\s+table)\b",
    r"(?i)\bupdate\s+\w+\s+set\b",
    r"\.commit\s*\(\s*\)",
    # HTTP that changes state
    r"\b(requests|httpx|session|client)\.(post|put|patch|delete)\s*\(",
    r"method\s*=\s*['\"](POST|PUT|PATCH|DELETE)['\"]",
    # e-mail
    r"\bsmtplib\b",
    r"\.(sendmail|send_message)\s*\(",
    # file deletion
    r"\bos\.(remove|unlink|rmdir|removedirs)\s*\(",
    r"\bshutil\.rmtree\s*\(",
    r"\.unlink\s*\(",
)
"""Default D8 patterns (regular expressions searched in the code)."""


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in patterns)


def matching_pattern(code: str, patterns: Iterable[str] = DEFAULT_PATTERNS) -> str | None:
    """The first pattern ``code`` matches, or None."""
    for compiled in _compiled(tuple(patterns)):
        if compiled.search(code):
            return compiled.pattern
    return None


def is_irreversible(
    code: str, *, flagged: bool, patterns: Iterable[str] = DEFAULT_PATTERNS
) -> tuple[bool, str | None]:
    """Whether code is irreversible and why (``planner`` or the matching pattern)."""
    if flagged:
        return True, "planner"
    pattern = matching_pattern(code, patterns)
    return (pattern is not None), pattern
