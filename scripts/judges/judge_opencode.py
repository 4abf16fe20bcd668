#!/usr/bin/env python3
"""Judge an OpenCode store with the real OpenCode (opencode-ai@1.18.33).

* listing: `opencode session list --format json -n <all>` run IN each session directory
  (it lists the root sessions of that directory's project only) and ACP `session/list
  {cwd}` per directory (root sessions of the project whose `directory` is exactly cwd);
* replay: `opencode acp` session/load of every session on disk or listed (in its
  directory): counts per `sessionUpdate` kind + raw updates; plus `opencode export ID`
  message/part counts.

    judge_opencode.py HOME [--keep] [--no-raw] [--timeout S]

HOME holds `.local/share/opencode/` (+ optional `.config/opencode/`), or is the
OpenCode data dir itself (has `opencode.db` or `storage/`).

OpenCode files a session under the project its directory resolves to: the id of a git
repository (sha1 of its `origin` remote, else `.git/opencode`, else its first root
commit), or `global` outside git. A project directory that does not exist here is
given, inside the judge's mount namespace only, an empty git repository whose
`.git/opencode` holds the project id from the database, so OpenCode resolves it as the
user's machine would (reported in `cwd_handling.project_identity`)."""

from __future__ import annotations

import collections
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import judgelib as J  # noqa: E402

DATA = ".local/share/opencode"
ALL = "1000000"  # `session list` lists 100 sessions unless -n says more


def sanitize(home: Path) -> list[str]:
    done = []
    data = home / DATA
    for f in ("auth.json", "mcp-auth.json"):
        if (data / f).exists():
            J.rm(data / f)
            done.append(f"removed {DATA}/{f}")
    db = data / "opencode.db"
    if db.exists():
        try:
            con = sqlite3.connect(db)
            for table in ("account", "control_account", "credential"):
                try:
                    n = con.execute(f"delete from {table}").rowcount
                except sqlite3.Error:
                    continue
                if n:
                    done.append(f"opencode.db: deleted {n} {table} row(s)")
            con.commit()
            con.close()
        except sqlite3.Error as e:
            done.append(f"opencode.db: could not strip credentials ({e})")
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


def scan(data: Path) -> tuple[list[dict], list[dict], dict]:
    """Sessions and projects on disk, and facts about the database file."""
    db = data / "opencode.db"
    out, projects, facts = [], [], {}
    if not db.exists():
        if (data / "storage").is_dir():
            for f in sorted((data / "storage" / "session").glob("*/*.json")):
                s = J.load_json_file(f, default={}) or {}
                out.append({"id": s.get("id"), "directory": s.get("directory"),
                            "title": s.get("title"), "file": str(f.relative_to(data)),
                            "note": "JSON storage (<=1.1): 1.18 no longer imports it"})
        return out, projects, facts
    facts["wal_beside"] = (data / "opencode.db-wal").exists()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    # text columns may hold bytes that are not UTF-8 (OpenCode reads them with U+FFFD)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        facts["journal_mode"] = con.execute("pragma journal_mode").fetchone()[0]
        facts["migrations"] = con.execute("select count(*) from migration").fetchone()[0] \
            if con.execute("select 1 from sqlite_master where name='migration'").fetchone() \
            else None
        for pid, worktree, vcs, sandboxes in con.execute(
                "select id, worktree, vcs, sandboxes from project"):
            try:
                sb = json.loads(sandboxes or "[]")
            except ValueError:
                sb = []
            projects.append({"id": pid, "worktree": worktree, "vcs": vcs, "sandboxes": sb})
        rows = con.execute("select id, project_id, parent_id, directory, title, revert, "
                           "time_archived, time_created, time_updated from session "
                           "order by time_created, id").fetchall()
        for sid, pid, parent, directory, title, revert, archived, created, updated in rows:
            nmsg = collections.Counter()
            for (data_json,) in con.execute("select data from message where session_id=?",
                                            (sid,)):
                try:
                    m = json.loads(data_json)
                    nmsg[m.get("role", "?") + (":summary" if m.get("summary") is True else "")
                         + (":error" if m.get("error") else "")] += 1
                except ValueError:
                    nmsg["<bad json>"] += 1
            parts = collections.Counter()
            for (data_json,) in con.execute("select data from part where session_id=?", (sid,)):
                try:
                    p = json.loads(data_json)
                    k = p.get("type", "?")
                    if k == "tool":
                        k += f":{(p.get('state') or {}).get('status')}"
                    parts[k] += 1
                except ValueError:
                    parts["<bad json>"] += 1
            rv = None
            if revert:
                try:
                    rv = json.loads(revert).get("messageID")
                except (ValueError, AttributeError):
                    rv = "<bad json>"
            out.append({"id": sid, "project_id": pid, "parent_id": parent,
                        "directory": directory, "title": title, "revert_to": rv,
                        "archived": archived is not None, "time_created": created,
                        "time_updated": updated, "messages": dict(nmsg),
                        "parts_by_type": dict(parts)})
    except sqlite3.Error as e:
        out.append({"error": f"sqlite: {e}"})
    finally:
        con.close()
    return out, projects, facts


