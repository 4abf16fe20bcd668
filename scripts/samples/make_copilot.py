#!/usr/bin/env python3
"""Regenerate samples/copilot/ with the real GitHub Copilot CLI (@github/copilot 1.0.102).

    make_copilot.py [--out samples/copilot] [--keep]

Runs Copilot CLI in a scratch home mounted at /home/dev (private mount namespace; root +
unshare needed) with the scripted model server as its BYOK provider
(`COPILOT_OFFLINE=true`, `COPILOT_PROVIDER_BASE_URL`), and drives it the ways a user
does: `copilot --acp` (prompts with tool calls, an image, `/rename`, `/compact`, a
sub-agent, a cancelled turn), `copilot -p --name` (non-interactive), and the terminal UI
through a pty for `/rewind` (which only the interactive UI offers). Every byte under
`~/.copilot/session-state/` is written by Copilot itself; the model's words come from
the turns below. Then the home is copied into --out (logs and lock files left out, the
session index database checkpointed and vacuumed).

Ids and times differ on every run; EXPECTED.md describes the sessions by content.
Needs scripts/judges/install.sh copilot."""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "judges"))
import samplelib as L  # noqa: E402
import judgelib as J  # noqa: E402

VERSION = "1.0.102"
SHOP = "/home/dev/shop"
NOTES = "/home/dev/notes"
MCP_NAMES = ("issues", "docs")

SETTINGS_JSON = {
    "banner": "never",
    "autoUpdate": False,
    "theme": "dim",
    "showTipsOnStartup": False,
    "allowedUrls": ["docs.python.org"],
}

MCP_CONFIG = {
    "mcpServers": {
        "issues": {
            "type": "local",
            "command": "python3",
            "args": ["/home/dev/.copilot/mcp/issues.py", "--db", "/home/dev/.local/share/issues.db"],
            "env": {"ISSUES_PROJECT": "shop"},
            "tools": ["*"],
        },
        "docs": {
            "type": "http",
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer ${DOCS_MCP_TOKEN}"},
            "tools": ["search_docs"],
        },
    }
}

INSTRUCTIONS_MD = """# How I work

- Answer in short sentences; show commands, not prose.
- Never push to a remote branch without asking first.
"""

MONEY_INSTRUCTIONS_MD = """---
applyTo: "**/*.py"
---
Money is integer cents. Never use floats for prices or totals.
"""

SKILL_MD = """---
name: release-notes
description: Write release notes from the git log since the last tag. Use when the user asks for release notes or a changelog entry.
---

# Release notes

1. Run `scripts/changes.sh` to list the commits since the last tag.
2. Group them under Added, Changed and Fixed; one line each, no commit hashes.
"""

SKILL_SCRIPT = """#!/bin/sh
git log --oneline "$(git describe --tags --abbrev=0 2>/dev/null || git rev-list --max-parents=0 HEAD)..HEAD"
"""

AGENT_MD = """---
name: money-reviewer
description: Reviews a diff for money and rounding bugs
tools: ["view", "grep", "glob"]
---
You review diffs in the shop. Flag any float arithmetic on money, and any rounding that is
not integer cents.
"""

MCP_STUB = """#!/usr/bin/env python3
# Placeholder for the local issue-tracker MCP server (the sample runs disable it).
"""


def call(tool: str, **arguments) -> dict:
    return {"name": tool, "arguments": arguments}


def text_block(t: str) -> dict:
    return {"type": "text", "text": t}


