#!/usr/bin/env python3
"""Put `asp hub` in front of a REAL ACP agent and export its sessions by replay (opt-in).

    hub_peers.py PEER HOME --asp PATH/TO/asp [--keep] [--timeout S] [--quiet S]

PEER is claude | codex-acp | gemini | opencode (installed by scripts/judges/install.sh);
HOME holds the peer's native store (e.g. samples/claude-code); for opencode it may also be an
`opencode export` JSON file, imported into a scratch home with the real `opencode import`. Everything the judges in
scripts/judges/ do to run a real harness safely is reused: a scratch copy of the store
(credentials, MCP servers and hooks stripped), a fresh credential-free environment, the
network pointed at nothing, a private mount namespace for sessions' cwds, and process-group
cleanup.

What it does, through the hub (`asp hub --replay-quiet-ms Q -- <peer>`):
  initialize (checks the hub's `_meta.asp`), authenticate where the peer needs it, open the
  sessions through the hub when the peer has no session/list (Gemini), `_asp/state/describe`,
  then `_asp/state/export {"kinds": ["sessions"]}`; and counts every session/update the
  client received from the moment it asked for the export (the hub must keep the replay
  to itself).

Then, directly (no hub, a fresh scratch copy), it loads every exported session the way the
judges do, and compares: the hub must export exactly what the peer replays (same number of
updates of each kind, per session). For a peer whose load changes its store (Gemini), the
direct side loads as many times as the hub run did, and the last load is compared.

Prints one JSON report on stdout; exit status 0 when the report says "ok": true, 1 if not.
Logs go to stderr."""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.dont_write_bytecode = True
JUDGES = Path(__file__).resolve().parent / "judges"
sys.path.insert(0, str(JUDGES))
import judgelib as J  # noqa: E402
import judge_claude  # noqa: E402
import judge_codex  # noqa: E402
import judge_gemini  # noqa: E402
import judge_opencode  # noqa: E402

DUMMY_OPENAI = "sk-asp-hub-peers-dummy"


@dataclass
class Setup:
    """How to run one peer on one scratch copy."""
    argv: list[str]
    env: dict
    cwd: str
    ns: object  # J.Namespace or judge_gemini._cd
    namespace: J.Namespace
    auth: str | None = None
    # Sessions the client opens through the hub first: a peer without session/list only
    # lets the hub replay the sessions its client opened.
    open_first: list[tuple[str, str]] = field(default_factory=list)


def prepare_claude(src: Path, scratch: J.Scratch) -> Setup:
    store = J.copy_store(src, scratch.home, ".claude", ["projects"], (".claude.json",))
    judge_claude.sanitize(store, scratch.home)
    cwds = sorted({d["cwd"] for d in judge_claude.scan(store) if d["cwd"]})
    ns = J.Namespace(scratch, cwds)
    extra = {"IS_SANDBOX": "1"} if os.geteuid() == 0 else {}
    env = J.harness_env(scratch, extra)
    return Setup(["node", J.bin_path("claude-agent-acp")], env, str(scratch.home), ns, ns)


def prepare_codex(src: Path, scratch: J.Scratch) -> Setup:
    store = J.copy_store(src, scratch.home, ".codex", ["sessions", "archived_sessions"])
    judge_codex.sanitize(store)
    cwds = sorted({d["cwd"] for d in judge_codex.scan(store) if d.get("cwd")})
    ns = J.Namespace(scratch, cwds)
    env = J.harness_env(scratch, {"CODEX_HOME": str(store), "OPENAI_API_KEY": DUMMY_OPENAI,
                                  "CODEX_API_KEY": DUMMY_OPENAI})
    return Setup(["node", J.bin_path("codex-acp")], env, str(scratch.home), ns, ns,
                 auth="openai-api-key")


