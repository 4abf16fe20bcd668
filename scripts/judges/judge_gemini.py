#!/usr/bin/env python3
"""Judge a Gemini CLI store with the real Gemini CLI (@google/gemini-cli@0.61.0).

* listing: `gemini --list-sessions`, run in each project root (roots from
  `.gemini/projects.json` and the `.project_root` markers under tmp/ and history/);
  its ACP mode has no session/list;
* replay: `gemini --acp` per project root: initialize, authenticate gemini-api-key
  (dummy GEMINI_API_KEY), then session/load for every session listed or found on disk
  for that project; counts per `sessionUpdate` kind + raw updates. The load response
  arrives before the replay ends, so updates are collected until quiet.

    judge_gemini.py HOME [--keep] [--no-raw] [--timeout S]

HOME holds `.gemini/`, or is a Gemini dir itself (has `tmp/` or `projects.json`)."""

from __future__ import annotations

import collections
import hashlib
import re
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import judgelib as J  # noqa: E402

LIST_RE = re.compile(r"^\s*(\d+)\.\s+(.*?)\s+\(([^()]*)\)\s+\[([0-9a-fA-F-]{36})\]\s*$")
DUMMY_KEY = "asp-judge-dummy-key"


def sanitize(store: Path) -> list[str]:
    done = []
    for f in ("oauth_creds.json", "google_accounts.json", "mcp-oauth-tokens.json", ".env",
              "installation_id", "user_id"):
        if (store / f).exists():
            J.rm(store / f)
            done.append(f"removed .gemini/{f}")
    if (store / "extensions").exists():
        J.rm(store / "extensions")
        done.append("removed .gemini/extensions/")
    path = store / "settings.json"
    s = J.load_json_file(path, default={}) if path.exists() else {}
    if not isinstance(s, dict):
        s = {}
        done.append("settings.json unreadable: replaced")
    for k in ("mcpServers", "hooks", "hooksConfig", "extensions", "mcp"):
        if k in s:
            s.pop(k)
            done.append(f"settings.json: dropped {k}")
    tools = s.get("tools")
    if isinstance(tools, dict):
        for k in ("discoveryCommand", "callCommand"):
            if tools.pop(k, None) is not None:
                done.append(f"settings.json: dropped tools.{k}")
    sec = s.get("security")
    if isinstance(sec, dict) and isinstance(sec.get("auth"), dict):
        if sec["auth"].pop("selectedType", None) is not None:
            done.append("settings.json: dropped security.auth.selectedType")
    gen = s.setdefault("general", {})
    if not isinstance(gen, dict):
        gen = s["general"] = {}
    ret = gen.setdefault("sessionRetention", {})
    if not isinstance(ret, dict):
        ret = gen["sessionRetention"] = {}
    ret["enabled"] = False
    gen["enableAutoUpdate"] = False
    gen["enableAutoUpdateNotification"] = False
    if not isinstance(s.get("telemetry"), dict):
        s["telemetry"] = {}
    s["telemetry"]["enabled"] = False
    priv = s.setdefault("privacy", {})
    if isinstance(priv, dict):
        priv["usageStatisticsEnabled"] = False
    J.write_json_file(path, s)
    done.append("settings.json: general.sessionRetention.enabled=false")
    return done


def project_roots(store: Path) -> tuple[dict, list[str]]:
    """root -> slug dir name; plus tmp dirs whose root is unknown."""
    roots: dict[str, str] = {}
    pj = J.load_json_file(store / "projects.json", default={}) or {}
    for root, slug in ((pj.get("projects") or {}) if isinstance(pj, dict) else {}).items():
        roots[root] = slug
    for base in ("tmp", "history"):
        for marker in sorted((store / base).glob("*/.project_root")):
            try:
                root = marker.read_text().strip()
            except OSError:
                continue
            if root:
                roots.setdefault(root, marker.parent.name)
    known_slugs = set(roots.values()) | {hashlib.sha256(r.encode()).hexdigest() for r in roots}
    unknown = [d.name for d in sorted((store / "tmp").glob("*"))
               if d.is_dir() and d.name not in known_slugs and (d / "chats").is_dir()]
    return roots, unknown


