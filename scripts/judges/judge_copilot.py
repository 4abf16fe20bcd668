#!/usr/bin/env python3
"""Judge a GitHub Copilot CLI store with the real Copilot CLI (@github/copilot@1.0.102).

* listing: `copilot --acp` `session/list` without cwd and per session cwd (Copilot has no
  CLI list command);
* replay: `session/load` of every session on disk or listed, in its cwd: counts per
  `sessionUpdate` kind + raw updates.

    judge_copilot.py HOME [--keep] [--no-raw] [--timeout S]

HOME holds `.copilot/` (Copilot's `$COPILOT_HOME`), or is that directory itself (has
`session-state/`). Copilot refuses `session/load` without a model provider, so the judge
configures a BYOK provider that is never contacted (`COPILOT_OFFLINE=true`,
`COPILOT_PROVIDER_BASE_URL` at a refusing loopback port). The package unpacks ~235 MB
into `$XDG_CACHE_HOME/copilot` on first run; the judge keeps that in
`$ASP_PEERS_DIR/copilot-cache` so it happens once."""

from __future__ import annotations

import collections
import json
import sqlite3
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import judgelib as J  # noqa: E402

STORE = ".copilot"
CACHE = J.PEERS_DIR / "copilot-cache"


def read_workspace_yaml(path: Path) -> tuple[dict, str | None]:
    """workspace.yaml is a flat `key: value` YAML document. Returns (fields, error)."""
    try:
        text = path.read_text()
    except OSError as e:
        return {}, str(e)
    except UnicodeDecodeError as e:
        return {}, f"not UTF-8: {e}"
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if ":" not in line or line.startswith((" ", "\t", "-")):
            return out, f"line {n}: not a flat `key: value` line"
        k, _, v = line.partition(":")
        v = v.strip()
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
            if v[0] == '"':
                try:
                    v = json.loads(v)
                except ValueError:
                    v = v[1:-1]
            else:
                v = v[1:-1].replace("''", "'")
        out[k.strip()] = v
    return out, None


def sanitize(store: Path) -> list[str]:
    done = []
    for name in ("mcp-config.json",):
        p = store / name
        if p.exists():
            c = J.load_json_file(p, default={}) or {}
            if c.get("mcpServers"):
                done.append(f"{name}: dropped {len(c['mcpServers'])} MCP server(s)")
            J.write_json_file(p, {"mcpServers": {}})
    for name in ("settings.json", "config.json"):
        p = store / name
        if not p.exists():
            continue
        c = J.load_json_file(p, default=None)
        if not isinstance(c, dict):
            continue
        dropped = [k for k in list(c) if k in ("hooks", "statusLine", "proxyUrl")
                   or "token" in k.lower() or "auth" in k.lower()]
        for k in dropped:
            c.pop(k)
        if dropped:
            done.append(f"{name}: dropped {', '.join(dropped)}")
        c["autoUpdate"] = False
        J.write_json_file(p, c)
    for d in ("plugins", "hooks", "extensions", "logs"):
        if (store / d).exists():
            J.rm(store / d)
            done.append(f"removed {STORE}/{d}/")
    return done


def scan(store: Path) -> tuple[list[dict], dict]:
    """Session directories on disk and the session index database."""
    out = []
    state = store / "session-state"
    for d in sorted(p for p in state.iterdir() if p.is_dir() and not p.name.startswith(".")) \
            if state.is_dir() else []:
        e = {"id": d.name, "dir": str(d.relative_to(store))}
        ws, err = read_workspace_yaml(d / "workspace.yaml")
        if not (d / "workspace.yaml").exists():
            e["workspace_yaml"] = "missing"
        elif err:
            e["workspace_yaml"] = f"unreadable: {err}"
        for k in ("id", "cwd", "name", "user_named", "summary_count", "created_at",
                  "updated_at", "client_name"):
            if k in ws:
                e[f"ws_{k}"] = ws[k]
        types, bad, lines = collections.Counter(), [], 0
        agent_events, tool_calls, first, last = 0, 0, None, None
        ev = d / "events.jsonl"
        if ev.exists():
            with open(ev, "rb") as fh:
                for n, raw in enumerate(fh, 1):
                    if not raw.strip():
                        continue
                    lines += 1
                    try:
                        o = json.loads(raw)
                    except ValueError:
                        bad.append(n)
                        continue
                    if not isinstance(o, dict):
                        bad.append(n)
                        continue
                    types[o.get("type", "?")] += 1
                    if o.get("agentId"):
                        agent_events += 1
                    if o.get("type") == "assistant.message":
                        tool_calls += len((o.get("data") or {}).get("toolRequests") or [])
                    first = first or o.get("timestamp")
                    last = o.get("timestamp") or last
            e["events"] = {"lines": lines, "unparsable_lines": bad[:20],
                           "types": dict(types), "subagent_events": agent_events,
                           "tool_requests": tool_calls, "first": first, "last": last,
                           "ends_with_newline": ev.read_bytes()[-1:] == b"\n" if lines else None}
        else:
            e["events"] = "missing"
        e["files"] = sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())
        out.append(e)
    index = {}
    db = store / "session-store.db"
    if db.exists():
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            index["schema_version"] = con.execute("select max(version) from schema_version").fetchone()[0]
            index["sessions"] = {sid: {"summary": s, "cwd": c} for sid, s, c in
                                 con.execute("select id, summary, cwd from sessions")}
            con.close()
        except sqlite3.Error as e:
            index["error"] = str(e)
    return out, index


