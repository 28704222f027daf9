"""A budget on the composed YAML node graph, checked before ruamel constructs any value.

ruamel's composer turns an alias into a second reference to the anchored node: the text stays
small but the document it stands for can be huge (a 1 MB anchored scalar named 1,000 times,
or a chain of merge keys ``<<: [*a, *a]`` doubling at each level). Constructing or converting
such a document costs memory in proportion to its *expanded* size, so the expansion is
measured first, on the node graph, in time linear in the text: each node's expanded size is
computed once and reused for every alias to it.

Refused, each as an :class:`~notebook_bcc.blueprint.issues.Issue` naming the line:

- a document that expands to more than :data:`MAX_EXPANDED_NODES` nodes or
  :data:`MAX_EXPANDED_CHARS` characters of scalars (aliases and merge keys counted each time
  they are used);
- a cyclic alias (a node that contains itself);
- any tag outside plain YAML's (``!!python/...``, ``!custom``, ``!!binary`` ...): the
  round-trip constructor would keep them or fail later with an untyped error.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from notebook_bcc.blueprint.issues import Issue

MAX_EXPANDED_NODES = 100_000
"""Most nodes a document may stand for once every alias and merge key is expanded."""

MAX_EXPANDED_CHARS = 8_000_000
"""Most scalar characters a document may stand for once expanded (4x the 2 MB file cap)."""

_PLAIN = "tag:yaml.org,2002:"
SAFE_TAGS = frozenset(
    _PLAIN + name for name in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")
)
"""The tags a blueprint may use (written or implied); ``merge`` is allowed as a key only."""

_MERGE = _PLAIN + "merge"


class YamlBudgetError(Exception):
    """The node graph breaks the budget; ``issue`` says where and why."""

    def __init__(self, issue: Issue) -> None:
        super().__init__(issue.message)
        self.issue = issue


def _line(node: Node) -> int | None:
    mark = getattr(node, "start_mark", None)
    return None if mark is None else int(mark.line) + 1


def _tag(node: Node) -> str:
    tag = node.tag
    return str(getattr(tag, "value", tag))


class _Budget:
    """Expanded (nodes, characters) of each node, memoised by identity."""

    def __init__(self) -> None:
        self.sizes: dict[int, tuple[int, int]] = {}
        self.active: set[int] = set()

    def measure(self, root: Node) -> tuple[int, int]:
        """Expanded size of ``root`` (iterative: no recursion limit on deep documents)."""
        # stack of (node, children pushed?)
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            key = id(node)
            if not expanded:
                if key in self.sizes:
                    continue
                if key in self.active:
                    raise YamlBudgetError(
                        Issue(_line(node), "an alias refers to itself (cyclic document)")
                    )
                self._check_tag(node)
                children = _children(node)
                if not children:
                    self.sizes[key] = (1, _chars(node))
                    continue
                self.active.add(key)
                stack.append((node, True))
                for child in children:
                    if id(child) in self.active:
                        raise YamlBudgetError(
                            Issue(_line(child), "an alias refers to itself (cyclic document)")
                        )
                    stack.append((child, False))
                continue
            self.active.discard(key)
            nodes, chars = 1, 0
            for child in _children(node):
                child_nodes, child_chars = self.sizes[id(child)]
                nodes += child_nodes
                chars += child_chars
            self.sizes[key] = (nodes, chars)
            if nodes > MAX_EXPANDED_NODES:
                raise YamlBudgetError(
                    Issue(
                        _line(node),
                        f"document expands to more than {MAX_EXPANDED_NODES} values "
                        "(aliases or merge keys?)",
                    )
                )
            if chars > MAX_EXPANDED_CHARS:
                raise YamlBudgetError(
                    Issue(
                        _line(node),
                        f"document expands to more than {MAX_EXPANDED_CHARS} characters "
                        "(aliases to a large anchored value?)",
                    )
                )
        return self.sizes[id(root)]

    @staticmethod
    def _check_tag(node: Node) -> None:
        tag = _tag(node)
        if tag in SAFE_TAGS:
            return
        if tag == _MERGE and isinstance(node, ScalarNode):
            return
        raise YamlBudgetError(
            Issue(
                _line(node),
                f"unsupported YAML value (tag {tag}): a blueprint uses plain YAML only",
            )
        )


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        out: list[Node] = []
        for key, value in node.value:
            out.append(key)
            out.append(value)
        return out
    return []


def _chars(node: Node) -> int:
    value = node.value if isinstance(node, ScalarNode) else ""
    return len(value) if isinstance(value, str) else 0


def check_node_graph(root: Node | None) -> tuple[int, int]:
    """``(nodes, characters)`` the document expands to, or :class:`YamlBudgetError`."""
    if root is None:
        return (0, 0)
    return _Budget().measure(root)


class GuardedConstructor(RoundTripConstructor):
    """ruamel's round-trip constructor that measures the node graph before building values."""

    def construct_document(self, node: Any) -> Any:
        """Check :func:`check_node_graph`, then construct as usual."""
        check_node_graph(node)
        return super().construct_document(node)
