"""Shared helpers for the opt-in harness judges (Python 3.11 stdlib only).

A judge runs a REAL harness (installed by install.sh) against a scratch COPY of a
native store and reports what that harness lists and replays. This module holds:

* scratch-home preparation (copy, strip credentials / MCP / hooks / plugins),
* the minimal, credential-free environment every harness process gets,
* an optional private mount namespace that overlays the sessions' cwds, so that a
  cwd that does not exist on this machine (e.g. /home/dev/shop) can be created and a
  real project dir is never written to,
* a line-delimited JSON-RPC client over stdio (ACP, and Codex app-server which omits
  the "jsonrpc" field), with per-call timeouts and wait-for-quiet replay collection,
* process-group cleanup for exactly the processes a judge started.

See README.md in this directory for the traps each of these works around.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS_DIR = Path(os.environ.get("ASP_PEERS_DIR") or Path.home() / ".cache" / "asp-peers")
BIN_DIR = PEERS_DIR / "node_modules" / ".bin"

PACKAGES = {
    "claude": "@zed-industries/claude-agent-acp@0.23.1",
    "codex": "@openai/codex@0.171.0",
    "codex-acp": "@zed-industries/codex-acp@0.16.0",
    "gemini": "@google/gemini-cli@0.61.0",
    "opencode": "opencode-ai@1.18.33",
    "copilot": "@github/copilot@1.0.102",
    "pi": "@mariozechner/pi-coding-agent@0.73.1",
    "pi-acp": "pi-acp@0.0.24",
    "qwen": "@qwen-code/qwen-code@0.24.4",
}

# Where "networked" things are pointed: the discard port on loopback, which refuses
# connections at once. Nothing here has credentials anyway.
NOWHERE = "http://127.0.0.1:9"

# Every variable that could carry a real credential or redirect a harness is simply
# not passed: harness processes get a fresh environment built by harness_env().


def log(*a):
    print("[judge]", *a, file=sys.stderr, flush=True)


def bin_path(name: str) -> str:
    p = BIN_DIR / name
    if not p.exists():
        raise SystemExit(
            f"judge: {p} not found; run scripts/judges/install.sh first "
            f"(ASP_PEERS_DIR={PEERS_DIR})"
        )
    return str(p)


def installed_version(pkg_name: str) -> str | None:
    pj = PEERS_DIR / "node_modules" / pkg_name / "package.json"
    try:
        return json.loads(pj.read_text()).get("version")
    except OSError:
        return None


# ----------------------------------------------------------------------------------
# scratch homes


class Scratch:
    """A scratch directory holding `home/` (the copied store) and judge working files."""

    def __init__(self, harness: str, keep: bool):
        base = os.environ.get("ASP_JUDGE_SCRATCH")
        if base:
            Path(base).mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix=f"asp-judge-{harness}-", dir=base or None))
        self.home = self.root / "home"
        self.home.mkdir()
        self.tmp = self.root / "tmp"
        self.tmp.mkdir()
        self.logs = self.root / "logs"
        self.logs.mkdir()
        self.keep = keep
        self.ns = None  # Namespace, set by judges that need cwds

    def cleanup(self):
        if self.keep:
            return
        # Files written by harnesses may be read-only; make them writable first.
        for dirpath, dirnames, filenames in os.walk(self.root):
            for n in dirnames + filenames:
                full = os.path.join(dirpath, n)
                if os.path.islink(full):
                    continue
                try:
                    os.chmod(full, 0o700)
                except OSError:
                    pass
        shutil.rmtree(self.root, ignore_errors=True)


def copy_store(src_home: Path, dst_home: Path, store: str, markers: list[str],
               extra_files: tuple[str, ...] = ()) -> Path:
    """Copy `<src_home>/<store>` (or src_home itself if it *is* the store, i.e. holds
    one of `markers`) to `<dst_home>/<store>`. Returns the copied store dir."""
    src_home = src_home.resolve()
    if (src_home / store).is_dir():
        src = src_home / store
    elif any((src_home / m).exists() for m in markers):
        src = src_home
    else:
        raise SystemExit(
            f"judge: {src_home} has neither {store}/ nor any of {markers}: not a {store} home"
        )
    dst = dst_home / store
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dst, symlinks=True, ignore_dangling_symlinks=True)
    for f in extra_files:  # home-level files next to the store (e.g. ~/.claude.json)
        for cand in (src_home / f, src / f):
            if cand.is_file():
                shutil.copy2(cand, dst_home / f)
                break
    return dst


def rm(path: Path):
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def strip_json_comments(text: str) -> str:
    """Remove // and /* */ comments outside strings (settings.json may be JSONC)."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        else:
            out.append(c)
        i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))  # trailing commas


