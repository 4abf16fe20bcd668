#!/usr/bin/env python3
"""Judge a Codex store with the real Codex, two ways:

* `codex app-server` (@openai/codex@0.171.0): `thread/list` (all cwds; once with the
  default interactive sources, once with every source kind) and
  `thread/read {includeTurns:true}` for every thread listed or found on disk;
  reports turns and item counts by type.
* the ACP view through @zed-industries/codex-acp@0.16.0: `authenticate` with a dummy
  OPENAI_API_KEY, `session/list` (without and per cwd) and `session/load`; reports
  counts per `sessionUpdate` kind + raw updates.

    judge_codex.py HOME [--keep] [--no-raw] [--timeout S] [--skip-acp] [--skip-app-server]

HOME holds `.codex/`, or is a CODEX_HOME itself (has `sessions/`). Each view runs on
its own fresh scratch copy (both write state_*.sqlite and friends into CODEX_HOME)."""

from __future__ import annotations

import collections
import re
import shutil
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import judgelib as J  # noqa: E402

ALL_SOURCE_KINDS = ["cli", "vscode", "exec", "appServer", "subAgent", "subAgentReview",
                    "subAgentCompact", "subAgentThreadSpawn", "subAgentOther", "unknown"]
# TOML tables (and their sub-tables) removed from config.toml in the scratch copy
STRIP_TABLES = ("mcp_servers", "plugins", "hooks", "otel", "notice", "marketplaces")
STRIP_KEYS = ("notify", "mcp_servers", "experimental_bearer_token", "chatgpt_base_url")


def strip_config(path: Path) -> list[str]:
    """Line-based removal of risky tables/keys (stdlib has no TOML writer)."""
    if not path.exists():
        return []
    done, out, skipping = [], [], False
    header = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
    lines = path.read_text().splitlines()
    i = 0
    top_level = True
    while i < len(lines):
        line = lines[i]
        m = header.match(line)
        if m:
            top_level = False
            key = m.group(1).strip().strip('"')
            skipping = key.split(".")[0].strip('"') in STRIP_TABLES
            if skipping:
                done.append(f"config.toml: dropped [{m.group(1).strip()}]")
        if not skipping:
            k = line.split("=", 1)[0].strip()
            if top_level and "=" in line and k in STRIP_KEYS:
                done.append(f"config.toml: dropped {k}")
                # skip a multi-line array/inline table value
                depth = line.count("[") + line.count("{") - line.count("]") - line.count("}")
                while depth > 0 and i + 1 < len(lines):
                    i += 1
                    depth += lines[i].count("[") + lines[i].count("{") \
                        - lines[i].count("]") - lines[i].count("}")
            else:
                out.append(line)
        i += 1
    path.write_text("\n".join(out) + "\n")
    return done


def relocate_state_db(store: Path) -> list[str]:
    """The thread index (`state_<N>.sqlite` `threads.rollout_path`) holds absolute paths
    of the original CODEX_HOME; in the scratch copy they would point at the original
    (or at nothing: paginated threads then fail "invalid paginated history lineage …
    missing source rollout"). Re-point each at the copied file, when it exists."""
    import sqlite3
    done = []
    for db in sorted(store.glob("state_*.sqlite")):
        try:
            con = sqlite3.connect(str(db), timeout=10)
            cols = [r[1] for r in con.execute('pragma table_info("threads")')]
            if "rollout_path" not in cols:
                con.close()
                continue
            moved = unresolved = 0
            for tid, path in con.execute("select id, rollout_path from threads").fetchall():
                if not path or str(path).startswith(str(store)):
                    continue
                new = None
                for anchor in ("/archived_sessions/", "/sessions/"):
                    i = path.rfind(anchor)
                    if i >= 0:
                        cand = store / path[i + 1:]
                        if cand.exists():
                            new = str(cand)
                        break
                if new:
                    con.execute("update threads set rollout_path=? where id=?", (new, tid))
                    moved += 1
                else:
                    unresolved += 1
            con.commit()
            con.close()
            done.append(f"{db.name}: re-pointed {moved} threads.rollout_path at the copy"
                        + (f", {unresolved} not found in the copy" if unresolved else ""))
        except sqlite3.Error as e:
            done.append(f"{db.name}: not relocated ({e})")
    return done


def sanitize(store: Path) -> list[str]:
    done = []
    for f in ("auth.json", ".credentials.json"):
        if (store / f).exists():
            J.rm(store / f)
            done.append(f"removed .codex/{f}")
    for d in ("plugins", ".tmp/plugins"):
        if (store / d).exists():
            J.rm(store / d)
            done.append(f"removed .codex/{d}/")
    done += strip_config(store / "config.toml")
    done += relocate_state_db(store)
    return done


UUID_RE = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl(\.zst)?$")


