#!/usr/bin/env python3
"""Judge a Qwen Code store with the real Qwen Code (@qwen-code/qwen-code@0.24.4).

* listing: `qwen sessions list --json --limit 10000` run in each project's cwd (its own
  CLI listing) and ACP `session/list {cwd}` (all pages) from `qwen --acp`;
* replay: ACP `session/load {sessionId, cwd}`; counts per `sessionUpdate` kind. Qwen
  replays token usage as `agent_message_chunk`s with empty text and `_meta.usage`: they
  are counted apart (`usage_chunks`) so `agent_message_chunk` counts real text.

    judge_qwen.py HOME [--keep] [--no-raw] [--timeout S] [--quiet S]

HOME holds `.qwen/`, or is a Qwen dir itself (has `projects/` or `settings.json`).
Listing and loading need no credentials; ACP session/load wants an auth type in
settings, so the scratch copy gets `security.auth.selectedType: "openai"` and the
environment a placeholder OPENAI_API_KEY and a base URL that points at nothing."""

from __future__ import annotations

import collections
import hashlib
import json
import re
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import judgelib as J  # noqa: E402

DUMMY_KEY = "asp-judge-dummy-key"
SESSION_FILE = re.compile(r"^[0-9a-fA-F-]{32,36}\.jsonl$")
# Qwen's transcript-records.ts: records that never become the leaf of the chain
NON_CONVERSATION = {"session_sources_snapshot", "session_artifact_event",
                    "session_artifact_snapshot", "managed_session_header_v1",
                    "managed_session_event_v1", "managed_session_commit_v1"}


def sanitize(store: Path) -> list[str]:
    done = []
    for f in ("oauth_creds.json", "mcp-oauth-tokens.json", ".env", "google_accounts.json"):
        if (store / f).exists():
            J.rm(store / f)
            done.append(f"removed .qwen/{f}")
    for d in ("extensions", "sessions"):
        if (store / d).exists():
            J.rm(store / d)
            done.append(f"removed .qwen/{d}/")
    path = store / "settings.json"
    s = J.load_json_file(path, default={}) if path.exists() else {}
    if not isinstance(s, dict):
        s = {}
        done.append("settings.json unreadable: replaced")
    for k in ("mcpServers", "hooks", "hooksConfig", "extensions", "env", "proxy"):
        if k in s:
            s.pop(k)
            done.append(f"settings.json: dropped {k}")
    sec = s.setdefault("security", {})
    auth = sec.setdefault("auth", {}) if isinstance(sec, dict) else {}
    if isinstance(auth, dict):
        for k in ("apiKey", "baseUrl"):
            if auth.pop(k, None) is not None:
                done.append(f"settings.json: dropped security.auth.{k}")
        auth["selectedType"] = "openai"
    providers = s.get("modelProviders")
    if isinstance(providers, dict):
        for models in providers.values():
            for m in models if isinstance(models, list) else []:
                if isinstance(m, dict) and "baseUrl" in m:
                    m["baseUrl"] = J.NOWHERE + "/v1"
        done.append("settings.json: modelProviders baseUrl -> nowhere")
    mem = s.setdefault("memory", {})
    if isinstance(mem, dict):
        mem["enableManagedAutoMemory"] = False
        mem["enableManagedAutoDream"] = False
    J.write_json_file(path, s)
    return done


def sanitize_cwd(cwd: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "-", cwd)


