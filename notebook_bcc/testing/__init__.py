"""Test doubles shipped with the package, usable by tests and by example scripts.

:mod:`.scripted_llm` is an OpenAI-compatible chat server on loopback that plays a scripted
conversation (``python -m notebook_bcc.testing.scripted_llm DIR``).
"""
