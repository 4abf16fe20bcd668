"""Shared helpers for the sample makers (Python 3.11 stdlib only).

A sample maker drives a REAL harness against the scripted model
(`scripts/judges/scripted_model.py`) so that every session file in `samples/<harness>/`
is written by the harness itself. Everything runs in a private mount + network namespace
(`unshare -m -n`, root only):

* no network at all: only the namespace's own loopback, where the scripted model listens
  on 127.0.0.1:11434 (the port a local Ollama would use, so the sample's model config
  looks like a real local setup and contains no credential);
* a tmpfs on /home: the user is /home/dev, the projects are /home/dev/shop and
  /home/dev/api-gateway, exactly the paths the samples show, and nothing of this machine's
  /home is visible or touched.

The maker copies the harness's store out of the namespace into the sample directory at
the end. Re-running gives the same structure with new ids and times (the harnesses use
random ids and the clock), so EXPECTED.md has to be refreshed with the judge afterwards.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import urllib.request
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "scripts" / "judges"))
sys.dont_write_bytecode = True
import judgelib as J  # noqa: E402

PEERS_BIN = J.BIN_DIR
HOME = Path("/home/dev")
MODEL_PORT = 11434
MODEL_URL = f"http://127.0.0.1:{MODEL_PORT}/v1"
NS_FLAG = "ASP_SAMPLES_IN_NAMESPACE"


def log(*a):
    print("[samples]", *a, file=sys.stderr, flush=True)


def enter_namespace():
    """Re-run this very script inside `unshare -m -n` (once); set up loopback and /home."""
    if os.environ.get(NS_FLAG) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "asp-samples", "/home"],
                       check=True)
        HOME.mkdir(parents=True)
        return
    if os.geteuid() != 0 or not shutil.which("unshare"):
        raise SystemExit("sample makers need root and unshare (private mount + network namespace)")
    env = dict(os.environ, **{NS_FLAG: "1"})
    r = subprocess.run(["unshare", "-m", "-n", "--propagation", "private",
                        sys.executable, *sys.argv], env=env)
    raise SystemExit(r.returncode)


def write(path: Path, text: str, mode: int | None = None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mode is not None:
        path.chmod(mode)


# ----------------------------------------------------------------------------------
# the projects the sessions work in

SHOP_FILES = {
    "README.md": "# shop\n\nA tiny checkout service. Run the tests with `python3 -m unittest -q`.\n",
    "cart.py": (
        "DISCOUNTS = {\"WELCOME10\": 10, \"VIP25\": 25}\n"
        "\n"
        "\n"
        "def total_cents(items, code=None):\n"
        "    \"\"\"Sum of item prices in cents.\"\"\"\n"
        "    return sum(i[\"price_cents\"] * i.get(\"qty\", 1) for i in items)\n"
    ),
    "tests/__init__.py": "",
    "tests/test_cart.py": (
        "import unittest\n"
        "\n"
        "from cart import total_cents\n"
        "\n"
        "ITEMS = [{\"price_cents\": 1000, \"qty\": 2}, {\"price_cents\": 500}]\n"
        "\n"
        "\n"
        "class TotalTest(unittest.TestCase):\n"
        "    def test_plain(self):\n"
        "        self.assertEqual(total_cents(ITEMS), 2500)\n"
        "\n"
        "    def test_welcome10(self):\n"
        "        self.assertEqual(total_cents(ITEMS, \"welcome10\"), 2250)\n"
        "\n"
        "\n"
        "if __name__ == \"__main__\":\n"
        "    unittest.main()\n"
    ),
    "deploy.sh": "#!/bin/sh\nset -e\nrsync -a dist/ prod:/srv/shop\n",
}

GATEWAY_FILES = {
    "README.md": "# api-gateway\n\nRoutes public requests to the internal services.\n",
    "routes.py": (
        "ROUTES = {\n"
        "    \"/cart\": \"http://shop.internal:8080\",\n"
        "    \"/users\": \"http://users.internal:8081\",\n"
        "}\n"
        "\n"
        "\n"
        "def upstream(path):\n"
        "    for prefix, target in ROUTES.items():\n"
        "        if path.startswith(prefix):\n"
        "            return target + path\n"
        "    return None\n"
    ),
}


def git(cwd: Path, *args: str):
    env = dict(os.environ, GIT_AUTHOR_NAME="Dev", GIT_AUTHOR_EMAIL="dev@example.com",
               GIT_COMMITTER_NAME="Dev", GIT_COMMITTER_EMAIL="dev@example.com",
               GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_SYSTEM="/dev/null")
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def make_project(root: Path, files: dict[str, str]):
    for rel, text in files.items():
        write(root / rel, text, 0o755 if rel.endswith(".sh") else None)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial import")


def tiny_png() -> str:
    """A real 8x8 PNG (a red square with a white cross), base64: what a screenshot
    attachment looks like to the harness, kept small so the sample stays small."""
    w = h = 8
    rows = []
    for y in range(h):
        row = bytearray([0])
        for x in range(w):
            row += bytes((255, 255, 255)) if x in (3, 4) or y in (3, 4) else bytes((200, 30, 30))
        rows.append(bytes(row))

    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) \
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


# ----------------------------------------------------------------------------------
# the scripted model


class Model:
    """scripts/judges/scripted_model.py on 127.0.0.1:11434 inside the namespace."""

    def __init__(self, logdir: Path):
        self.log = logdir / "model-requests.jsonl"
        script = logdir / "empty-script.json"
        script.write_text('{"turns": []}')
        self.p = subprocess.Popen(
            [sys.executable, str(REPO / "scripts" / "judges" / "scripted_model.py"),
             "--script", str(script), "--port", str(MODEL_PORT), "--log", str(self.log)],
            stdout=subprocess.DEVNULL, stderr=open(logdir / "model.stderr", "ab"),
            start_new_session=True)
        for _ in range(100):
            try:
                self._get("/_state")
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit("scripted model did not start")

    def _get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{MODEL_PORT}{path}", timeout=10) as r:
            return json.loads(r.read())

    def script(self, turns: list[dict], models: list[str] | None = None):
        body = json.dumps({"models": models or ["scripted"], "turns": turns}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{MODEL_PORT}/_script", data=body,
                                     method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            json.loads(r.read())

    def check_used(self, what: str):
        """Every unconditional turn answered exactly one request, nothing ran dry."""
        st = self._get("/_state")
        if st["exhausted"] or st["unused"]:
            raise SystemExit(f"{what}: scripted model state {st} (see {self.log})")

    def close(self):
        J.kill_group(self.p, grace=1.0)


# ----------------------------------------------------------------------------------
# line-delimited JSON peers


class PiRpc:
    """`pi --mode rpc`: commands `{"id","type",...}`, answers `{"type":"response","id"...}`,
    events `{"type":...}` without an id."""

    def __init__(self, argv, env, cwd, logdir: Path, name: str):
        self.stderr = open(logdir / f"{name}.stderr", "ab")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.stderr, env=env, cwd=cwd, start_new_session=True)
        self.events: list[dict] = []
        self.responses: dict[str, dict] = {}
        self.n = 0
        import threading
        self.cv = threading.Condition()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for raw in self.p.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            with self.cv:
                if msg.get("type") == "response" and msg.get("id"):
                    self.responses[msg["id"]] = msg
                else:
                    self.events.append(msg)
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def send(self, cmd: dict, timeout=60.0) -> dict:
        self.n += 1
        rid = f"req-{self.n}"
        self.p.stdin.write((json.dumps({"id": rid, **cmd}) + "\n").encode())
        self.p.stdin.flush()
        end = time.monotonic() + timeout
        with self.cv:
            while rid not in self.responses:
                if time.monotonic() > end or self.p.poll() is not None:
                    raise SystemExit(f"pi rpc: no answer to {cmd['type']}")
                self.cv.wait(0.2)
            res = self.responses.pop(rid)
        if not res.get("success"):
            raise SystemExit(f"pi rpc {cmd['type']} failed: {res}")
        return res.get("data") or {}

    def mark(self) -> int:
        with self.cv:
            return len(self.events)

    def wait_event(self, typ: str, since: int, timeout=90.0) -> dict:
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for e in self.events[since:]:
                    if e.get("type") == typ:
                        return e
                if time.monotonic() > end or self.p.poll() is not None:
                    raise SystemExit(f"pi rpc: no {typ} event")
                self.cv.wait(0.2)

    def prompt(self, text: str, images=None, timeout=120.0):
        m = self.mark()
        cmd = {"type": "prompt", "message": text}
        if images:
            cmd["images"] = images
        self.send(cmd)
        self.wait_event("agent_end", m, timeout)
        time.sleep(0.3)  # let the session file be appended

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            J.kill_group(self.p)
        self.stderr.close()


class AcpPeer(J.JsonRpcProc):
    """An ACP client that allows every tool call (the judge's peer refuses them)."""

    def _answer_agent_request(self, msg):
        if msg["method"] == "session/request_permission":
            opts = (msg.get("params") or {}).get("options") or []
            pick = next((o for o in opts if o.get("kind") == "allow_once"), None) or \
                next((o for o in opts if str(o.get("kind", "")).startswith("allow")), None) or \
                (opts[0] if opts else {"optionId": "allow"})
            reply = {"id": msg["id"], "result": {"outcome": {"outcome": "selected",
                                                             "optionId": pick["optionId"]}}}
        else:
            reply = {"id": msg["id"],
                     "error": {"code": -32601, "message": f"sample maker: {msg['method']}"}}
        try:
            self._send(reply)
        except J.RpcError:
            pass


def copy_tree(src: Path, dst: Path):
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)


def rm_tree(path: Path):
    if path.exists():
        shutil.rmtree(path)
