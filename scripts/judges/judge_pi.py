#!/usr/bin/env python3
"""Judge a Pi store with the real Pi (@mariozechner/pi-coding-agent@0.73.1) through its
ACP adapter (pi-acp@0.0.24).

* listing: pi-acp `session/list` without cwd (every session under sessions/) and per cwd
  (cwds = the `cwd` of the session headers);
* replay: pi-acp `session/load` in the session's cwd; pi-acp starts `pi --mode rpc
  --session <file>` and replays `get_messages` (the current branch as Pi rebuilds it);
* Pi's own view of each file: `pi --mode rpc --session <file>` in the cwd, `get_state`
  (session id, name, model, thinking level) and `get_messages` (roles), so a difference
  between Pi and the adapter shows.

    judge_pi.py HOME [--keep] [--no-raw] [--timeout S] [--quiet S] [--skip-rpc]

HOME holds `.pi/agent/`, or is an agent dir itself (has `sessions/`). Prints JSON."""

from __future__ import annotations

import collections
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import judgelib as J  # noqa: E402

DUMMY_KEY = "asp-judge-dummy-key"


def copy_home(src: Path, home: Path) -> Path:
    """Copy the agent dir to <home>/.pi/agent (and ~/.agents/skills when present)."""
    src = src.resolve()
    if (src / ".pi" / "agent").is_dir():
        agent = src / ".pi" / "agent"
    elif (src / "sessions").is_dir() or (src / "settings.json").is_file():
        agent = src
    else:
        raise SystemExit(f"judge: {src} has neither .pi/agent/ nor sessions/: not a Pi home")
    dst = home / ".pi" / "agent"
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(agent, dst, symlinks=True, ignore_dangling_symlinks=True)
    if (src / ".agents").is_dir():
        shutil.copytree(src / ".agents", home / ".agents", symlinks=True)
    return dst


def sanitize(agent: Path) -> list[str]:
    done = []
    if (agent / "auth.json").exists():
        J.rm(agent / "auth.json")
        done.append("removed auth.json (credentials)")
    for d in ("extensions", "git", "npm", "bin"):
        if (agent / d).exists():
            J.rm(agent / d)
            done.append(f"removed {d}/")
    mpath = agent / "models.json"
    if mpath.exists():
        m = J.load_json_file(mpath, default={}) or {}
        for name, p in ((m.get("providers") or {}) if isinstance(m, dict) else {}).items():
            if not isinstance(p, dict):
                continue
            if "apiKey" in p:
                p["apiKey"] = DUMMY_KEY
            if "baseUrl" in p:
                p["baseUrl"] = J.NOWHERE + "/v1"
            for k in ("headers", "authHeader"):
                p.pop(k, None)
        J.write_json_file(mpath, m)
        done.append("models.json: apiKey -> dummy, baseUrl -> nowhere, headers dropped")
    spath = agent / "settings.json"
    s = J.load_json_file(spath, default={}) if spath.exists() else {}
    if not isinstance(s, dict):
        s = {}
    for k in ("packages", "extensions", "shellPath", "shellCommandPrefix"):
        if k in s:
            s.pop(k)
            done.append(f"settings.json: dropped {k}")
    s["enableInstallTelemetry"] = False
    J.write_json_file(spath, s)
    return done


def text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content
                       if isinstance(b, dict) and b.get("type") == "text")
    return ""