def scan_file(f: Path, store: Path) -> dict:
    """What Qwen's reader (transcript-records.ts, sessionService.ts) makes of one file."""
    d = {"file": str(f.relative_to(store)), "bytes": f.stat().st_size,
         "name_ok": bool(SESSION_FILE.match(f.name))}
    records, bad, lines = [], [], 0
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
            if isinstance(o, dict):
                records.append(o)
            else:
                bad.append(n)
    d["lines"] = lines
    d["unparsable_lines"] = bad
    if not records:
        return d
    first = records[0]
    d["id"] = first.get("sessionId")
    d["cwd"] = first.get("cwd")
    d["file_name_id_matches"] = f.stem.lower() == str(first.get("sessionId", "")).lower()
    d["dir_matches_cwd"] = isinstance(d["cwd"], str) and \
        f.parent.parent.name == sanitize_cwd(d["cwd"])
    d["session_ids"] = sorted({str(r.get("sessionId")) for r in records})
    d["record_types"] = dict(collections.Counter(
        r.get("type") + (":" + r["subtype"] if r.get("subtype") else "")
        for r in records if isinstance(r.get("type"), str)))
    by_uuid = {}
    for r in records:
        if isinstance(r.get("uuid"), str) and r["uuid"] not in by_uuid:
            by_uuid[r["uuid"]] = r
    conv = [r for r in records if isinstance(r.get("uuid"), str)
            and r.get("type") in ("user", "assistant", "tool_result", "system")
            and r.get("subtype") not in NON_CONVERSATION]
    leaf = conv[-1]["uuid"] if conv else None
    chain, seen, gap = [], set(), None
    cur = leaf
    while cur and cur not in seen:
        seen.add(cur)
        r = by_uuid.get(cur)
        if r is None:
            break
        chain.append(r)
        p = r.get("parentUuid")
        if p and p not in by_uuid:
            gap = {"child": cur, "missing_parent": p}
            break
        cur = p
    chain.reverse()
    d["leaf"] = leaf
    d["chain_length"] = len(chain)
    d["off_chain_records"] = len({r["uuid"] for r in conv}) - len(chain)
    if gap:
        d["gap"] = gap
    d["chain_types"] = dict(collections.Counter(
        r.get("type") + (":" + r["subtype"] if r.get("subtype") else "") for r in chain))
    titles = [r for r in records if r.get("type") == "system" and r.get("subtype") == "custom_title"]
    if titles:
        p = titles[-1].get("systemPayload") or {}
        d["custom_title"] = p.get("customTitle")
        d["title_source"] = p.get("titleSource")
    raw = f.read_bytes()
    d["custom_title_compact"] = (b'"subtype":"custom_title"' in raw) if titles else None
    return d


