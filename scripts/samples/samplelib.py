"""Shared pieces of the sample generators (Python 3.11 stdlib only).

A generator runs a REAL harness against the scripted model server
(`scripts/judges/scripted_model.py`) in a scratch home, so every record of the sample
is written by the harness itself. The harness runs in a private mount namespace
(`unshare -m`, root only) where the scratch home is mounted at `/home/dev`: the store
holds the paths a real user `dev` would have (`/home/dev/shop`), nothing is rewritten
afterwards, and nothing outside the scratch dir is touched.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MODEL = REPO / "scripts" / "judges" / "scripted_model.py"
PEERS_DIR = Path(os.environ.get("ASP_PEERS_DIR") or Path.home() / ".cache" / "asp-peers")
HOME_MOUNT = "/home/dev"     # where the scratch home appears inside the namespace
NOWHERE = "http://127.0.0.1:9"


def log(*a):
    print("[sample]", *a, file=sys.stderr, flush=True)


def die(msg: str):
    raise SystemExit(f"sample generator: {msg}")


# ----------------------------------------------------------------------------------
# the namespace


def check_namespace():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        die("needs root and unshare (the harness runs with the scratch home mounted at "
            f"{HOME_MOUNT} in a private mount namespace)")
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                       capture_output=True)
    if r.returncode != 0:
        die(f"unshare -m failed: {r.stderr.decode(errors='replace').strip()}")


def ns_argv(home: Path, cwd: str, argv: list[str]) -> list[str]:
    """argv run with /home a fresh tmpfs and `home` bind-mounted at /home/dev."""
    script = ('set -e; mount -t tmpfs asp-sample-home /home; mkdir -p "$3"; '
              'mount --bind "$0" "$3"; cd "$1"; shift 3; exec "$@"')
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script,
            str(home), cwd, "-", HOME_MOUNT] + argv


def base_env(extra: dict | None = None) -> dict:
    """A fresh environment: HOME=/home/dev, XDG dirs there, every proxy at a refusing
    port, loopback direct (the scripted model and the harness's own servers)."""
    node_dir = os.path.dirname(shutil.which("node") or "/usr/bin/node")
    env = {
        "PATH": ":".join(dict.fromkeys([node_dir, "/usr/local/bin", "/usr/bin", "/bin"])),
        "HOME": HOME_MOUNT,
        "USER": "dev",
        "LOGNAME": "dev",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TZ": "UTC",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HTTP_PROXY": NOWHERE, "HTTPS_PROXY": NOWHERE, "ALL_PROXY": NOWHERE,
        "http_proxy": NOWHERE, "https_proxy": NOWHERE, "all_proxy": NOWHERE,
        "NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
    }
    if extra:
        env.update(extra)
    return env


class Proc:
    """A child in its own process group, ended by group (only what we started)."""

    def __init__(self, argv, *, env, cwd="/", stdout=None, stderr=None, stdin=None):
        self.p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=stdout, stderr=stderr,
                                  stdin=stdin, start_new_session=True)

    def stop(self, grace: float = 10.0):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.p.pid, sig)
            except (ProcessLookupError, PermissionError):
                return
            try:
                self.p.wait(timeout=grace)
                return
            except subprocess.TimeoutExpired:
                continue


# ----------------------------------------------------------------------------------
# the scripted model