def load_json_file(path: Path, default=None):
    try:
        text = path.read_text()
    except OSError:
        return default
    try:
        return json.loads(text)
    except ValueError:
        try:
            return json.loads(strip_json_comments(text))
        except ValueError:
            return default


def write_json_file(path: Path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) + "\n")


def read_jsonl(path: Path):
    """Yield parsed objects of a JSONL file, skipping unparsable lines (as harnesses do)."""
    try:
        with open(path, "rb") as f:
            for raw in f:
                raw = raw.strip()
                if not raw:
                    continue
                try:
                    yield json.loads(raw)
                except ValueError:
                    continue
    except OSError:
        return


# ----------------------------------------------------------------------------------
# environment


def harness_env(scratch: Scratch, extra: dict | None = None) -> dict:
    """A fresh environment: no inherited credentials, HOME and XDG dirs in the scratch
    copy, network endpoints and proxies pointed at a refusing loopback port."""
    home = str(scratch.home)
    node_dir = os.path.dirname(shutil.which("node") or "/usr/bin/node")
    env = {
        "PATH": ":".join(dict.fromkeys([node_dir, "/usr/local/bin", "/usr/bin", "/bin"])),
        "HOME": home,
        "USER": os.environ.get("USER", "root"),
        "LOGNAME": os.environ.get("LOGNAME", "root"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TMPDIR": str(scratch.tmp),
        "XDG_CONFIG_HOME": f"{home}/.config",
        "XDG_DATA_HOME": f"{home}/.local/share",
        "XDG_CACHE_HOME": f"{home}/.cache",
        "XDG_STATE_HOME": f"{home}/.local/state",
        # point anything networked at nothing
        "HTTP_PROXY": NOWHERE, "HTTPS_PROXY": NOWHERE, "ALL_PROXY": NOWHERE,
        "http_proxy": NOWHERE, "https_proxy": NOWHERE, "all_proxy": NOWHERE,
        # loopback stays direct: `opencode acp` talks to its own in-process HTTP server
        # and fails with "OpenCode service failure" if that goes through the proxy
        "NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
        "ANTHROPIC_BASE_URL": NOWHERE,
        "OPENAI_BASE_URL": NOWHERE + "/v1",
        # NOT GOOGLE_GEMINI_BASE_URL: Gemini CLI 0.61 then picks the "gateway" auth
        # type and --list-sessions exits 41 "Invalid auth method selected."
        # quieter harnesses
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }
    if extra:
        env.update(extra)
    return env


# ----------------------------------------------------------------------------------
# cwds and the private mount namespace


def _mount_points() -> list[str]:
    pts = []
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            mp = line.split()[4]
            pts.append(mp.encode().decode("unicode_escape"))
    except OSError:
        pass
    return pts


def _is_under(p: str, root: str) -> bool:
    return p == root or p.startswith(root.rstrip("/") + "/")


class Namespace:
    """Runs harness commands in a private mount namespace (`unshare -m`) where each
    session cwd sits on an overlayfs whose upper layer is in the scratch dir: missing
    cwds are created there (never on the real filesystem) and whatever a harness
    writes into a cwd lands in the scratch dir.

    A cwd can only be covered if some ancestor (the cwd itself when it exists) is not
    "/", contains no other mount point and does not contain the scratch or peers dir.
    Uncoverable existing cwds are used as they are (the harness may write into them);
    uncoverable missing cwds are reported and the sessions in them are not loaded
    (set ASP_JUDGE_MKDIR=1 to create them for real instead)."""

    def __init__(self, scratch: Scratch, cwds: list[str]):
        self.scratch = scratch
        self.cwds = sorted({c for c in cwds if c and c.startswith("/")})
        self.overlays: list[str] = []   # lower dirs overlaid (each over itself)
        self.missing: list[str] = []    # cwds that do not exist on the real fs
        self.uncovered_missing: list[str] = []
        self.real_mkdirs: list[str] = []
        self.notes: list[str] = []
        self.enabled = False
        if os.environ.get("ASP_JUDGE_NO_NAMESPACE") != "1":
            self.enabled = self._probe()
        mounts = _mount_points()
        protect = [str(scratch.root), str(PEERS_DIR)]
        roots = set()
        for c in self.cwds:
            exists = os.path.isdir(c)
            if not exists:
                self.missing.append(c)
            anc = c
            while not os.path.isdir(anc):
                anc = os.path.dirname(anc)
            anc = os.path.realpath(anc)
            ok = (
                self.enabled
                and anc != "/"
                and not any(_is_under(m, anc) and m != anc for m in mounts)
                and not any(_is_under(p, anc) for p in protect)
            )
            if ok:
                roots.add(anc)
            elif not exists:
                self.uncovered_missing.append(c)
            else:
                self.notes.append(f"cwd {c} is used as it is (not overlaid)")
        # keep only the outermost roots
        for r in sorted(roots, key=len):
            if not any(_is_under(r, o) for o in self.overlays):
                self.overlays.append(r)
        if self.uncovered_missing and os.environ.get("ASP_JUDGE_MKDIR") == "1":
            for c in self.uncovered_missing:
                top = c
                while not os.path.isdir(os.path.dirname(top)):
                    top = os.path.dirname(top)
                os.makedirs(c, exist_ok=True)
                self.real_mkdirs.append(top)
            self.notes.append(f"created real dirs (ASP_JUDGE_MKDIR=1): {self.real_mkdirs}")
            self.uncovered_missing = []

    @staticmethod
    def _probe() -> bool:
        if not shutil.which("unshare") or os.geteuid() != 0:
            return False
        try:
            r = subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                               capture_output=True, timeout=10)
            return r.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def usable(self, cwd: str) -> bool:
        return cwd not in self.uncovered_missing

    def _layer(self, i: int) -> tuple[Path, Path]:
        up = self.scratch.root / "overlay" / str(i) / "upper"
        wk = self.scratch.root / "overlay" / str(i) / "work"
        up.mkdir(parents=True, exist_ok=True)
        wk.mkdir(parents=True, exist_ok=True)
        return up, wk

    def upper_path(self, path: str) -> Path | None:
        """The host path where a file must be put to appear at `path` inside the
        namespace (in the overlay's upper layer), or None when `path` is not overlaid.
        Used to give a missing project dir what a harness needs to recognise it (e.g.
        a `.git` holding OpenCode's project id) without touching the real filesystem."""
        if not self.enabled:
            return None
        for i, lower in enumerate(self.overlays):
            if _is_under(path, lower):
                up, _ = self._layer(i)
                rel = os.path.relpath(path, lower)
                return up if rel == "." else up / rel
        return None

    def wrap(self, argv: list[str], cwd: str | None = None) -> list[str]:
        """argv run inside the namespace (in `cwd` there, when given)."""
        if not self.enabled or not self.overlays:
            return argv if cwd is None else ["sh", "-c", 'cd "$0" && exec "$@"', cwd] + argv
        lines = ["set -e"]
        for i, lower in enumerate(self.overlays):
            up, wk = self._layer(i)
            lines.append(
                f"mount -t overlay asp-judge -o lowerdir={_q(lower)},upperdir={_q(str(up))},"
                f"workdir={_q(str(wk))} {_q(lower)}"
            )
        for c in self.missing:
            if c not in self.uncovered_missing:
                lines.append(f"mkdir -p {_q(c)}")
        if cwd is not None:
            lines.append(f"cd {_q(cwd)}")
        lines.append('exec "$@"')
        return ["unshare", "-m", "--propagation", "private", "sh", "-c", "\n".join(lines),
                "asp-judge-ns"] + argv

    def finish(self):
        for top in self.real_mkdirs:
            # remove only empty dirs we created
            for dirpath, _, _ in sorted(os.walk(top), key=lambda t: -len(t[0])):
                try:
                    os.rmdir(dirpath)
                except OSError:
                    pass

    def describe(self) -> dict:
        return {
            "namespace": self.enabled,
            "overlaid": self.overlays,
            "missing_cwds": self.missing,
            "unusable_cwds": self.uncovered_missing,
            "notes": self.notes,
        }


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