def main():
    ap = J.common_argparser(__doc__)
    args = ap.parse_args()
    src = Path(args.home).resolve()
    scratch = J.Scratch("copilot", keep=args.keep)
    report = {
        "harness": "copilot",
        "judge": "copilot --acp session/list + session/load",
        "package": J.PACKAGES["copilot"],
        "installed": J.installed_version("@github/copilot"),
        "home": str(src),
        "scratch": str(scratch.root),
        "errors": [],
    }
    ns = peer = None
    try:
        store = J.copy_store(src, scratch.home, STORE, ["session-state"])
        report["sanitized"] = sanitize(store)
        on_disk, index = scan(store)
        report["on_disk"] = on_disk
        report["session_index"] = {"schema_version": index.get("schema_version"),
                                   "sessions": len(index.get("sessions") or {}),
                                   "error": index.get("error")}
        cwds = sorted({d["ws_cwd"] for d in on_disk if d.get("ws_cwd")})
        ns = J.Namespace(scratch, cwds)
        report["cwd_handling"] = ns.describe()
        CACHE.mkdir(parents=True, exist_ok=True)
        env = J.harness_env(scratch, {
            "XDG_CACHE_HOME": str(CACHE),
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": J.NOWHERE + "/v1",
            "COPILOT_PROVIDER_API_KEY": "not-a-key",
            "COPILOT_MODEL": "gpt-4o",
            "COPILOT_AUTO_UPDATE": "false",
        })
        sessions: dict[str, dict] = {}

        def entry(sid):
            return sessions.setdefault(sid, {"id": sid, "on_disk": False, "listed": False,
                                             "listed_in": []})
        for d in on_disk:
            e = entry(d["id"])
            e["on_disk"] = True
            e["cwd_on_disk"] = d.get("ws_cwd")
            e["title_on_disk"] = d.get("ws_name")
            e["indexed"] = d["id"] in (index.get("sessions") or {})

        peer = J.JsonRpcProc([J.bin_path("copilot"), "--acp", "--no-auto-update"], env=env,
                             cwd=str(scratch.home), scratch=scratch, name="copilot-acp", ns=ns)
        res, err, secs, _ = J.acp_initialize(peer, timeout=args.timeout)
        if err:
            report["errors"].append({"acp initialize": err, "stderr": peer.stderr_tail()})
            report["sessions"] = list(sessions.values())
            return report
        caps = (res or {}).get("agentCapabilities") or {}
        report["initialize"] = {"seconds": secs, "agentInfo": (res or {}).get("agentInfo"),
                                "loadSession": caps.get("loadSession"),
                                "sessionCapabilities": caps.get("sessionCapabilities"),
                                "authMethods": [m.get("id") for m in (res or {}).get("authMethods") or []]}
        list_calls = []
        all_listed, err, calls = J.acp_list(peer, None, timeout=args.timeout)
        list_calls.append({"cwd": None, "count": len(all_listed), "error": err, "calls": calls})
        for s in all_listed:
            e = entry(s["sessionId"])
            e["listed"] = True
            e["title"] = s.get("title")
            e["cwd"] = s.get("cwd")
            e["updatedAt"] = s.get("updatedAt")
        for cwd in cwds:
            got, err, calls = J.acp_list(peer, cwd, timeout=args.timeout)
            list_calls.append({"cwd": cwd, "count": len(got), "error": err, "calls": calls})
            for s in got:
                e = entry(s["sessionId"])
                e["listed"] = True
                e["listed_in"].append(cwd)
                e.setdefault("title", s.get("title"))
                e.setdefault("cwd", s.get("cwd"))
        report["list_calls"] = list_calls
        J.load_each(peer, ns, sessions.values(), caps, cwd_keys=("cwd", "cwd_on_disk"),
                    timeout=args.timeout, quiet=1.5, keep_raw=not args.no_raw, who="copilot")
        report["sessions"] = list(sessions.values())
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
