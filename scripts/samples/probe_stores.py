#!/usr/bin/env python3
"""Hand-written and damaged Pi / Qwen Code sessions, judged by the real harnesses.

    scripts/samples/probe_stores.py pi|qwen [--keep DIR] [--json]

Builds a scratch home beside nothing else (no sample), one session per case, each in its
own cwd `/home/dev/case-<name>` so that per-cwd listings keep the cases apart, runs the
judge (scripts/judges/judge_<harness>.py) on it and prints one line per case: listed?
title, loaded? replay counts, and what the harness did to the file. The cases are the
ones spec/harnesses/{pi,qwen}.md reports: what a writer must produce (minimal records,
id formats, titles) and what the harness does with damage (a cut last line, a broken
parent chain, two leaves, no header, thousands of messages, images, non-UTF-8 bytes).

Pi cases that Pi itself would rewrite (a file without a header) are also opened once with
`pi --mode rpc --session FILE` on a copy, and the bytes compared.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "scripts" / "judges"))
sys.path.insert(0, str(HERE))
import judgelib as J  # noqa: E402
import pqlib as S  # noqa: E402

T0 = 1796160000000  # 2026-12-01T21:20:00Z in ms


def iso(ms: int) -> str:
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc) \
        .strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def uuid7(ms: int, n: int) -> str:
    """A v7 UUID for time ms (deterministic tail from n)."""
    tail = hashlib.sha256(f"asp-probe-{n}".encode()).digest()
    b = bytearray(ms.to_bytes(6, "big") + tail[:10])
    b[6] = (b[6] & 0x0F) | 0x70
    b[8] = (b[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(b)))


def hex8(n: int) -> str:
    return hashlib.sha256(f"entry-{n}".encode()).hexdigest()[:8]


def dumps(o) -> str:
    return json.dumps(o, separators=(",", ":"), ensure_ascii=False)


# ----------------------------------------------------------------------------------
# Pi


def pi_header(sid, cwd, ms, **extra):
    return {"type": "session", "version": 3, "id": sid, "timestamp": iso(ms), "cwd": cwd, **extra}


def pi_user(eid, parent, ms, text, bare=False):
    m = {"role": "user", "content": [{"type": "text", "text": text}]}
    if not bare:
        m["timestamp"] = ms
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": iso(ms), "message": m}


def pi_assistant(eid, parent, ms, blocks, bare=False, stop="stop"):
    m = {"role": "assistant", "content": blocks}
    if not bare:
        m.update({"api": "openai-completions", "provider": "ollama", "model": "qwen3-coder:30b",
                  "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0,
                            "totalTokens": 15, "cost": {"input": 0, "output": 0,
                                                        "cacheRead": 0, "cacheWrite": 0,
                                                        "total": 0}},
                  "stopReason": stop, "timestamp": ms})
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": iso(ms), "message": m}


def pi_tool_result(eid, parent, ms, call_id, name, text, error=False):
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": iso(ms),
            "message": {"role": "toolResult", "toolCallId": call_id, "toolName": name,
                        "content": [{"type": "text", "text": text}], "isError": error,
                        "timestamp": ms}}


def pi_conversation(n_turns: int, start: int, bare=False, id_fn=hex8):
    """user/assistant pairs chained by parentId; returns entries."""
    out, parent, k = [], None, start
    for t in range(n_turns):
        ms = T0 + k * 1000
        u = pi_user(id_fn(k), parent, ms, f"Question {t + 1}: what is {t} + {t}?", bare)
        a = pi_assistant(id_fn(k + 1), u["id"], ms + 500,
                         [{"type": "text", "text": f"{t} + {t} = {2 * t}."}], bare)
        out += [u, a]
        parent = a["id"]
        k += 2
    return out


def pi_cases() -> list[dict]:
    """Each case: name, cwd, file name (in the cwd's dir unless dir given), lines."""
    cases = []

    def add(name, lines, sid=None, dirname=None, fname=None, raw=None, note=""):
        cwd = f"/home/dev/case-{name}"
        ms = T0 + len(cases) * 60000
        sid = sid or uuid7(ms, len(cases))
        cases.append({"name": name, "cwd": cwd, "sid": sid, "note": note,
                      "dir": dirname or "--" + cwd.lstrip("/").replace("/", "-") + "--",
                      "fname": fname or iso(ms).replace(":", "-").replace(".", "-") + f"_{sid}.jsonl",
                      "lines": lines, "raw": raw})
        return cases[-1]

    def std(name, n=2, **kw):
        cwd = f"/home/dev/case-{name}"
        ms = T0 + len(cases) * 60000
        sid = kw.pop("sid", None) or uuid7(ms, len(cases))
        lines = [pi_header(sid, cwd, ms)] + pi_conversation(n, len(cases) * 1000, **{
            k: v for k, v in kw.items() if k in ("bare", "id_fn")})
        return add(name, lines, sid=sid, **{k: v for k, v in kw.items()
                                            if k in ("dirname", "fname", "note")})

    std("minimal", note="header + 2 user/assistant pairs, all fields Pi writes")
    std("bare", bare=True, note="messages without timestamp; assistant without api/provider/model/usage/stopReason")
    std("uuid-entry-ids", id_fn=lambda k: str(uuid.UUID(int=k + 1)), note="entry ids are UUIDs, not 8 hex")
    std("non-uuid-session", sid="telegram-42", note="header id 'telegram-42'")
    std("plain-file-name", fname="imported.jsonl", note="file name without <time>_<id>")
    std("wrong-dir", dirname="--home-dev-elsewhere--", note="header cwd /home/dev/case-wrong-dir, file under --home-dev-elsewhere--")
    # tool call + result, thinking, image, bash execution, session_info
    c = std("tools", n=0, note="thinking, toolCall + toolResult (one failed), image prompt, bashExecution, session_info")
    cwd, base = c["cwd"], 50000
    png = S.tiny_png()
    u = pi_user(hex8(base), None, T0, "Read cart.py and show me this icon")
    u["message"]["content"].append({"type": "image", "data": png, "mimeType": "image/png"})
    a = pi_assistant(hex8(base + 1), u["id"], T0 + 1, [
        {"type": "thinking", "thinking": "Read first.", "thinkingSignature": "reasoning_content"},
        {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "cart.py"}},
        {"type": "toolCall", "id": "call_2", "name": "bash", "arguments": {"command": "false"}}],
        stop="toolUse")
    r1 = pi_tool_result(hex8(base + 2), a["id"], T0 + 2, "call_1", "read", "DISCOUNTS = {}\n")
    r2 = pi_tool_result(hex8(base + 3), r1["id"], T0 + 3, "call_2", "bash",
                        "(no output)\n\nCommand exited with code 1", error=True)
    a2 = pi_assistant(hex8(base + 4), r2["id"], T0 + 4, [{"type": "text", "text": "Done."}])
    bx = {"type": "message", "id": hex8(base + 5), "parentId": a2["id"], "timestamp": iso(T0 + 5),
          "message": {"role": "bashExecution", "command": "ls", "output": "cart.py\n", "exitCode": 0,
                      "cancelled": False, "truncated": False, "timestamp": T0 + 5}}
    si = {"type": "session_info", "id": hex8(base + 6), "parentId": bx["id"],
          "timestamp": iso(T0 + 6), "name": "Tools probe"}
    c["lines"] += [u, a, r1, r2, a2, bx, si]
    # damage
    c = std("truncated-last-line", n=3, note="last line cut in the middle (no closing brace, no newline)")
    text = "\n".join(dumps(x) for x in c["lines"]) + "\n"
    c["raw"] = text[: len(text) - 40].encode()
    c = std("broken-chain", n=3, note="4th entry's parentId names an id that is not in the file")
    c["lines"][4] = dict(c["lines"][4], parentId="deadbeef")
    c = std("two-leaves", n=2, note="a second branch from the first answer, written BEFORE the main branch's last entries")
    # main: u1 a1 u2 a2 ; insert branch b_u, b_a (children of a1) before u2
    h, u1, a1, u2, a2 = c["lines"]
    bu = pi_user(hex8(90000), a1["id"], T0 + 100, "Branch question")
    ba = pi_assistant(hex8(90001), bu["id"], T0 + 101, [{"type": "text", "text": "Branch answer."}])
    c["lines"] = [h, u1, a1, bu, ba, u2, a2]
    c = std("two-leaves-last-is-branch", n=2, note="same tree, but the other branch is the last line")
    h, u1, a1, u2, a2 = c["lines"]
    bu = pi_user(hex8(91000), a1["id"], T0 + 100, "Branch question")
    ba = pi_assistant(hex8(91001), bu["id"], T0 + 101, [{"type": "text", "text": "Branch answer."}])
    c["lines"] = [h, u1, a1, u2, a2, bu, ba]
    c = std("no-header", n=2, note="the header line removed")
    c["lines"] = c["lines"][1:]
    c = std("header-second", n=2, note="a message line before the header")
    c["lines"] = [c["lines"][1], c["lines"][0]] + c["lines"][2:]
    c = std("thousands", n=2500, note="2500 turns = 5000 messages")
    c = std("non-utf8", n=1, note="raw bytes ff fe and a lone 80 inside JSON strings")
    text = "\n".join(dumps(x) for x in c["lines"]) + "\n"
    text = text.replace("0 + 0 = 0.", "0 + 0 = 0. \udcff\udcfe tail").replace("Question 1", "Question \udc80 1")
    c["raw"] = text.encode("utf-8", "surrogateescape")
    return cases