# ----------------------------------------------------------------------------------
# processes


_started: list[subprocess.Popen] = []


def kill_group(p: subprocess.Popen, grace: float = 3.0):
    """SIGTERM the process group we created for `p` (start_new_session), then SIGKILL."""
    # The leader may be gone while children (e.g. the Claude Code CLI an adapter
    # spawned) still run in the group, so signal the group either way.
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass


def kill_all_started():
    for p in list(_started):
        kill_group(p, grace=1.0)


def _on_signal(signum, frame):
    kill_all_started()
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


def run_cmd(argv, *, env, cwd, timeout, scratch: Scratch, ns: Namespace | None = None,
            stdin_data: bytes = b"", inner_cwd: str | None = None) -> dict:
    """Run a one-shot command in its own process group with a timeout (`inner_cwd`:
    the directory it runs in inside the namespace)."""
    shown = list(argv)
    if ns:
        argv = ns.wrap(argv, cwd=inner_cwd)
    elif inner_cwd is not None:
        cwd = inner_cwd
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True)
    _started.append(p)
    timed_out = False
    try:
        out, err = p.communicate(stdin_data, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(p, grace=1.0)
        out, err = p.communicate()
    finally:
        kill_group(p, grace=0.5)  # anything left in the group
        _started.remove(p)
    return {
        "argv": shown,
        "cwd": inner_cwd or cwd,
        "exit": p.returncode,
        "timed_out": timed_out,
        "seconds": round(time.monotonic() - t0, 2),
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
    }


class RpcError(Exception):
    pass


class JsonRpcProc:
    """Line-delimited JSON-RPC peer over a child's stdio.

    `jsonrpc=False` omits the "jsonrpc":"2.0" field (Codex app-server). Requests from
    the agent are answered: session/request_permission -> cancelled, anything else ->
    method not found. Notifications are kept in arrival order with a timestamp."""

    def __init__(self, argv, *, env, cwd, scratch: Scratch, name: str,
                 ns: Namespace | None = None, jsonrpc: bool = True):
        self.name = name
        self.jsonrpc = jsonrpc
        self.stderr_path = scratch.logs / f"{name}.stderr.log"
        self._stderr = open(self.stderr_path, "ab")
        argv = ns.wrap(argv) if ns else argv
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self._stderr, cwd=cwd, env=env,
                                  start_new_session=True)
        _started.append(self.p)
        self._id = 0
        self._lock = threading.Lock()
        self._cv = threading.Condition()
        self._responses: dict = {}
        self.notifications: list[tuple[float, dict]] = []
        self.agent_requests: list[dict] = []
        self.noise: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- wire
    def _send(self, obj):
        if self.jsonrpc:
            obj = {"jsonrpc": "2.0", **obj}
        data = (json.dumps(obj) + "\n").encode()
        with self._lock:
            try:
                self.p.stdin.write(data)
                self.p.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as e:
                raise RpcError(f"{self.name}: write failed ({e}); process exit {self.p.poll()}")

    def _read(self):
        for raw in self.p.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.noise.append(line[:500])
                continue
            if not isinstance(msg, dict):
                self.noise.append(line[:500])
                continue
            if "method" in msg and "id" in msg:
                self.agent_requests.append(msg)
                self._answer_agent_request(msg)
            elif "method" in msg:
                with self._cv:
                    self.notifications.append((time.monotonic(), msg))
                    self._cv.notify_all()
            elif "id" in msg:
                with self._cv:
                    self._responses[msg["id"]] = (time.monotonic(), msg)
                    self._cv.notify_all()
        with self._cv:
            self._cv.notify_all()

    def _answer_agent_request(self, msg):
        if msg["method"] == "session/request_permission":
            reply = {"id": msg["id"], "result": {"outcome": {"outcome": "cancelled"}}}
        else:
            reply = {"id": msg["id"],
                     "error": {"code": -32601, "message": f"judge: {msg['method']} not supported"}}
        try:
            self._send(reply)
        except RpcError:
            pass

    # -- API
    def notify(self, method, params=None):
        obj = {"method": method}
        if params is not None:
            obj["params"] = params
        self._send(obj)

    def request(self, method, params=None, timeout=30.0):
        """Returns (result, error, seconds, t_response). error is the JSON-RPC error
        object, or {"code": "timeout"|"exited", ...} for local failures."""
        with self._lock:
            self._id += 1
            rid = self._id
        obj = {"id": rid, "method": method}
        if params is not None:
            obj["params"] = params
        t0 = time.monotonic()
        try:
            self._send(obj)
        except RpcError as e:
            return None, {"code": "exited", "message": str(e)}, 0.0, time.monotonic()
        deadline = t0 + timeout
        with self._cv:
            while rid not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None, {"code": "timeout", "message": f"{method}: no answer in {timeout}s"}, \
                        round(time.monotonic() - t0, 2), time.monotonic()
                if self.p.poll() is not None and not self._reader.is_alive():
                    return None, {"code": "exited",
                                  "message": f"{self.name} exited {self.p.returncode}"}, \
                        round(time.monotonic() - t0, 2), time.monotonic()
                self._cv.wait(min(left, 0.2))
            t_resp, msg = self._responses.pop(rid)
        return msg.get("result"), msg.get("error"), round(t_resp - t0, 2), t_resp

    def mark(self) -> int:
        with self._cv:
            return len(self.notifications)

    def wait_quiet(self, pred, quiet: float, max_wait: float):
        """Wait until no notification matching pred arrived for `quiet` seconds
        (bounded by max_wait)."""
        t_end = time.monotonic() + max_wait
        last = time.monotonic()
        seen = None
        while True:
            with self._cv:
                n = sum(1 for _, m in self.notifications if pred(m))
                if n != seen:
                    seen = n
                    last = time.monotonic()
                now = time.monotonic()
                if now - last >= quiet or now >= t_end:
                    return
                self._cv.wait(min(quiet - (now - last), t_end - now, 0.2))

    def stderr_tail(self, n=15) -> list[str]:
        try:
            self._stderr.flush()
            lines = self.stderr_path.read_text(errors="replace").splitlines()
            return lines[-n:]
        except OSError:
            return []

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        kill_group(self.p)
        if self.p in _started:
            _started.remove(self.p)
        self._stderr.close()


