"""A scripted OpenAI-compatible chat server on loopback, for tests and example recordings.

``POST /v1/chat/completions`` answers with the next scripted reply, in order: streamed as
server-sent events (``data: {chunk}`` events of a few characters, a final usage chunk when
the request sets ``stream_options.include_usage``, then ``data: [DONE]``) or as one JSON
document. Replies come from a list or from a folder of ``NNN-<agent-id>.txt`` files (one per
assistant reply, in NNN order). Each request's system message must start with
``# notebook-bcc agent: <agent-id>``; a reply file made for another agent, a request without
that line, or a script that ran out answers HTTP 400 with a message saying so, and is kept
in :attr:`ScriptedLlmServer.errors` (and printed with ``verbose``). Faults (429 with
``Retry-After``, 500, a stream cut short, a malformed body) can be queued among the replies
or pushed in front of them. Every request is recorded (:attr:`ScriptedLlmServer.received`:
path, headers, JSON body, agent, what was answered) so tests can check prompts and headers.

Run it by hand (it prints its base URL, then one line per request on stderr)::

    python -m notebook_bcc.testing.scripted_llm DIR [--port N] [--no-usage] [--exit-when-done]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from notebook_bcc.planners.llm.agents import AGENT_IDS, AGENT_LINE_PREFIX, agent_of_line
from notebook_bcc.testing.serving import (
    add_loopback_arguments,
    bind_or_explain,
    wait_until_stopped,
)

REPLY_FILE = re.compile(r"^(\d+)-([a-z][a-z-]*)\.txt$")
"""Reply file names: ``NNN-<agent-id>.txt``."""

CHAT_PATH = "/v1/chat/completions"


@dataclass
class Reply:
    """One scripted assistant reply.

    ``agent`` is the agent the request must come from (None: any); ``name`` names it in
    messages (its file); ``usage`` overrides the server's setting for this reply;
    ``finish_reason`` is reported as given.
    """

    content: str
    agent: str | None = None
    name: str | None = None
    usage: bool | None = None
    finish_reason: str = "stop"


@dataclass
class Fault:
    """A misbehaving answer instead of a reply (the reply queue does not move).

    ``status`` with ``body`` and ``headers`` (e.g. 429 with ``Retry-After``); or, with
    ``status`` 200, ``raw`` bytes sent as the body with ``content_type``; ``cut`` streams
    the first half of ``cut_content`` then closes the connection without finishing.
    """

    status: int = 500
    body: str = '{"error": {"message": "scripted server error", "type": "server_error"}}'
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    content_type: str = "application/json"
    cut: bool = False
    cut_content: str = "<actions><add-text>half a repl"

    @property
    def label(self) -> str:
        """How the server's log names it."""
        return "fault: a stream cut short" if self.cut else f"fault: HTTP {self.status}"


def rate_limited(retry_after: str = "0") -> Fault:
    """HTTP 429 with ``Retry-After``."""
    return Fault(
        status=429,
        body='{"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}',
        headers={"Retry-After": retry_after},
    )


def server_error(status: int = 500) -> Fault:
    """An HTTP 5xx answer."""
    return Fault(status=status)


@dataclass
class Received:
    """One request the server got, and what it answered."""

    path: str
    headers: dict[str, str]
    body: Any
    agent: str | None
    answered: str
    status: int

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of the request (empty when the body had none)."""
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return list(self.body["messages"])
        return []


def load_replies(folder: str | Path) -> list[Reply]:
    """The replies of a folder of ``NNN-<agent-id>.txt`` files, in NNN order.

    Other files are ignored; a reply file naming an unknown agent, or a folder with no reply
    file, raises ValueError naming it.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{root}: not a folder of reply files")
    found: list[tuple[int, str, Path, str]] = []
    for path in root.iterdir():
        match = REPLY_FILE.match(path.name)
        if match is None or not path.is_file():
            continue
        agent = match.group(2)
        if agent not in AGENT_IDS:
            raise ValueError(
                f"{path}: unknown agent {agent!r} in the file name "
                f"(expected NNN-<agent-id>.txt with one of: {', '.join(AGENT_IDS)})"
            )
        found.append((int(match.group(1)), path.name, path, agent))
    if not found:
        raise ValueError(f"{root}: no reply files (NNN-<agent-id>.txt)")
    found.sort()
    return [
        Reply(path.read_text(encoding="utf-8"), agent=agent, name=name)
        for _, name, path, agent in found
    ]