class Acp:
    """`copilot --acp` in the namespace, driven as an ACP client would."""

    def __init__(self, home: Path, env: dict, copilot: str, work: Path, cwd: str):
        logs = work / "logs"
        logs.mkdir(exist_ok=True)
        argv = L.ns_argv(home, cwd, [copilot, "--acp", "--no-auto-update", "--allow-all"]
                         + [a for n in MCP_NAMES for a in ("--disable-mcp-server", n)])
        self.peer = J.JsonRpcProc(argv, env=env, cwd="/", scratch=types.SimpleNamespace(logs=logs),
                                  name=f"copilot-acp-{int(time.time() * 1000)}")
        res, err, _, _ = self.peer.request("initialize", {
            "protocolVersion": 1, "clientCapabilities": J.ACP_CLIENT_CAPS,
            "clientInfo": {"name": "asp-sample-generator", "version": "1"}}, timeout=60)
        if err:
            L.die(f"copilot --acp initialize: {err}; stderr {self.peer.stderr_tail()}")

    def new(self, cwd: str) -> str:
        res, err, _, _ = self.peer.request("session/new", {"cwd": cwd, "mcpServers": []},
                                           timeout=60)
        if err:
            L.die(f"session/new: {err}")
        return res["sessionId"]

    def prompt(self, sid: str, blocks: list[dict], timeout=180.0):
        res, err, _, _ = self.peer.request("session/prompt", {"sessionId": sid, "prompt": blocks},
                                           timeout=timeout)
        if err:
            L.die(f"session/prompt: {err}; stderr {self.peer.stderr_tail()}")
        return res

    def close(self, sid: str):
        self.peer.request("session/close", {"sessionId": sid}, timeout=30)

    def stop(self):
        """End the agent the way a client does: stdin closed, then a grace period."""
        try:
            self.peer.p.stdin.close()
        except OSError:
            pass
        try:
            self.peer.p.wait(timeout=20)
        except Exception:  # noqa: BLE001 - still running: end its process group
            J.kill_group(self.peer.p)
        if self.peer.p in J._started:
            J._started.remove(self.peer.p)


def png_block() -> dict:
    return {"type": "image", "mimeType": "image/png",
            "data": base64.b64encode(L.tiny_png()).decode()}