def prepare_gemini(src: Path, scratch: J.Scratch) -> Setup:
    store = J.copy_store(src, scratch.home, ".gemini", ["tmp", "projects.json"])
    judge_gemini.sanitize(store)
    roots, _ = judge_gemini.project_roots(store)
    ns = J.Namespace(scratch, list(roots))
    env = J.harness_env(scratch, {"GEMINI_API_KEY": judge_gemini.DUMMY_KEY})
    import hashlib
    by_hash = {hashlib.sha256(r.encode()).hexdigest(): r for r in roots}
    sessions = [(d["id"], by_hash.get(d.get("projectHash") or ""))
                for d in judge_gemini.scan(store) if d.get("id")]
    sessions = [(sid, root) for sid, root in dict(sessions).items() if root and ns.usable(root)]
    # One Gemini process serves one project root: run it in the first root that has sessions.
    root = sessions[0][1] if sessions else str(scratch.home)
    opened = [(sid, r) for sid, r in sessions if r == root]
    cwd = root if not (ns.enabled and ns.overlays) else str(scratch.home)
    return Setup(["node", J.bin_path("gemini"), "--acp"], env, cwd, judge_gemini._cd(ns, root), ns,
                 auth="gemini-api-key", open_first=opened)


def import_opencode(export: Path, scratch: J.Scratch):
    """Builds an OpenCode home from an `opencode export` file with the real `opencode import`,
    run in the session's directory (import re-homes a session to where it runs)."""
    directory = json.loads(export.read_text())["info"]["directory"]
    ns = J.Namespace(scratch, [directory])
    inside = judge_gemini._cd(ns, directory)
    r = J.run_cmd([J.bin_path("opencode"), "import", str(export)], env=J.harness_env(scratch),
                  cwd=directory if not (ns.enabled and ns.overlays) else "/", timeout=120,
                  scratch=scratch, ns=inside)
    ns.finish()
    if r["exit"] != 0:
        raise SystemExit(f"opencode import failed: {r['stderr'][-2000:]}")


def prepare_opencode(src: Path, scratch: J.Scratch) -> Setup:
    if src.is_file():
        import_opencode(src, scratch)
    else:
        J.copy_store(src, scratch.home, judge_opencode.DATA, ["opencode.db", "storage"])
    if (src / ".config" / "opencode").is_dir():
        import shutil
        shutil.copytree(src / ".config" / "opencode", scratch.home / ".config" / "opencode",
                        symlinks=True)
    judge_opencode.sanitize(scratch.home)
    dirs = sorted({d["directory"] for d in judge_opencode.scan(scratch.home / judge_opencode.DATA)
                   if d.get("directory")})
    ns = J.Namespace(scratch, dirs)
    return Setup([J.bin_path("opencode"), "acp"], J.harness_env(scratch), str(scratch.home), ns, ns)


PREPARE = {
    "claude": prepare_claude,
    "codex-acp": prepare_codex,
    "gemini": prepare_gemini,
    "opencode": prepare_opencode,
}


def counts_of(updates) -> dict:
    return dict(collections.Counter((u.get("update") or {}).get("sessionUpdate", "?") for u in updates))


def start(setup: Setup, argv: list[str], scratch: J.Scratch, name: str, timeout: float, report: dict):
    peer = J.JsonRpcProc(argv, env=setup.env, cwd=setup.cwd, scratch=scratch, name=name, ns=setup.ns)
    res, err, secs, _ = J.acp_initialize(peer, timeout=timeout)
    if err:
        report["errors"].append({f"{name} initialize": err, "stderr": peer.stderr_tail()})
        return peer, None
    if setup.auth:
        _, e, _, _ = peer.request("authenticate", {"methodId": setup.auth}, timeout=timeout)
        if e:
            report["errors"].append({f"{name} authenticate": e})
    return peer, res