def write_pi_home(home: Path, cases):
    sessions = home / ".pi" / "agent" / "sessions"
    for c in cases:
        d = sessions / c["dir"]
        d.mkdir(parents=True, exist_ok=True)
        p = d / c["fname"]
        if c["raw"] is not None:
            p.write_bytes(c["raw"])
        else:
            p.write_text("".join(dumps(x) + "\n" for x in c["lines"]))
        c["path"] = str(p.relative_to(home / ".pi" / "agent"))
        c["sha256"] = hashlib.sha256(p.read_bytes()).hexdigest()
    (home / ".pi" / "agent" / "settings.json").write_text("{}\n")


def pi_rewrites(home: Path, cases) -> dict:
    """Open each header-less case once with `pi --session FILE` (RPC, no prompt) on a copy
    and report whether Pi changed the bytes."""
    out = {}
    agent = home / ".pi" / "agent"
    for c in cases:
        if c["name"] not in ("no-header", "header-second", "truncated-last-line", "non-utf8"):
            continue
        tmp = Path(tempfile.mkdtemp(prefix="asp-probe-pi-"))
        try:
            shutil.copytree(home / ".pi", tmp / ".pi")
            f = tmp / ".pi" / "agent" / c["path"]
            before = f.read_bytes()
            env = {"PATH": f"{J.BIN_DIR}:/usr/bin:/bin", "HOME": str(tmp), "PI_OFFLINE": "1",
                   "PI_SKIP_VERSION_CHECK": "1", "LANG": "C.UTF-8"}
            r = subprocess.run(["node", str(J.BIN_DIR / "pi"), "--mode", "rpc", "--no-themes",
                                "--session", str(f)], input=b'{"id":"s","type":"get_state"}\n',
                               env=env, cwd=str(tmp), capture_output=True, timeout=60)
            after = f.read_bytes() if f.exists() else b""
            state = next((json.loads(x).get("data") for x in r.stdout.splitlines()
                          if x.startswith(b"{") and b'"response"' in x), None) or {}
            out[c["name"]] = {"changed": before != after, "bytes_before": len(before),
                              "bytes_after": len(after),
                              "after_head": after[:200].decode("utf-8", "replace"),
                              "state_session_id": state.get("sessionId"),
                              "messageCount": state.get("messageCount")}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


