#!/usr/bin/env python3
"""Judge the Codex converter with the real Codex (opt-in; run through scripts/judge-codex.sh).

For each case, `asp-unpack --to codex` writes into an empty scratch home, then:

* `codex app-server` (@openai/codex) must LIST every thread the answer names
  (`thread/list`, or `thread/list {archived:true}` for archived ones) and READ back every
  turn the converter wrote (`thread/read {includeTurns:true}`; paginated threads through
  `thread/turns/list`): turns, userMessage, agentMessage and reasoning items are compared with
  what the written rollout holds.
* `codex-acp` (@zed-industries/codex-acp, the ACP view of the same store; optional) must LOAD
  every thread and replay one `tool_call` per call item written (it replays response items,
  so a call Codex could not parse would be missing).

Cases: `restore` (samples/codex packed, then unpacked into an empty home), `migrated-state`
(samples/state.aspstate: a Claude Code session and a Codex session whose id is not a UUID),
`migrated-into-codex-home` (the same into a copy of samples/codex, whose state_5.sqlite gets
its `threads` rows from asp, checked before Codex runs), and `migrated-claude`
(samples/claude-code, once this build has a claude-code converter).
Paths under /home/dev are mapped into the scratch home (`--map-path`), so every cwd exists.

Safety: only scratch homes are used; harness processes get a fresh environment (no inherited
credentials, network endpoints pointed at a closed port, a dummy API key for codex-acp);
MCP servers are removed from the scratch config; every process started is ended by its own
process group. Prints a report; exits 1 when a check fails, 2 when the judge cannot run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOWHERE = "http://127.0.0.1:9"
STARTED: list[subprocess.Popen] = []


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def peers_dir() -> Path:
    return Path(os.environ.get("ASP_PEERS_DIR", Path.home() / ".cache/asp-peers"))


def codex_bin() -> Path:
    return peers_dir() / "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"


def codex_acp_bin() -> Path:
    return peers_dir() / "node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp"


def version_of(pkg: str) -> str:
    try:
        return json.loads((peers_dir() / "node_modules" / pkg / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "?"


def env_for(home: Path, extra: dict | None = None) -> dict:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TMPDIR": str(home / ".tmp"),
        "HTTP_PROXY": NOWHERE, "HTTPS_PROXY": NOWHERE, "ALL_PROXY": NOWHERE,
        "http_proxy": NOWHERE, "https_proxy": NOWHERE, "all_proxy": NOWHERE,
        "NO_PROXY": "localhost,127.0.0.1", "OPENAI_BASE_URL": NOWHERE + "/v1",
        "RUST_LOG": "warn",
    }
    (home / ".tmp").mkdir(exist_ok=True)
    env.update(extra or {})
    return env


def end(p: subprocess.Popen):
    """Ends a process this judge started, and its group."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(3)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Rpc:
    """Newline-delimited JSON-RPC over a child's stdio (`jsonrpc` field optional)."""

    def __init__(self, argv, env, cwd, jsonrpc: bool, stderr_path: Path):
        self.err = open(stderr_path, "w")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, env=env, cwd=cwd, start_new_session=True)
        STARTED.append(self.p)
        self.jsonrpc = jsonrpc
        self.next_id = 0
        self.buf = b""
        self.notes: list[dict] = []

    def send(self, obj):
        if self.jsonrpc:
            obj = {"jsonrpc": "2.0", **obj}
        self.p.stdin.write((json.dumps(obj) + "\n").encode())
        self.p.stdin.flush()

    def _read(self, timeout: float):
        end_at = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end_at - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if not r:
                return None
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            return {}

    def request(self, method, params, timeout=60.0):
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        end_at = time.monotonic() + timeout
        while time.monotonic() < end_at:
            m = self._read(end_at - time.monotonic())
            if m is None:
                break
            if m.get("id") == rid and ("result" in m or "error" in m):
                return m.get("result"), m.get("error")
            if "method" in m and "id" in m:
                # A request from the agent (permissions, fs): refuse it.
                self.send({"id": m["id"], "error": {"code": -32601, "message": "not supported by the judge"}})
            elif "method" in m:
                self.notes.append(m)
        return None, {"message": f"no answer to {method} within {timeout:.0f}s"}

    def drain(self, quiet: float):
        while True:
            m = self._read(quiet)
            if m is None:
                return
            if "method" in m and "id" not in m:
                self.notes.append(m)

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        end(self.p)
        self.err.close()


