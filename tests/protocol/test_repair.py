"""Repair rules of LLM XML: precise, never lossy, lines of the original, declarations refused."""

from __future__ import annotations

from typing import Any

import pytest
from lxml import etree

from notebook_bcc.protocol import DoctypeRefusedError, ProtocolError, XmlElement, parse_payload
from tests.protocol.helpers import fixture_text


def _texts(node: XmlElement) -> list[tuple[str, str, str, int]]:
    out = [(node.tag, node.text, node.tail, node.line)]
    for child in node.children:
        out.extend(_texts(child))
    return out


def _lxml_texts(node: Any) -> list[tuple[str, str, str, int]]:
    tag = "#comment" if node.tag is etree.Comment else node.tag
    out = [(tag, node.text or "", node.tail or "", node.sourceline)]
    for child in node:
        out.extend(_lxml_texts(child))
    return out


@pytest.mark.parametrize("name", ["workflow.xml", "stage_reflection_long.xml"])
def test_well_formed_document_is_parsed_as_is(name: str) -> None:
    text = fixture_text(name)
    payload = parse_payload(text)
    assert payload.repaired is False
    reference = etree.fromstring(text.encode("utf-8"))
    assert _texts(payload.document) == _lxml_texts(reference)


def test_prose_is_never_rewritten() -> None:
    prose = (
        "Load the data required for modelling; keep rows where price < 5 & area > 0.\n"
        "    Indented line, unicode: R² ≥ 0.85 — ok.\n\n"
        "Blank line above; a<b and x&&y; &nbsp; stays; &#0; stays; &lt; means <."
    )
    payload = parse_payload(f"<steps><step id='s'><goal>{prose}</goal></step></steps>")
    goal = payload.document.children[0].children[0]
    assert goal.text == prose.replace("&lt; means", "< means")
    assert payload.steps[0].goal == goal.text


def test_stray_characters_in_mixed_content_are_text() -> None:
    payload = parse_payload("<stages><focus>a < b, c & d, e<f, List<Item></focus></stages>")
    assert payload.focus == "a < b, c & d, e<f, List<Item>"


def test_bare_unquoted_duplicate_and_escaped_attributes() -> None:
    text = (
        "<stages>\n"
        "<stage id=eda optional title='Rows < 5 & more' id=\"again\"\n"
        '       insert_after="x">\n'
        "<goal>g</goal></stage></stages>"
    )
    payload = parse_payload(text)
    (stage,) = payload.stages
    assert stage.id == "eda"
    assert stage.optional is True
    assert stage.title == "Rows < 5 & more"
    assert stage.insert_after == "x"
    assert stage.line == 2
    assert stage.extra == []
    kinds = sorted({note.kind for note in payload.repairs})
    assert kinds == [
        "attribute_value",
        "bare_attribute",
        "duplicate_attribute",
        "unquoted_attribute",
    ]
    assert {note.line for note in payload.repairs} == {2}


def test_unclosed_child_is_closed_by_its_parent() -> None:
    payload = parse_payload("<stages>\n<stage id='a'>\n<goal>Load it\n</stage>\n</stages>")
    assert payload.stages[0].goal == "Load it"
    (note,) = payload.repairs
    assert (note.kind, note.element, note.line) == ("closed_element", "goal", 4)
    assert payload.truncated is False


def test_stray_end_tag_is_text() -> None:
    payload = parse_payload("<steps><focus>done</goal> really</focus></steps>")
    assert payload.focus == "done</goal> really"


def test_unknown_elements_kept_only_when_well_formed_and_closed() -> None:
    payload = parse_payload(
        '<steps>\n<risk level="high">Leakage <b>via</b> target</risk>\n'
        "<focus>use Dict<K, V> and Optional<int> here</focus>\n</steps>"
    )
    (risk,) = payload.extra
    assert (risk.tag, risk.attrs, risk.line) == ("risk", {"level": "high"}, 2)
    assert risk.plain_text() == "Leakage via target"
    assert payload.focus == "use Dict<K, V> and Optional<int> here"