def run_acp_sessions(acp: Acp, model: L.Model) -> dict:
    made = {}

    def turn(sid, blocks, turns, what):
        model.script(turns)
        acp.prompt(sid, blocks)
        model.expect_done(what)

    # 1. shop: multi-turn fix with reads, a failing and a passing test run, edits
    s = acp.new(SHOP)
    turn(s, [text_block("Checkout totals ignore discount codes like WELCOME10. Fix total_cents "
                        "and make sure the tests pass.")], [
        {"reasoning": "The user says discount codes are ignored. Read the cart module and its "
                      "test first.",
         "tool_calls": [call("view", path=f"{SHOP}/cart.py"),
                        call("view", path=f"{SHOP}/tests/test_cart.py")]},
        {"text": "`total_cents` ignores its `code` argument. Let me confirm the failing test.",
         "tool_calls": [call("bash", command="python3 -m unittest -q",
                             description="Run the unit tests")]},
        {"reasoning": "Apply the percentage with integer arithmetic so the result stays in "
                      "cents.",
         "tool_calls": [call("edit", path=f"{SHOP}/cart.py", old_str="    return total\n",
                             new_str="    percent = DISCOUNTS.get(code, 0) if code else 0\n"
                                     "    return total * (100 - percent) // 100\n")]},
        {"tool_calls": [call("bash", command="python3 -m unittest -q",
                             description="Run the unit tests again")]},
        {"text": "Fixed. `total_cents` now takes the percentage of a known code off the total "
                 "with integer arithmetic (899 → 809 for WELCOME10); an unknown or missing code "
                 "changes nothing. Both tests pass."},
    ], "fix 1")
    turn(s, [text_block("Also add a test for an unknown code: it must not change the total.")], [
        {"tool_calls": [call("edit", path=f"{SHOP}/tests/test_cart.py",
                             old_str='        self.assertEqual(total_cents([("coffee", 1)], '
                                     'code="WELCOME10"), 809)\n',
                             new_str='        self.assertEqual(total_cents([("coffee", 1)], '
                                     'code="WELCOME10"), 809)\n\n    def test_unknown_code('
                                     'self):\n        self.assertEqual(total_cents([("bread", '
                                     '2)], code="NOPE"), 500)\n')]},
        {"tool_calls": [call("bash", command="python3 -m unittest -q",
                             description="Run the unit tests")]},
        {"text": "Added `test_unknown_code`: an unknown code leaves 2 × bread at 500. All 3 "
                 "tests pass."},
    ], "fix 2")
    acp.close(s)
    made["fix"] = s

    # 2. shop: an image in the prompt, then a name the user gives
    s = acp.new(SHOP)
    turn(s, [text_block("Here is the new logo. Write a one-line alt text for it and put it at "
                        "the top of the README."), png_block()], [
        {"reasoning": "The image is a small checkered square in blue and orange.",
         "text": "I'll add it under the title.",
         "tool_calls": [call("edit", path=f"{SHOP}/README.md", old_str="# Shop\n",
                             new_str="# Shop\n\n![Blue and orange checkered square, the corner "
                                     "shop logo](logo.png)\n")]},
        {"text": "Added the logo to the README with the alt text \"Blue and orange checkered "
                 "square, the corner shop logo\"."},
    ], "image")
    acp.prompt(s, [text_block("/rename README logo")])
    acp.close(s)
    made["image"] = s

    # 3. shop: a sub-agent (task tool, explore agent) with its own turns
    s = acp.new(SHOP)
    turn(s, [text_block("Which parts of the shop have no tests? Use the explore agent.")], [
        {"text": "I'll have the explore agent look.",
         "tool_calls": [call("task", description="Find untested code", agent_type="explore",
                             name="untested-code",
                             prompt="List the source files in /home/dev/shop and say which ones "
                                    "tests/ does not cover.")]},
        {"tool_calls": [call("glob", pattern="**/*", paths=SHOP)]},
        {"tool_calls": [call("grep", pattern="^from |^import ", paths=f"{SHOP}/tests")]},
        {"text": "Source files: cart.py (imported by tests/test_cart.py) and deploy.sh (a shell "
                 "script no test touches)."},
        {"text": "Only `deploy.sh` has no tests; `cart.py` is covered by `tests/test_cart.py`."},
    ], "subagent")
    acp.close(s)
    made["subagent"] = s

    # 5. shop: `/compact` between turns
    s = acp.new(SHOP)
    turn(s, [text_block("What does deploy.sh do?")], [
        {"tool_calls": [call("view", path=f"{SHOP}/deploy.sh")]},
        {"text": "It copies the working tree to `/srv/shop/` on prod.example.com with `rsync -a "
                 "--delete`, stopping at the first error (`set -eu`)."},
    ], "compact 1")
    turn(s, [text_block("Is --delete dangerous there?")], [
        {"reasoning": "--delete removes files on the server that are not in the source tree.",
         "text": "Yes: anything on the server that is not in your working tree is deleted, "
                 "uploads included. Run it with `--dry-run` first to see what would go."},
    ], "compact 2")
    turn(s, [text_block("/compact")], [
        {"when": {"user": "summary of the conversation"},
         "text": "<overview>The user is reviewing deploy.sh.</overview>\n<history>deploy.sh "
                 "rsyncs the tree to prod with --delete; --delete removes server files that are "
                 "not in the tree.</history>\n<next_steps>Maybe add a dry-run flag.</next_steps>"},
    ], "compaction")
    turn(s, [text_block("Add a --dry-run flag to it.")], [
        {"tool_calls": [call("edit", path=f"{SHOP}/deploy.sh",
                             old_str="set -eu\nrsync -a --delete ./",
                             new_str="set -eu\nflags=\"\"\n[ \"${1:-}\" = --dry-run ] && "
                                     "flags=--dry-run\nrsync -a --delete $flags ./")]},
        {"text": "`./deploy.sh --dry-run` now only shows what rsync would change."},
    ], "compact 3")
    acp.close(s)
    made["compaction"] = s
    return made


def run_cancelled(acp: Acp, model: L.Model) -> str:
    """notes: a turn cancelled while the model is still answering."""
    import threading
    s = acp.new(NOTES)
    model.script([{"text": "Hi Sam,", "delay": 20}])
    t = threading.Thread(target=lambda: acp.peer.request(
        "session/prompt", {"sessionId": s, "prompt": [text_block("Write the reply to Sam about "
                                                                 "the invoice.")]},
        timeout=60), daemon=True)
    t.start()
    L.wait_for(lambda: model.state()["used"][0], "the prompt to reach the model")
    time.sleep(1.0)
    acp.peer.notify("session/cancel", {"sessionId": s})
    t.join(timeout=40)
    acp.close(s)
    return s


