"""<actions>: code and text byte for byte, irreversible code, truncation, JSON mapping."""

from __future__ import annotations

import pytest

from notebook_bcc.models.actions import AddAction, ExecAction
from notebook_bcc.protocol import ProtocolError, parse_payload
from tests.protocol.helpers import parse_fixture

EXPECTED_CODE = """
import pandas as pd

# 统计缺失值 — missing values per column 📊
missing = df_raw.isna().sum()
missing_report = (
    pd.DataFrame({"n_missing": missing, "share": missing / len(df_raw)})
      .query("n_missing > 0")
      .sort_values("share", ascending=False)
)
mask = df_raw["SalePrice"].notna()
small = df_raw[df_raw.LotArea < 5000 & mask]
ok = a<b
both = x&&y
html = f"<b>{len(small)}</b> rows &amp; counting"

print(missing_report.head(10))
  """

EXPECTED_TEXT = """
We look for columns where the share of missing values is > 30% & decide what to do with them.
The data required for the target (`SalePrice`) must stay complete: rows with `SalePrice < 0` are errors.
  """  # noqa: E501


def test_raw_code_and_text_round_trip_byte_for_byte() -> None:
    payload = parse_fixture("actions_raw.xml")

    assert payload.kind == "actions"
    assert payload.repaired is True
    assert payload.truncated is False
    types = [action.type for action in payload.actions]
    assert types == [
        "update-project-title",
        "update-section-title",
        "update-step-title",
        "add-text",
        "add-code2run",
        "add-section",
        "add-code2run",
        "communication",
    ]
    title, section, step, text, code, sections, export, message = payload.actions
    assert title.title == "Ames Housing — Price Prediction"
    assert section.title == "Data Cleaning"
    assert step.title == "Missing Value Audit"
    assert text.text == EXPECTED_TEXT
    assert text.markdown == EXPECTED_TEXT.strip()
    assert code.code == EXPECTED_CODE
    assert code.cell_source == EXPECTED_CODE.strip()
    assert (code.irreversible, code.executable, code.line) == (False, True, 9)
    assert sections.sections == ["Findings", "Next steps"]
    assert export.code == ('missing_report.to_csv("./outputs/missing_report.csv", index=False)')
    assert (export.irreversible, export.attrs) == (True, {"irreversible": "true"})
    assert message.to == "DefineAgent"
    assert message.message == ("LotFrontage has 16% missing values; impute by Neighborhood median?")
    assert [(el.tag, el.attrs, el.text) for el in payload.extra] == [
        ("log", {"level": "debug"}, "generator v3")
    ]


def test_xml_actions_map_to_json_actions() -> None:
    payload = parse_fixture("actions_raw.xml")

    dumped = [
        {"type": action.type, **action.model_dump(exclude_defaults=True)}
        for action in payload.json_actions
    ]
    assert dumped == [
        {"type": "update_title", "title": "Ames Housing — Price Prediction"},
        {"type": "new_section", "content": "Data Cleaning"},
        {"type": "new_step", "content": "Missing Value Audit"},
        {"type": "add", "content": EXPECTED_TEXT.strip(), "shot_type": "markdown"},
        {"type": "add", "content": EXPECTED_CODE.strip(), "shot_type": "action"},
        {"type": "exec", "codecell_id": "lastAddedCellId"},
        {"type": "new_section", "content": "Findings"},
        {"type": "new_section", "content": "Next steps"},
        {
            "type": "add",
            "content": 'missing_report.to_csv("./outputs/missing_report.csv", index=False)',
            "shot_type": "action",
            "irreversible": True,
        },
        {"type": "exec", "codecell_id": "lastAddedCellId", "irreversible": True},
        {
            "type": "communication",
            "to": "DefineAgent",
            "content": "LotFrontage has 16% missing values; impute by Neighborhood median?",
        },
    ]


def test_truncated_stream_closes_elements_and_code_is_not_executable() -> None:
    payload = parse_fixture("actions_truncated.txt")

    assert payload.truncated is True
    text, code = payload.actions
    assert text.text == "Now we fit the baseline model & report RMSE."
    assert text.truncated is False
    assert code.truncated is True
    assert code.executable is False
    assert code.code.endswith('print(f"RMSE {rmse:,.0f} meets the tar')
    assert code.code.startswith("\nfrom sklearn.linear_model import Ridge\n")
    closed = [(n.element, n.line) for n in payload.repairs if n.kind == "closed_at_end"]
    assert closed == [("add-code2run", 12), ("actions", 12)]
    assert payload.document.truncated is True
    assert [a.type for a in payload.json_actions] == ["add", "add"]
    last = payload.json_actions[-1]
    assert isinstance(last, AddAction)
    assert last.truncated is True
    assert last.content == code.cell_source
    assert not any(isinstance(a, ExecAction) for a in payload.json_actions)


def test_truncated_inside_a_closing_tag_drops_the_partial_tag() -> None:
    payload = parse_payload("<actions>\n<add-code2run>x = 1\n</add-code2")
    (code,) = payload.actions
    assert code.code == "x = 1\n"
    assert code.executable is False
    assert "dropped_partial_tag" in [note.kind for note in payload.repairs]


def test_truncated_inside_a_start_tag() -> None:
    payload = parse_payload("<actions>\n<add-text>Intro</add-text>\n<add-code2run irrev")
    assert payload.truncated is True
    assert [a.type for a in payload.actions] == ["add-text"]


def test_code_element_missing_its_end_tag_is_closed_by_the_parent() -> None:
    payload = parse_payload("<actions><add-code2run>a = b < c\n</actions>")
    (code,) = payload.actions
    assert code.code == "a = b < c\n"
    assert code.executable is True
    assert payload.truncated is False
    assert [n.kind for n in payload.repairs] == ["verbatim_text", "closed_element"]


def test_well_formed_escaped_code_is_read_as_xml() -> None:
    payload = parse_payload(
        "<actions><add-code2run>if a &lt; b &amp;&amp; c: pass</add-code2run></actions>"
    )
    assert payload.repaired is False
    assert payload.actions[0].code == "if a < b && c: pass"


def test_cdata_code_is_unwrapped() -> None:
    payload = parse_payload(
        "<actions><add-code2run><![CDATA[\nif a < b & c:\n    pass\n]]></add-code2run></actions>"
    )
    assert payload.repaired is False
    assert payload.actions[0].code == "\nif a < b & c:\n    pass\n"


def test_markup_inside_code_of_a_well_formed_document_stays_text() -> None:
    source = "\nhtml = \"<div class='x'><b>total</b></div>\"  <!-- keep -->\n"
    payload = parse_payload(f"<actions><add-code2run>{source}</add-code2run></actions>")
    assert payload.actions[0].code == source


def test_irreversible_must_be_boolean() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload(
            '<actions>\n\n<add-code2run irreversible="sometimes">x</add-code2run></actions>'
        )
    assert (info.value.line, info.value.element) == (3, "add-code2run")


def test_doctype_string_inside_code_is_data() -> None:
    code = 'page = "<!DOCTYPE html><html></html>"'
    payload = parse_payload(f"<actions><add-code2run>{code}</add-code2run></actions>")
    assert payload.actions[0].code == code
