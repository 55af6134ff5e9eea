"""A scripted model server that real coding agents talk to in place of their vendor's API.

Stdlib only (``http.server`` in a thread). It speaks the three wire formats the
agents use, learnt from the requests the agents send and their public API docs:

- Anthropic Messages (``POST /v1/messages``, Server-Sent Events): Claude Code, and Copilot CLI
  with a bring-your-own-key Anthropic provider;
- OpenAI Responses (``POST /v1/responses``, Server-Sent Events): Codex CLI;
- Gemini ``streamGenerateContent`` (``?alt=sse``): Gemini CLI.

The script is a list of turns. A request that offers tools is answered with the
turn whose index is the number of assistant turns already in its conversation,
so retries and side requests (titles, token counts) never advance it; requests
without tools get a short text. Every request is recorded, so a test can check
what reached the model (the hook briefing, a hook's reason for denying a tool).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Call:
    """One tool call the model makes: the tool's name and its arguments (or a freeform input)."""

    name: str
    args: dict[str, Any] | None = None
    text: str | None = None  # a freeform tool's input (Codex's apply_patch)


@dataclass(frozen=True)
class Turn:
    """What the model answers once: some tool calls, or (with none) its final text."""

    calls: tuple[Call, ...] = ()
    text: str = "done"


@dataclass
class Seen:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def raw(self) -> str:
        return json.dumps(self.body)


@dataclass
class FakeModel:
    """The server: start it, point an agent at ``url``, read ``requests`` afterwards."""

    script: list[Turn]
    requests: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # model lists and probes
                model.requests.append(Seen(self.path, dict(self.headers), {}))
                body = json.dumps({"data": [], "models": [], "object": "list"}).encode()
                self._send(200, "application/json", [body])

            def do_HEAD(self) -> None:
                self._send(200, "text/plain", [b""])

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else self._chunked()
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode(errors="replace")}
                seen = Seen(self.path, dict(self.headers), body if isinstance(body, dict) else {"_list": body})
                model.requests.append(seen)
                kind, chunks = model.answer(seen)
                self._send(200, kind, chunks)

            def _chunked(self) -> bytes:
                data = b""
                while True:
                    size = int(self.rfile.readline().strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()

            def _send(self, status: int, kind: str, chunks: Iterator[bytes] | list[bytes]) -> None:
                payload = b"".join(chunks)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeModel:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- answers ----------------------------------------------------------------------

    def turn_for(self, done: int) -> Turn:
        return self.script[done] if done < len(self.script) else Turn()

    def answer(self, seen: Seen) -> tuple[str, list[bytes]]:
        path = seen.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            return "application/json", [json.dumps({"input_tokens": 100}).encode()]
        if path.endswith("/messages"):
            return anthropic(seen.body, self)
        if path.endswith("/responses"):
            return responses(seen.body, self)
        if ":streamGenerateContent" in path or ":generateContent" in path:
            return gemini(seen.body, self, stream=":stream" in path)
        return "application/json", [b"{}"]


def _sse(event: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


# -- Anthropic Messages ------------------------------------------------------------------


def anthropic(body: dict[str, Any], model: FakeModel) -> tuple[str, list[bytes]]:
    messages = body.get("messages") or []
    if body.get("tools"):
        turn = model.turn_for(sum(1 for m in messages if m.get("role") == "assistant"))
    else:
        turn = Turn(text="ok")
    blocks: list[dict[str, Any]] = []
    if turn.calls:
        for i, call in enumerate(turn.calls):
            blocks.append(
                {"type": "tool_use", "id": f"toolu_{len(messages)}_{i}", "name": call.name, "input": call.args}
            )
    else:
        blocks.append({"type": "text", "text": turn.text})
    stop = "tool_use" if turn.calls else "end_turn"
    usage = {"input_tokens": 10, "output_tokens": 5}
    message = {
        "id": f"msg_{len(messages)}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake"),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        return "application/json", [json.dumps({**message, "content": blocks}).encode()]
    out = [_sse("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}})]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        out.append(_sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}))
        out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    final = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage}
    out.append(_sse("message_delta", final))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return "text/event-stream", out


# -- OpenAI Responses ----------------------------------------------------------------------

#: Items a Responses conversation holds for what the model said or called.
_MODEL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call")


def responses(body: dict[str, Any], model: FakeModel) -> tuple[str, list[bytes]]:
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    done = sum(1 for i in items if i.get("type") in _MODEL_ITEMS or i.get("role") == "assistant")
    turn = model.turn_for(done) if body.get("tools") else Turn(text="ok")
    rid = f"resp_{len(items)}"
    out_items: list[dict[str, Any]] = []
    for n, call in enumerate(turn.calls):
        call_id = f"call_{len(items)}_{n}"
        if call.text is not None:
            out_items.append(
                {
                    "type": "custom_tool_call",
                    "id": f"ctc_{call_id}",
                    "call_id": call_id,
                    "name": call.name,
                    "input": call.text,
                    "status": "completed",
                }
            )
        else:
            out_items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{call_id}",
                    "call_id": call_id,
                    "name": call.name,
                    "arguments": json.dumps(call.args),
                    "status": "completed",
                }
            )
    if not turn.calls:
        content = [{"type": "output_text", "text": turn.text, "annotations": []}]
        out_items.append(
            {"type": "message", "id": f"msg_{rid}", "role": "assistant", "status": "completed", "content": content}
        )
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    response = {
        "id": rid,
        "object": "response",
        "status": "in_progress",
        "model": body.get("model", "fake"),
        "output": [],
    }
    out = [_sse("response.created", {"type": "response.created", "response": response})]
    for n, item in enumerate(out_items):
        out.append(
            _sse("response.output_item.added", {"type": "response.output_item.added", "output_index": n, "item": item})
        )
        if item["type"] == "message":
            out.append(
                _sse(
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "output_index": n,
                        "content_index": 0,
                        "item_id": item["id"],
                        "delta": turn.text,
                    },
                )
            )
        out.append(
            _sse("response.output_item.done", {"type": "response.output_item.done", "output_index": n, "item": item})
        )
    final = {**response, "status": "completed", "output": out_items, "usage": usage}
    out.append(_sse("response.completed", {"type": "response.completed", "response": final}))
    return "text/event-stream", out


# -- Gemini generateContent ------------------------------------------------------------------


def gemini(body: dict[str, Any], model: FakeModel, *, stream: bool) -> tuple[str, list[bytes]]:
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    done = sum(1 for c in contents if c.get("role") == "model")
    turn = model.turn_for(done) if body.get("tools") else Turn(text="ok")
    parts: list[dict[str, Any]] = [{"functionCall": {"name": c.name, "args": c.args or {}}} for c in turn.calls]
    if not parts:
        parts = [{"text": turn.text}]
    answer = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "fake",
    }
    if not stream:
        return "application/json", [json.dumps(answer).encode()]
    return "text/event-stream", [_sse(None, answer)]