def scan(store: Path) -> list[dict]:
    out = []
    files = sorted(store.glob("sessions/**/rollout-*.jsonl")) + \
        sorted(store.glob("sessions/**/rollout-*.jsonl.zst")) + \
        sorted(store.glob("archived_sessions/**/rollout-*.jsonl"))
    for f in files:
        d = {"file": str(f.relative_to(store)),
             "archived": f.relative_to(store).parts[0] == "archived_sessions"}
        m = UUID_RE.search(f.name)
        d["file_uuid"] = m.group(1) if m else None
        if f.name.endswith(".zst"):
            if not shutil.which("zstd"):
                d["id"] = d["file_uuid"]
                d["note"] = "zstd-compressed; not scanned (no zstd binary); id from file name"
                out.append(d)
                continue
            d["note"] = "zstd-compressed; scanned through `zstd -dc`"
            raw_lines = subprocess_lines(["zstd", "-dc", str(f)])
        else:
            raw_lines = None
        types = collections.Counter()
        first_user_event_line = None
        lines = bad = 0
        meta = None
        first_type = None
        with (open(f, "rb") if raw_lines is None else _nullctx(raw_lines)) as fh:
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
                p = o.get("payload") if isinstance(o.get("payload"), dict) else {}
                first_type = first_type or t
                key = f"{t}:{p.get('type')}" if t in ("response_item", "event_msg") else t
                types[key] += 1
                if t == "session_meta" and meta is None:
                    meta = p
                if t == "event_msg" and p.get("type") == "user_message" \
                        and first_user_event_line is None:
                    first_user_event_line = lines
        d.update({
            "id": (meta or {}).get("id"),
            "cwd": (meta or {}).get("cwd"),
            "source": (meta or {}).get("source"),
            "first_record": first_type,
            "first_user_message_event_at_record": first_user_event_line,
            "lines": lines,
            "unparsable_lines": bad,
            "record_types": dict(types),
        })
        out.append(d)
    return out


class _nullctx:
    def __init__(self, v):
        self.v = v

    def __enter__(self):
        return self.v

    def __exit__(self, *a):
        return False


def subprocess_lines(argv) -> list[bytes]:
    import subprocess
    try:
        return subprocess.run(argv, capture_output=True, timeout=60).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return []


def turn_summary(thread: dict) -> dict:
    turns = thread.get("turns") or []
    items = collections.Counter()
    per_turn = []
    for t in turns:
        c = collections.Counter(i.get("type", "?") for i in (t.get("items") or []))
        items.update(c)
        per_turn.append({"id": t.get("id"), "status": t.get("status"), "items": dict(c)})
    return {"turn_count": len(turns), "item_counts": dict(items), "turns": per_turn}


def turn_summary_list(turns: list) -> dict:
    return turn_summary({"turns": turns})


def item_summary_list(items: list) -> dict:
    return {"item_count": len(items),
            "item_counts": dict(collections.Counter(
                ((i.get("item") or {}).get("type") or i.get("type") or "?") for i in items))}


