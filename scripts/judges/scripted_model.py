#!/usr/bin/env python3
"""A scripted model server: answers OpenAI-compatible API calls from a script file.

Real harnesses (OpenCode, Copilot CLI, Pi, Qwen Code, ...) pointed at it with a custom
base URL run real turns offline, so they write their real session stores with words the
script chose. Python 3.11 stdlib only; listens on 127.0.0.1 only.

    scripted_model.py --script turns.json [--port 0] [--port-file F] [--log requests.jsonl]

Endpoints (any path prefix, e.g. /v1/chat/completions or /chat/completions):

* POST .../chat/completions   Chat Completions, streamed (SSE) or not; tool calls;
                              reasoning as `reasoning_content` (configurable)
* POST .../responses          Responses API, streamed (SSE) or not; function calls;
                              reasoning items with a summary
* GET  .../models             the script's model list
* POST /_script               replace the script (body: a script); resets consumption
* GET  /_state                which turns were used, how many requests, unmatched ones
* GET  /_log                  the request log so far (JSON list)

Script (JSON): a list of turns, or {"models": [...], "reasoning_field": ..., "turns": [...]}.
A turn answers one model request:

    {"text": "Let me read it.",                 # assistant text (optional)
     "reasoning": "I should read cart.py",      # reasoning text (optional)
     "tool_calls": [{"name": "read", "arguments": {"filePath": "cart.py"}, "id": "call_1"}],
     "when": {"system": "title"},               # only for requests that match (optional)
     "repeat": true,                            # a matching turn is never used up
     "usage": {"prompt_tokens": 900, "completion_tokens": 40},
     "finish": "stop", "error": {"status": 500, "message": "boom"}, "delay": 0.2}

Choosing a turn: first the turns with a `when` that matches (in script order; unused, or
`repeat`), else the first unused turn without `when`. `when` keys (all must hold):
`system` (substring of the system/developer text), `user` (substring of the last user
text), `any` (substring of the whole request body), `last` (role of the last input item:
"user", "tool", "assistant"), `tool` (a tool of that name is offered), `no_tools` (true:
the request offers no tools), `api` ("chat" or "responses"), `model`, `nth` (the n-th
request, 1-based). When nothing is left the server answers with the text
"[scripted model: script exhausted]" and records it in /_state (`exhausted`), so a driver
can fail loudly.

The log (--log, one JSON object per line) has every request: time, method, path,
headers (authorization values replaced by "<redacted>"), the body, and which turn answered.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

EXHAUSTED_TEXT = "[scripted model: script exhausted]"


def _text_of(content) -> str:
    """Plain text of a chat/responses content value (string or list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for p in content:
            if isinstance(p, str):
                out.append(p)
            elif isinstance(p, dict):
                for k in ("text", "input_text", "output_text"):
                    if isinstance(p.get(k), str):
                        out.append(p[k])
                        break
        return "\n".join(out)
    return ""


class Request:
    """What a turn can be matched against, for both APIs."""

    def __init__(self, api: str, body: dict, nth: int):
        self.api = api
        self.body = body
        self.nth = nth
        self.model = body.get("model")
        self.raw = json.dumps(body, ensure_ascii=False)
        system, last_user, last_role = [], "", None
        tools = []
        if api == "chat":
            for m in body.get("messages") or []:
                role = m.get("role")
                if role in ("system", "developer"):
                    system.append(_text_of(m.get("content")))
                elif role == "user":
                    last_user = _text_of(m.get("content"))
                last_role = role
            for t in body.get("tools") or []:
                fn = t.get("function") or {}
                tools.append(fn.get("name") or t.get("name"))
        else:
            if isinstance(body.get("instructions"), str):
                system.append(body["instructions"])
            inp = body.get("input")
            if isinstance(inp, str):
                last_user, last_role = inp, "user"
            for item in inp if isinstance(inp, list) else []:
                typ = item.get("type", "message")
                role = item.get("role")
                if typ == "message" and role in ("system", "developer"):
                    system.append(_text_of(item.get("content")))
                    last_role = role
                elif typ == "message" and role == "user":
                    last_user = _text_of(item.get("content"))
                    last_role = "user"
                elif typ == "message":
                    last_role = role
                elif typ == "function_call_output":
                    last_role = "tool"
                elif typ in ("function_call", "reasoning"):
                    last_role = "assistant"
            for t in body.get("tools") or []:
                tools.append(t.get("name") or (t.get("function") or {}).get("name"))
        self.system = "\n".join(system)
        self.last_user = last_user
        self.last_role = last_role
        self.tools = [t for t in tools if t]

    def matches(self, when: dict) -> bool:
        for k, v in when.items():
            if k == "system" and v not in self.system:
                return False
            if k == "not_system" and v in self.system:
                return False
            if k == "user" and v not in self.last_user:
                return False
            if k == "any" and v not in self.raw:
                return False
            if k == "last" and self.last_role != v:
                return False
            if k == "tool" and v not in self.tools:
                return False
            if k == "no_tools" and bool(v) == bool(self.tools):
                return False
            if k == "api" and v != self.api:
                return False
            if k == "model" and v != self.model:
                return False
            if k == "nth" and v != self.nth:
                return False
        return True


class Script:
    def __init__(self, data):
        if isinstance(data, list):
            data = {"turns": data}
        if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
            raise ValueError("a script is a list of turns or an object with a 'turns' list")
        self.turns: list[dict] = data["turns"]
        self.models: list[str] = data.get("models") or ["scripted"]
        # chat completions: which delta field carries reasoning; a list emits several
        rf = data.get("reasoning_field", "reasoning_content")
        self.reasoning_fields = rf if isinstance(rf, list) else [rf]
        self.used = [0] * len(self.turns)
        self.exhausted = 0
        self.lock = threading.Lock()

    def choose(self, req: Request) -> tuple[int | None, dict]:
        with self.lock:
            for i, t in enumerate(self.turns):
                w = t.get("when")
                if w and (t.get("repeat") or not self.used[i]) and req.matches(w):
                    self.used[i] += 1
                    return i, t
            for i, t in enumerate(self.turns):
                if not t.get("when") and not self.used[i]:
                    self.used[i] += 1
                    return i, t
            self.exhausted += 1
            return None, {"text": EXHAUSTED_TEXT}

    def state(self) -> dict:
        with self.lock:
            return {
                "turns": len(self.turns),
                "used": self.used,
                "unused": [i for i, (t, u) in enumerate(zip(self.turns, self.used))
                           if not u and not t.get("when")],
                "exhausted": self.exhausted,
            }


def _pieces(text: str, n: int) -> list[str]:
    """Split text into about n streamed pieces at spaces (deterministic)."""
    if not text:
        return []
    if n <= 1 or len(text) < 8:
        return [text]
    size = max(1, len(text) // n)
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        sp = text.find(" ", end)
        end = len(text) if sp < 0 or sp - end > 40 else sp + 1
        out.append(text[start:end])
        start = end
    return out


def _args_str(a) -> str:
    if isinstance(a, str):
        return a
    return json.dumps(a if a is not None else {}, ensure_ascii=False)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, script: Script, log_path: Path | None):
        super().__init__(addr, Handler)
        self.script = script
        self.log_path = log_path
        self.log_lock = threading.Lock()
        self.log_entries: list[dict] = []
        self.nreq = 0
        self.call_seq = 0

    def next_nth(self) -> int:
        with self.log_lock:
            self.nreq += 1
            return self.nreq

    def call_id(self, turn_idx, k: int, prefix: str) -> str:
        with self.log_lock:
            self.call_seq += 1
            seq = self.call_seq
        h = hashlib.sha256(f"{turn_idx}:{k}:{seq}".encode()).hexdigest()[:16]
        return f"{prefix}{h}"

    def record(self, entry: dict):
        with self.log_lock:
            self.log_entries.append(entry)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry, ensure_ascii=False) + "\n")


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass

    # -- helpers
    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0], 16) if line else 0
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
            return data
        return self.rfile.read(n) if n else b""

    def _headers_logged(self) -> dict:
        out = {}
        for k, v in self.headers.items():
            if k.lower() in ("authorization", "api-key", "x-api-key", "cookie"):
                v = "<redacted>"
            out[k] = v
        return out

    def _json(self, code: int, obj):
        data = json.dumps(obj, ensure_ascii=False).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _sse(self, obj, event: str | None = None):
        data = b""
        if event:
            data += f"event: {event}\n".encode()
        payload = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
        data += f"data: {payload}\n\n".encode()
        self.wfile.write(data)
        self.wfile.flush()

    # -- routes
    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/_state":
            st = self.server.script.state()
            st["requests"] = self.server.nreq
            return self._json(200, st)
        if path == "/_log":
            with self.server.log_lock:
                return self._json(200, list(self.server.log_entries))
        self.server.record({"t": time.time(), "method": "GET", "path": self.path,
                            "headers": self._headers_logged()})
        if path.endswith("/models") or path == "/models":
            now = int(time.time())
            return self._json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": now, "owned_by": "scripted"}
                for m in self.server.script.models]})
        return self._json(404, {"error": {"message": f"no route {path}"}})

    def do_POST(self):
        path = self.path.split("?")[0]
        raw = self._body()
        if path == "/_script":
            try:
                self.server.script = Script(json.loads(raw))
            except (ValueError, TypeError) as e:
                return self._json(400, {"error": str(e)})
            return self._json(200, {"ok": True, "turns": len(self.server.script.turns)})
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        entry = {"t": time.time(), "method": "POST", "path": self.path,
                 "headers": self._headers_logged(),
                 "body": body if body is not None else raw.decode("utf-8", "replace")}
        if path.endswith("/chat/completions"):
            api = "chat"
        elif path.endswith("/responses"):
            api = "responses"
        else:
            self.server.record(entry)
            return self._json(404, {"error": {"message": f"no route {path}"}})
        if not isinstance(body, dict):
            self.server.record(entry)
            return self._json(400, {"error": {"message": "body is not a JSON object"}})
        nth = self.server.next_nth()
        req = Request(api, body, nth)
        idx, turn = self.server.script.choose(req)
        entry.update({"nth": nth, "api": api, "turn": idx, "stream": bool(body.get("stream"))})
        self.server.record(entry)
        if turn.get("delay"):
            time.sleep(float(turn["delay"]))
        err = turn.get("error")
        if err:
            return self._json(int(err.get("status", 500)),
                              {"error": {"message": err.get("message", "scripted error"),
                                         "type": err.get("type", "server_error")}})
        if api == "chat":
            return self._chat(body, turn, idx)
        return self._responses(body, turn, idx)

    # -- chat completions
    def _usage(self, body, turn) -> dict:
        u = dict(turn.get("usage") or {})
        prompt = u.get("prompt_tokens", max(1, len(json.dumps(body)) // 4))
        text_len = len(turn.get("text") or "") + len(turn.get("reasoning") or "") + \
            sum(len(_args_str(c.get("arguments"))) for c in turn.get("tool_calls") or [])
        completion = u.get("completion_tokens", max(1, text_len // 4))
        reasoning = u.get("reasoning_tokens", len(turn.get("reasoning") or "") // 4)
        cached = u.get("cached_tokens", 0)
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached},
                "completion_tokens_details": {"reasoning_tokens": reasoning}}

    def _calls(self, turn, idx, prefix="call_"):
        calls = []
        for k, c in enumerate(turn.get("tool_calls") or []):
            calls.append({"id": c.get("id") or self.server.call_id(idx, k, prefix),
                          "name": c["name"], "arguments": _args_str(c.get("arguments"))})
        return calls

    def _chat(self, body, turn, idx):
        model = body.get("model") or self.server.script.models[0]
        cid = "chatcmpl-" + hashlib.sha256(f"{self.server.nreq}:{idx}".encode()).hexdigest()[:24]
        created = int(time.time())
        calls = self._calls(turn, idx)
        finish = turn.get("finish") or ("tool_calls" if calls else "stop")
        usage = self._usage(body, turn)
        text, reasoning = turn.get("text") or "", turn.get("reasoning") or ""
        if not body.get("stream"):
            msg = {"role": "assistant", "content": text or None}
            if reasoning:
                for f in self.server.script.reasoning_fields:
                    msg[f] = reasoning
            if calls:
                msg["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": c["arguments"]}}
                                     for c in calls]
            return self._json(200, {"id": cid, "object": "chat.completion", "created": created,
                                    "model": model, "choices": [{"index": 0, "message": msg,
                                                                 "finish_reason": finish}],
                                    "usage": usage})
        self._sse_start()

        def chunk(delta, fin=None, **extra):
            o = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]}
            o.update(extra)
            self._sse(o)
        chunk({"role": "assistant", "content": ""})
        n = int(turn.get("chunks", 3))
        for piece in _pieces(reasoning, n):
            chunk({f: piece for f in self.server.script.reasoning_fields})
        for piece in _pieces(text, n):
            chunk({"content": piece})
        for k, c in enumerate(calls):
            args = c["arguments"]
            half = len(args) // 2
            chunk({"tool_calls": [{"index": k, "id": c["id"], "type": "function",
                                   "function": {"name": c["name"], "arguments": args[:half]}}]})
            chunk({"tool_calls": [{"index": k, "function": {"arguments": args[half:]}}]})
        chunk({}, finish)
        if (body.get("stream_options") or {}).get("include_usage", True):
            self._sse({"id": cid, "object": "chat.completion.chunk", "created": created,
                       "model": model, "choices": [], "usage": usage})
        self._sse("[DONE]")

    # -- responses
    def _responses(self, body, turn, idx):
        model = body.get("model") or self.server.script.models[0]
        rid = "resp_" + hashlib.sha256(f"{self.server.nreq}:{idx}".encode()).hexdigest()[:24]
        created = int(time.time())
        calls = self._calls(turn, idx, prefix="call_")
        text, reasoning = turn.get("text") or "", turn.get("reasoning") or ""
        u = self._usage(body, turn)
        usage = {"input_tokens": u["prompt_tokens"], "output_tokens": u["completion_tokens"],
                 "total_tokens": u["total_tokens"],
                 "input_tokens_details": {"cached_tokens": u["prompt_tokens_details"]["cached_tokens"]},
                 "output_tokens_details": {"reasoning_tokens": u["completion_tokens_details"]["reasoning_tokens"]}}
        items = []
        h = hashlib.sha256(f"{rid}".encode()).hexdigest()
        if reasoning:
            items.append({"type": "reasoning", "id": "rs_" + h[:20],
                          "summary": [{"type": "summary_text", "text": reasoning}]})
        if text:
            items.append({"type": "message", "id": "msg_" + h[20:40], "role": "assistant",
                          "status": "completed",
                          "content": [{"type": "output_text", "text": text, "annotations": []}]})
        for k, c in enumerate(calls):
            items.append({"type": "function_call", "id": f"fc_{h[:12]}{k}", "call_id": c["id"],
                          "name": c["name"], "arguments": c["arguments"], "status": "completed"})
        resp = {"id": rid, "object": "response", "created_at": created, "status": "completed",
                "model": model, "output": items, "usage": usage, "error": None,
                "incomplete_details": None}
        if turn.get("finish") == "length":
            resp["status"] = "incomplete"
            resp["incomplete_details"] = {"reason": "max_output_tokens"}
        if not body.get("stream"):
            return self._json(200, resp)
        self._sse_start()
        seq = [0]

        def ev(typ, **payload):
            o = {"type": typ, "sequence_number": seq[0], **payload}
            seq[0] += 1
            self._sse(o, event=typ)
        shell = dict(resp, status="in_progress", output=[], usage=None)
        ev("response.created", response=shell)
        ev("response.in_progress", response=shell)
        n = int(turn.get("chunks", 3))
        for oi, item in enumerate(items):
            if item["type"] == "reasoning":
                ev("response.output_item.added", output_index=oi,
                   item=dict(item, summary=[]))
                ev("response.reasoning_summary_part.added", item_id=item["id"], output_index=oi,
                   summary_index=0, part={"type": "summary_text", "text": ""})
                for piece in _pieces(reasoning, n):
                    ev("response.reasoning_summary_text.delta", item_id=item["id"],
                       output_index=oi, summary_index=0, delta=piece)
                ev("response.reasoning_summary_text.done", item_id=item["id"], output_index=oi,
                   summary_index=0, text=reasoning)
                ev("response.reasoning_summary_part.done", item_id=item["id"], output_index=oi,
                   summary_index=0, part={"type": "summary_text", "text": reasoning})
            elif item["type"] == "message":
                ev("response.output_item.added", output_index=oi,
                   item=dict(item, status="in_progress", content=[]))
                ev("response.content_part.added", item_id=item["id"], output_index=oi,
                   content_index=0, part={"type": "output_text", "text": "", "annotations": []})
                for piece in _pieces(text, n):
                    ev("response.output_text.delta", item_id=item["id"], output_index=oi,
                       content_index=0, delta=piece)
                ev("response.output_text.done", item_id=item["id"], output_index=oi,
                   content_index=0, text=text)
                ev("response.content_part.done", item_id=item["id"], output_index=oi,
                   content_index=0, part=item["content"][0])
            else:
                ev("response.output_item.added", output_index=oi,
                   item=dict(item, status="in_progress", arguments=""))
                ev("response.function_call_arguments.delta", item_id=item["id"], output_index=oi,
                   delta=item["arguments"])
                ev("response.function_call_arguments.done", item_id=item["id"], output_index=oi,
                   arguments=item["arguments"])
            ev("response.output_item.done", output_index=oi, item=item)
        ev("response.completed" if resp["status"] == "completed" else "response.incomplete",
           response=resp)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--script", required=True, help="script file (JSON), '-' for stdin")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    ap.add_argument("--port-file", help="write the chosen port here once listening")
    ap.add_argument("--log", help="append every request to this JSONL file")
    args = ap.parse_args(argv)
    text = sys.stdin.read() if args.script == "-" else Path(args.script).read_text()
    script = Script(json.loads(text))
    srv = Server(("127.0.0.1", args.port), script, Path(args.log) if args.log else None)
    port = srv.server_address[1]
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(port))
        tmp.replace(args.port_file)
    print(f"scripted model: http://127.0.0.1:{port}/v1 ({len(script.turns)} turns)",
          file=sys.stderr, flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()