def run(argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def strip_mcp(config: Path):
    """Drops `[mcp_servers.*]` tables so no harness starts a server (line-based)."""
    if not config.exists():
        return
    out, skip = [], False
    for line in config.read_text().splitlines():
        m = re.match(r"^\s*\[\[?\s*\"?([A-Za-z0-9_-]+)", line)
        if m and line.lstrip().startswith("["):
            skip = m.group(1) == "mcp_servers"
        if not skip:
            out.append(line)
    config.write_text("\n".join(out) + "\n")


def rollout_facts(path: Path) -> dict:
    """What a written rollout holds: the turns and items Codex should read back."""
    data = path.read_bytes()
    if path.name.endswith(".zst"):
        data = run(["zstd", "-dc", str(path)]).stdout.encode() if shutil.which("zstd") else b""
    c = collections.Counter()
    meta = {}
    for raw in data.splitlines():
        try:
            o = json.loads(raw)
        except ValueError:
            continue
        t, p = o.get("type"), o.get("payload") or {}
        if t == "session_meta" and not meta:
            meta = p
        if t == "event_msg":
            pt = p.get("type")
            if pt in ("task_started", "turn_started"):
                c["turns"] += 1
            elif pt == "user_message":
                c["userMessage"] += 1
            elif pt == "agent_message":
                c["agentMessage"] += 1
            elif pt == "agent_reasoning":
                c["reasoning"] += 1
            elif pt == "item_completed":
                kind = (p.get("item") or {}).get("type")
                key = {"UserMessage": "userMessage", "AgentMessage": "agentMessage",
                       "Reasoning": "reasoning"}.get(kind)
                if key:
                    c[key] += 1
        # codex-acp 0.16 replays these as tool calls (update_plan included); it does not
        # replay tool_search_call (Codex's internal deferred-tool discovery).
        if t == "response_item" and p.get("type") in (
                "function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            c["calls"] += 1
    return {"cwd": meta.get("cwd"), "paginated": meta.get("history_mode") == "paginated",
            "archived": "archived_sessions" in path.parts, **c}


def find_rollout(codex_home: Path, tid: str) -> Path | None:
    for p in sorted(codex_home.glob("**/rollout-*")):
        if p.name.endswith((f"{tid}.jsonl", f"{tid}.jsonl.zst")):
            return p
    return None


def app_server(home: Path, expected: dict, timeout: float) -> dict:
    rpc = Rpc([str(codex_bin()), "app-server"], env_for(home), str(home), False,
              home.parent / f"{home.name}.app-server.stderr")
    out = {}
    try:
        _, err = rpc.request("initialize", {"clientInfo": {"name": "asp-judge", "version": "1"},
                                            "capabilities": {"experimentalApi": True}}, timeout)
        if err:
            return {"error": err}
        rpc.send({"method": "initialized"})

        def list_all(params):
            ids, cursor = set(), None
            for _ in range(50):
                p = dict(params, limit=100, **({"cursor": cursor} if cursor else {}))
                res, err = rpc.request("thread/list", p, timeout)
                if err:
                    break
                ids |= {t["id"] for t in (res or {}).get("data") or []}
                cursor = (res or {}).get("nextCursor")
                if not cursor:
                    break
            return ids
        listed, archived = list_all({}), list_all({"archived": True})
        for tid, facts in expected.items():
            r = {"listed": tid in (archived if facts["archived"] else listed)}
            res, err = rpc.request("thread/read", {"threadId": tid, "includeTurns": True}, timeout)
            turns = ((res or {}).get("thread") or {}).get("turns") or []
            if not err and not turns and facts["paginated"]:
                # A paginated thread is read through its projection (thread_history_1.sqlite),
                # a cache Codex builds when it resumes the thread; a restored home has none yet.
                r["resumed"] = True
                _, err = rpc.request("thread/resume", {"threadId": tid}, timeout)
                res, err2 = rpc.request("thread/read", {"threadId": tid, "includeTurns": True}, timeout)
                turns = ((res or {}).get("thread") or {}).get("turns") or []
                err = err or err2
            items = collections.Counter(i.get("type") for t in turns for i in t.get("items") or [])
            r.update({"read_error": (err or {}).get("message"), "turns": len(turns),
                      "userMessage": items["userMessage"], "agentMessage": items["agentMessage"],
                      "reasoning": items["reasoning"]})
            out[tid] = r
        return out
    finally:
        rpc.close()


def codex_acp(home: Path, expected: dict, timeout: float) -> dict:
    env = env_for(home, {"OPENAI_API_KEY": "sk-asp-judge-dummy", "CODEX_API_KEY": "sk-asp-judge-dummy"})
    rpc = Rpc([str(codex_acp_bin())], env, str(home), True, home.parent / f"{home.name}.codex-acp.stderr")
    out = {}
    try:
        res, err = rpc.request("initialize", {"protocolVersion": 1, "clientInfo": {"name": "asp-judge", "version": "1"},
                                              "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                                                     "terminal": False}}, timeout)
        if err:
            return {"error": err}
        methods = [m.get("id") for m in (res or {}).get("authMethods") or []]
        method = next((m for m in ("openai-api-key", "codex-api-key", "api-key") if m in methods), None)
        if method:
            rpc.request("authenticate", {"methodId": method}, timeout)
        for tid, facts in expected.items():
            if facts["archived"]:
                out[tid] = {"skipped": "archived (codex-acp loads only live threads)"}
                continue
            start = len(rpc.notes)
            _, err = rpc.request("session/load", {"sessionId": tid, "cwd": facts["cwd"], "mcpServers": []}, timeout)
            rpc.drain(1.0)
            ups = [n["params"]["update"] for n in rpc.notes[start:]
                   if n.get("method") == "session/update" and n["params"].get("sessionId") == tid]
            kinds = collections.Counter(u.get("sessionUpdate") for u in ups)
            out[tid] = {"load_error": (err or {}).get("message"), "tool_call": kinds["tool_call"],
                        "user_message_chunk": kinds["user_message_chunk"],
                        "agent_message_chunk": kinds["agent_message_chunk"]}
        return out
    finally:
        rpc.close()


def db_ids(home: Path) -> set[str] | None:
    """Thread ids in the home's `state_<N>.sqlite`, or None without one."""
    import sqlite3
    dbs = sorted((home / ".codex").glob("state_*.sqlite"))
    if not dbs:
        return None
    con = sqlite3.connect(f"file:{dbs[-1]}?mode=ro", uri=True)
    try:
        return {r[0] for r in con.execute("SELECT id FROM threads")}
    finally:
        con.close()


def unpack_case(name: str, bundle: Path, scratch: Path, asp_bin: Path, seed: Path | None = None) -> dict:
    home = scratch / name
    if seed:
        shutil.copytree(seed, home, symlinks=True)
    else:
        home.mkdir()
    r = run([str(asp_bin / "asp-unpack"), str(bundle), "--to", "codex", "--home", str(home),
             "--map-path", f"/home/dev={home}", "--json", "-q"])
    if r.returncode not in (0, 3):
        return {"error": f"asp-unpack exit {r.returncode}: {r.stderr.strip()}"}
    answer = json.loads(r.stdout)
    strip_mcp(home / ".codex/config.toml")
    in_db = db_ids(home)
    expected = {}
    for old, tid in sorted(answer["sessions"].items()):
        path = find_rollout(home / ".codex", tid)
        if path is None:
            return {"error": f"no rollout written for {old} → {tid}"}
        facts = rollout_facts(path)
        facts["from"] = old
        if in_db is not None:
            facts["row_by_asp"] = tid in in_db
        if facts["cwd"]:
            Path(facts["cwd"]).mkdir(parents=True, exist_ok=True)
        expected[tid] = facts
    return {"home": home, "answer": answer, "expected": expected}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=str(ROOT / "target/debug"), help="directory with asp-pack and asp-unpack")
    ap.add_argument("--keep", action="store_true", help="keep the scratch homes")
    ap.add_argument("--skip-acp", action="store_true", help="skip the codex-acp view")
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    asp_bin = Path(args.bin)
    if not codex_bin().exists():
        log(f"judge: no Codex binary at {codex_bin()} (install @openai/codex@0.171.0 into ASP_PEERS_DIR)")
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="asp-judge-codex-"))
    failures = []
    try:
        cases = []
        bundle = scratch / "codex.aspstate"
        r = run([str(asp_bin / "asp-pack"), "--from", "codex", "--home", str(ROOT / "samples/codex"),
                 "-o", str(bundle), "-q"])
        cases.append(("restore", bundle if r.returncode == 0 else None, r.stderr.strip()))
        cases.append(("migrated-state", ROOT / "samples/state.aspstate", ""))
        # Into a home that already has Codex's thread index (samples/codex, state_5.sqlite at
        # migration 64): asp adds the rows itself.
        cases.append(("migrated-into-codex-home", ROOT / "samples/state.aspstate", ""))
        claude = scratch / "claude.aspstate"
        r = run([str(asp_bin / "asp-pack"), "--from", "claude-code", "--home", str(ROOT / "samples/claude-code"),
                 "-o", str(claude), "-q"])
        why = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr.strip())
        cases.append(("migrated-claude", claude if r.returncode in (0, 3) and claude.exists() else None,
                      why))

        print(f"Codex {version_of('@openai/codex')} app-server" +
              ("" if args.skip_acp else f"; codex-acp {version_of('@zed-industries/codex-acp')}"))
        for name, src, why in cases:
            print(f"\n== {name}")
            if src is None:
                print(f"   skipped: {why or 'no bundle'}")
                continue
            seed = ROOT / "samples/codex" if name == "migrated-into-codex-home" else None
            case = unpack_case(name, src, scratch, asp_bin, seed)
            if "error" in case:
                print(f"   FAIL {case['error']}")
                failures.append(f"{name}: {case['error']}")
                continue
            ans = case["answer"]
            print(f"   asp-unpack: taken {','.join(ans['taken'])}; {len(ans['notTaken'])} not taken; "
                  f"sessions {json.dumps(ans['sessions'])}")
            view = app_server(case["home"], case["expected"], args.timeout)
            acp = {} if args.skip_acp else codex_acp(case["home"], case["expected"], args.timeout)
            for tid, want in case["expected"].items():
                got = view.get(tid, {})
                checks = [("listed", got.get("listed") is True),
                          ("read", not got.get("read_error"))]
                for k in ("turns", "userMessage", "agentMessage", "reasoning"):
                    checks.append((k, got.get(k) == want.get(k, 0)))
                line = (f"   {tid} ({want['from']}{', archived' if want['archived'] else ''}"
                        f"{', paginated' if want['paginated'] else ''}): listed={got.get('listed')} "
                        f"turns {got.get('turns')}/{want.get('turns', 0)} "
                        f"user {got.get('userMessage')}/{want.get('userMessage', 0)} "
                        f"agent {got.get('agentMessage')}/{want.get('agentMessage', 0)} "
                        f"reasoning {got.get('reasoning')}/{want.get('reasoning', 0)}")
                if got.get("read_error"):
                    line += f" read error: {got['read_error']}"
                if "row_by_asp" in want:
                    checks.append(("index row", want["row_by_asp"]))
                    line += f" | threads row added by asp: {want['row_by_asp']}"
                if got.get("resumed"):
                    line += " (read after thread/resume built its projection)"
                if acp and acp.get(tid, {}).get("skipped"):
                    line += f" | codex-acp: {acp[tid]['skipped']}"
                elif acp:
                    a = acp.get(tid, {})
                    checks.append(("acp load", not a.get("load_error")))
                    checks.append(("acp tool_call", a.get("tool_call") == want.get("calls", 0)))
                    line += f" | codex-acp tool_call {a.get('tool_call')}/{want.get('calls', 0)}"
                    if a.get("load_error"):
                        line += f" load error: {a['load_error']}"
                bad = [k for k, ok in checks if not ok]
                print(("   FAIL " if bad else "   ok   ") + line.strip() + (f"  [{', '.join(bad)}]" if bad else ""))
                if bad:
                    failures.append(f"{name} {tid}: {', '.join(bad)}")
        print(f"\n{'PASS' if not failures else 'FAIL'}: {len(failures)} failing check(s)")
        for f in failures:
            print(f"   {f}")
        return 1 if failures else 0
    finally:
        for p in STARTED:
            end(p)
        if args.keep:
            log(f"judge: scratch kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