def test_markup_in_prose_is_kept_as_text_of_the_field() -> None:
    payload = parse_payload("<steps><focus>Use <b>median</b> imputation</focus></steps>")
    assert payload.focus == "Use <b>median</b> imputation"
    assert payload.repaired is False
    repaired = parse_payload(
        '<steps><focus>Use <em class="k">median</em> when x < 5 & <br/>y</focus></steps>'
    )
    assert repaired.repaired is True
    assert repaired.focus == 'Use <em class="k">median</em> when x < 5 & <br/>y'


def test_lines_refer_to_the_original_after_repairs_and_prose() -> None:
    text = (
        "Some prose first.\n\n```xml\n<steps>\n"
        '<step id="a" optional>\n<goal>x < 1 & y</goal>\n</step>\n'
        '<step id="b">\n<goal>ok</goal>\n</step>\n</steps>\n```\n'
    )
    payload = parse_payload(text)
    assert [step.line for step in payload.steps] == [5, 8]
    assert payload.document.line == 4
    assert payload.document.children[1].line == 8


def test_crlf_line_ends_are_normalized_and_counted() -> None:
    payload = parse_payload("<steps>\r\n<step id='a'>\r\n<goal>a < b</goal>\r\n</step>\r\n</steps>")
    step = payload.steps[0]
    assert (step.line, step.goal) == (2, "a < b")


def test_xml_declaration_is_not_reported_as_prose() -> None:
    payload = parse_payload('<?xml version="1.0" encoding="UTF-8"?>\n<steps/>')
    assert payload.repairs == []
    assert payload.steps == []


def test_comments_and_processing_instructions_are_kept_in_the_document() -> None:
    payload = parse_payload("<steps><!-- plan v2 --><?review by=qa?><focus>f</focus></steps>")
    tags = [(child.tag, child.text) for child in payload.document.children]
    assert tags == [("#comment", " plan v2 "), ("#pi", "by=qa"), ("focus", "f")]
    assert payload.focus == "f"


def test_invalid_character_names_the_original_line() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload("intro\n<steps>\n<step id='a'>\n<goal>bad \x01 char & more</goal>")
    assert (info.value.kind, info.value.line, info.value.element) == ("steps", 4, "goal")
    assert "U+0001" in info.value.message


def test_no_root_and_empty_payloads() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload("I could not produce a plan.", kind="stages")
    assert (info.value.line, info.value.element) == (1, "stages")
    with pytest.raises(ProtocolError) as empty:
        parse_payload("   \n", kind="steps")
    assert empty.value.line == 1


def test_malformed_root_start_tag() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload("<steps id='a' x=\"\n")
    assert (info.value.line, info.value.element) == (1, "steps")


@pytest.mark.parametrize(
    ("name", "line"),
    [("doctype_xxe.xml", 2), ("billion_laughs.xml", 2), ("doctype_inside.xml", 5)],
)
def test_declaration_fixtures_are_refused(name: str, line: int) -> None:
    with pytest.raises(DoctypeRefusedError) as info:
        parse_payload(fixture_text(name))
    assert (info.value.line, info.value.element, info.value.code) == (
        line,
        "!DOCTYPE",
        "doctype_refused",
    )


@pytest.mark.parametrize(
    "text",
    [
        '<!doctype stages SYSTEM "http://example.invalid/x.dtd"><stages/>',
        '<!ENTITY x "y"><stages/>',
        "<stages><stage id='a'/></stages>\n<!DOCTYPE x>",
        "<!DOCTYPE x>\nno root at all",
        "<stages>\n<!DOCTYPE x [<!ENTITY a 'b'>]><focus>&a;</focus></stages>",
        "<stages><focus>a < b</focus>\n</stages><!DOCTYPE x>",
    ],
)
def test_declarations_anywhere_outside_raw_text_are_refused(text: str) -> None:
    with pytest.raises(DoctypeRefusedError):
        parse_payload(text)
