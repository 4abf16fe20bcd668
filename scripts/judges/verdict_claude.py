"""The verdict on sessions asp wrote into a Claude Code home (scripts/judges/carry.py).

For every session written, three things are checked:
1. listed: the harness lists it, with the title asp wrote;
2. carried: the transcript holds every message of the source session (messages by role,
   tool calls, plans; foreign reasoning is written as text, so it counts as agent text);
3. replayed: the harness replays exactly the updates asp's own reader finds in the written
   transcript, adjusted for the adapter's documented differences:
   - the adapter replays only the native chain (from the last compaction boundary on);
   - claude-agent-acp 0.23.1 (Claude Code 2.1.83) does not replay queued prompts and does
     not strip command markup, so a row that is only `<local-command-stdout>` is replayed.
A subagent's transcript lives in its parent's folder: Claude Code lists and loads the parent,
never the subagent on its own.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

CONVERSATION = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk",
                "tool_call", "tool_call_update", "plan")


def load_sessions(state_dir: Path) -> dict[str, dict]:
    out = {}
    for meta in sorted((state_dir / "sessions").glob("*.json")):
        s = json.loads(meta.read_text())
        lines = meta.with_suffix(".jsonl").read_text().splitlines()
        s["updates"] = [json.loads(l)["update"] for l in lines if l.strip()]
        out[s["id"]] = s
    return out


def cc(u: dict) -> dict:
    return (u.get("_meta") or {}).get("claudeCode") or {}


def carried_records(u: dict) -> list:
    return list(cc(u).get("recordsBefore") or []) + list(cc(u).get("recordsAfter") or [])


def kind_in_transcript(u: dict) -> str:
    """The update's kind as Claude Code itself replays it: reasoning from another harness is
    written as a marked text block, which asp reads back as a thought (with
    `_meta.claudeCode.foreignReasoning`) and Claude Code replays as agent text."""
    k = u["sessionUpdate"]
    if k == "agent_thought_chunk" and cc(u).get("foreignReasoning"):
        return "agent_message_chunk"
    return k


def counts(updates) -> dict:
    c = collections.Counter(kind_in_transcript(u) for u in updates
                            if u["sessionUpdate"] in CONVERSATION)
    return dict(sorted(c.items()))


def messages(session: dict) -> dict:
    """Messages by role: consecutive chunks of one kind and message id are one message."""
    foreign = session.get("harness") != "claude-code"
    out = collections.Counter()
    last = None
    for u in session["updates"]:
        k = u["sessionUpdate"]
        if k not in CONVERSATION:
            continue
        if k == "agent_thought_chunk" and (foreign or "signature" not in cc(u)):
            k = "agent_message_chunk"
        if k in ("tool_call", "plan"):
            out[k] += 1
            last = None
            continue
        if k == "tool_call_update":
            continue
        key = (u["sessionUpdate"], u.get("messageId"))
        if key != last:
            out[k.replace("_chunk", "")] += 1
        last = key
    return dict(sorted(out.items()))


def native_chain(updates: list) -> list:
    """The updates from the last compaction boundary on (what the adapters replay)."""
    start = 0
    for i, u in enumerate(updates):
        if any(r.get("subtype") == "compact_boundary" for r in carried_records(u)):
            start = i
    return updates[start:]


def expected_replay(updates: list, adapter: str) -> dict:
    ups = native_chain(updates)
    c = collections.Counter(counts(ups))
    if adapter.startswith("zed"):
        c["user_message_chunk"] -= sum(1 for u in ups if cc(u).get("queuedCommand"))
        for u in ups:
            for r in carried_records(u):
                content = (r.get("message") or {}).get("content")
                if (r.get("type") == "user" and not r.get("isMeta")
                        and isinstance(content, str) and content.strip().startswith("<")):
                    c["user_message_chunk"] += 1
    return {k: v for k, v in sorted(c.items()) if v}


# The adapter the judge runs (scripts/judges/install.sh pins it).
ADAPTER = "zed-0.23.1"


def verdict(home: Path, answer: dict, sources: dict, written: dict, report: dict):
    """(old id, new id, ok, detail) for every session the answer says was written."""
    judged = {s["id"]: s for s in report.get("sessions", [])}
    for old, new in sorted(answer.get("sessions", {}).items()):
        src = sources[old]
        parent = ((src.get("_meta") or {}).get("asp") or {}).get("parent")
        w = written.get(new)
        if w is None:
            yield old, new, False, "not in the written home"
            continue
        ok = True
        notes = []
        if messages(src) != messages(w):
            ok = False
            notes.append(f"carried MISMATCH source {messages(src)} written {messages(w)}")
        else:
            notes.append(f"carried {messages(w)}")
        if parent:
            notes.append(f"subagent of {parent.get('sessionId')}: not listed on its own")
            yield old, new, ok, "; ".join(notes)
            continue
        j = judged.get(new)
        if j is None:
            yield old, new, False, "; ".join(notes + ["not seen by Claude Code"])
            continue
        load = j.get("load") or {}
        got = {k: v for k, v in sorted((load.get("counts") or {}).items()) if k in CONVERSATION}
        want = expected_replay(w["updates"], ADAPTER)
        title_ok = j.get("title") == w["title"]
        good = bool(load.get("ok") and got == want and j.get("listed") and title_ok)
        notes.append(
            f"listed={j.get('listed')} title={'ok' if title_ok else repr(j.get('title'))} "
            f"load={'ok' if load.get('ok') else load.get('error')} replay={got}"
            + ("" if got == want else f" EXPECTED {want}"))
        yield old, new, ok and good, "; ".join(notes)