def app_server_view(src: Path, args, report_errors: list) -> dict:
    scratch = J.Scratch("codex-app", keep=args.keep)
    view = {"package": J.PACKAGES["codex"], "installed": J.installed_version("@openai/codex"),
            "scratch": str(scratch.root)}
    peer = None
    try:
        store = J.copy_store(src, scratch.home, ".codex", ["sessions", "archived_sessions"])
        view["sanitized"] = sanitize(store)
        on_disk = scan(store)
        env = J.harness_env(scratch, {"CODEX_HOME": str(store)})
        peer = J.JsonRpcProc(["node", J.bin_path("codex"), "app-server"], env=env,
                             cwd=str(scratch.home), scratch=scratch, name="codex-app-server",
                             jsonrpc=False)
        res, err, secs, _ = peer.request("initialize", {
            "clientInfo": {"name": "asp-judge", "title": "asp judge", "version": "1"},
            "capabilities": {"experimentalApi": True}}, timeout=args.timeout)
        if err:
            report_errors.append({"app-server initialize": err, "stderr": peer.stderr_tail()})
            return view
        peer.notify("initialized")
        view["initialize"] = {"seconds": secs, "userAgent": (res or {}).get("userAgent")}

        def list_all(params):
            threads, cursor, calls = [], None, []
            for _ in range(100):
                p = dict(params, limit=100)
                if cursor:
                    p["cursor"] = cursor
                r, e, s, _ = peer.request("thread/list", p, timeout=args.timeout)
                calls.append({"params": p, "seconds": s, "error": e})
                if e:
                    return threads, e, calls
                threads += (r or {}).get("data") or []
                cursor = (r or {}).get("nextCursor")
                if not cursor:
                    break
            return threads, None, calls

        def paged(tid, method, params, summarize, args):
            data, cursor, secs = [], None, 0.0
            for _ in range(200):
                p = dict(params, limit=100)
                if cursor:
                    p["cursor"] = cursor
                r, err, sec, _ = peer.request(method, p, timeout=args.timeout)
                secs += sec
                if err:
                    return {"ok": False, "error": err, "seconds": round(secs, 2)}
                data += (r or {}).get("data") or []
                cursor = (r or {}).get("nextCursor")
                if not cursor:
                    break
            return {"ok": True, "seconds": round(secs, 2), **summarize(data)}

        listed, e1, c1 = list_all({})
        listed_any, e2, c2 = list_all({"sourceKinds": ALL_SOURCE_KINDS})
        listed_arch, e3, c3 = list_all({"archived": True, "sourceKinds": ALL_SOURCE_KINDS})
        cwds = sorted({d["cwd"] for d in on_disk if d.get("cwd")})
        listed_cwd, e4, c4 = list_all({"cwd": cwds}) if cwds else ([], None, [])
        view["list_calls"] = {"default": {"count": len(listed), "error": e1, "calls": c1},
                              "all_sources": {"count": len(listed_any), "error": e2, "calls": c2},
                              "archived": {"count": len(listed_arch), "error": e3, "calls": c3},
                              "cwd_filter": {"count": len(listed_cwd), "error": e4, "calls": c4}}
        threads: dict[str, dict] = {}

        def entry(tid):
            return threads.setdefault(tid, {"id": tid, "listed": False,
                                            "listed_by_cwd_filter": False,
                                            "listed_any_source": False,
                                            "listed_archived": False, "on_disk": []})
        for t in listed:
            e = entry(t["id"])
            e["listed"] = True
            e.update({k: t.get(k) for k in ("name", "preview", "cwd", "source", "historyMode",
                                             "createdAt", "updatedAt", "path")})
        for t in listed_any:
            e = entry(t["id"])
            e["listed_any_source"] = True
            for k in ("name", "preview", "cwd", "source", "historyMode", "path"):
                e.setdefault(k, t.get(k))
        for t in listed_arch:
            e = entry(t["id"])
            e["listed_archived"] = True
            for k in ("name", "preview", "cwd", "source", "historyMode", "path"):
                e.setdefault(k, t.get(k))
        for t in listed_cwd:
            entry(t["id"])["listed_by_cwd_filter"] = True
        for d in on_disk:
            if d.get("id"):
                entry(d["id"])["on_disk"].append(d["file"])
        for e in threads.values():
            r, err, s, _ = peer.request("thread/read", {"threadId": e["id"], "includeTurns": True},
                                        timeout=args.timeout)
            resumed = False
            if not err and not ((r or {}).get("thread") or {}).get("turns") \
                    and e.get("historyMode") == "paginated":
                # A paginated thread is read through its projection (thread_history_1.sqlite),
                # which Codex builds when it resumes the thread; a restored home has none yet.
                peer.request("thread/resume", {"threadId": e["id"]}, timeout=args.timeout)
                r, err, s, _ = peer.request("thread/read", {"threadId": e["id"], "includeTurns": True},
                                            timeout=args.timeout)
                resumed = True
            if err:
                e["read"] = {"ok": False, "error": err, "seconds": s}
            else:
                th = (r or {}).get("thread") or {}
                e["read"] = {"ok": True, "seconds": s, **turn_summary(th)}
                if resumed:
                    e["read"]["resumed"] = True
                for k in ("name", "preview", "cwd", "historyMode"):
                    e.setdefault(k, th.get(k))
                if not args.no_raw:
                    e["read"]["raw_turns"] = th.get("turns")
            # Paginated-history threads (historyMode "paginated") come back from
            # thread/read with no turns: page them with thread/turns/list and
            # thread/items/list too (legacy threads answer items/list "not supported").
            e["turns_list"] = paged(e["id"], "thread/turns/list",
                                    {"threadId": e["id"], "itemsView": "full",
                                     "sortDirection": "asc"}, turn_summary_list, args)
            e["items_list"] = paged(e["id"], "thread/items/list",
                                    {"threadId": e["id"], "sortDirection": "asc"},
                                    item_summary_list, args)
        # rollouts whose session_meta id could not be found: try the file-name uuid
        for d in on_disk:
            if not d.get("id") and d.get("file_uuid") and d["file_uuid"] not in threads:
                e = entry(d["file_uuid"])
                e["on_disk"].append(d["file"])
                r, err, s, _ = peer.request("thread/read",
                                            {"threadId": d["file_uuid"], "includeTurns": True},
                                            timeout=args.timeout)
                e["read"] = {"ok": err is None, "error": err, "seconds": s,
                             **(turn_summary((r or {}).get("thread") or {}) if not err else {})}
        view["on_disk"] = on_disk
        view["threads"] = list(threads.values())
        view["server_notifications"] = dict(collections.Counter(
            m.get("method") for _, m in peer.notifications))
        view["written_to_codex_home"] = sorted(
            p.name for p in store.iterdir() if not (Path(src) / p.name).exists()
            and not (Path(src) / ".codex" / p.name).exists())
        return view
    finally:
        if peer:
            peer.close()
            view["noise_on_stdout"] = peer.noise[:20]
        J.kill_all_started()
        scratch.cleanup()


