"""The verdict on sessions asp wrote into a Gemini CLI home (scripts/judges/carry.py).

For every session written: Gemini lists it (a subagent's chat is never listed, by design) and
loads it, replaying exactly what its own `streamHistory` would for the chat file asp wrote
(user/thought/agent/tool_call counts, per the JSONL log rules of spec/harnesses/gemini.md §4
and §7.1); for a carried session, every tool call and plan of the source stream is there.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

KINDS = ["user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call", "tool_call_update"]

def render(content):
    """partListUnionToString (verbose), as Gemini's replay renders message content."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(render(p) for p in content)
    if not isinstance(content, dict):
        return ""
    p = content
    if "thought" in p: return f"[Thought: {str(p['thought']).lower()}]"
    if "fileData" in p: return "[File Data]"
    if "functionCall" in p: return f"[Function Call: {p['functionCall'].get('name')}]"
    if "functionResponse" in p: return f"[Function Response: {p['functionResponse'].get('name')}]"
    if "inlineData" in p: return "[Media]"
    return p.get("text") or ""

def replay(path):
    """loadConversationRecord: the surviving messages and the metadata."""
    meta, order, msgs = {}, [], {}
    def put(m):
        if isinstance(m, dict) and isinstance(m.get("id"), str):
            if m["id"] not in msgs: order.append(m["id"])
            msgs[m["id"]] = m
    text = path.read_text()
    if path.suffix == ".json":
        try:
            doc = json.loads(text)
            meta = {k: v for k, v in doc.items() if k != "messages"}
            for m in doc.get("messages") or []: put(m)
            return meta, [msgs[i] for i in order]
        except ValueError:
            pass
    for line in text.splitlines():
        if not line.strip(): continue
        try: r = json.loads(line)
        except ValueError: continue
        if not isinstance(r, dict): continue
        if isinstance(r.get("$rewindTo"), str):
            cut = order.index(r["$rewindTo"]) if r["$rewindTo"] in order else 0
            for i in order[cut:]: msgs.pop(i, None)
            del order[cut:]
        elif isinstance(r.get("id"), str): put(r)
        elif isinstance(r.get("$set"), dict):
            s = dict(r["$set"])
            if isinstance(s.get("messages"), list):
                order.clear(); msgs.clear()
                for m in s.pop("messages"): put(m)
            meta.update(s)
        elif isinstance(r.get("sessionId"), str) and isinstance(r.get("projectHash"), str):
            for m in r.get("messages") or []: put(m)
            meta.update({k: v for k, v in r.items() if k != "messages"})
    return meta, [msgs[i] for i in order]

def intended(messages):
    """What Gemini's streamHistory replays for these messages."""
    c = collections.Counter()
    for m in messages:
        s = render(m.get("content"))
        if m.get("type") == "user":
            if s.strip(): c["user_message_chunk"] += 1
        elif m.get("type") == "gemini":
            c["agent_thought_chunk"] += len(m.get("thoughts") or [])
            if s.strip(): c["agent_message_chunk"] += 1
            c["tool_call"] += len(m.get("toolCalls") or [])
    return c

def source_counts(session):
    """Tool calls and plans in the carried stream, to check none was lost."""
    calls, plans = set(), 0
    for u in session["updates"]:
        if u["sessionUpdate"] in ("tool_call", "tool_call_update"): calls.add(u["toolCallId"])
        if u["sessionUpdate"] == "plan": plans += 1
    return len(calls), plans


def verdict(home: Path, answer: dict, sources: dict, written: dict, report: dict):
    """(old id, new id, ok, detail) for every session the answer says was written."""
    gemini = home / ".gemini"
    files = {}
    for f in list(gemini.glob("tmp/*/chats/*.json*")) + list(gemini.glob("tmp/*/chats/*/*.json*")):
        meta, msgs = replay(f)
        if meta.get("sessionId"):
            files.setdefault(meta["sessionId"], []).append((f, meta, msgs))
    judged = {s["id"]: s for s in report.get("sessions", []) if s.get("id")}
    for old, new in sorted(answer.get("sessions", {}).items()):
        versions = files.get(new, [])
        if not versions:
            yield old, new, False, "no chat file with this session id"
            continue
        # The file Gemini resumes: the latest listable one.
        f, meta, msgs = sorted(versions, key=lambda v: str(v[1].get("lastUpdated")))[-1]
        want = intended(msgs)
        if meta.get("kind") == "subagent":
            yield old, new, True, (f"subagent chat {f.relative_to(gemini)}: never listed by "
                                   f"Gemini (by design); {dict(want)} in the file")
            continue
        j = judged.get(new)
        if not j or not j.get("listed"):
            yield old, new, False, f"not listed ({(j or {}).get('load', {}).get('error')})"
            continue
        load = j.get("load") or {}
        got = collections.Counter({k: v for k, v in (load.get("counts") or {}).items() if k in KINDS})
        ok = bool(load.get("ok")) and got == want
        note = ""
        src = sources.get(old)
        if src is not None and not src.get("native"):
            calls, plans = source_counts(src)
            if want["tool_call"] < calls:
                ok = False
                note = f"; source had {calls} tool calls"
            else:
                note = f"; source: {calls} tool calls + {plans} plans"
        yield old, new, ok, (f"title {j.get('title')!r}; replayed {dict(sorted(got.items()))}"
                             + ("" if got == want else f" but intended {dict(sorted(want.items()))}")
                             + note)