# ----------------------------------------------------------------------------------
# Qwen


def q_rec(uid, parent, sid, ms, typ, cwd, **kw):
    r = {"uuid": uid, "parentUuid": parent, "sessionId": sid, "timestamp": iso(ms), "type": typ,
         "cwd": cwd}
    r.update(kw)
    return r


def q_conversation(sid, cwd, n_turns, start, minimal=False):
    out, parent, k = [], None, start
    for t in range(n_turns):
        ms = T0 + k * 1000
        u = q_rec(str(uuid.UUID(int=k + 1)), parent, sid, ms, "user", cwd,
                  message={"role": "user", "parts": [{"text": f"Question {t + 1}: what is {t} + {t}?"}]})
        a = q_rec(str(uuid.UUID(int=k + 2)), u["uuid"], sid, ms + 500, "assistant", cwd,
                  message={"role": "model", "parts": [{"text": f"{t} + {t} = {2 * t}."}]})
        if not minimal:
            for r in (u, a):
                r.update({"version": "0.24.4", "gitBranch": "main"})
            u["provenance"] = "real_user"
            a.update({"provenance": "assistant_output", "model": "qwen3-coder-plus",
                      "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                        "totalTokenCount": 15}})
        out += [u, a]
        parent = a["uuid"]
        k += 2
    return out


def q_title(sid, cwd, parent, ms, title, n):
    return q_rec(str(uuid.UUID(int=10**9 + n)), parent, sid, ms, "system", cwd,
                 subtype="custom_title", systemPayload={"customTitle": title, "titleSource": "manual"})


def qwen_cases() -> list[dict]:
    cases = []

    def add(name, records, sid, note="", fname=None, dirname=None, raw=None):
        cwd = f"/home/dev/case-{name}"
        cases.append({"name": name, "cwd": cwd, "sid": sid, "note": note,
                      "dir": dirname or S_cwd(cwd), "fname": fname or f"{sid}.jsonl",
                      "lines": records, "raw": raw})
        return cases[-1]

    def std(name, n=2, minimal=False, title=True, **kw):
        cwd = f"/home/dev/case-{name}"
        sid = kw.pop("sid", None) or str(uuid.UUID(bytes=hashlib.sha256(name.encode()).digest()[:16], version=4))
        recs = q_conversation(sid, cwd, n, len(cases) * 100000, minimal)
        if title:
            recs.append(q_title(sid, cwd, recs[-1]["uuid"] if recs else None, T0 + 10**6,
                                f"Title of {name}", len(cases)))
        return add(name, recs, sid, **kw)

    std("minimal", minimal=True, note="uuid, parentUuid, sessionId, timestamp, type, cwd, message only; compact custom_title last")
    std("full", note="plus version, gitBranch, provenance, model, usageMetadata")
    std("no-title", title=False, note="no custom_title: the first prompt is the title")
    c = std("pretty-title", note="custom_title written with spaces after ':' (json.dumps default)")
    c["pretty_last"] = True
    c = std("title-parent-null", note="custom_title last with parentUuid null")
    c["lines"][-1]["parentUuid"] = None
    c = std("title-only-first", note="custom_title is the FIRST record (parentUuid null), conversation after")
    t = c["lines"].pop()
    t["parentUuid"] = None
    c["lines"][0]["parentUuid"] = t["uuid"]
    c["lines"].insert(0, t)
    std("non-uuid-session", sid="telegram-42", note="sessionId 'telegram-42' (file telegram-42.jsonl)")
    std("file-name-differs", fname=str(uuid.UUID(int=777, version=4)) + ".jsonl",
        note="file name is another uuid than sessionId")
    std("wrong-dir", dirname="-home-dev-elsewhere", note="records' cwd /home/dev/case-wrong-dir, file under -home-dev-elsewhere")
    c = std("tools", n=0, title=False, note="thought part, functionCall + tool_result (one error), inlineData image, custom_title")
    sid, cwd = c["sid"], c["cwd"]
    ids = [str(uuid.UUID(int=5000 + i)) for i in range(8)]
    png = S.tiny_png()
    c["lines"] = [
        q_rec(ids[0], None, sid, T0, "user", cwd, message={"role": "user", "parts": [
            {"text": "Read cart.py and look at this icon"},
            {"inlineData": {"mimeType": "image/png", "data": png}}]}),
        q_rec(ids[1], ids[0], sid, T0 + 1, "assistant", cwd, model="qwen3-coder-plus", message={
            "role": "model", "parts": [{"text": "Read first.", "thought": True},
                                       {"functionCall": {"id": "call_1", "name": "read_file",
                                                         "args": {"file_path": f"{cwd}/cart.py"}}},
                                       {"functionCall": {"id": "call_2", "name": "run_shell_command",
                                                         "args": {"command": "false"}}}]}),
        q_rec(ids[2], ids[1], sid, T0 + 2, "tool_result", cwd, message={"role": "user", "parts": [
            {"functionResponse": {"id": "call_1", "name": "read_file",
                                  "response": {"output": "DISCOUNTS = {}\n"}}}]},
              toolCallResult={"callId": "call_1", "status": "success", "resultDisplay": ""}),
        q_rec(ids[3], ids[2], sid, T0 + 3, "tool_result", cwd, message={"role": "user", "parts": [
            {"functionResponse": {"id": "call_2", "name": "run_shell_command",
                                  "response": {"error": "Command exited with code 1"}}}]}),
        q_rec(ids[4], ids[3], sid, T0 + 4, "assistant", cwd, message={"role": "model", "parts": [
            {"text": "Done."}]}),
        q_title(sid, cwd, ids[4], T0 + 5, "Tools probe", 99),
    ]
    c = std("truncated-last-line", n=3, note="last line cut in the middle, no newline")
    text = "".join(dumps(x) + "\n" for x in c["lines"])
    c["raw"] = text[: len(text) - 40].encode()
    c = std("two-records-one-line", n=3, note="a cut line followed by the next record on the same line (crash, then append)")
    lines = [dumps(x) for x in c["lines"]]
    lines[2] = lines[2][:30] + lines[3]
    del lines[3]
    c["raw"] = ("\n".join(lines) + "\n").encode()
    c = std("broken-chain", n=3, note="4th record's parentUuid names a uuid not in the file")
    c["lines"][3] = dict(c["lines"][3], parentUuid=str(uuid.UUID(int=4242)))
    c = std("two-leaves", n=2, note="a side branch from the first answer written before the main branch's last records")
    h = c["lines"]
    sid, cwd = c["sid"], c["cwd"]
    bu = q_rec(str(uuid.UUID(int=9001)), h[1]["uuid"], sid, T0 + 7, "user", cwd,
               message={"role": "user", "parts": [{"text": "Branch question"}]})
    ba = q_rec(str(uuid.UUID(int=9002)), bu["uuid"], sid, T0 + 8, "assistant", cwd,
               message={"role": "model", "parts": [{"text": "Branch answer."}]})
    c["lines"] = h[:2] + [bu, ba] + h[2:]
    c = std("mixed-session-ids", n=2, note="one record carries another sessionId")
    c["lines"][2] = dict(c["lines"][2], sessionId=str(uuid.UUID(int=31337, version=4)))
    c = std("first-record-no-cwd", n=2, note="first record without cwd")
    del c["lines"][0]["cwd"]
    c = std("thousands", n=2500, note="2500 turns = 5000 messages")
    c = std("non-utf8", n=1, note="raw bytes ff fe and a lone 80 inside JSON strings")
    text = "".join(dumps(x) + "\n" for x in c["lines"])
    text = text.replace("0 + 0 = 0.", "0 + 0 = 0. \udcff\udcfe tail").replace("Question 1", "Question \udc80 1")
    c["raw"] = text.encode("utf-8", "surrogateescape")
    return cases


def S_cwd(cwd: str) -> str:
    import re
    return re.sub(r"[^a-zA-Z0-9]", "-", cwd)


def write_qwen_home(home: Path, cases):
    q = home / ".qwen"
    for c in cases:
        d = q / "projects" / c["dir"] / "chats"
        d.mkdir(parents=True, exist_ok=True)
        p = d / c["fname"]
        if c["raw"] is not None:
            p.write_bytes(c["raw"])
        else:
            lines = [dumps(x) for x in c["lines"]]
            if c.get("pretty_last"):
                lines[-1] = json.dumps(c["lines"][-1])
            p.write_text("".join(x + "\n" for x in lines))
        c["path"] = str(p.relative_to(q))
    (q / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "openai"}},
                                                 "model": {"name": "qwen3-coder-plus"}}) + "\n")


