"""The verdict on threads asp wrote into a Codex home (scripts/judges/carry.py).

For every thread written, from the judge's two views of the same store:
* `codex app-server` must LIST it (archived threads among the archived) and READ back every
  turn the written rollout holds: turns, userMessage, agentMessage and reasoning items, counted
  from the rollout's events as Codex builds its view from them (a paginated thread is read
  after `thread/resume` builds its projection);
* codex-acp must LOAD it (live threads only) and replay one `tool_call` per call item written
  (it replays response items, so a call Codex could not parse would be missing).
"""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
from pathlib import Path


# Events that make an item of Codex's thread view (and so end a run of reasoning).
ITEM_EVENTS = {"user_message", "agent_message", "exec_command_begin", "exec_command_end",
               "patch_apply_begin", "patch_apply_end", "mcp_tool_call_begin",
               "mcp_tool_call_end", "web_search_begin", "web_search_end", "item_completed"}


def rollout_facts(path: Path) -> dict:
    """What a written rollout holds: the turns and items Codex should read back."""
    data = path.read_bytes()
    if path.name.endswith(".zst"):
        data = (subprocess.run(["zstd", "-dc", str(path)], capture_output=True).stdout
                if shutil.which("zstd") else b"")
    c = collections.Counter()
    meta = {}
    # Codex's thread view is built from events: reasoning events with no item-making event
    # between them (a message, a command, a patch, an MCP call; a bare function_call pair
    # makes none) are one reasoning item.
    last = None
    for raw in data.splitlines():
        try:
            o = json.loads(raw)
        except ValueError:
            continue
        t, p = o.get("type"), o.get("payload") or {}
        if t == "session_meta" and not meta:
            meta = p
        if t == "event_msg":
            pt = p.get("type")
            if pt in ("task_started", "turn_started"):
                c["turns"] += 1
            elif pt == "user_message":
                c["userMessage"] += 1
            elif pt == "agent_message":
                c["agentMessage"] += 1
            elif pt == "agent_reasoning":
                if last != "reasoning":
                    c["reasoning"] += 1
            elif pt == "item_completed":
                kind = (p.get("item") or {}).get("type")
                key = {"UserMessage": "userMessage", "AgentMessage": "agentMessage",
                       "Reasoning": "reasoning"}.get(kind)
                if key:
                    c[key] += 1
        # codex-acp 0.16 replays these as tool calls (update_plan included); it does not
        # replay tool_search_call (Codex's internal deferred-tool discovery).
        if t == "response_item" and p.get("type") in (
                "function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            c["calls"] += 1
        if t == "event_msg":
            pt = p.get("type")
            if pt == "agent_reasoning":
                last = "reasoning"
            elif pt in ("task_started", "turn_started") or pt in ITEM_EVENTS:
                last = None
    return {"paginated": meta.get("history_mode") == "paginated",
            "archived": "archived_sessions" in path.parts, "zst": path.name.endswith(".zst"), **c}


def find_rollout(codex_home: Path, tid: str) -> Path | None:
    for p in sorted(codex_home.glob("**/rollout-*")):
        if p.name.endswith((f"{tid}.jsonl", f"{tid}.jsonl.zst")):
            return p
    return None


def verdict(home: Path, answer: dict, sources: dict, written: dict, report: dict):
    """(old id, new id, ok, detail) for every thread the answer says was written."""
    threads = {t["id"]: t for t in (report.get("app_server") or {}).get("threads", [])}
    acp = {s["id"]: s for s in (report.get("acp") or {}).get("sessions", [])}
    for old, tid in sorted(answer.get("sessions", {}).items()):
        path = find_rollout(home / ".codex", tid)
        if path is None:
            yield old, tid, False, "no rollout written"
            continue
        want = rollout_facts(path)
        got = threads.get(tid) or {}
        read = got.get("read") or {}
        items = read.get("item_counts") or {}
        listed = got.get("listed_archived") if want["archived"] else got.get("listed")
        checks = [("listed", bool(listed)), ("read", bool(read.get("ok")))]
        counts = {"turns": read.get("turn_count", 0), "userMessage": items.get("userMessage", 0),
                  "agentMessage": items.get("agentMessage", 0),
                  "reasoning": items.get("reasoning", 0)}
        if want["zst"] and not shutil.which("zstd"):
            checks.append(("counted", True))
            line = "compressed; not counted (no zstd binary)"
        else:
            for k, v in counts.items():
                checks.append((k, v == want.get(k, 0)))
            line = " ".join(f"{k} {v}/{want.get(k, 0)}" for k, v in counts.items())
        if read.get("resumed"):
            line += " (read after thread/resume built its projection)"
        a = acp.get(tid)
        if want["archived"]:
            line += " | codex-acp: archived (it loads only live threads)"
        elif a is not None:
            load = a.get("load") or {}
            calls = (load.get("counts") or {}).get("tool_call", 0)
            checks.append(("acp load", bool(load.get("ok"))))
            checks.append(("acp tool_call", calls == want.get("calls", 0)))
            line += f" | codex-acp tool_call {calls}/{want.get('calls', 0)}"
            if not load.get("ok"):
                line += f" load error: {load.get('error')}"
        bad = [k for k, ok in checks if not ok]
        yield old, tid, not bad, (f"listed={bool(listed)} {line}"
                                  + (f"  [{', '.join(bad)}]" if bad else ""))
