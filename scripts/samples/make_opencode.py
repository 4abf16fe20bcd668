#!/usr/bin/env python3
"""Regenerate samples/opencode/ with the real OpenCode (opencode-ai 1.18.33).

    make_opencode.py [--out samples/opencode] [--keep]

Runs `opencode serve` in a scratch home mounted at /home/dev (private mount namespace;
root + unshare needed), with the scripted model server as its only provider, and drives
it through OpenCode's own HTTP API (the one its TUI and `opencode acp` use): sessions,
prompts with tool calls, an image, a sub-agent, reverts, a compaction, an abort, titles
(generated and user-set), an archived session, two projects (a git repository and a
plain directory). Every row of the database is written by OpenCode itself; the model's
words come from the turns below. Then the home is copied into --out with the database
checkpointed and vacuumed into one file.

Ids and times differ on every run (OpenCode makes them from the clock); EXPECTED.md
describes the sessions by content. Needs scripts/judges/install.sh opencode."""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import samplelib as L  # noqa: E402

VERSION = "1.18.33"
SHOP = "/home/dev/shop"
NOTES = "/home/dev/notes"
MODEL = {"providerID": "scripted", "modelID": "scripted-1"}

OPENCODE_JSON = {
    "$schema": "https://opencode.ai/config.json",
    "model": "scripted/scripted-1",
    "small_model": "scripted/scripted-1",
    "autoupdate": False,
    "share": "disabled",
    "provider": {
        "scripted": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Scripted (local)",
            "options": {"baseURL": "{env:SCRIPTED_MODEL_URL}",
                        "apiKey": "{env:SCRIPTED_MODEL_KEY}"},
            "models": {
                "scripted-1": {
                    "name": "Scripted One",
                    "reasoning": True,
                    "tool_call": True,
                    "attachment": True,
                    "modalities": {"input": ["text", "image"], "output": ["text"]},
                    "limit": {"context": 64000, "output": 8000},
                }
            },
        }
    },
    "permission": {"edit": "allow", "bash": {"*": "allow", "git push*": "deny"}},
    "mcp": {
        "issues": {
            "type": "local",
            "command": ["python3", "/home/dev/.config/opencode/mcp/issues.py", "--db",
                        "/home/dev/.local/share/issues.db"],
            "environment": {"ISSUES_PROJECT": "shop"},
            "enabled": False,
        },
        "docs": {
            "type": "remote",
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer {env:DOCS_MCP_TOKEN}"},
            "enabled": False,
        },
    },
}

GLOBAL_AGENTS_MD = """# How I work

- Answer in short sentences; show commands, not prose.
- Never push to a remote branch without asking first.
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

COMMAND_MD = """---
description: Run the unit tests and summarise failures
---
Run `python3 -m unittest` in the project and list each failing test with its first error line.
"""

AGENT_MD = """---
description: Reviews a diff for money and rounding bugs
mode: subagent
tools:
  write: false
  edit: false