def tokens(text: str) -> int:
    """A deterministic token count for usage: one per four characters, at least one."""
    return max(1, len(text) // 4)


class ScriptedLlmServer:
    """The server (see the module docstring); a context manager that starts and stops it.

    ``usage`` reports token usage (non-streamed: always; streamed: when the request asks
    with ``stream_options.include_usage``); ``chunk_chars`` is the content size of one
    streamed event; ``write_bytes`` splits the streamed body into writes of that many bytes
    (odd SSE boundaries); ``verbose`` prints one line per request on stderr.
    """

    def __init__(
        self,
        replies: Sequence[Reply | Fault] | str | Path = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        usage: bool = True,
        chunk_chars: int = 16,
        write_bytes: int | None = None,
        verbose: bool = False,
    ) -> None:
        self.script: list[Reply | Fault] = (
            [*load_replies(replies)] if isinstance(replies, str | Path) else list(replies)
        )
        self.usage = usage
        self.chunk_chars = max(1, chunk_chars)
        self.write_bytes = write_bytes
        self.verbose = verbose
        self.received: list[Received] = []
        self.errors: list[str] = []
        self.served = 0
        """Replies consumed so far (faults not counted)."""
        self.done = threading.Event()
        """Set once every scripted item has been answered (the answer written)."""
        self._lock = threading.Lock()
        self._front: list[Fault] = []
        self._httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- life cycle -----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The API base URL (``http://127.0.0.1:PORT/v1``) for ``--llm-base-url``."""
        host = str(self._httpd.server_address[0])
        return f"http://{host}:{self.port}/v1"

    def start(self) -> ScriptedLlmServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-llm",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ScriptedLlmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting ------------------------------------------------------------------------

    def add(self, items: Iterable[Reply | Fault]) -> None:
        """Append replies or faults to the script."""
        with self._lock:
            self.script.extend(items)
            self.done.clear()

    def inject(self, *faults: Fault) -> None:
        """Answer the next requests with ``faults``, before any scripted item."""
        with self._lock:
            self._front.extend(faults)

    @property
    def remaining(self) -> int:
        """Scripted items not consumed yet."""
        with self._lock:
            return len(self.script) + len(self._front)

    def prompts(self, agent: str | None = None) -> list[list[dict[str, Any]]]:
        """The messages of every request (of ``agent`` only, if given)."""
        return [r.messages for r in self.received if agent is None or r.agent == agent]

    # -- answering (called from the handler threads) ---------------------------------------

    def _next(self, agent: str | None) -> tuple[Reply | Fault | None, str | None]:
        """The item to answer with, or (None, an error message)."""
        with self._lock:
            if self._front:
                return self._front.pop(0), None
            if not self.script:
                return None, f"scripted_llm: no scripted reply left for agent {agent}"
            item = self.script[0]
            if isinstance(item, Reply) and item.agent is not None and item.agent != agent:
                label = item.name or f"reply {self.served + 1}"
                return None, (
                    f"scripted_llm: {label} is for {item.agent}, but the request comes from "
                    f"{agent or 'no agent (the system message lacks the agent line)'}"
                )
            self.script.pop(0)
            if isinstance(item, Reply):
                self.served += 1
            return item, None

    def _record(self, received: Received) -> None:
        """Keep a request (before its answer is written, so a client never sees an answer
        the server has not recorded yet)."""
        with self._lock:
            self.received.append(received)
        if self.verbose:
            agent = received.agent or "-"
            print(
                f"scripted_llm: {agent}: {received.status} {received.answered}",
                file=sys.stderr,
                flush=True,
            )

    def _finished(self) -> None:
        """An answer was written: ``done`` once nothing scripted is left."""
        with self._lock:
            if not self.script and not self._front:
                self.done.set()

    def _failed(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)
        if self.verbose:
            print(message, file=sys.stderr, flush=True)


def request_agent(body: Any) -> tuple[str | None, str | None]:
    """``(agent id, problem)`` of a chat request body: the agent its system message names."""
    if not isinstance(body, dict):
        return None, "the request body is not a JSON object"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return None, "the request has no messages"
    first = messages[0]
    if not isinstance(first, dict) or first.get("role") != "system":
        return None, "the first message is not a system message"
    content = first.get("content")
    line = content.split("\n", 1)[0] if isinstance(content, str) else ""
    agent = agent_of_line(line)
    if agent is None:
        return None, (
            f"the system message does not start with '{AGENT_LINE_PREFIX}<agent-id>' "
            f"(it starts with {line[:80]!r})"
        )
    return agent, None


def _handler_for(server: ScriptedLlmServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        scripted = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    """One request: read, check the agent, answer with the next scripted item."""

    protocol_version = "HTTP/1.1"
    scripted: ScriptedLlmServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request access log (the server records requests itself)."""

    def do_GET(self) -> None:
        """``GET /v1/models``: one model, so clients that list models are content."""
        if self.path.rstrip("/") == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
            return
        self._json(404, {"error": {"message": f"no such path {self.path}"}})

    def do_POST(self) -> None:
        """``POST /v1/chat/completions``."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {key.lower(): value for key, value in self.headers.items()}
        try:
            body: Any = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, ValueError):
            body = None
        server = self.scripted
        if self.path.rstrip("/") != CHAT_PATH:
            message = f"scripted_llm: no such path {self.path} (POST {CHAT_PATH})"
            server._record(Received(self.path, headers, body, None, message, 404))
            self._json(404, {"error": {"message": message, "type": "not_found"}})
            return
        agent, problem = request_agent(body)
        item, error = (None, f"scripted_llm: {problem}") if problem else server._next(agent)
        if item is None:
            message = error or "scripted_llm: no answer"
            server._failed(message)
            server._record(Received(self.path, headers, body, agent, message, 400))
            self._json(400, {"error": {"message": message, "type": "scripted_llm_mismatch"}})
            server._finished()
            return
        stream = isinstance(body, dict) and body.get("stream") is True
        options = body.get("stream_options") if isinstance(body, dict) else None
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        if isinstance(item, Fault):
            server._record(Received(self.path, headers, body, agent, item.label, item.status))
            self._fault(item)
            server._finished()
            return
        usage_on = server.usage if item.usage is None else item.usage
        usage = None
        if usage_on:
            prompt = sum(
                tokens(str(m.get("content", ""))) for m in body["messages"] if isinstance(m, dict)
            )
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": tokens(item.content),
                "total_tokens": prompt + tokens(item.content),
            }
        label = item.name or f"reply {server.served}"
        answered = f"{label}{' (stream)' * stream}"
        server._record(Received(self.path, headers, body, agent, answered, 200))
        if stream:
            self._stream(item, usage if include_usage else None)
        else:
            self._json(
                200,
                {
                    "id": f"chatcmpl-{server.served}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": str(body.get("model", "scripted")),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": item.content},
                            "finish_reason": item.finish_reason,
                        }
                    ],
                    **({"usage": usage} if usage is not None else {}),
                },
            )
        server._finished()

    # -- writing --------------------------------------------------------------------------

    def _json(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(doc).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _fault(self, fault: Fault) -> None:
        if fault.cut:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half = fault.cut_content[: len(fault.cut_content) // 2]
            self._chunk(_sse({"choices": [{"index": 0, "delta": {"content": half}}]}))
            self.wfile.flush()
            self.close_connection = True
            return
        data = fault.raw if fault.raw is not None else fault.body.encode("utf-8")
        self.send_response(fault.status)
        self.send_header("Content-Type", fault.content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in fault.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def _stream(self, reply: Reply, usage: dict[str, int] | None) -> None:
        server = self.scripted
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [_sse({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})]
        text = reply.content
        step = server.chunk_chars
        for start in range(0, len(text), step):
            piece = text[start : start + step]
            events.append(_sse({"choices": [{"index": 0, "delta": {"content": piece}}]}))
        events.append(
            _sse({"choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]})
        )
        if usage is not None:
            events.append(_sse({"choices": [], "usage": usage}))
        events.append(b"data: [DONE]\n\n")
        body = b"".join(events)
        size = server.write_bytes
        if size:
            for start in range(0, len(body), size):
                self._chunk(body[start : start + size])
                self.wfile.flush()
        else:
            for event in events:
                self._chunk(event)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _sse(doc: dict[str, Any]) -> bytes:
    chunk = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", **doc}
    return b"data: " + json.dumps(chunk).encode("utf-8") + b"\n\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m notebook_bcc.testing.scripted_llm DIR``: serve a folder of replies."""
    parser = argparse.ArgumentParser(
        prog="python -m notebook_bcc.testing.scripted_llm",
        description="Serve a scripted conversation (NNN-<agent-id>.txt files) as an "
        "OpenAI-compatible chat API on loopback.",
    )
    parser.add_argument("folder", type=Path, help="folder of NNN-<agent-id>.txt reply files")
    add_loopback_arguments(parser)
    parser.add_argument("--no-usage", action="store_true", help="report no token usage")
    parser.add_argument(
        "--exit-when-done", action="store_true", help="stop once every reply was served"
    )
    args = parser.parse_args(argv)
    try:
        replies = load_replies(args.folder)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server = bind_or_explain(
        lambda: ScriptedLlmServer(
            replies, host=args.host, port=args.port, usage=not args.no_usage, verbose=True
        ),
        args.host,
        args.port,
    )
    if server is None:
        return 2
    server.start()
    print(
        f"scripted LLM: {len(replies)} replies from {args.folder}; base URL {server.base_url}",
        flush=True,
    )
    try:
        wait_until_stopped(server.done if args.exit_when_done else None)
    finally:
        server.stop()
    left = server.remaining
    print(
        f"scripted LLM: served {server.served} of {len(replies)} replies"
        f"{f', {left} left' if left else ''}; {len(server.errors)} error(s)",
        file=sys.stderr,
        flush=True,
    )
    return 1 if server.errors else 0


if __name__ == "__main__":
    sys.exit(main())
