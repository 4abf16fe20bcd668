"""The verdict on sessions asp wrote into an OpenCode home (scripts/judges/carry.py).

For every session written: it is a row of `opencode.db`; OpenCode lists it in its directory
(`opencode session list` / ACP `session/list`) unless it is a sub-agent session (OpenCode lists
root sessions only, spec/harnesses/opencode.md §8), under the title of its `session.title`;
ACP `session/load` loads it and replays what OpenCode's `loadSession` makes of its rows (§8):
per message in `time_created, id` order, a user_message_chunk per user `text`/`file` part, an
agent_thought_chunk per `reasoning` part, an agent_message_chunk per assistant `text` part, a
tool_call and a tool_call_update per `tool` part. For a carried session, every tool call of the
source stream is there.
"""

from __future__ import annotations

import collections
import json
import sqlite3
from pathlib import Path

KINDS = ["user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call",
         "tool_call_update"]


def intended(con: sqlite3.Connection, sid: str) -> collections.Counter:
    c = collections.Counter()
    msgs = con.execute("select id, data from message where session_id = ? "
                       "order by time_created, id", (sid,)).fetchall()
    for mid, data in msgs:
        role = (json.loads(data) or {}).get("role")
        for (pdata,) in con.execute("select data from part where message_id = ? order by id",
                                    (mid,)):
            try:
                p = json.loads(pdata)
            except ValueError:
                continue
            t = p.get("type")
            if role == "user" and t in ("text", "file"):
                c["user_message_chunk"] += 1
            elif role == "assistant" and t == "text" and p.get("text"):
                c["agent_message_chunk"] += 1
            elif role == "assistant" and t == "reasoning" and p.get("text"):
                c["agent_thought_chunk"] += 1
            elif t == "tool":
                c["tool_call"] += 1
                c["tool_call_update"] += 1
    return c


def source_calls(session) -> int:
    return len({u["toolCallId"] for u in session["updates"]
                if u["sessionUpdate"] in ("tool_call", "tool_call_update")})


def verdict(home: Path, answer: dict, sources: dict, written: dict, report: dict):
    """(old id, new id, ok, detail) for every session the answer says was written."""
    db = home / ".local/share/opencode/opencode.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    judged = {s["id"]: s for s in report.get("sessions", []) if s.get("id")}
    for old, new in sorted(answer.get("sessions", {}).items()):
        row = con.execute("select title, parent_id from session where id = ?", (new,)).fetchone()
        j = judged.get(new)
        if row is None or not j:
            yield old, new, False, "no session row with this id"
            continue
        title, parent = row
        if not parent and not j.get("listed"):
            yield old, new, False, f"not listed in its directory ({(j.get('load') or {}).get('error')})"
            continue
        want = intended(con, new)
        load = j.get("load") or {}
        got = collections.Counter({k: v for k, v in (load.get("counts") or {}).items() if k in KINDS})
        ok = bool(load.get("ok")) and got == want
        notes = []
        if not parent and j.get("title") != title:
            ok = False
            notes.append(f"listed as {j.get('title')!r}, titled {title!r}")
        if parent:
            notes.append(f"sub-agent of {parent} (not listed, as OpenCode's own)")
        src = sources.get(old)
        if src is not None and not src.get("native"):
            calls = source_calls(src)
            if want["tool_call"] < calls:
                ok = False
            notes.append(f"source: {calls} tool calls")
        yield old, new, ok, (f"title {title!r}; replayed {dict(sorted(got.items()))}"
                             + ("" if got == want else f" but intended {dict(sorted(want.items()))}")
                             + ("; " + "; ".join(notes) if notes else ""))