# ----------------------------------------------------------------------------------
# ACP


ACP_CLIENT_CAPS = {
    "fs": {"readTextFile": False, "writeTextFile": False},
    "terminal": False,
}


def acp_initialize(peer: JsonRpcProc, timeout=60.0):
    return peer.request("initialize", {
        "protocolVersion": 1,
        "clientCapabilities": ACP_CLIENT_CAPS,
        "clientInfo": {"name": "asp-judge", "version": "1"},
    }, timeout=timeout)


def acp_list(peer: JsonRpcProc, cwd: str | None, timeout=60.0, max_pages=50):
    """session/list (all pages). Returns (sessions, error, calls)."""
    sessions, cursor, calls = [], None, []
    for _ in range(max_pages):
        params = {}
        if cwd is not None:
            params["cwd"] = cwd
        if cursor:
            params["cursor"] = cursor
        res, err, secs, _ = peer.request("session/list", params, timeout=timeout)
        calls.append({"params": params, "seconds": secs, "error": err,
                      "count": len((res or {}).get("sessions") or [])})
        if err:
            return sessions, err, calls
        sessions.extend((res or {}).get("sessions") or [])
        cursor = (res or {}).get("nextCursor")
        if not cursor:
            break
    return sessions, None, calls


def acp_load(peer: JsonRpcProc, session_id: str, cwd: str, *, timeout=90.0,
             quiet=1.5, max_quiet_wait=30.0, keep_raw=True) -> dict:
    """session/load and collect the replay: every session/update for session_id from
    the request until `quiet` seconds without one (some agents answer the load before
    the replay ends, or send available_commands_update from a timer)."""
    start = peer.mark()

    def is_ours(m):
        return m.get("method") == "session/update" and \
            (m.get("params") or {}).get("sessionId") == session_id

    res, err, secs, t_resp = peer.request(
        "session/load", {"sessionId": session_id, "cwd": cwd, "mcpServers": []}, timeout=timeout)
    if not err:
        peer.wait_quiet(is_ours, quiet=quiet, max_wait=max_quiet_wait)
    with peer._cv:
        mine = [(t, m) for t, m in peer.notifications[start:] if is_ours(m)]
        other = [m for t, m in peer.notifications[start:] if not is_ours(m)]
    updates = [m["params"]["update"] for _, m in mine]
    after = sum(1 for t, _ in mine if t > t_resp)
    out = {
        "ok": err is None,
        "error": err,
        "seconds": secs,
        "count": len(updates),
        "counts": dict(collections.Counter(u.get("sessionUpdate", "?") for u in updates)),
        "after_response": after,
    }
    if other:
        out["other_notifications"] = [m.get("method") for m in other]
    if keep_raw:
        out["updates"] = updates
    return out