def scan(store: Path) -> list[dict]:
    out = []
    for f in sorted(store.glob("tmp/*/chats/session-*.json*")):
        d = {"file": str(f.relative_to(store)), "dir": f.parent.parent.name}
        msgs: dict[str, dict] = {}
        order: list[str] = []
        meta = {}
        bad = lines = 0
        if f.suffix == ".json":
            o = J.load_json_file(f, default=None)
            if isinstance(o, dict):
                meta = {k: v for k, v in o.items() if k != "messages"}
                for m in o.get("messages") or []:
                    if isinstance(m, dict) and m.get("id"):
                        if m["id"] not in msgs:
                            order.append(m["id"])
                        msgs[m["id"]] = m
            else:
                bad = 1
        else:
            with open(f, "rb") as fh:
                first = True
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
                    if first:
                        first = False
                        if "sessionId" in o and "type" not in o:
                            meta = dict(o)
                            continue
                    if "$set" in o and isinstance(o["$set"], dict):
                        st = o["$set"]
                        if isinstance(st.get("messages"), list):
                            msgs, order = {}, []
                            for m in st["messages"]:
                                if isinstance(m, dict) and m.get("id"):
                                    if m["id"] not in msgs:
                                        order.append(m["id"])
                                    msgs[m["id"]] = m
                        meta.update({k: v for k, v in st.items() if k != "messages"})
                    elif "$rewindTo" in o:
                        if o["$rewindTo"] in order:
                            cut = order.index(o["$rewindTo"])
                            for mid in order[cut:]:
                                msgs.pop(mid, None)
                            order = order[:cut]
                    elif o.get("id"):
                        if o["id"] not in msgs:
                            order.append(o["id"])
                        msgs[o["id"]] = o
        types = collections.Counter(msgs[m].get("type") for m in order)
        thoughts = sum(len(msgs[m].get("thoughts") or []) for m in order)
        tcalls = sum(len(msgs[m].get("toolCalls") or []) for m in order)
        d.update({
            "id": meta.get("sessionId"),
            "projectHash": meta.get("projectHash"),
            "kind": meta.get("kind"),
            "summary": meta.get("summary"),
            "startTime": meta.get("startTime"),
            "lastUpdated": meta.get("lastUpdated"),
            "records": lines,
            "unparsable_lines": bad,
            "messages_by_type": dict(types),
            "thoughts": thoughts,
            "tool_calls": tcalls,
        })
        out.append(d)
    return out


def chats_snapshot(store: Path) -> dict:
    return {str(p.relative_to(store)): p.stat().st_size
            for p in store.glob("tmp/*/chats/**/*") if p.is_file()}