def scan_file(f: Path, agent: Path) -> dict:
    """Pi's own reading rules (session-manager.js): lines that do not parse are skipped;
    the first parsed line must be {type: "session", id: string}; the current leaf is the
    LAST entry of the file; the branch is the parentId walk from it."""
    d = {"file": str(f.relative_to(agent)), "bytes": f.stat().st_size}
    entries, bad, lines = [], [], 0
    with open(f, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            lines += 1
            try:
                # node reads the file as UTF-8 with U+FFFD for invalid bytes, then parses
                o = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                bad.append(n)
                continue
            entries.append(o)
    d["lines"] = lines
    d["unparsable_lines"] = bad
    header = entries[0] if entries else None
    if not isinstance(header, dict) or header.get("type") != "session" \
            or not isinstance(header.get("id"), str):
        d["header"] = None
        d["header_problem"] = "first parsed line is not a session header: Pi ignores the file"
        return d
    d["header"] = {k: header.get(k) for k in ("id", "version", "timestamp", "cwd", "parentSession")
                   if k in header}
    d["id"] = header["id"]
    d["cwd"] = header.get("cwd")
    stem = f.stem
    d["file_name_id_matches"] = stem.endswith("_" + header["id"])
    body = [e for e in entries[1:] if isinstance(e, dict)]
    types = collections.Counter(e.get("type") for e in body)
    roles = collections.Counter((e.get("message") or {}).get("role") for e in body
                                if e.get("type") == "message")
    d["entry_types"] = dict(types)
    d["message_roles"] = dict(roles)
    by_id = {e.get("id"): e for e in body if isinstance(e.get("id"), str)}
    children = collections.Counter(e.get("parentId") for e in body)
    leaves = [e["id"] for e in body if isinstance(e.get("id"), str) and children[e["id"]] == 0]
    d["leaves"] = leaves
    orphans = [e.get("id") for e in body
               if e.get("parentId") not in (None,) and e.get("parentId") not in by_id]
    if orphans:
        d["orphans"] = orphans
    current = body[-1] if body else None
    path, seen = [], set()
    while current is not None and current.get("id") not in seen:
        seen.add(current.get("id"))
        path.append(current)
        pid = current.get("parentId")
        current = by_id.get(pid) if pid else None
    path.reverse()
    d["current_leaf"] = body[-1].get("id") if body else None
    d["branch_length"] = len(path)
    d["off_branch_entries"] = len(body) - len(path)
    comp = [e for e in path if e.get("type") == "compaction"]
    if comp:
        d["compaction_on_branch"] = {"id": comp[-1].get("id"),
                                     "firstKeptEntryId": comp[-1].get("firstKeptEntryId")}
    name = None
    acp_title = None
    for e in body:
        if e.get("type") == "session_info":
            name = (e.get("name") or "").strip() or None
            if (e.get("name") or "").strip():
                acp_title = e["name"].strip()
    d["name"] = name
    d["pi_acp_title_expected"] = acp_title
    first_user = next((text_of((e.get("message") or {}).get("content"))
                       for e in body if e.get("type") == "message"
                       and (e.get("message") or {}).get("role") == "user"), None)
    d["first_user_text"] = (first_user or "")[:100] or None
    return d


def snapshot(agent: Path) -> dict:
    out = {}
    for p in sorted((agent / "sessions").glob("**/*")):
        if p.is_file():
            out[str(p.relative_to(agent))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def pi_rpc_view(pi: str, env: dict, ns, scratch, d: dict, agent: Path, timeout: float) -> dict:
    """`pi --mode rpc --session <file>`: get_state, then get_messages; stdin stays open
    until both answers are in (Pi stops at EOF, which can cut a large answer)."""
    argv = ["node", pi, "--mode", "rpc", "--no-themes", "--no-extensions",
            "--session", str(agent / d["file"])]
    cwd = d["cwd"] if not (ns and ns.enabled and ns.overlays) else str(scratch.home)
    peer = _PiRpc(argv, env=env, cwd=cwd, scratch=scratch, name="pi-rpc",
                  ns=_Cd(ns, d["cwd"]), jsonrpc=False)
    out = {}
    t0 = time.monotonic()
    try:
        st, err = peer.command("get_state", timeout)
        if err:
            out["error"] = err
            out["stderr_tail"] = peer.stderr_tail(10)
            return out
        out["state"] = {k: st.get(k) for k in ("sessionId", "sessionName", "sessionFile",
                                                "thinkingLevel", "messageCount")}
        model = st.get("model") or {}
        out["state"]["model"] = f"{model.get('provider')}/{model.get('id')}" if model else None
        data, err = peer.command("get_messages", timeout)
        if err:
            out["error"] = err
        else:
            msgs = data.get("messages") or []
            out["messages"] = len(msgs)
            out["roles"] = dict(collections.Counter(m.get("role") for m in msgs))
    finally:
        peer.close()
        out["seconds"] = round(time.monotonic() - t0, 2)
    return out


class _PiRpc(J.JsonRpcProc):
    """Pi's RPC framing: {"id","type"} -> {"type":"response","id","success","data"};
    events carry neither "id" nor "method" and are ignored."""

    def command(self, typ: str, timeout: float):
        with self._lock:
            self._id += 1
            rid = f"judge-{self._id}"
        self._send({"id": rid, "type": typ})
        deadline = time.monotonic() + timeout
        with self._cv:
            while rid not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0 or (self.p.poll() is not None and not self._reader.is_alive()):
                    return {}, {"code": "timeout" if left <= 0 else "exited", "message": typ}
                self._cv.wait(min(left, 0.2))
            _, msg = self._responses.pop(rid)
        if not msg.get("success"):
            return {}, {"message": msg.get("error")}
        return msg.get("data") or {}, None


class _Cd:
    """Namespace wrapper that changes into the session's cwd inside the namespace."""

    def __init__(self, ns, cwd):
        self.ns, self.cwd = ns, cwd

    def wrap(self, argv):
        if not (self.ns and self.ns.enabled and self.ns.overlays):
            return argv
        return self.ns.wrap(["sh", "-c", 'cd "$0" && exec "$@"', self.cwd] + argv)


def main():
    ap = J.common_argparser(__doc__)
    ap.add_argument("--quiet", type=float, default=1.5,
                    help="seconds without a replayed update that end a load (default 1.5)")
    ap.add_argument("--skip-rpc", action="store_true", help="skip Pi's own RPC view")
    args = ap.parse_args()
    src = Path(args.home)
    scratch = J.Scratch("pi", keep=args.keep)
    report = {
        "harness": "pi",
        "judge": "pi-acp session/list + session/load; pi --mode rpc get_state/get_messages",
        "package": [J.PACKAGES["pi"], J.PACKAGES["pi-acp"]],
        "installed": {"pi": J.installed_version("@mariozechner/pi-coding-agent"),
                      "pi-acp": J.installed_version("pi-acp")},
        "home": str(src.resolve()),
        "scratch": str(scratch.root),
        "errors": [],
    }
    peer = ns = None
    try:
        agent = copy_home(src, scratch.home)
        report["sanitized"] = sanitize(agent)
        files = sorted((agent / "sessions").glob("**/*.jsonl"))
        on_disk = [scan_file(f, agent) for f in files]
        report["on_disk"] = on_disk
        cwds = sorted({d["cwd"] for d in on_disk if d.get("cwd")})
        report["cwds"] = cwds
        ns = J.Namespace(scratch, cwds)
        report["cwd_handling"] = ns.describe()
        before = snapshot(agent)
        env = J.harness_env(scratch, {
            "PATH": f"{J.BIN_DIR}:" + J.harness_env(scratch)["PATH"],
            "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1",
        })
        peer = J.JsonRpcProc(["node", J.bin_path("pi-acp")], env=env, cwd=str(scratch.home),
                             scratch=scratch, name="pi-acp", ns=ns)
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

        def entry(sid):
            return sessions.setdefault(sid, {"id": sid, "on_disk": [], "listed": False,
                                             "listed_in": []})
        for d in on_disk:
            if d.get("id"):
                e = entry(d["id"])
                e["on_disk"].append(d["file"])
                e["cwd_on_disk"] = d.get("cwd")
        list_calls = []
        listed_all, err, calls = J.acp_list(peer, None, timeout=args.timeout)
        list_calls.append({"cwd": None, "calls": calls, "error": err, "count": len(listed_all)})
        for s in listed_all:
            e = entry(s["sessionId"])
            e["listed_without_cwd"] = True
            e["title"] = s.get("title")
            e["cwd"] = s.get("cwd")
            e["updatedAt"] = s.get("updatedAt")
        for cwd in cwds:
            listed, err, calls = J.acp_list(peer, cwd, timeout=args.timeout)
            list_calls.append({"cwd": cwd, "calls": calls, "error": err, "count": len(listed)})
            for s in listed:
                e = entry(s["sessionId"])
                e["listed"] = True
                e["listed_in"].append(cwd)
                e["title"] = s.get("title")
                e["cwd"] = s.get("cwd")
                e["updatedAt"] = s.get("updatedAt")
        report["list_calls"] = list_calls
        J.load_each(peer, ns, sessions.values(), caps, cwd_keys=("cwd", "cwd_on_disk"),
                    timeout=args.timeout, quiet=args.quiet, keep_raw=not args.no_raw,
                    who="pi-acp")
        peer.close()
        peer = None
        if not args.skip_rpc:
            pi = J.bin_path("pi")
            by_file = {d["file"]: d for d in on_disk}
            for e in sessions.values():
                for f in e["on_disk"]:
                    d = by_file[f]
                    if d.get("cwd") and ns.usable(d["cwd"]):
                        e.setdefault("pi_rpc", {})[f] = pi_rpc_view(
                            pi, env, ns, scratch, d, agent, args.timeout)
        report["sessions"] = list(sessions.values())
        after = snapshot(agent)
        report["session_files_changed_by_harness"] = {
            "created": sorted(set(after) - set(before)),
            "modified": sorted(k for k in before if k in after and after[k] != before[k]),
            "deleted": sorted(set(before) - set(after)),
        }
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