def prompt_mode(home, env, copilot, model: L.Model, work: Path, cwd: str, prompt: str,
                turns: list, extra=(), resume: str | None = None) -> str:
    """One `copilot -p PROMPT` run (a new session, or `--resume=ID`); returns the id."""
    model.script(turns)
    state = home / ".copilot" / "session-state"
    before = set(p.name for p in state.glob("*-*"))
    argv = [copilot, "-p", prompt, "--allow-all-tools", "--no-auto-update", *extra]
    if resume:
        argv.append(f"--resume={resume}")
    p = L.Proc(L.ns_argv(home, cwd, argv + [a for n in MCP_NAMES
                                            for a in ("--disable-mcp-server", n)]),
               env=env, stdout=open(work / "prompt-mode.out", "ab"),
               stderr=open(work / "prompt-mode.err", "ab"))
    try:
        rc = p.p.wait(timeout=180)
    except Exception:  # noqa: BLE001
        p.stop()
        L.die("copilot -p did not finish")
    if rc != 0:
        L.die(f"copilot -p exited {rc}; see {work}/prompt-mode.err")
    model.expect_done(f"copilot -p {prompt[:30]}")
    if resume:
        return resume
    new = sorted(set(p.name for p in state.glob("*-*")) - before)
    if len(new) != 1:
        L.die(f"copilot -p made {new}")
    return new[0]


def run_prompt_mode(home, env, copilot, model: L.Model, work: Path) -> dict:
    made = {}
    # notes: `copilot -p --name`, a failing command and a failing tool
    made["prompt_mode"] = prompt_mode(
        home, env, copilot, model, work, NOTES,
        "Check my todo list and whether the nightly backup ran.", [
            {"tool_calls": [call("view", path=f"{NOTES}/todo.md")]},
            {"tool_calls": [call("bash", command="./backup.sh", description="Run the backup")]},
            {"tool_calls": [call("view", path=f"{NOTES}/backup.log")]},
            {"text": "Two todos are open: the reply to Sam and the backup check. The backup has "
                     "not run: `backup.sh` is not executable (exit 126) and there is no "
                     "backup.log."},
        ], extra=("--name", "Nightly backup check"))
    # shop: two turns with edits (a -p session tracks files for /rewind), rewound later
    s = prompt_mode(home, env, copilot, model, work, SHOP, "Rename total_cents to cart_total.", [
        {"tool_calls": [call("grep", pattern="total_cents", paths=SHOP)]},
        {"tool_calls": [call("edit", path=f"{SHOP}/cart.py", old_str="def total_cents(",
                             new_str="def cart_total(")]},
        {"text": "Renamed it in cart.py. The tests still import `total_cents`; I will update "
                 "them if you want."},
    ])
    prompt_mode(home, env, copilot, model, work, SHOP, "Yes, update the tests too.", [
        {"tool_calls": [call("bash", command="sed -i 's/total_cents/cart_total/g' "
                                             "tests/test_cart.py && python3 -m unittest -q",
                             description="Rename in the tests and run them")]},
        {"text": "Updated the tests; all pass."},
    ], resume=s)
    made["rewind"] = s
    return made


