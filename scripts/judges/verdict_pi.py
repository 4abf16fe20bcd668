"""The verdict on sessions asp wrote into a Pi home (scripts/judges/carry.py).

For every session written: pi-acp lists it under its cwd and loads it, replaying exactly what
pi-acp's `loadSession` makes of the file asp wrote (spec/harnesses/pi.md §4.4, §7): the
current branch (the parentId walk from the last line), from the last compaction's
`firstKeptEntryId` on, one user_message_chunk per user message with text, one
agent_message_chunk per assistant message with text, a tool_call and a tool_call_update per
tool result. The title pi-acp lists is the session's `session_info` name; opening the session
changes nothing in its file (it has its thinking_level_change); for a carried session, every
tool call of the source stream is there.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

KINDS = ["user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update"]


def entries(path: Path) -> list[dict]:
    out = []
    for raw in path.read_bytes().splitlines():
        if not raw.strip():
            continue
        try:
            o = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(o, dict):
            out.append(o)
    return out


def text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content
                       if isinstance(b, dict) and b.get("type") == "text")
    return ""


def user_commands(body: list[dict]) -> int:
    """`!` commands the user ran (bashExecution messages): carried in Pi's own form, which
    pi-acp does not replay."""
    return sum(1 for e in body if e.get("type") == "message"
               and (e.get("message") or {}).get("role") == "bashExecution")


def intended(body: list[dict]) -> collections.Counter:
    """What pi-acp replays: buildSessionContext's messages, then per role."""
    by_id = {e.get("id"): e for e in body if isinstance(e.get("id"), str)}
    path, seen = [], set()
    cur = body[-1] if body else None
    while cur is not None and cur.get("id") not in seen:
        seen.add(cur.get("id"))
        path.append(cur)
        cur = by_id.get(cur.get("parentId")) if cur.get("parentId") else None
    path.reverse()
    comp = max((i for i, e in enumerate(path) if e.get("type") == "compaction"), default=None)
    if comp is not None:
        keep = path[comp].get("firstKeptEntryId")
        start = next((i for i, e in enumerate(path[:comp]) if e.get("id") == keep), comp)
        path = path[start:comp] + path[comp + 1:]
    c = collections.Counter()
    for e in path:
        if e.get("type") != "message":
            continue
        m = e.get("message") or {}
        role = m.get("role")
        if role == "user" and text_of(m.get("content")):
            c["user_message_chunk"] += 1
        elif role == "assistant" and text_of(m.get("content")):
            c["agent_message_chunk"] += 1
        elif role == "toolResult":
            c["tool_call"] += 1
            c["tool_call_update"] += 1
    return c


def source_calls(session) -> int:
    return len({u["toolCallId"] for u in session["updates"]
                if u["sessionUpdate"] in ("tool_call", "tool_call_update")})


def verdict(home: Path, answer: dict, sources: dict, written: dict, report: dict):
    """(old id, new id, ok, detail) for every session the answer says was written."""
    agent = home / ".pi" / "agent"
    judged = {s["id"]: s for s in report.get("sessions", []) if s.get("id")}
    changed = set(report.get("session_files_changed_by_harness", {}).get("modified", []))
    for old, new in sorted(answer.get("sessions", {}).items()):
        j = judged.get(new)
        if not j or not j.get("on_disk"):
            yield old, new, False, "no session file with this id"
            continue
        rel = j["on_disk"][0]
        body = entries(agent / rel)[1:]
        want = intended(body)
        names = [(e.get("name") or "").strip() for e in body if e.get("type") == "session_info"]
        name = next((n for n in reversed(names) if n), None)
        if not j.get("listed"):
            yield old, new, False, f"not listed under its cwd ({(j.get('load') or {}).get('error')})"
            continue
        load = j.get("load") or {}
        got = collections.Counter({k: v for k, v in (load.get("counts") or {}).items() if k in KINDS})
        ok = bool(load.get("ok")) and got == want
        notes = []
        if name is not None and j.get("title") != name:
            ok = False
            notes.append(f"listed as {j.get('title')!r}, named {name!r}")
        if rel in changed:
            ok = False
            notes.append("opening it changed the file")
        src = sources.get(old)
        if src is not None and not src.get("native"):
            calls, bash = source_calls(src), user_commands(body)
            if want["tool_call"] + bash < calls:
                ok = False
            notes.append(f"source: {calls} tool calls" + (f" ({bash} of them `!` commands the user ran, "
                                                          "kept as bashExecution)" if bash else ""))
        yield old, new, ok, (f"title {j.get('title')!r}; replayed {dict(sorted(got.items()))}"
                             + ("" if got == want else f" but intended {dict(sorted(want.items()))}")
                             + ("; " + "; ".join(notes) if notes else ""))