def through_the_hub(peer_name: str, src: Path, asp: str, args, report: dict) -> list[dict] | None:
    scratch = J.Scratch(f"hub-{peer_name}", keep=args.keep)
    report["hub_scratch"] = str(scratch.root)
    hub = None
    setup = None
    try:
        setup = PREPARE[peer_name](src, scratch)
        report["cwd_handling"] = setup.namespace.describe()
        argv = [asp, "hub", "--replay-quiet-ms", str(int(args.quiet * 1000)), "--"] + setup.argv
        hub, init = start(setup, argv, scratch, "asp-hub", args.timeout, report)
        if init is None:
            return None
        asp_caps = ((init.get("agentCapabilities") or {}).get("_meta") or {}).get("asp")
        report["advertised"] = asp_caps
        if not ((asp_caps or {}).get("agentState") or {}).get("export"):
            report["errors"].append({"advertised": "no agentState.export: the peer offers no session/load?"})
            return None
        for sid, cwd in setup.open_first:
            load = J.acp_load(hub, sid, cwd, timeout=args.timeout, quiet=args.quiet, keep_raw=False)
            report.setdefault("opened_through_hub", []).append({"id": sid, "load": load})
        res, err, secs, _ = hub.request("_asp/state/describe", {}, timeout=args.timeout)
        report["describe"] = {"result": res, "error": err, "seconds": secs}
        mark = hub.mark()
        res, err, secs, _ = hub.request("_asp/state/export", {"kinds": ["sessions"]},
                                        timeout=args.timeout * 10)
        report["export_seconds"] = secs
        if err:
            report["errors"].append({"export": err, "stderr": hub.stderr_tail(30)})
            return None
        # Anything the agent still streams after the export would reach the client.
        hub.wait_quiet(lambda m: m.get("method") == "session/update", quiet=args.quiet, max_wait=30)
        with hub._cv:
            leaked = [m for _, m in hub.notifications[mark:] if m.get("method") == "session/update"]
        report["leaked_to_client"] = len(leaked)
        sessions = ((res or {}).get("state") or {}).get("sessions")
        if sessions is None:
            report["errors"].append({"export": "no sessions kind given", "result": res})
            return None
        return sessions
    finally:
        if hub:
            report["hub_stderr_tail"] = hub.stderr_tail(20)
            hub.close()
        if setup:
            setup.namespace.finish()
        J.kill_all_started()
        scratch.cleanup()


def directly(peer_name: str, src: Path, exported: list[dict], loads: int, args, report: dict) -> dict:
    """Each exported session's replay counts, as the peer itself replays it (the `loads`-th load)."""
    scratch = J.Scratch(f"direct-{peer_name}", keep=args.keep)
    peer = None
    setup = None
    out = {}
    try:
        setup = PREPARE[peer_name](src, scratch)
        peer, init = start(setup, setup.argv, scratch, peer_name, args.timeout, report)
        if init is None:
            return out
        for s in exported:
            cwd = s.get("cwd") or dict(setup.open_first).get(s["id"]) or str(scratch.home)
            for _ in range(loads):
                load = J.acp_load(peer, s["id"], cwd, timeout=args.timeout, quiet=args.quiet,
                                  keep_raw=False)
            out[s["id"]] = load
        return out
    finally:
        if peer:
            peer.close()
        if setup:
            setup.namespace.finish()
        J.kill_all_started()
        scratch.cleanup()


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("peer", choices=sorted(PREPARE))
    ap.add_argument("home", help="a HOME holding the peer's native store")
    ap.add_argument("--asp", required=True, help="the asp binary")
    ap.add_argument("--keep", action="store_true", help="keep the scratch copies")
    ap.add_argument("--timeout", type=float, default=90.0, help="per-call timeout, seconds")
    ap.add_argument("--quiet", type=float, default=2.0,
                    help="seconds a replay must be quiet (the hub's --replay-quiet-ms, and the direct side's)")
    args = ap.parse_args()
    src = Path(args.home).resolve()
    report = {"peer": args.peer, "package": J.PACKAGES.get(args.peer.split("-")[0]),
              "home": str(src), "errors": []}
    t0 = time.monotonic()
    exported = through_the_hub(args.peer, src, str(Path(args.asp).resolve()), args, report)
    if exported is not None:
        loads = 2 if args.peer == "gemini" else 1
        direct = directly(args.peer, src, exported, loads, args, report)
        rows = []
        for s in exported:
            d = direct.get(s["id"]) or {}
            row = {"id": s["id"], "title": s.get("title"), "cwd": s.get("cwd"),
                   "hub_count": len(s.get("updates") or []), "hub_counts": counts_of(s.get("updates") or []),
                   "direct_ok": d.get("ok"), "direct_count": d.get("count"),
                   "direct_counts": d.get("counts")}
            row["same"] = row["direct_ok"] is True and row["hub_counts"] == row["direct_counts"]
            rows.append(row)
        report["sessions"] = rows
        problems = [r["id"] for r in rows if not r["same"]]
        if problems:
            report["errors"].append({"differs_from_direct_replay": problems})
        if not rows:
            report["errors"].append({"export": "no session exported"})
        if report.get("leaked_to_client"):
            report["errors"].append({"leaked_to_client": report["leaked_to_client"]})
    report["ok"] = not report["errors"]
    report["seconds_total"] = round(time.monotonic() - t0, 2)
    J.emit(report)
    sys.exit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