# ----------------------------------------------------------------------------------
# CLI helpers



def load_each(peer: JsonRpcProc, ns, sessions, caps: dict, *, cwd_keys, timeout: float,
              quiet: float, keep_raw: bool, who: str) -> None:
    """session/load every session in `sessions` (dicts with "id" and a working directory under
    one of `cwd_keys`), storing the replay under "load"; sessions whose directory is unknown
    or cannot be overlaid, or that come after the agent exited, get a reason instead. A
    session loaded only to be judged is closed again when the agent offers session/close."""
    can_close = "close" in (caps.get("sessionCapabilities") or {})
    for e in sessions:
        cwd = next((e.get(k) for k in cwd_keys if e.get(k)), None)
        if not cwd:
            e["load"] = {"ok": False, "error": "no working directory known"}
            continue
        if not ns.usable(cwd):
            e["load"] = {"ok": False, "error": f"{cwd} missing and cannot be overlaid"}
            continue
        if peer.p.poll() is not None:
            e["load"] = {"ok": False, "error": f"{who} exited", "stderr": peer.stderr_tail()}
            continue
        e["load_cwd"] = cwd
        e["load"] = acp_load(peer, e["id"], cwd, timeout=timeout, quiet=quiet, keep_raw=keep_raw)
        if e["load"]["ok"] and can_close:
            peer.request("session/close", {"sessionId": e["id"]}, timeout=15)
        if not e["load"]["ok"]:
            e["load"]["stderr"] = peer.stderr_tail(8)

def common_argparser(desc: str):
    import argparse
    ap = argparse.ArgumentParser(description=desc)
    ap.add_argument("home", help="a HOME holding the native store (or the store dir itself)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the scratch copy (its path is in the output)")
    ap.add_argument("--no-raw", action="store_true", help="omit raw replayed updates")
    ap.add_argument("--timeout", type=float, default=90.0, help="per-call timeout, seconds")
    return ap


def emit(report: dict):
    json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    sys.stdout.flush()