class Model:
    def __init__(self, workdir: Path):
        self.log_path = workdir / "model-requests.jsonl"
        port_file = workdir / "model.port"
        self.proc = Proc([sys.executable, str(MODEL), "--script", "-", "--port-file",
                          str(port_file), "--log", str(self.log_path)],
                         env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                         stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.proc.p.stdin.write(b"[]")
        self.proc.p.stdin.close()
        for _ in range(100):
            if port_file.exists():
                break
            time.sleep(0.05)
        else:
            die("scripted model did not start")
        self.port = int(port_file.read_text())
        self.url = f"http://127.0.0.1:{self.port}"

    def script(self, turns, **top):
        r = http("POST", self.url + "/_script", {"turns": turns, **top})
        if not r.get("ok"):
            die(f"script rejected: {r}")

    def state(self) -> dict:
        return http("GET", self.url + "/_state")

    def expect_done(self, what: str):
        st = self.state()
        if st["exhausted"] or st["unused"]:
            die(f"{what}: the harness did not make the requests the script expected "
                f"(unused turns {st['unused']}, {st['exhausted']} beyond the script); "
                f"see {self.log_path}")

    def stop(self):
        self.proc.stop(grace=2)


def http(method: str, url: str, body=None, timeout: float = 180.0, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
    except urllib.error.HTTPError as e:
        die(f"{method} {url}: HTTP {e.code}: {e.read()[:2000].decode(errors='replace')}")
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def wait_for(pred, what: str, timeout: float = 60.0, every: float = 0.25):
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        try:
            v = pred()
        except (OSError, urllib.error.URLError, SystemExit):
            v = None
        if v:
            return v
        time.sleep(every)
    die(f"timed out waiting for {what}")


# ----------------------------------------------------------------------------------
# project files (the same small shop for every harness)

CART_PY = '''"""Shopping cart totals for the checkout page."""

PRICES_CENTS = {"apple": 120, "bread": 250, "coffee": 899}
DISCOUNTS = {"WELCOME10": 10, "VIP25": 25}


def total_cents(items, code=None):
    """Sum of item prices in cents; `code` is a discount code (percent off)."""
    total = sum(PRICES_CENTS[name] * qty for name, qty in items)
    return total
'''

TEST_CART_PY = '''import unittest

from cart import total_cents


class TotalTest(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(total_cents([("apple", 2), ("bread", 1)]), 490)

    def test_welcome_code(self):
        self.assertEqual(total_cents([("coffee", 1)], code="WELCOME10"), 809)


if __name__ == "__main__":
    unittest.main()
'''

README_MD = """# Shop

Checkout service for the corner shop.

Run the tests with `python3 -m unittest`.
"""

SHOP_AGENTS_MD = """# Shop

- Money is integer cents, never floats.
- Run `python3 -m unittest` before calling a change done.
"""

DEPLOY_SH = """#!/bin/sh
# Copy the app to the server.
set -eu
rsync -a --delete ./ shop@prod.example.com:/srv/shop/
"""

NOTES_TODO_MD = """# Todo

- [ ] Reply to Sam about the invoice
- [x] Renew the domain
- [ ] Check that the nightly backup ran
"""

NOTES_BACKUP_SH = """#!/bin/sh
tar czf /var/backups/notes.tgz "$HOME/notes"
"""

GIT_DATE = "2026-11-18T09:00:00+00:00"


def git(cwd: Path, *args: str):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd),
           "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com",
           "GIT_AUTHOR_DATE": GIT_DATE, "GIT_COMMITTER_DATE": GIT_DATE,
           "GIT_CONFIG_NOSYSTEM": "1"}
    r = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"git {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout.strip()


def write_files(root: Path, files: dict[str, str], executable=()):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        if rel in executable:
            p.chmod(0o755)


def make_shop(home: Path) -> str:
    """~/shop: a git repository with one commit (fixed dates, so its root commit, and
    with it OpenCode's project id, is the same on every run). Returns the commit."""
    shop = home / "shop"
    write_files(shop, {"cart.py": CART_PY, "tests/__init__.py": "",
                       "tests/test_cart.py": TEST_CART_PY, "README.md": README_MD,
                       "AGENTS.md": SHOP_AGENTS_MD, "deploy.sh": DEPLOY_SH},
                executable=("deploy.sh",))
    git(shop, "init", "-q", "-b", "main")
    git(shop, "add", ".")
    git(shop, "commit", "-q", "-m", "Shop: cart totals and tests")
    return git(shop, "rev-parse", "HEAD")


def make_notes(home: Path):
    """~/notes: a plain directory (no git), OpenCode's "global" project."""
    write_files(home / "notes", {"todo.md": NOTES_TODO_MD, "backup.sh": NOTES_BACKUP_SH})


def tiny_png(w: int = 8, h: int = 8) -> bytes:
    """A small valid PNG (a two-colour logo), made without any library."""
    rows = b""
    for y in range(h):
        rows += b"\x00" + b"".join(
            (b"\x2b\x6c\xb0" if (x + y) % 4 < 2 else b"\xf2\xb5\x3c") for x in range(w))

    def chunk(tag, data):
        c = struct.pack(">I", len(data)) + tag + data
        return c + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


