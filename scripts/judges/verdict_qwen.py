"""The verdict on sessions asp wrote into a Qwen Code home (scripts/judges/carry.py).

For every session written: Qwen lists it under its cwd, with the title asp gave it, and
loads it, replaying exactly what its own history replayer would for the chat file asp wrote
(user/thought/agent/tool_call/tool_call_update counts over the `uuid`/`parentUuid` chain from
the last conversation record, spec/harnesses/qwen.md §4 and §7); for a carried session, every
tool call of the source stream is there. A subagent transcript is never listed (by design).
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

KINDS = ["user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call",
         "tool_call_update", "plan"]
NON_CONVERSATION = {"session_sources_snapshot"}


def records(path: Path):
    out = []
    for raw in path.read_bytes().splitlines():
        if not raw.strip():
            continue
        try:
            o = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(o, dict) and isinstance(o.get("uuid"), str) and isinstance(o.get("sessionId"), str):
            out.append(o)
    return out


def chain(recs):
    by = {}
    for r in recs:
        by.setdefault(r["uuid"], r)
    conv = [r for r in recs if r.get("type") in ("user", "assistant", "tool_result", "system")
            and r.get("subtype") not in NON_CONVERSATION
            and not str(r.get("subtype", "")).startswith(("session_artifact_", "managed_session_"))]
    if not conv:
        return []
    out, seen, cur = [], set(), conv[-1]["uuid"]
    while cur and cur not in seen and cur in by:
        seen.add(cur)
        out.append(by[cur])
        cur = by[cur].get("parentUuid")
    out.reverse()
    return out


def intended(ch):
    """What Qwen's ACP replay sends for a chain (usage chunks apart)."""
    c = collections.Counter()
    names = {}
    for r in ch:
        parts = ((r.get("message") or {}).get("parts")) or []
        t, sub = r.get("type"), r.get("subtype")
        if t == "user" and not sub:
            for p in parts:
                if isinstance(p.get("text"), str):
                    c["user_message_chunk"] += 1
                elif str((p.get("inlineData") or {}).get("mimeType", "")).startswith("image/"):
                    c["user_message_chunk"] += 1
        elif t == "assistant":
            for p in parts:
                if "functionCall" in p:
                    fc = p["functionCall"]
                    names[fc.get("id")] = fc.get("name")
                    if fc.get("name") != "todo_write":
                        c["tool_call"] += 1
                elif isinstance(p.get("text"), str) and p["text"]:
                    c["agent_thought_chunk" if p.get("thought") else "agent_message_chunk"] += 1
        elif t == "tool_result":
            for p in parts:
                if "functionResponse" in p:
                    cid = (r.get("toolCallResult") or {}).get("callId") or p["functionResponse"].get("id")
                    c["plan" if names.get(cid) == "todo_write" else "tool_call_update"] += 1
        elif t == "system" and sub == "slash_command":
            items = ((r.get("systemPayload") or {}).get("outputHistoryItems")) or []
            c["agent_message_chunk"] += len(items)
    return c


def source_calls(session):
    return len({u["toolCallId"] for u in session["updates"]
                if u["sessionUpdate"] in ("tool_call", "tool_call_update")})


def archived(session) -> bool:
    """Whether the source session was archived where it was read (asp_convert::kit::archive)."""
    meta = (session or {}).get("_meta") or {}
    return ((meta.get("codex") or {}).get("archived") is True
            or (meta.get("qwen") or {}).get("archived") is True
            or "archivedAt" in (meta.get("opencode") or {}))


def verdict(home: Path, answer: dict, sources: dict, written: dict, report: dict):
    """(old id, new id, ok, detail) for every session the answer says was written."""
    qwen = home / ".qwen"
    judged = {s["id"]: s for s in report.get("sessions", []) if s.get("id")}
    for old, new in sorted(answer.get("sessions", {}).items()):
        if ":agent-" in new:
            parent, agent = new.split(":agent-", 1)
            subs = list(qwen.glob(f"projects/*/subagents/{parent}/agent-{agent}.jsonl"))
            yield old, new, bool(subs), (f"subagent transcript {subs[0].relative_to(qwen)}: never "
                                         "listed by Qwen (by design)" if subs else "no subagent transcript")
            continue
        files = list(qwen.glob(f"projects/*/chats/{new}.jsonl"))
        if not files and archived(sources.get(old)):
            # Archived where it was read: asp writes it into Qwen's archive, which Qwen lists
            # only on request, so it is judged by its place and its records, not loaded.
            kept = list(qwen.glob(f"projects/*/chats/archive/{new}.jsonl"))
            recs = records(kept[0]) if kept else []
            ok = bool(recs) and all(r.get("sessionId") == new for r in recs if "sessionId" in r)
            yield old, new, ok, (f"archived, as where it was read: {kept[0].relative_to(qwen)}, "
                                 f"{len(recs)} records (Qwen lists an archived chat only on "
                                 "request: not loaded)" if kept else "archived where it was "
                                 "read, and not in chats/archive/")
            continue
        if not files:
            yield old, new, False, "no chat file with this session id"
            continue
        recs = records(files[0])
        want = intended(chain(recs))
        titles = [r for r in recs if r.get("subtype") == "custom_title"]
        j = judged.get(new)
        if not j or not j.get("listed"):
            yield old, new, False, f"not listed ({(j or {}).get('load', {}).get('error')})"
            continue
        load = j.get("load") or {}
        got = collections.Counter({k: v for k, v in (load.get("counts") or {}).items() if k in KINDS})
        ok = bool(load.get("ok")) and got == want
        note = ""
        if titles:
            t = (titles[-1].get("systemPayload") or {}).get("customTitle")
            if j.get("title") != t:
                ok = False
                note += f"; listed as {j.get('title')!r}, not {t!r}"
        src = sources.get(old)
        if src is not None and not src.get("native"):
            calls = source_calls(src)
            if want["tool_call"] < calls:
                ok = False
                note += f"; source had {calls} tool calls"
            else:
                note += f"; source: {calls} tool calls"
        yield old, new, ok, (f"title {j.get('title')!r}; replayed {dict(sorted(got.items()))}"
                             + ("" if got == want else f" but intended {dict(sorted(want.items()))}")
                             + note)