---
You review diffs in the shop. Flag any float arithmetic on money, and any rounding that is
not integer cents.
"""

MCP_STUB = """#!/usr/bin/env python3
# Placeholder for the local issue-tracker MCP server (disabled in opencode.json).
"""


def title(text: str, user: str) -> dict:
    """A turn answering OpenCode's title request (small model, system prompt
    "You are a title generator...") for the prompt containing `user`."""
    return {"when": {"system": "title generator", "user": user}, "text": text}


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


class Driver:
    def __init__(self, port: int, model: L.Model):
        self.base = f"http://127.0.0.1:{port}"
        self.model = model

    def api(self, method, path, directory, body=None, timeout=180.0):
        sep = "&" if "?" in path else "?"
        return L.http(method, f"{self.base}{path}{sep}directory={directory}", body,
                      timeout=timeout)

    def new_session(self, directory: str) -> str:
        return self.api("POST", "/session", directory, {})["id"]

    def prompt(self, sid, directory, text, turns, files=(), what=""):
        parts = [{"type": "text", "text": text}]
        for f in files:
            parts.append(f)
        self.model.script(turns)
        res = self.api("POST", f"/session/{sid}/message", directory,
                       {"parts": parts, "model": MODEL}, timeout=300)
        self.model.expect_done(what or text[:40])
        return res

    def wait_title(self, sid, directory):
        def titled():
            t = self.api("GET", f"/session/{sid}", directory)["title"]
            return t if not t.startswith(("New session - ", "Child session - ")) else None
        return L.wait_for(titled, f"the generated title of {sid}", timeout=60)

    def messages(self, sid, directory):
        return self.api("GET", f"/session/{sid}/message", directory)

    def user_message_ids(self, sid, directory):
        return [m["info"]["id"] for m in self.messages(sid, directory)
                if m["info"]["role"] == "user"]


def png_part() -> dict:
    data = base64.b64encode(L.tiny_png()).decode()
    return {"type": "file", "mime": "image/png", "filename": "logo.png",
            "url": f"data:image/png;base64,{data}"}


def run_sessions(d: Driver, model: L.Model) -> dict:
    made = {}

    # 1. shop: multi-turn fix with plan, reads, a failing and a passing test run, edits
    s = d.new_session(SHOP)
    d.prompt(s, SHOP, "Checkout totals ignore discount codes like WELCOME10. Fix total_cents "
             "and make sure the tests pass.", [
                 title("Fix discount codes in checkout total", "WELCOME10"),
                 {"reasoning": "The user says discount codes are ignored. Plan first, then "
                               "read the cart module and its test.",
                  "tool_calls": [call("todowrite", todos=[
                      {"content": "Read cart.py and the failing test", "status": "in_progress",
                       "priority": "high"},
                      {"content": "Apply the discount code in total_cents", "status": "pending",
                       "priority": "high"},
                      {"content": "Run the unit tests", "status": "pending",
                       "priority": "medium"}])]},
                 {"tool_calls": [call("read", filePath=f"{SHOP}/cart.py"),
                                 call("read", filePath=f"{SHOP}/tests/test_cart.py")]},
                 {"text": "`total_cents` ignores its `code` argument. Let me confirm the "
                          "failing test first.",
                  "tool_calls": [call("bash", command="python3 -m unittest -q")]},
                 {"reasoning": "Apply the percentage with integer arithmetic so the result "
                               "stays in cents.",
                  "tool_calls": [call("edit", filePath=f"{SHOP}/cart.py",
                                      oldString="    return total\n",
                                      newString="    percent = DISCOUNTS.get(code, 0) if code "
                                                "else 0\n    return total * (100 - percent) "
                                                "// 100\n")]},
                 {"tool_calls": [call("todowrite", todos=[
                     {"content": "Read cart.py and the failing test", "status": "completed",
                      "priority": "high"},
                     {"content": "Apply the discount code in total_cents",
                      "status": "completed", "priority": "high"},
                     {"content": "Run the unit tests", "status": "in_progress",
                      "priority": "medium"}]),
                     call("bash", command="python3 -m unittest -q")]},
                 {"tool_calls": [call("todowrite", todos=[
                     {"content": "Read cart.py and the failing test", "status": "completed",
                      "priority": "high"},
                     {"content": "Apply the discount code in total_cents",
                      "status": "completed", "priority": "high"},
                     {"content": "Run the unit tests", "status": "completed",
                      "priority": "medium"}])]},
                 {"text": "Fixed. `total_cents` now takes the percentage of a known code off "
                          "the total with integer arithmetic (899 → 809 for WELCOME10); an "
                          "unknown or missing code changes nothing. Both tests pass."},
             ])
    made["fix"] = s
    d.wait_title(s, SHOP)
    d.prompt(s, SHOP, "Also add a test for an unknown code: it must not change the total.", [
        {"tool_calls": [call("edit", filePath=f"{SHOP}/tests/test_cart.py",
                             oldString='        self.assertEqual(total_cents([("coffee", 1)], '
                                       'code="WELCOME10"), 809)\n',
                             newString='        self.assertEqual(total_cents([("coffee", 1)], '
                                       'code="WELCOME10"), 809)\n\n    def test_unknown_code('
                                       'self):\n        self.assertEqual(total_cents([("bread",'
                                       ' 2)], code="NOPE"), 500)\n')]},
        {"tool_calls": [call("bash", command="python3 -m unittest -q")]},
        {"text": "Added `test_unknown_code`: an unknown code leaves 2 × bread at 500. All 3 "
                 "tests pass."},
    ])

    # 2. shop: an image in the prompt; the user renames the session afterwards
    s = d.new_session(SHOP)
    d.prompt(s, SHOP, "Here is the new logo. Write a one-line alt text for it and put it at the "
             "top of the README.", [
                 title("Alt text for the new logo", "new logo"),
                 {"reasoning": "The image is a small checkered square in blue and orange.",
                  "text": "I'll add it under the title.",
                  "tool_calls": [call("edit", filePath=f"{SHOP}/README.md",
                                      oldString="# Shop\n",
                                      newString="# Shop\n\n![Blue and orange checkered square, "
                                                "the corner shop logo](logo.png)\n")]},
                 {"text": "Added the logo to the README with the alt text \"Blue and orange "
                          "checkered square, the corner shop logo\"."},
             ], files=[png_part()])
    d.wait_title(s, SHOP)
    d.api("PATCH", f"/session/{s}", SHOP, {"title": "README logo"})
    made["image"] = s

    # 3. shop: a sub-agent (task tool → child session with its own turns)
    s = d.new_session(SHOP)
    d.prompt(s, SHOP, "Which parts of the shop have no tests? Use the explore agent.", [
        title("Find untested shop code", "no tests"),
        {"text": "I'll have the explore agent look.",
         "tool_calls": [call("task", description="Find untested code",
                             prompt="List the source files in /home/dev/shop and say which "
                                    "ones tests/ does not cover.",
                             subagent_type="explore")]},
        {"tool_calls": [call("glob", pattern="**/*")]},
        {"tool_calls": [call("grep", pattern="^from |^import ", path=f"{SHOP}/tests")]},
        {"text": "Source files: cart.py (imported by tests/test_cart.py) and deploy.sh (a shell "
                 "script no test touches)."},
        {"text": "Only `deploy.sh` has no tests; `cart.py` is covered by `tests/test_cart.py`."},
    ])
    made["subagent"] = s
    d.wait_title(s, SHOP)

    # 4. shop: a revert followed by a new prompt (the reverted turn is deleted), then a
    #    revert that stays pending (its turn is still stored, hidden in the UI)
    s = d.new_session(SHOP)
    d.prompt(s, SHOP, "Rename total_cents to cart_total.", [
        title("Rename total_cents to cart_total", "cart_total"),
        {"tool_calls": [call("grep", pattern="total_cents", path=SHOP)]},
        {"tool_calls": [call("edit", filePath=f"{SHOP}/cart.py",
                             oldString="def total_cents(", newString="def cart_total(")]},
        {"text": "Renamed it in cart.py. The tests still import `total_cents`; shall I update "
                 "them too?"},
    ])
    d.wait_title(s, SHOP)
    d.prompt(s, SHOP, "Yes, update the tests too.", [
        {"tool_calls": [call("edit", filePath=f"{SHOP}/tests/test_cart.py",
                             oldString="total_cents", newString="cart_total", replaceAll=True)]},
        {"tool_calls": [call("bash", command="python3 -m unittest -q")]},
        {"text": "Updated the tests; all pass."},
    ])
    second = d.user_message_ids(s, SHOP)[1]
    d.api("POST", f"/session/{s}/revert", SHOP, {"messageID": second})
    d.prompt(s, SHOP, "On second thought, keep the old name working: add an alias "
             "total_cents = cart_total in cart.py instead.", [
                 {"tool_calls": [call("edit", filePath=f"{SHOP}/cart.py",
                                      oldString="    return total * (100 - percent) // 100\n",
                                      newString="    return total * (100 - percent) // 100\n"
                                                "\n\ntotal_cents = cart_total\n")]},
                 {"tool_calls": [call("bash", command="python3 -m unittest -q")]},
                 {"text": "Added `total_cents = cart_total`; the tests pass unchanged."},
             ])
    d.prompt(s, SHOP, "And mention the rename in the README.", [
        {"tool_calls": [call("edit", filePath=f"{SHOP}/README.md",
                             oldString="Run the tests",
                             newString="`cart_total` (old name: `total_cents`) computes the "
                                       "total.\n\nRun the tests")]},
        {"text": "The README now mentions `cart_total` and its old name."},
    ])
    last = d.user_message_ids(s, SHOP)[-1]
    d.api("POST", f"/session/{s}/revert", SHOP, {"messageID": last})
    made["revert"] = s

    # 5. shop: a compaction between turns
    s = d.new_session(SHOP)
    d.prompt(s, SHOP, "What does deploy.sh do?", [
        title("Explain deploy.sh", "deploy.sh"),
        {"tool_calls": [call("read", filePath=f"{SHOP}/deploy.sh")]},
        {"text": "It copies the working tree to `/srv/shop/` on prod.example.com with `rsync -a "
                 "--delete`, stopping at the first error (`set -eu`)."},
    ])
    d.wait_title(s, SHOP)
    d.prompt(s, SHOP, "Is --delete dangerous there?", [
        {"reasoning": "--delete removes files on the server that are not in the source tree.",
         "text": "Yes: anything on the server that is not in your working tree is deleted, "
                 "uploads included. Run it with `--dry-run` first to see what would go."},
    ])
    model.script([{"when": {"no_tools": True},
                   "text": "## Goal\nUnderstand deploy.sh.\n\n## Facts\n- deploy.sh rsyncs the "
                           "tree to prod with --delete.\n- --delete removes server files that "
                           "are not in the tree.\n\n## Next\nMaybe add a dry-run flag."}])
    d.api("POST", f"/session/{s}/summarize", SHOP, MODEL, timeout=300)
    model.expect_done("compaction")
    d.prompt(s, SHOP, "Add a --dry-run flag to it.", [
        {"tool_calls": [call("edit", filePath=f"{SHOP}/deploy.sh",
                             oldString="set -eu\nrsync -a --delete ./",
                             newString="set -eu\nflags=\"\"\n[ \"${1:-}\" = --dry-run ] && "
                                       "flags=--dry-run\nrsync -a --delete $flags ./")]},
        {"text": "`./deploy.sh --dry-run` now only shows what rsync would change."},
    ])
    made["compaction"] = s

    # 6. notes (no git: the "global" project): a failing command, a failing tool, an abort
    s = d.new_session(NOTES)
    d.prompt(s, NOTES, "Check my todo list and whether the nightly backup ran.", [
        title("Check todos and nightly backup", "todo list"),
        {"tool_calls": [call("read", filePath=f"{NOTES}/todo.md")]},
        {"tool_calls": [call("bash", command="./backup.sh")]},
        {"tool_calls": [call("read", filePath=f"{NOTES}/backup.log")]},
        {"text": "Two todos are open: the reply to Sam and the backup check. The backup has not "
                 "run: `backup.sh` is not executable (exit 126) and there is no backup.log."},
    ])
    d.wait_title(s, NOTES)
    model.script([{"text": "Hi Sam,", "delay": 30}])
    t = threading.Thread(target=lambda: d.api("POST", f"/session/{s}/message", NOTES,
                                              {"parts": [{"type": "text",
                                                          "text": "Write the reply to Sam."}],
                                               "model": MODEL}, timeout=120), daemon=True)
    t.start()
    L.wait_for(lambda: model.state()["used"][0], "the prompt to reach the model")
    time.sleep(1.0)
    d.api("POST", f"/session/{s}/abort", NOTES, {})
    t.join(timeout=60)
    made["notes"] = s

    # 7. notes: a short session, archived afterwards
    s = d.new_session(NOTES)
    d.prompt(s, NOTES, "Draft a two-line reply to Sam saying the invoice is paid.", [
        title("Reply to Sam about the invoice", "Sam"),
        {"text": "Hi Sam,\nthe invoice is paid; thanks for the reminder."},
    ])
    d.wait_title(s, NOTES)
    d.api("PATCH", f"/session/{s}", NOTES, {"time": {"archived": int(time.time() * 1000)}})
    made["archived"] = s
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(L.REPO / "samples" / "opencode"))
    ap.add_argument("--keep", action="store_true", help="keep the scratch dir")
    args = ap.parse_args()
    L.check_namespace()
    oc = L.PEERS_DIR / "node_modules" / ".bin" / "opencode"
    if not oc.exists():
        L.die(f"{oc} missing: run scripts/judges/install.sh opencode")
    if not shutil.which("rg"):
        L.die("ripgrep (rg) is not on PATH: OpenCode's glob and grep tools need it and "
              "would try to download it (apt-get install ripgrep)")
    work = Path(tempfile.mkdtemp(prefix="asp-sample-opencode-"))
    home = work / "dev"
    home.mkdir()
    L.log("scratch", work)
    cfg = home / ".config" / "opencode"
    L.write_files(cfg, {"opencode.json": json.dumps(OPENCODE_JSON, indent=2) + "\n",
                        "AGENTS.md": GLOBAL_AGENTS_MD,
                        "skills/release-notes/SKILL.md": SKILL_MD,
                        "skills/release-notes/scripts/changes.sh": SKILL_SCRIPT,
                        "command/test.md": COMMAND_MD,
                        "agent/money-reviewer.md": AGENT_MD,
                        "mcp/issues.py": MCP_STUB},
                  executable=("skills/release-notes/scripts/changes.sh", "mcp/issues.py"))
    commit = L.make_shop(home)
    L.make_notes(home)
    model = L.Model(work)
    port = 47000 + (model.port % 1000)
    env = L.base_env({"SCRIPTED_MODEL_URL": f"{model.url}/v1",
                      "SCRIPTED_MODEL_KEY": "not-a-key",
                      "OPENCODE_DISABLE_AUTOUPDATE": "1",
                      "OPENCODE_DISABLE_SHARE": "1",
                      "OPENCODE_DISABLE_MODELS_FETCH": "1"})
    serve = L.Proc(L.ns_argv(home, L.HOME_MOUNT, [str(oc), "serve", "--port", str(port),
                                                   "--hostname", "127.0.0.1"]),
                   env=env, stdout=open(work / "serve.log", "ab"), stderr=subprocess.STDOUT)
    try:
        L.wait_for(lambda: L.http("GET", f"http://127.0.0.1:{port}/global/health", timeout=2),
                   "opencode serve", timeout=60)
        made = run_sessions(Driver(port, model), model)
        L.log("sessions", json.dumps(made))
    finally:
        serve.stop()
        model.stop()
    out = Path(args.out)
    if out.exists():
        for p in out.iterdir():
            if p.name != "EXPECTED.md":
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)

    def skip(rel: str) -> bool:
        return (rel in (".local/share/opencode/log", ".local/share/opencode/snapshot",
                        ".local/share/opencode/repos", ".local/share/opencode/bin",
                        ".local/state/opencode/locks", ".cache", "shop/.git")
                or rel.endswith("__pycache__")
                or rel.startswith(".local/share/opencode/opencode.db"))
    left = L.copy_tree(home, out, skip)
    L.compact_sqlite(home / ".local/share/opencode/opencode.db",
                     out / ".local/share/opencode/opencode.db")
    con = sqlite3.connect(out / ".local/share/opencode/opencode.db")
    n = con.execute("select count(*) from session").fetchone()[0]
    con.close()
    L.log(f"wrote {out}: {n} sessions; shop root commit {commit}; left out: {left}")
    if args.keep:
        L.log("kept", work)
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
