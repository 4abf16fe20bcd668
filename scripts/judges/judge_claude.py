#!/usr/bin/env python3
"""Judge a Claude Code store with the real Claude Code, through its ACP adapter
(@zed-industries/claude-agent-acp@0.23.1, bundling Claude Code 2.1.83).

    judge_claude.py HOME [--keep] [--no-raw] [--timeout S]

HOME holds `.claude/` (+ `.claude.json`), or is a Claude config dir itself (has
`projects/`). Prints JSON: for every session found on disk or listed, what
`session/list` shows (id, cwd, title) and what `session/load` replays (counts per
`sessionUpdate` kind + the raw updates)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import judgelib as J  # noqa: E402


def sanitize(store: Path, home: Path) -> list[str]:
    done = []
    for f in (".credentials.json",):
        if (store / f).exists():
            J.rm(store / f)
            done.append(f"removed .claude/{f}")
    for d in ("plugins",):
        if (store / d).exists():
            J.rm(store / d)
            done.append(f"removed .claude/{d}/")
    risky = ("hooks", "mcpServers", "enabledPlugins", "extraKnownMarketplaces", "apiKeyHelper",
             "awsAuthRefresh", "awsCredentialExport", "otelHeadersHelper", "statusLine", "env",
             "enabledMcpjsonServers", "forceLoginMethod")
    for name in ("settings.json", "settings.local.json"):
        path = store / name
        if not path.exists() and name != "settings.json":
            continue
        s = J.load_json_file(path, default={}) or {}
        if not isinstance(s, dict):
            s = {}
        for k in risky:
            if k in s:
                s.pop(k)
                done.append(f"{name}: dropped {k}")
        s["enableAllProjectMcpServers"] = False
        if name == "settings.json":
            s["cleanupPeriodDays"] = 36500
        J.write_json_file(path, s)
    cj = home / ".claude.json"
    if cj.exists():
        c = J.load_json_file(cj, default={}) or {}
        for k in ("mcpServers", "primaryApiKey", "oauthAccount", "customApiKeyResponses"):
            if k in c:
                c.pop(k)
                done.append(f".claude.json: dropped {k}")
        for p in (c.get("projects") or {}).values():
            if isinstance(p, dict):
                for k in ("mcpServers", "enabledMcpjsonServers"):
                    p.pop(k, None)
                p["enableAllProjectMcpServers"] = False
        J.write_json_file(cj, c)
    return done


def sanitize_cwd_name(cwd: str) -> str:
    import re
    return re.sub(r"[^a-zA-Z0-9]", "-", cwd)


def scan(store: Path) -> list[dict]:
    """The transcripts on disk: id (file stem), bucket, cwd, title, line counts."""
    out = []
    for f in sorted((store / "projects").glob("*/*.jsonl")):
        cwd, title, types, bad, lines = None, None, {}, 0, 0
        with open(f, "rb") as fh:
            for raw in fh:
                if not raw.strip():
                    continue
                lines += 1
                try:
                    o = J.json.loads(raw)
                except ValueError:
                    bad += 1
                    continue
                if not isinstance(o, dict):
                    bad += 1
                    continue
                t = o.get("type")
                types[t] = types.get(t, 0) + 1
                if cwd is None and isinstance(o.get("cwd"), str):
                    cwd = o["cwd"]
                if t == "custom-title":
                    title = o.get("customTitle") or title
                elif t == "ai-title" and not (title and types.get("custom-title")):
                    title = o.get("aiTitle") or title
        out.append({
            "id": f.stem,
            "file": str(f.relative_to(store)),
            "bucket": f.parent.name,
            "cwd": cwd,
            "bucket_matches_cwd": cwd is not None and (
                f.parent.name == sanitize_cwd_name(cwd)
                or (len(sanitize_cwd_name(cwd)) > 200
                    and f.parent.name.startswith(sanitize_cwd_name(cwd)[:200]))),
            "title_on_disk": title,
            "lines": lines,
            "unparsable_lines": bad,
            "line_types": types,
        })
    return out


def main():
    ap = J.common_argparser(__doc__)
    args = ap.parse_args()
    src = Path(args.home)
    scratch = J.Scratch("claude", keep=args.keep)
    report = {
        "harness": "claude",
        "judge": "ACP via claude-agent-acp",
        "package": J.PACKAGES["claude"],
        "installed": J.installed_version("@zed-industries/claude-agent-acp"),
        "home": str(src.resolve()),
        "scratch": str(scratch.root),
        "errors": [],
    }
    peer = ns = None
    try:
        store = J.copy_store(src, scratch.home, ".claude", ["projects"], (".claude.json",))
        report["sanitized"] = sanitize(store, scratch.home)
        on_disk = scan(store)
        report["on_disk"] = [{k: v for k, v in d.items()} for d in on_disk]
        cwds = sorted({d["cwd"] for d in on_disk if d["cwd"]})
        report["cwds"] = cwds
        ns = J.Namespace(scratch, cwds)
        report["cwd_handling"] = ns.describe()

        extra = {"DEBUG_CLAUDE_AGENT_SDK": "1"}
        if os.geteuid() == 0:
            extra["IS_SANDBOX"] = "1"  # else Claude Code refuses --allow-dangerously-skip-permissions
        env = J.harness_env(scratch, extra)
        peer = J.JsonRpcProc(["node", J.bin_path("claude-agent-acp")], env=env,
                             cwd=str(scratch.home), scratch=scratch, name="claude-agent-acp",
                             ns=ns)
        res, err, secs, _ = J.acp_initialize(peer, timeout=args.timeout)
        if err:
            report["errors"].append({"initialize": err, "stderr": peer.stderr_tail()})
            return report
        caps = (res or {}).get("agentCapabilities") or {}
        report["initialize"] = {"seconds": secs, "agentInfo": (res or {}).get("agentInfo"),
                                "loadSession": caps.get("loadSession"),
                                "sessionCapabilities": caps.get("sessionCapabilities"),
                                "authMethods": [m.get("id") for m in (res or {}).get("authMethods") or []]}

        sessions: dict[str, dict] = {}
        for d in on_disk:
            sessions.setdefault(d["id"], {"id": d["id"], "on_disk": True,
                                          "cwd_on_disk": d["cwd"], "listed": False,
                                          "listed_in": []})
        list_calls = []
        all_listed, err, calls = J.acp_list(peer, None, timeout=args.timeout)
        list_calls.append({"cwd": None, "calls": calls, "error": err, "count": len(all_listed)})
        for cwd in cwds:
            listed, err, calls = J.acp_list(peer, cwd, timeout=args.timeout)
            list_calls.append({"cwd": cwd, "calls": calls, "error": err, "count": len(listed)})
            for s in listed:
                e = sessions.setdefault(s["sessionId"], {"id": s["sessionId"], "on_disk": False,
                                                         "cwd_on_disk": None, "listed": False,
                                                         "listed_in": []})
                e["listed"] = True
                e["listed_in"].append(cwd)
                e["title"] = s.get("title")
                e["cwd"] = s.get("cwd")
                e["updatedAt"] = s.get("updatedAt")
        for s in all_listed:
            e = sessions.setdefault(s["sessionId"], {"id": s["sessionId"], "on_disk": False,
                                                     "cwd_on_disk": None, "listed": False,
                                                     "listed_in": []})
            e["listed_without_cwd"] = True
            e.setdefault("title", s.get("title"))
            e.setdefault("cwd", s.get("cwd"))
        report["list_calls"] = list_calls

        J.load_each(peer, ns, sessions.values(), caps, cwd_keys=("cwd", "cwd_on_disk"),
                    timeout=args.timeout, quiet=1.5, keep_raw=not args.no_raw, who="adapter")
        report["sessions"] = list(sessions.values())
        report["debug_logs"] = sorted(str(p) for p in (store / "debug").glob("*")) \
            if (store / "debug").is_dir() else []
        return report
    finally:
        if peer:
            peer.close()
            report["noise_on_stdout"] = peer.noise[:20]
        if ns:
            ns.finish()
        J.kill_all_started()
        scratch.cleanup()


if __name__ == "__main__":
    t0 = time.monotonic()
    rep = main()
    rep["seconds_total"] = round(time.monotonic() - t0, 2)
    J.emit(rep)
