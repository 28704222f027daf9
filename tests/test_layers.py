"""The layering contract (DESIGN §2, README "What is inside"): imports point downward only.

Every module under ``notebook_bcc/`` is parsed with :mod:`ast`; every ``import`` and ``from ...
import`` in it is checked — module level, inside functions and classes, under ``try`` and under
``if TYPE_CHECKING``. Each top-level package (or top-level module) belongs to one tier; a module may
import its own package and any package of a lower tier. Packages of the same tier do not import
each other, except for the edges listed in :data:`PEER_EDGES`.

Decisions:

- ``if TYPE_CHECKING`` imports count like runtime ones. They create no import circle at run time,
  but an annotation that names an upper layer is still a dependency pointing up, and the rooms
  stay honest only if types follow the same order.
- ``errors.py`` holds the base error class every layer raises from; it imports nothing of the
  package and is the lowest tier. ``schema.py`` (the name -> "module:Class" registry of wire
  models) imports only ``errors`` statically; the classes it names are imported by string on
  demand (``importlib``), which this contract does not follow.
- The root package ``notebook_bcc`` (``__init__.py``: the version and Jupyter's discovery hooks,
  which import the server lazily) and ``__main__`` sit on top. Importing the root package itself
  (``from notebook_bcc import __version__``) is allowed anywhere: Python runs it anyway before any
  submodule.
- ``testing/`` (test doubles shipped in the wheel) is a peer of ``server`` and ``cli``: it may
  import anything below them, and neither of them may import it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "notebook_bcc"
PACKAGE_DIR = Path(__file__).resolve().parent.parent / PACKAGE

# Lowest first. A name is a subpackage (``notebook_bcc/<name>/``) or a module (``<name>.py``).
TIERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("models", "schema"),
    ("fsm", "protocol"),
    ("workflow",),
    ("blueprint", "kernel", "store", "planners"),
    ("engine",),
    ("server", "cli", "testing"),
    ("__init__", "__main__"),
)

# Imports allowed between packages of the same tier: the blueprint planner reads blueprints.
PEER_EDGES: frozenset[tuple[str, str]] = frozenset({("planners", "blueprint")})

TIER_OF: dict[str, int] = {name: rank for rank, tier in enumerate(TIERS) for name in tier}


@dataclass(frozen=True)
class Violation:
    """One import that points the wrong way."""

    module: str
    line: int
    imported: str
    reason: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported} ({self.reason})"


def module_name(path: Path, package_dir: Path) -> str:
    """The dotted name of a source file under ``package_dir``."""
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def owner(dotted: str) -> str | None:
    """The tier entry a dotted module name belongs to (None outside the package)."""
    parts = dotted.split(".")
    if parts[0] != PACKAGE:
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def imported_names(
    node: ast.Import | ast.ImportFrom,
    module: str,
    is_package: bool,
    package_dir: Path = PACKAGE_DIR,
) -> list[str]:
    """The absolute module names an import statement reaches (relative ones resolved)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level == 0:
        base = node.module or ""
    else:
        anchor = module.split(".")
        if not is_package:
            anchor = anchor[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    if base == PACKAGE:
        # ``from notebook_bcc import x``: x may be a submodule or a name of the root package.
        return [
            f"{PACKAGE}.{alias.name}"
            if (package_dir / alias.name).is_dir() or (package_dir / f"{alias.name}.py").exists()
            else PACKAGE
            for alias in node.names
        ]
    return [base]


def check_import(source: str, target: str) -> str | None:
    """Why ``source`` may not import ``target`` (None when it may)."""
    if target in {source, "__init__"}:
        return None
    if source not in TIER_OF:
        return f"{source} has no tier in tests/test_layers.py"
    if target not in TIER_OF:
        return f"{target} has no tier in tests/test_layers.py"
    low, high = TIER_OF[target], TIER_OF[source]
    if low < high or (source, target) in PEER_EDGES:
        return None
    if low == high:
        return f"{source} and {target} are peers of one tier"
    return f"{target} is above {source}"


def violations(package_dir: Path = PACKAGE_DIR) -> list[Violation]:
    """Every upward or sideways import in the package, in file order."""
    found: list[Violation] = []
    for path in sorted(package_dir.rglob("*.py")):
        module = module_name(path, package_dir)
        source = owner(module)
        assert source is not None
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for name in imported_names(node, module, path.name == "__init__.py", package_dir):
                target = owner(name)
                if target is None:
                    continue
                reason = check_import(source, target)
                if reason is not None:
                    found.append(Violation(module, node.lineno, name, reason))
    return sorted(found, key=lambda v: (v.module, v.line))


def test_every_package_has_a_tier() -> None:
    names = {p.stem if p.is_file() else p.name for p in PACKAGE_DIR.iterdir()}
    entries = {
        n
        for n in names
        if (PACKAGE_DIR / n).is_dir() and (PACKAGE_DIR / n / "__init__.py").exists()
    } | {p.stem for p in PACKAGE_DIR.glob("*.py")}
    assert sorted(entries - set(TIER_OF)) == []


def test_imports_point_downward() -> None:
    found = violations()
    assert not found, "upward imports:\n" + "\n".join(map(str, found))


def test_protocol_and_fsm_import_only_models() -> None:
    """DESIGN §2: ``fsm/`` and ``protocol/`` import nothing of the package but ``models/``."""
    allowed = {"models", "errors", "__init__"}
    for layer in ("fsm", "protocol"):
        for path in sorted((PACKAGE_DIR / layer).rglob("*.py")):
            module = module_name(path, PACKAGE_DIR)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    for name in imported_names(node, module, path.name == "__init__.py"):
                        target = owner(name)
                        assert target in (None, layer, *allowed), f"{module}:{node.lineno} {name}"


@pytest.mark.parametrize(
    ("where", "line", "code", "expected"),
    [
        ("protocol/plant.py", 1, "from notebook_bcc.workflow import apply_text\n", "workflow"),
        (
            "fsm/plant.py",
            2,
            "def f():\n    import notebook_bcc.protocol.parse\n    return 1\n",
            "protocol",
        ),
        (
            "models/plant.py",
            4,
            "from typing import TYPE_CHECKING\n\n"
            "if TYPE_CHECKING:\n    from notebook_bcc.engine import Engine\n",
            "engine",
        ),
        ("kernel/plant.py", 1, "from ..store import sqlite\n", "store"),
        ("engine/plant.py", 1, "from notebook_bcc import server\n", "server"),
        ("server/plant.py", 1, "import notebook_bcc.testing.scripted_llm\n", "testing"),
    ],
)
def test_a_planted_upward_import_is_named(
    tmp_path: Path, where: str, line: int, code: str, expected: str
) -> None:
    """The contract fails on an upward import and names the module, the line and the import."""
    fake = tmp_path / PACKAGE
    for entry in TIER_OF:
        if entry in ("__init__", "__main__", "errors", "schema"):
            continue
        (fake / entry).mkdir(parents=True, exist_ok=True)
        (fake / entry / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / where).write_text(code)
    found = violations(fake)
    assert len(found) == 1, found
    planted = found[0]
    assert planted.module == f"{PACKAGE}.{where[:-3].replace('/', '.')}"
    assert planted.line == line
    assert planted.imported.startswith(f"{PACKAGE}.{expected}")
    assert str(planted).startswith(f"{planted.module}:{line} imports {planted.imported} (")