# ----------------------------------------------------------------------------------


def run_judge(harness: str, home: Path) -> dict:
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "judges" / f"judge_{harness}.py"),
                        str(home), "--timeout", "120"], capture_output=True, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(r.stderr.decode()[-3000:])
    return json.loads(r.stdout)


def summarize(harness: str, cases, rep: dict, extra: dict) -> list[dict]:
    by_file = {d["file"]: d for d in rep["on_disk"]}
    rows = []
    for c in cases:
        d = by_file.get(c["path"], {})
        sid = d.get("id") or c["sid"]
        s = next((x for x in rep["sessions"] if x["id"] == sid), {})
        load = s.get("load") or {}
        counts = dict(load.get("counts") or {})
        counts.pop("available_commands_update", None)
        row = {"case": c["name"], "note": c["note"],
               "listed": bool(s.get("listed") or s.get("cli_listed")),
               "acp_listed": bool(s.get("listed")), "title": s.get("title"),
               "loaded": load.get("ok"), "error": load.get("error"), "seconds": load.get("seconds"),
               "counts": counts}
        if harness == "qwen":
            row["cli_listed"] = bool(s.get("cli_listed"))
            row["usage_chunks"] = load.get("usage_chunks")
            for k in ("chain_length", "off_chain_records", "gap", "unparsable_lines"):
                if d.get(k):
                    row[k] = d[k]
        if harness == "pi":
            rpc = next(iter((s.get("pi_rpc") or {}).values()), {})
            if rpc:
                row["pi_rpc"] = {"messages": rpc.get("messages"), "roles": rpc.get("roles"),
                                 "name": (rpc.get("state") or {}).get("sessionName")}
            for k in ("leaves", "branch_length", "unparsable_lines", "orphans", "header_problem"):
                if d.get(k):
                    row[k] = d[k]
            if c["name"] in extra:
                row["pi_session_open"] = extra[c["name"]]
        rows.append(row)
    changed = rep.get("session_files_changed_by_harness") or rep.get("chat_files_changed_by_harness")
    rows.append({"case": "(files changed by the judge's harness runs)", "changed": changed})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("harness", choices=["pi", "qwen"])
    ap.add_argument("--keep", help="also copy the probe home here")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix=f"asp-probe-{args.harness}-"))
    try:
        if args.harness == "pi":
            cases = pi_cases()
            write_pi_home(home, cases)
            extra = pi_rewrites(home, cases)
        else:
            cases = qwen_cases()
            write_qwen_home(home, cases)
            extra = {}
        if args.keep:
            S.copy_tree(home, Path(args.keep))
        rep = run_judge(args.harness, home)
        rows = summarize(args.harness, cases, rep, extra)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if args.json:
        print(json.dumps(rows, indent=1, ensure_ascii=False))
        return
    for r in rows:
        print(json.dumps(r, ensure_ascii=False))


if __name__ == "__main__":
    main()
