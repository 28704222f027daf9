"""Shared helpers for the protocol tests."""

from __future__ import annotations

from typing import Any

from notebook_bcc.protocol import Payload, PayloadModel, parse_payload
from tests.conftest import FIXTURES

PROTOCOL_FIXTURES = FIXTURES / "protocol"


def fixture_bytes(name: str) -> bytes:
    """The raw bytes of a protocol fixture."""
    return (PROTOCOL_FIXTURES / name).read_bytes()


def fixture_text(name: str) -> str:
    """The text of a protocol fixture."""
    return fixture_bytes(name).decode("utf-8")


def parse_fixture(name: str, kind: str = "auto") -> Any:
    """Parse a fixture; also checks the model survives a JSON round trip unchanged."""
    payload = parse_payload(fixture_bytes(name), kind)
    assert_round_trips(payload)
    return payload


def assert_round_trips(payload: Payload) -> None:
    """The normalized dump validates back into an equal model (nothing half-filled)."""
    dumped = payload.model_dump(mode="json")
    again = PayloadModel.model_validate(dumped).root
    assert again.model_dump(mode="json") == dumped