def give_project_identity(ns: J.Namespace, projects: list[dict]) -> list[str]:
    """Inside the namespace, a missing git project dir gets `git init` + `.git/opencode`
    holding its id (never on the real filesystem)."""
    notes = []
    for p in projects:
        if p["vcs"] != "git" or p["id"] == "global":
            continue
        for d in [p["worktree"], *p["sandboxes"]]:
            if not d or os.path.exists(os.path.join(d, ".git")):
                continue
            up = ns.upper_path(d)
            if up is None:
                notes.append(f"{d}: no .git and not overlaid; its sessions resolve to "
                             f"another project here")
                continue
            up.mkdir(parents=True, exist_ok=True)
            r = subprocess.run(["git", "init", "-q", str(up)], capture_output=True, text=True)
            if r.returncode != 0:
                notes.append(f"{d}: git init failed: {r.stderr.strip()}")
                continue
            (up / ".git" / "opencode").write_text(p["id"])
            notes.append(f"{d}: empty git repo with .git/opencode = {p['id']}")
    return notes


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
        on_disk, projects, facts = scan(data)
        report["on_disk"] = on_disk
        report["projects"] = projects
        report["db"] = facts
        dirs = sorted({d["directory"] for d in on_disk if d.get("directory")}
                      | {p["worktree"] for p in projects if p["id"] != "global"})
        ns = J.Namespace(scratch, dirs)
        report["cwd_handling"] = ns.describe()
        report["cwd_handling"]["project_identity"] = give_project_identity(ns, projects)
        env = J.harness_env(scratch, {"OPENCODE_DISABLE_MODELS_FETCH": "1"})
        oc = J.bin_path("opencode")

        sessions: dict[str, dict] = {}

        def entry(sid):
            return sessions.setdefault(sid, {"id": sid, "on_disk": False, "listed_cli_in": [],
                                             "listed_acp_in": []})
        for d in on_disk:
            if d.get("id"):
                e = entry(d["id"])
                e["on_disk"] = True
                for k in ("project_id", "parent_id", "title", "archived", "revert_to"):
                    e[k if k != "title" else "title_on_disk"] = d.get(k)
                e["directory_on_disk"] = d.get("directory")

        session_dirs = sorted({d["directory"] for d in on_disk if d.get("directory")})
        cli_calls = []
        for d in session_dirs:
            if not ns.usable(d):
                cli_calls.append({"cwd": d, "error": "missing and cannot be overlaid"})
                continue
            r = J.run_cmd([oc, "session", "list", "--format", "json", "-n", ALL], env=env,
                          cwd=str(scratch.home), timeout=args.timeout, scratch=scratch, ns=ns,
                          inner_cwd=d)
            listed = []
            try:
                listed = json.loads(r["stdout"]) if r["stdout"].strip() else []
            except ValueError:
                report["errors"].append({"session list": "unparsable stdout", "cwd": d,
                                         "stdout": r["stdout"][-1000:]})
            cli_calls.append({"cwd": d, "exit": r["exit"], "seconds": r["seconds"],
                              "count": len(listed), "stderr_tail": r["stderr"][-600:]})
            for s in listed:
                e = entry(s["id"])
                e["listed_cli_in"].append(d)
                e["title"] = s.get("title")
                e["directory"] = s.get("directory")
                e["projectId"] = s.get("projectId")
        report["cli_list"] = cli_calls

        for e in sessions.values():
            r = J.run_cmd([oc, "export", e["id"]], env=env, cwd=str(scratch.home),
                          timeout=args.timeout, scratch=scratch, ns=ns)
            out = r["stdout"]
            exp = None
            if "{" in out:
                try:
                    exp = json.loads(out[out.index("{"):])
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
        for d in sorted(set(session_dirs) | {e.get("directory") for e in sessions.values()
                                             if e.get("directory")}):
            got, err, calls = J.acp_list(peer, d, timeout=args.timeout)
            list_calls.append({"cwd": d, "count": len(got), "error": err, "calls": calls})
            for s in got:
                e = entry(s["sessionId"])
                e["listed_acp_in"].append(d)
                e.setdefault("title", s.get("title"))
                e["acp_title"] = s.get("title")
                e["acp_cwd"] = s.get("cwd")
        report["acp_list_calls"] = list_calls
        for e in sessions.values():
            e["listed"] = bool(e["listed_cli_in"] or e["listed_acp_in"])
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