def rewind_in_tui(home, env, copilot, sid: str, target_prompt: str):
    """`copilot --resume ID`, `/rewind`, pick the turn whose prompt is `target_prompt`,
    "Conversation + files", then /exit."""
    tenv = dict(env, TERM="xterm-256color", COLUMNS="120", LINES="40")
    t = L.Pty(L.ns_argv(home, SHOP, [copilot, f"--resume={sid}", "--no-auto-update"]
                        + [a for n in MCP_NAMES for a in ("--disable-mcp-server", n)]), tenv)
    try:
        end = time.monotonic() + 60
        while not t.seen("Confirm folder trust") and not t.seen("MCP Servers reloaded"):
            if time.monotonic() > end:
                L.die("terminal UI did not become ready")
            t.pump(0.3)
        if t.seen("Confirm folder trust"):
            t.set_mark()
            t.send("\x1b[B", 0.8)   # "Yes, and remember this folder for future sessions"
            t.send("\r", 1.0)
        t.expect("MCP Servers reloaded", timeout=60)  # the input takes keys from here on
        t.pump(3)
        t.set_mark()
        t.send("/rewind", 1.0)
        t.send("\r", 1.5)
        t.expect("Rewind to a previous point", timeout=20)
        for _ in range(6):  # move the cursor onto the wanted prompt
            screen = t.screen_since_mark()
            sel = ["".join(ln.split()) for ln in screen.splitlines() if "❯" in ln and "." in ln]
            if sel and "".join(target_prompt.split()) in sel[-1]:
                break
            t.send("\x1b[B", 0.8)
        else:
            L.die(f"rewind picker: could not select {target_prompt!r}")
        t.set_mark()
        t.send("\r", 1.5)
        t.expect("Conversation + files", timeout=20)
        t.send("\x1b[B", 0.8)
        t.set_mark()
        t.send("\r", 2.0)
        t.expect("Enter Restore", timeout=30)   # the preview of the files it restores
        t.set_mark()
        t.send("\r", 2.0)
        t.expect("Rewound", timeout=30)
        t.pump(2)
        # the rewound prompt is back in the input box: clear it, then name the session
        t.send("\x03", 1.0)
        t.set_mark()
        t.send("/rename Rename total_cents (tests left alone)", 1.0)
        t.send("\r", 2.0)
        t.expect("renamed", timeout=20)
        t.pump(1)
        t.send("\x03", 1.0)
        t.send("\x03", 1.0)
        if not t.wait_exit(30):
            L.log("the terminal UI did not exit on Ctrl+C twice; ending it")
    finally:
        t.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(L.REPO / "samples" / "copilot"))
    ap.add_argument("--keep", action="store_true", help="keep the scratch dir")
    args = ap.parse_args()
    L.check_namespace()
    copilot = L.PEERS_DIR / "node_modules" / ".bin" / "copilot"
    if not copilot.exists():
        L.die(f"{copilot} missing: run scripts/judges/install.sh copilot")
    copilot = str(copilot)
    work = Path(tempfile.mkdtemp(prefix="asp-sample-copilot-"))
    home = work / "dev"
    home.mkdir()
    L.log("scratch", work)
    L.write_files(home / ".copilot", {
        "settings.json": json.dumps(SETTINGS_JSON, indent=2) + "\n",
        "mcp-config.json": json.dumps(MCP_CONFIG, indent=2) + "\n",
        "copilot-instructions.md": INSTRUCTIONS_MD,
        "instructions/money.instructions.md": MONEY_INSTRUCTIONS_MD,
        "skills/release-notes/SKILL.md": SKILL_MD,
        "skills/release-notes/scripts/changes.sh": SKILL_SCRIPT,
        "agents/money-reviewer.agent.md": AGENT_MD,
        "mcp/issues.py": MCP_STUB,
    }, executable=("skills/release-notes/scripts/changes.sh", "mcp/issues.py"))
    (home / ".copilot" / "session-state").mkdir()
    L.make_shop(home)
    L.make_notes(home)
    model = L.Model(work)
    env = L.base_env({
        "XDG_CACHE_HOME": str(L.PEERS_DIR / "copilot-cache"),
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": f"{model.url}/v1",
        "COPILOT_PROVIDER_API_KEY": "not-a-key",
        "COPILOT_MODEL": "scripted-1",
        "COPILOT_AUTO_UPDATE": "false",
    })
    made = {}
    try:
        acp = Acp(home, env, copilot, work, SHOP)
        try:
            made.update(run_acp_sessions(acp, model))
            made["cancelled"] = run_cancelled(acp, model)
        finally:
            acp.stop()
        made.update(run_prompt_mode(home, env, copilot, model, work))
        rewind_in_tui(home, env, copilot, made["rewind"], "Yes, update the tests too.")
        L.log("sessions", json.dumps(made))
    finally:
        model.stop()
        J.kill_all_started()
    out = Path(args.out)
    if out.exists():
        for p in out.iterdir():
            if p.name != "EXPECTED.md":
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)

    def skip(rel: str) -> bool:
        name = rel.rsplit("/", 1)[-1]
        return (rel in (".copilot/logs", ".cache", "shop/.git",
                        ".copilot/session-state/.session-operation-locks")
                or rel.endswith("__pycache__")
                or name.endswith(".lock") or name.endswith(".hold")
                or rel.startswith(".copilot/session-store.db"))
    left = L.copy_tree(home, out, skip)
    if (home / ".copilot" / "session-store.db").exists():
        L.compact_sqlite(home / ".copilot" / "session-store.db",
                         out / ".copilot" / "session-store.db")
    L.log(f"wrote {out}; left out: {left}")
    if args.keep:
        L.log("kept", work)
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
