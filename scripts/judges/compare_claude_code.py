#!/usr/bin/env python3
"""Compare what asp wrote into a Claude Code home with what the real Claude Code replays.

    compare_claude_code.py --written DIR --source DIR:ANSWER [--source ...] \
                           --judge NAME:REPORT [--judge ...]

--written   the state directory of the written home as asp reads it back
            (asp-pack --from claude-code --home HOME | asp-unpack --to-dir DIR)
--source    a state directory that was unpacked into the home, and the --json answer of
            that unpack (old id -> Claude Code id)
--judge     a judge_claude.py report (NAME = the adapter, e.g. zed-0.23.1, acp-0.101.0)

For every session written, three things are checked:
1. listed: the harness lists it, with the title asp wrote;
2. carried: the transcript holds every message of the source session (messages by role,
   tool calls, plans; foreign reasoning is written as text, so it counts as agent text);
3. replayed: the harness replays exactly the updates asp's own reader finds in the written
   transcript, adjusted for the adapter's documented differences:
   - both adapters replay only the native chain (from the last compaction boundary on);
   - claude-agent-acp 0.23.1 (Claude Code 2.1.83) does not replay queued prompts and does
     not strip command markup, so a row that is only `<local-command-stdout>` is replayed.
Exit status 1 if any check fails."""

from __future__ import annotations

import argparse
import collections
import json
import sys
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--written", required=True, type=Path)
    ap.add_argument("--source", action="append", default=[])
    ap.add_argument("--judge", action="append", default=[])
    args = ap.parse_args()

    written = load_sessions(args.written)
    judges = {}
    for spec in args.judge:
        name, path = spec.split(":", 1)
        rep = json.loads(Path(path).read_text())
        judges[name] = {s["id"]: s for s in rep.get("sessions", [])}
        if rep.get("errors"):
            print(f"{name}: judge errors: {rep['errors']}")

    failures = 0
    rows = []
    for spec in args.source:
        src_dir, answer_path = spec.split(":", 1)
        sources = load_sessions(Path(src_dir))
        answer = json.loads(Path(answer_path).read_text())
        for old, new in sorted(answer.get("sessions", {}).items()):
            src = sources[old]
            parent = ((src.get("_meta") or {}).get("asp") or {}).get("parent")
            w = written.get(new)
            if w is None:
                rows.append((old, new, "NOT FOUND in the written home", False))
                failures += 1
                continue
            ok = True
            notes = []
            if messages(src) != messages(w):
                ok = False
                notes.append(f"carried MISMATCH source {messages(src)} written {messages(w)}")
            else:
                notes.append(f"carried {messages(w)}")
            if parent:
                # A subagent transcript lives in its parent's folder; Claude Code lists and
                # loads the parent (checked there), never the subagent on its own.
                notes.append(f"subagent of {parent.get('sessionId')}: not listed on its own")
                rows.append((old, new, "\n      ".join(notes), ok))
                failures += 0 if ok else 1
                continue
            for name, sessions in judges.items():
                j = sessions.get(new)
                if j is None:
                    ok = False
                    notes.append(f"{name}: not seen")
                    continue
                load = j.get("load") or {}
                got = {k: v for k, v in sorted((load.get("counts") or {}).items()) if k in CONVERSATION}
                want = expected_replay(w["updates"], name)
                listed = j.get("listed") and j.get("title") == w["title"]
                good = load.get("ok") and got == want and listed
                ok &= bool(good)
                notes.append(
                    f"{name}: listed={j.get('listed')} title={'ok' if j.get('title') == w['title'] else repr(j.get('title'))} "
                    f"load={'ok' if load.get('ok') else load.get('error')} replay={got}"
                    + ("" if got == want else f" EXPECTED {want}")
                )
            rows.append((old, new, "\n      ".join(notes), ok))
            failures += 0 if ok else 1

    for old, new, text, ok in rows:
        print(f"{'PASS' if ok else 'FAIL'}  {old}" + (f" -> {new}" if new != old else ""))
        print(f"      {text}")
    print(f"{len(rows) - failures}/{len(rows)} sessions pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
