"""The copy of openapi.json the panel's type check reads (labextension/openapi.json) is current.

``labextension/test/openapiTypes.test.ts`` (``make test-ts``) checks the panel's wire types
against that copy; this test fails when the server's models changed and the copy did not.
"""

from __future__ import annotations

import json
from pathlib import Path

from notebook_bcc.server.openapi import openapi_document

COPY = Path(__file__).resolve().parents[2] / "labextension" / "openapi.json"
REGENERATE = "python -m notebook_bcc.server.openapi > labextension/openapi.json"


def test_the_panels_copy_of_openapi_json_is_current() -> None:
    current = openapi_document("/")
    copy = json.loads(COPY.read_text(encoding="utf-8"))
    copy["info"]["version"] = current["info"]["version"]  # a release bump alone is no drift
    assert copy == current, f"openapi.json changed: regenerate the panel's copy with `{REGENERATE}`"
