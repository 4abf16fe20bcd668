"""The verdict on sessions asp wrote into a Copilot CLI home (scripts/judges/carry.py).

For every session written: `copilot --acp` lists it and loads it in its cwd, replaying exactly
what Copilot's `session/load` makes of the `events.jsonl` asp wrote
(spec/harnesses/copilot.md §6): one user_message_chunk per main-agent `user.message`, one
agent_message_chunk per `assistant.message` with content (a sub-agent's too) and per
`session.info`, a tool_call and a tool_call_update per requested call that has its
`tool.execution_complete`. The title Copilot lists is `workspace.yaml` `name` (else the first
prompt); for a carried session, every tool call of the source stream is there.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

KINDS = ["user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update"]


def events(path: Path) -> list[dict]:
    out = []
    try:
        raw = path.read_bytes()
    except OSError:
        return out
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            o = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(o, dict):
            out.append(o)
    return out


def workspace_name(path: Path) -> str | None:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        if line.startswith("name:"):
            v = line[5:].strip()
            if len(v) >= 2 and v[0] == v[-1] == '"':
                try:
                    return json.loads(v)
                except ValueError:
                    return v[1:-1]
            if len(v) >= 2 and v[0] == v[-1] == "'":
                return v[1:-1].replace("''", "'")
            return v or None
    return None


def intended(evs: list[dict]) -> collections.Counter:
    done = {(e.get("data") or {}).get("toolCallId") for e in evs
            if e.get("type") == "tool.execution_complete"}
    c = collections.Counter()
    for e in evs:
        t, d = e.get("type"), e.get("data") or {}
        if t == "user.message" and not e.get("agentId"):
            c["user_message_chunk"] += 1
        elif t == "assistant.message":
            if d.get("content"):
                c["agent_message_chunk"] += 1
            for r in d.get("toolRequests") or []:
                if r.get("toolCallId") in done:
                    c["tool_call"] += 1
                    c["tool_call_update"] += 1
        elif t == "session.info":
            c["agent_message_chunk"] += 1
    return c


def first_prompt(evs: list[dict]) -> str | None:
    return next(((e.get("data") or {}).get("content") for e in evs
                 if e.get("type") == "user.message" and not e.get("agentId")), None)


def source_calls(session) -> int:
    return len({u["toolCallId"] for u in session["updates"]
                if u["sessionUpdate"] in ("tool_call", "tool_call_update")})


def verdict(home: Path, answer: dict, sources: dict, written: dict, report: dict):
    """(old id, new id, ok, detail) for every session the answer says was written."""
    root = home / ".copilot" / "session-state"
    judged = {s["id"]: s for s in report.get("sessions", []) if s.get("id")}
    for old, new in sorted(answer.get("sessions", {}).items()):
        j = judged.get(new)
        d = root / new
        if not j or not j.get("on_disk"):
            yield old, new, False, "no session directory with this id"
            continue
        evs = events(d / "events.jsonl")
        want = intended(evs)
        name = workspace_name(d / "workspace.yaml") or first_prompt(evs)
        if not j.get("listed"):
            yield old, new, False, f"not listed ({(j.get('load') or {}).get('error')})"
            continue
        load = j.get("load") or {}
        got = collections.Counter({k: v for k, v in (load.get("counts") or {}).items() if k in KINDS})
        ok = bool(load.get("ok")) and got == want
        notes = []
        # Copilot lists an untitled session by its first prompt with whitespace collapsed.
        if name is not None and " ".join((j.get("title") or "").split()) != " ".join(name.split()):
            ok = False
            notes.append(f"listed as {j.get('title')!r}, named {name!r}")
        src = sources.get(old)
        if src is not None and not src.get("native"):
            calls = source_calls(src)
            if want["tool_call"] < calls:
                ok = False
            notes.append(f"source: {calls} tool calls")
        if not load.get("ok"):
            notes.append(f"load failed: {load.get('error')}")
        yield old, new, ok, (f"title {j.get('title')!r}; replayed {dict(sorted(got.items()))}"
                             + ("" if got == want else f" but intended {dict(sorted(want.items()))}")
                             + ("; " + "; ".join(notes) if notes else ""))
