#!/usr/bin/env python3
"""Judge an OpenCode store with the real OpenCode (opencode-ai@1.18.33).

* listing: `opencode session list --format json` (all projects) and ACP
  `session/list {cwd}` per session directory;
* replay: `opencode acp` session/load per session (in its directory): counts per
  `sessionUpdate` kind + raw updates; plus `opencode export ID` message/part counts.

    judge_opencode.py HOME [--keep] [--no-raw] [--timeout S]

HOME holds `.local/share/opencode/` (+ optional `.config/opencode/`), or is the
OpenCode data dir itself (has `opencode.db` or `storage/`)."""

from __future__ import annotations

import collections
import shutil
import sqlite3
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import judgelib as J  # noqa: E402

DATA = ".local/share/opencode"


def sanitize(home: Path) -> list[str]:
    done = []
    data = home / DATA
    for f in ("auth.json", "mcp-auth.json"):
        if (data / f).exists():
            J.rm(data / f)
            done.append(f"removed {DATA}/{f}")
    cfgdir = home / ".config" / "opencode"
    for name in ("opencode.json", "opencode.jsonc", "config.json"):
        p = cfgdir / name
        if not p.exists():
            continue
        c = J.load_json_file(p, default={}) or {}
        for k in ("mcp", "plugin", "share", "autoupdate"):
            if k in c:
                c.pop(k)
                done.append(f"{name}: dropped {k}")
        for prov in (c.get("provider") or {}).values():
            if isinstance(prov, dict) and isinstance(prov.get("options"), dict):
                if prov["options"].pop("apiKey", None) is not None:
                    done.append(f"{name}: dropped a provider apiKey")
        c["autoupdate"] = False
        c["share"] = "disabled"
        J.write_json_file(p, c)
    for d in ("plugin", "plugins"):
        if (cfgdir / d).exists():
            J.rm(cfgdir / d)
            done.append(f"removed .config/opencode/{d}/")
    return done


def scan(data: Path) -> list[dict]:
    db = data / "opencode.db"
    out = []
    if not db.exists():
        if (data / "storage").is_dir():
            for f in sorted((data / "storage" / "session").glob("*/*.json")):
                s = J.load_json_file(f, default={}) or {}
                out.append({"id": s.get("id"), "directory": s.get("directory"),
                            "title": s.get("title"), "file": str(f.relative_to(data)),
                            "note": "JSON storage (<=1.1): 1.18 no longer imports it"})
        return out
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("select id, directory, title, parent_id from session").fetchall()
        for sid, directory, title, parent in rows:
            nmsg = con.execute("select count(*) from message where session_id=?",
                               (sid,)).fetchone()[0]
            parts = collections.Counter()
            for (data_json,) in con.execute("select data from part where session_id=?", (sid,)):
                try:
                    parts[J.json.loads(data_json).get("type", "?")] += 1
                except ValueError:
                    parts["<bad json>"] += 1
            out.append({"id": sid, "directory": directory, "title": title, "parent_id": parent,
                        "messages": nmsg, "parts_by_type": dict(parts)})
    except sqlite3.Error as e:
        out.append({"error": f"sqlite: {e}"})
    finally:
        con.close()
    return out


def main():
    ap = J.common_argparser(__doc__)
    args = ap.parse_args()
    src = Path(args.home).resolve()
    scratch = J.Scratch("opencode", keep=args.keep)
    report = {
        "harness": "opencode",
        "judge": "opencode session list / export + opencode acp session/load",
        "package": J.PACKAGES["opencode"],
        "installed": J.installed_version("opencode-ai"),
        "home": str(src),
        "scratch": str(scratch.root),
        "errors": [],
    }
    ns = peer = None
    try:
        J.copy_store(src, scratch.home, DATA, ["opencode.db", "storage"])
        if (src / ".config" / "opencode").is_dir():
            shutil.copytree(src / ".config" / "opencode", scratch.home / ".config" / "opencode",
                            symlinks=True)
        report["sanitized"] = sanitize(scratch.home)
        data = scratch.home / DATA
        on_disk = scan(data)
        report["on_disk"] = on_disk
        dirs = sorted({d["directory"] for d in on_disk if d.get("directory")})
        ns = J.Namespace(scratch, dirs)
        report["cwd_handling"] = ns.describe()
        env = J.harness_env(scratch)
        oc = J.bin_path("opencode")

        sessions: dict[str, dict] = {}

        def entry(sid):
            return sessions.setdefault(sid, {"id": sid, "on_disk": False, "listed_cli": False,
                                             "listed_acp_in": []})
        for d in on_disk:
            if d.get("id"):
                e = entry(d["id"])
                e["on_disk"] = True
                e["directory_on_disk"] = d.get("directory")

        r = J.run_cmd([oc, "session", "list", "--format", "json"], env=env,
                      cwd=str(scratch.home), timeout=args.timeout, scratch=scratch, ns=ns)
        listed = []
        try:
            listed = J.json.loads(r["stdout"]) if r["stdout"].strip() else []
        except ValueError:
            report["errors"].append({"session list": "unparsable stdout",
                                     "stdout": r["stdout"][-1000:]})
        report["cli_list"] = {"exit": r["exit"], "seconds": r["seconds"], "count": len(listed),
                              "stderr_tail": r["stderr"][-1000:]}
        for s in listed:
            e = entry(s["id"])
            e["listed_cli"] = True
            e["title"] = s.get("title")
            e["directory"] = s.get("directory")
            e["projectId"] = s.get("projectId")

        for e in sessions.values():
            r = J.run_cmd([oc, "export", e["id"]], env=env, cwd=str(scratch.home),
                          timeout=args.timeout, scratch=scratch, ns=ns)
            out = r["stdout"]
            exp = None
            if "{" in out:
                try:
                    exp = J.json.loads(out[out.index("{"):])
                except ValueError:
                    exp = None
            if exp is None:
                e["export"] = {"ok": False, "exit": r["exit"], "stderr": r["stderr"][-800:]}
            else:
                parts = collections.Counter(p.get("type") for m in exp.get("messages") or []
                                            for p in m.get("parts") or [])
                e["export"] = {"ok": True, "messages": len(exp.get("messages") or []),
                               "parts_by_type": dict(parts)}

        peer = J.JsonRpcProc([oc, "acp"], env=env, cwd=str(scratch.home), scratch=scratch,
                             name="opencode-acp", ns=ns)
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
        for d in sorted(set(dirs) | {e.get("directory") for e in sessions.values()
                                     if e.get("directory")}):
            got, err, calls = J.acp_list(peer, d, timeout=args.timeout)
            list_calls.append({"cwd": d, "count": len(got), "error": err, "calls": calls})
            for s in got:
                e = entry(s["sessionId"])
                e["listed_acp_in"].append(d)
                e.setdefault("title", s.get("title"))
                e["acp_title"] = s.get("title")
        report["acp_list_calls"] = list_calls
        J.load_each(peer, ns, sessions.values(), caps,
                    cwd_keys=("directory", "directory_on_disk"), timeout=args.timeout,
                    quiet=1.5, keep_raw=not args.no_raw, who="opencode")
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
