"""A ``notebook-bcc`` process does not build the RFC 3987 grammar unless it checks an IRI.

Each case runs in a fresh interpreter (the stand-in only works before jsonschema is imported).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

IRIS = ["http://例え.jp/a?b#c", "https://example.org/x y", "urn:isbn:0451450523", "", "a:b"]

CHECK_IRIS = f"""
import json, sys
import jsonschema
checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
answers = {{}}
for kind in ("iri", "iri-reference"):
    validator = jsonschema.Draft202012Validator({{"format": kind}}, format_checker=checker)
    answers[kind] = [validator.is_valid(value) for value in {IRIS!r}]
print(json.dumps(answers))
"""


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_cli_imports_nbformat_without_building_the_grammar(fixtures_dir: Path) -> None:
    blueprint = fixtures_dir / "blueprints" / "housing.yaml"
    out = _python(
        "import sys\n"
        "from notebook_bcc.cli import main\n"
        f"code = main(['validate', {str(blueprint)!r}])\n"
        "import nbclient, notebook_bcc.engine\n"
        "print(code, 'jsonschema' in sys.modules, 'lark' in sys.modules)\n"
    )
    assert out.splitlines()[-1] == "0 True False"


@pytest.mark.parametrize("deferred", [False, True])
def test_an_iri_check_gives_the_real_packages_answer(deferred: bool) -> None:
    setup = "from notebook_bcc.cli.deferred_imports import defer_iri_grammar\n"
    setup += "assert defer_iri_grammar()\n" if deferred else ""
    answers = json.loads(_python(setup + CHECK_IRIS))
    # What rfc3987_syntax itself says, asked directly in a process without the stand-in.
    direct = json.loads(
        _python(
            "import json\n"
            "from rfc3987_syntax import is_valid_syntax\n"
            f"print(json.dumps({{k: [is_valid_syntax(r, v) for v in {IRIS!r}]"
            " for k, r in (('iri', 'iri'), ('iri-reference', 'iri_reference'))}))\n"
        )
    )
    assert answers == direct
    assert answers["iri"][0] is True
    assert answers["iri"][1] is False


def test_nothing_is_registered_once_jsonschema_is_imported() -> None:
    out = _python(
        "import sys, jsonschema\n"
        "from notebook_bcc.cli.deferred_imports import defer_iri_grammar\n"
        "print(defer_iri_grammar(), sys.modules['rfc3987_syntax'].__name__)\n"
    )
    assert out.strip() == "False rfc3987_syntax"