def snapshot(store: Path) -> dict:
    out = {}
    for p in sorted((store / "projects").glob("*/chats/**/*")):
        if p.is_file():
            out[str(p.relative_to(store))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


class _Cd:
    def __init__(self, ns, cwd):
        self.ns, self.cwd = ns, cwd

    def wrap(self, argv, cwd=None):
        # judgelib.run_cmd passes its inner cwd (None here: this wrapper changes directory)
        if not (self.ns and self.ns.enabled and self.ns.overlays):
            return argv
        return self.ns.wrap(["sh", "-c", 'cd "$0" && exec "$@"', self.cwd] + argv, cwd=cwd)


def split_usage(load: dict):
    """Qwen replays usage as empty agent_message_chunks with _meta.usage: count apart."""
    ups = load.get("updates")
    if ups is None:
        return
    usage = sum(1 for u in ups if u.get("sessionUpdate") == "agent_message_chunk"
                and not ((u.get("content") or {}).get("text"))
                and isinstance((u.get("_meta") or {}).get("usage"), dict))
    if usage:
        load["usage_chunks"] = usage
        c = load["counts"]
        c["agent_message_chunk"] = c.get("agent_message_chunk", 0) - usage
        if not c["agent_message_chunk"]:
            c.pop("agent_message_chunk")


def main():
    ap = J.common_argparser(__doc__)
    ap.add_argument("--quiet", type=float, default=1.5,
                    help="seconds without a replayed update that end a load (default 1.5)")
    args = ap.parse_args()
    src = Path(args.home)
    scratch = J.Scratch("qwen", keep=args.keep)
    report = {
        "harness": "qwen",
        "judge": "qwen sessions list --json + qwen --acp session/list, session/load",
        "package": J.PACKAGES["qwen"],
        "installed": J.installed_version("@qwen-code/qwen-code"),
        "home": str(src.resolve()),
        "scratch": str(scratch.root),
        "errors": [],
    }
    ns = None
    try:
        store = J.copy_store(src, scratch.home, ".qwen", ["projects", "settings.json"])
        report["sanitized"] = sanitize(store)
        files = sorted(p for p in (store / "projects").glob("*/chats/**/*.jsonl"))
        on_disk = [scan_file(f, store) for f in files]
        report["on_disk"] = on_disk
        subagents = sorted(str(p.relative_to(store))
                           for p in (store / "projects").glob("*/subagents/*/*.jsonl"))
        if subagents:
            report["subagent_transcripts"] = subagents
        cwds = sorted({d["cwd"] for d in on_disk if isinstance(d.get("cwd"), str)})
        report["cwds"] = cwds
        ns = J.Namespace(scratch, cwds)
        report["cwd_handling"] = ns.describe()
        before = snapshot(store)
        # no key in the environment but a placeholder; its base URL points at nothing
        env = J.harness_env(scratch, {"OPENAI_API_KEY": DUMMY_KEY,
                                      "QWEN_DISABLE_AUTO_TITLE": "1"})
        qwen = J.bin_path("qwen")
        sessions: dict[str, dict] = {}

        def entry(sid):
            return sessions.setdefault(sid, {"id": sid, "on_disk": [], "listed": False,
                                             "listed_in": []})
        for d in on_disk:
            if d.get("id"):
                e = entry(d["id"])
                e["on_disk"].append(d["file"])
                e["cwd_on_disk"] = d.get("cwd")
        cli_lists = []
        for cwd in cwds:
            if not ns.usable(cwd):
                cli_lists.append({"cwd": cwd, "error": "cwd missing and cannot be overlaid"})
                continue
            r = J.run_cmd(["node", qwen, "sessions", "list", "--json", "--limit", "10000"],
                          env=env, cwd=cwd if not (ns.enabled and ns.overlays) else str(scratch.home),
                          timeout=args.timeout, scratch=scratch, ns=_Cd(ns, cwd))
            items = []
            for line in r["stdout"].splitlines():
                try:
                    o = json.loads(line)
                except ValueError:
                    continue
                if isinstance(o, dict) and o.get("sessionId"):
                    items.append(o)
            cli_lists.append({"cwd": cwd, "exit": r["exit"], "seconds": r["seconds"],
                              "count": len(items), "stderr_tail": r["stderr"][-1500:]})
            for o in items:
                e = entry(o["sessionId"])
                e["cli_listed"] = True
                e["cli_title"] = o.get("customTitle")
                e["cli_prompt"] = (o.get("prompt") or "")[:100]
                e["cli_cwd"] = o.get("cwd")
        report["cli_lists"] = cli_lists

        peer = J.JsonRpcProc(["node", qwen, "--acp"], env=env, cwd=str(scratch.home),
                             scratch=scratch, name="qwen-acp", ns=ns)
        try:
            res, err, secs, _ = J.acp_initialize(peer, timeout=args.timeout)
            if err:
                report["errors"].append({"initialize": err, "stderr": peer.stderr_tail()})
                return report
            caps = (res or {}).get("agentCapabilities") or {}
            report["initialize"] = {"seconds": secs, "agentInfo": (res or {}).get("agentInfo"),
                                    "loadSession": caps.get("loadSession"),
                                    "sessionCapabilities": caps.get("sessionCapabilities"),
                                    "authMethods": [m.get("id") for m in
                                                    (res or {}).get("authMethods") or []]}
            list_calls = []
            for cwd in cwds:
                listed, err, calls = J.acp_list(peer, cwd, timeout=args.timeout)
                list_calls.append({"cwd": cwd, "calls": calls, "error": err,
                                   "count": len(listed)})
                for s in listed:
                    e = entry(s["sessionId"])
                    e["listed"] = True
                    e["listed_in"].append(cwd)
                    e["title"] = s.get("title")
                    e["cwd"] = s.get("cwd")
                    e["updatedAt"] = s.get("updatedAt")
            report["list_calls"] = list_calls
            J.load_each(peer, ns, sessions.values(), caps, cwd_keys=("cwd", "cwd_on_disk"),
                        timeout=args.timeout, quiet=args.quiet, keep_raw=True, who="qwen --acp")
            for e in sessions.values():
                if isinstance(e.get("load"), dict) and e["load"].get("ok"):
                    split_usage(e["load"])
                    if args.no_raw:
                        e["load"].pop("updates", None)
        finally:
            peer.close()
            report["noise_on_stdout"] = peer.noise[:20]
        report["sessions"] = list(sessions.values())
        after = snapshot(store)
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


if __name__ == "__main__":
    t0 = time.monotonic()
    rep = main()
    rep["seconds_total"] = round(time.monotonic() - t0, 2)
    J.emit(rep)