def main():
    ap = J.common_argparser(__doc__)
    ap.add_argument("--quiet", type=float, default=2.0,
                    help="seconds without a replayed update that end a load (default 2)")
    args = ap.parse_args()
    src = Path(args.home)
    scratch = J.Scratch("gemini", keep=args.keep)
    report = {
        "harness": "gemini",
        "judge": "gemini --list-sessions + gemini --acp session/load",
        "package": J.PACKAGES["gemini"],
        "installed": J.installed_version("@google/gemini-cli"),
        "home": str(src.resolve()),
        "scratch": str(scratch.root),
        "errors": [],
    }
    ns = None
    try:
        store = J.copy_store(src, scratch.home, ".gemini", ["tmp", "projects.json"])
        report["sanitized"] = sanitize(store)
        roots, unknown = project_roots(store)
        report["project_roots"] = roots
        if unknown:
            report["unresolved_tmp_dirs"] = unknown
        on_disk = scan(store)
        report["on_disk"] = on_disk
        before = chats_snapshot(store)
        ns = J.Namespace(scratch, list(roots))
        report["cwd_handling"] = ns.describe()
        env = J.harness_env(scratch, {"GEMINI_API_KEY": DUMMY_KEY})
        gemini = J.bin_path("gemini")

        sessions: dict[str, dict] = {}

        def entry(sid):
            return sessions.setdefault(sid, {"id": sid, "on_disk": [], "listed": False,
                                             "listed_in": []})
        hash_to_root = {hashlib.sha256(r.encode()).hexdigest(): r for r in roots}
        for d in on_disk:
            if d.get("id"):
                e = entry(d["id"])
                e["on_disk"].append(d["file"])
                e["root_on_disk"] = hash_to_root.get(d.get("projectHash") or "")

        listings = []
        for root in roots:
            if not ns.usable(root):
                listings.append({"root": root, "error": "root missing and cannot be overlaid"})
                continue
            r = J.run_cmd(["node", gemini, "--list-sessions"], env=env, cwd=root if
                          not ns.enabled or not ns.overlays else str(scratch.home),
                          timeout=args.timeout, scratch=scratch,
                          ns=_cd(ns, root))
            parsed = []
            for line in r["stdout"].splitlines():
                m = LIST_RE.match(line)
                if m:
                    parsed.append({"index": int(m.group(1)), "title": m.group(2),
                                   "age": m.group(3), "id": m.group(4)})
            listings.append({"root": root, "exit": r["exit"], "timed_out": r["timed_out"],
                             "seconds": r["seconds"], "sessions": parsed,
                             "stdout": r["stdout"][-3000:], "stderr_tail": r["stderr"][-2000:]})
            for p in parsed:
                e = entry(p["id"])
                e["listed"] = True
                e["listed_in"].append(root)
                e["title"] = p["title"]
                e["age"] = p["age"]
        report["listings"] = listings

        # replay, one ACP process per project root
        by_root: dict[str, list[dict]] = collections.defaultdict(list)
        for e in sessions.values():
            root = (e["listed_in"] or [None])[0] or e.get("root_on_disk")
            if root is None:
                e["load"] = {"ok": False, "error": "project root unknown (projectHash matches no root)"}
                continue
            by_root[root].append(e)
        acp_runs = []
        for root, entries in by_root.items():
            if not ns.usable(root):
                for e in entries:
                    e["load"] = {"ok": False, "error": f"root {root} missing and cannot be overlaid"}
                continue
            peer = J.JsonRpcProc(["node", gemini, "--acp"], env=env,
                                 cwd=root if not (ns.enabled and ns.overlays) else str(scratch.home),
                                 scratch=scratch, name=f"gemini-acp-{len(acp_runs)}",
                                 ns=_cd(ns, root))
            run = {"root": root}
            try:
                res, err, secs, _ = J.acp_initialize(peer, timeout=args.timeout)
                if err:
                    run["initialize_error"] = err
                    run["stderr"] = peer.stderr_tail()
                    for e in entries:
                        e["load"] = {"ok": False, "error": {"initialize": err}}
                    continue
                caps = (res or {}).get("agentCapabilities") or {}
                methods = [m.get("id") for m in (res or {}).get("authMethods") or []]
                run["initialize"] = {"seconds": secs, "agentInfo": (res or {}).get("agentInfo"),
                                     "loadSession": caps.get("loadSession"),
                                     "sessionCapabilities": caps.get("sessionCapabilities"),
                                     "authMethods": methods}
                r2, e2, s2, _ = peer.request("authenticate", {"methodId": "gemini-api-key"},
                                             timeout=args.timeout)
                run["authenticate"] = {"error": e2, "seconds": s2}
                for e in entries:
                    if peer.p.poll() is not None:
                        e["load"] = {"ok": False, "error": "gemini --acp exited",
                                     "stderr": peer.stderr_tail()}
                        continue
                    e["load_cwd"] = root
                    e["load"] = J.acp_load(peer, e["id"], root, timeout=args.timeout,
                                           quiet=args.quiet, max_quiet_wait=60,
                                           keep_raw=not args.no_raw)
                    if not e["load"]["ok"]:
                        e["load"]["stderr"] = peer.stderr_tail(8)
            finally:
                peer.close()
                run["noise_on_stdout"] = peer.noise[:20]
                acp_runs.append(run)
        report["acp_runs"] = acp_runs
        report["sessions"] = list(sessions.values())
        after = chats_snapshot(store)
        report["chat_files_changed_by_harness"] = {
            "created": sorted(set(after) - set(before)),
            "modified": sorted(k for k in before if k in after and after[k] != before[k]),
            "deleted": sorted(set(before) - set(after)),
        }
        return report
    finally:
        if ns:
            ns.finish()
        J.kill_all_started()
        scratch.cleanup()


class _cd:
    """A Namespace wrapper that also changes into `root` inside the namespace (the
    root may only exist there)."""

    def __init__(self, ns: J.Namespace, root: str):
        self.ns, self.root = ns, root

    def wrap(self, argv, cwd=None):
        # judgelib.run_cmd passes the inner cwd; this wrapper's root is that directory.
        if not (self.ns.enabled and self.ns.overlays):
            return argv
        return self.ns.wrap(["sh", "-c", 'cd "$0" && exec "$@"', cwd or self.root] + argv)


if __name__ == "__main__":
    t0 = time.monotonic()
    rep = main()
    rep["seconds_total"] = round(time.monotonic() - t0, 2)
    J.emit(rep)
