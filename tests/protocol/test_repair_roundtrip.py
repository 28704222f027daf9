"""Round trips: code, markdown and prose come out exactly as the LLM wrote them.

Code and text elements are read literally whenever the LLM did not escape them (a bare ``<``
or a ``&`` that starts no entity is present). The one documented exception: an element whose
text is valid XML text (entities, no bare ``<``) is read as XML, like a well-formed document.
"""

from __future__ import annotations

import re

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from notebook_bcc.protocol import parse_payload
from tests.conftest import SLOW

CASES = settings(max_examples=2_000 if SLOW else 150)

_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);")

CODE_TOKENS = [
    "<",
    ">",
    "&",
    "&&",
    "a<b",
    "df[df.x < 5 & mask]",
    "&amp;",
    "&lt;",
    "&nbsp;",
    "]]>",
    "<b>",
    "</b>",
    "<br/>",
    "<!--",
    "-->",
    "<?",
    "?>",
    "\n",
    "\n\n",
    "    ",
    "\t",
    "'",
    '"',
    'f"{x!r}"',
    "data required for",
    "# 注释",
    "📊",
    "R² ≥ 0.85",
    "<!DOCTYPE html>",
    "if x:\n    return y\n",
]

_CHARS = st.characters(
    exclude_categories=("Cs", "Cc", "Cn"),
    exclude_characters="\ufeff",
)

code_text = st.lists(
    st.one_of(st.sampled_from(CODE_TOKENS), st.text(_CHARS, max_size=4)), max_size=30
).map("".join)


def _reads_as_xml(text: str) -> bool:
    """True when the text is valid XML character data with entities: read as XML."""
    return "<" not in text and "&" in text and text.count("&") == len(_ENTITY.findall(text))


def _usable(text: str, closing: str) -> bool:
    return closing not in text and "</actions" not in text and "<![CDATA[" not in text


@CASES
@given(
    code=code_text,
    irreversible=st.booleans(),
    with_prose=st.booleans(),
    break_elsewhere=st.booleans(),
)
def test_add_code2run_round_trips_byte_for_byte(
    code: str, irreversible: bool, with_prose: bool, break_elsewhere: bool
) -> None:
    assume(_usable(code, "</add-code2run"))
    assume(not _reads_as_xml(code))
    attr = ' irreversible="true"' if irreversible else ""
    intro = "a < b & c" if break_elsewhere else "intro"
    doc = (
        f"<actions>\n  <add-text>{intro}</add-text>\n"
        f"  <add-code2run{attr}>{code}</add-code2run>\n"
        "  <update-step-title>Next</update-step-title>\n</actions>"
    )
    if with_prose:
        doc = f"Here you go:\n```xml\n{doc}\n```\nDone."
    payload = parse_payload(doc)
    code_action = payload.actions[1]
    assert code_action.code == code
    assert code_action.irreversible is irreversible
    assert code_action.executable is True
    assert payload.actions[0].text == intro
    assert payload.actions[2].title == "Next"


@CASES
@given(text=code_text)
def test_add_text_round_trips_byte_for_byte(text: str) -> None:
    assume(_usable(text, "</add-text"))
    assume(not _reads_as_xml(text))
    payload = parse_payload(f"<actions><add-text>{text}</add-text></actions>")
    assert payload.actions[0].text == text


PROSE_TOKENS = [
    "data required for",
    "price",
    "<",
    " < 5",
    "a<b",
    "x&&y",
    " & ",
    "&nbsp;",
    "R² ≥ 0.85",
    "\n",
    "\n\n",
    "    ",
    "—",
    "'",
    '"',
    ">",
    "=",
    "5%",
    "📈",
]


@CASES
@given(prose=st.lists(st.sampled_from(PROSE_TOKENS), max_size=25).map("".join))
def test_prose_round_trips_in_every_prose_element(prose: str) -> None:
    doc = (
        '<steps>\n<step id="s1" title="Audit">\n'
        f"<goal>{prose}</goal>\n<pcs_considerations><stability>{prose}</stability>"
        f"</pcs_considerations>\n</step>\n<focus>{prose}</focus>\n</steps>"
    )
    payload = parse_payload(doc)
    step_element = payload.document.elements()[0]
    goal_element = step_element.elements()[0]
    stability = step_element.elements()[1].elements()[0]
    focus_element = payload.document.elements()[1]
    assert goal_element.text == prose
    assert stability.text == prose
    assert focus_element.text == prose