# ----------------------------------------------------------------------------------
# collecting the sample


def copy_tree(src: Path, dst: Path, skip) -> list[str]:
    """Copy src into dst, leaving out paths (relative, posix) for which skip() is true.
    Returns what was left out."""
    left = []
    for dirpath, dirnames, filenames in os.walk(src):
        rel_dir = Path(dirpath).relative_to(src)
        for d in list(dirnames):
            rel = (rel_dir / d).as_posix()
            if skip(rel):
                left.append(rel + "/")
                dirnames.remove(d)
        for f in filenames:
            rel = (rel_dir / f).as_posix()
            if skip(rel):
                left.append(rel)
                continue
            (dst / rel_dir).mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(dirpath) / f, dst / rel)
    return left


def compact_sqlite(src_db: Path, dst_db: Path):
    """Copy a database (with its -wal/-shm) into one vacuumed file: the WAL is
    checkpointed into it, VACUUM rewrites it, and the journal mode stays what it was
    (WAL is recorded in the file header)."""
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td) / src_db.name
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(src_db) + suffix)
            if p.exists():
                shutil.copy2(p, Path(str(tmp) + suffix))
        con = sqlite3.connect(tmp)
        before = con.execute("PRAGMA journal_mode").fetchone()[0]
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.execute("VACUUM")
        mode = con.execute("PRAGMA journal_mode").fetchone()[0]
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        if mode != before:
            die(f"{src_db}: journal mode {before} became {mode} after VACUUM")
        for suffix in ("-wal", "-shm"):
            p = Path(str(tmp) + suffix)
            if p.exists() and p.stat().st_size:
                die(f"{p} not empty after the checkpoint")
        dst_db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp, dst_db)


# ----------------------------------------------------------------------------------
# a terminal UI driven through a pty (for what a harness only offers interactively)

_ANSI = None


def strip_ansi(b: bytes) -> str:
    import re
    global _ANSI
    if _ANSI is None:
        _ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
                           rb"|\x1b[()][A-Z0-9]|\x1b[=>78]")
    return _ANSI.sub(b"", b).decode("utf-8", "replace")


class Pty:
    """A child on a pseudo-terminal (its own session and process group)."""

    def __init__(self, argv, env, cols=120, rows=40):
        import fcntl
        import pty
        import termios
        pid, fd = pty.fork()
        if pid == 0:  # child
            try:
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.buf = b""
        self.mark = 0

    def pump(self, seconds: float):
        import select
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r:
                try:
                    d = os.read(self.fd, 65536)
                except OSError:
                    return
                if not d:
                    return
                self.buf += d

    def screen_since_mark(self) -> str:
        return strip_ansi(self.buf[self.mark:])

    def seen(self, text: str) -> bool:
        """`text` appeared since the last mark() (whitespace ignored: a terminal UI
        positions words with cursor moves, so the spaces between them may be missing)."""
        squash = "".join(text.split())
        return squash in "".join(self.screen_since_mark().split())

    def expect(self, text: str, timeout: float = 30.0) -> str:
        """Wait until `text` appears in the output since the last mark()."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            s = self.screen_since_mark()
            if self.seen(text):
                return s
            self.pump(0.3)
        tail = self.screen_since_mark()[-3000:]
        die(f"terminal UI: no {text!r} within {timeout}s; screen tail:\n{tail}")

    def set_mark(self):
        self.mark = len(self.buf)

    def send(self, keys: str, settle: float = 0.6):
        os.write(self.fd, keys.encode())
        self.pump(settle)

    def stop(self, grace: float = 10.0):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                try:
                    os.kill(self.pid, sig)
                except ProcessLookupError:
                    pass
            end = time.monotonic() + grace
            while time.monotonic() < end:
                try:
                    done, _ = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:
                    return
                if done:
                    return
                self.pump(0.2)
        try:
            os.close(self.fd)
        except OSError:
            pass

    def wait_exit(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump(0.2)
            try:
                done, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return True
            if done:
                return True
        return False