def acp_view(src: Path, args, report_errors: list) -> dict:
    scratch = J.Scratch("codex-acp", keep=args.keep)
    view = {"package": J.PACKAGES["codex-acp"],
            "installed": J.installed_version("@zed-industries/codex-acp"),
            "scratch": str(scratch.root)}
    peer = ns = None
    try:
        store = J.copy_store(src, scratch.home, ".codex", ["sessions", "archived_sessions"])
        view["sanitized"] = sanitize(store)
        on_disk = scan(store)
        cwds = sorted({d["cwd"] for d in on_disk if d.get("cwd")})
        view["cwds"] = cwds
        ns = J.Namespace(scratch, cwds)
        view["cwd_handling"] = ns.describe()
        env = J.harness_env(scratch, {"CODEX_HOME": str(store), "OPENAI_API_KEY": "sk-asp-judge-dummy",
                                      "CODEX_API_KEY": "sk-asp-judge-dummy"})
        peer = J.JsonRpcProc(["node", J.bin_path("codex-acp")], env=env, cwd=str(scratch.home),
                             scratch=scratch, name="codex-acp", ns=ns)
        res, err, secs, _ = J.acp_initialize(peer, timeout=args.timeout)
        if err:
            report_errors.append({"codex-acp initialize": err, "stderr": peer.stderr_tail()})
            return view
        caps = (res or {}).get("agentCapabilities") or {}
        methods = [m.get("id") for m in (res or {}).get("authMethods") or []]
        view["initialize"] = {"seconds": secs, "agentInfo": (res or {}).get("agentInfo"),
                              "loadSession": caps.get("loadSession"),
                              "sessionCapabilities": caps.get("sessionCapabilities"),
                              "authMethods": methods}
        method = next((m for m in ("openai-api-key", "codex-api-key", "api-key") if m in methods),
                      methods[0] if methods else None)
        if method:
            r, e, s, _ = peer.request("authenticate", {"methodId": method}, timeout=args.timeout)
            view["authenticate"] = {"methodId": method, "error": e, "seconds": s}
        sessions: dict[str, dict] = {}

        def entry(sid):
            return sessions.setdefault(sid, {"id": sid, "on_disk": False, "listed": False,
                                             "listed_in": []})
        for d in on_disk:
            if d.get("id"):
                e = entry(d["id"])
                e["on_disk"] = True
                e["cwd_on_disk"] = d.get("cwd")
        list_calls = []
        for cwd in [None] + cwds:
            listed, err, calls = J.acp_list(peer, cwd, timeout=args.timeout)
            list_calls.append({"cwd": cwd, "count": len(listed), "error": err, "calls": calls})
            for s in listed:
                e = entry(s["sessionId"])
                e["listed"] = True
                if cwd is not None:
                    e["listed_in"].append(cwd)
                else:
                    e["listed_without_cwd"] = True
                e["title"] = s.get("title")
                e["cwd"] = s.get("cwd")
                e["updatedAt"] = s.get("updatedAt")
        view["list_calls"] = list_calls
        J.load_each(peer, ns, sessions.values(), caps, cwd_keys=("cwd", "cwd_on_disk"),
                    timeout=args.timeout, quiet=1.0, keep_raw=not args.no_raw, who="codex-acp")
        view["sessions"] = list(sessions.values())
        return view
    finally:
        if peer:
            peer.close()
            view["noise_on_stdout"] = peer.noise[:20]
        if ns:
            ns.finish()
        J.kill_all_started()
        scratch.cleanup()


def main():
    ap = J.common_argparser(__doc__)
    ap.add_argument("--skip-acp", action="store_true")
    ap.add_argument("--skip-app-server", action="store_true")
    args = ap.parse_args()
    src = Path(args.home)
    report = {"harness": "codex", "home": str(src.resolve()), "errors": []}
    if not args.skip_app_server:
        report["app_server"] = app_server_view(src, args, report["errors"])
    if not args.skip_acp:
        report["acp"] = acp_view(src, args, report["errors"])
    return report


if __name__ == "__main__":
    t0 = time.monotonic()
    rep = main()
    rep["seconds_total"] = round(time.monotonic() - t0, 2)
    J.emit(rep)
