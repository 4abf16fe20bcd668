#!/usr/bin/env python3
"""Make samples/qwen/ with the real Qwen Code (@qwen-code/qwen-code 0.24.4).

    scripts/samples/make_qwen.py [--out samples/qwen] [--keep-logs DIR]

Needs root (a private mount + network namespace, see pqlib.py) and the pinned
package from `scripts/judges/install.sh qwen`. Qwen Code runs as an ACP agent
(`qwen --acp`, what Zed and other ACP clients start) and once headless (`qwen -p`),
against the scripted model through its OpenAI-compatible auth (`security.auth.
selectedType: "openai"`; key and base URL only in the environment), with HOME=/home/dev.
Tool permissions are granted the way a user clicking "Allow" would (session mode
`default`). Titles go through the agent's own `renameSession` ACP extension method
(what `/rename` does in the TUI), rewinds through `rewindSession` (what `/rewind` does).

The sample home gets ~/.qwen/{settings.json, QWEN.md, skills/, projects/, memories/}
plus what Qwen writes beside them. Sessions, in order:

  1. shop (ACP): fix discount codes -- thinking, parallel reads, a failing test run, an
     edit, a passing run, a second prompt; title by renameSession; the managed-memory
     extraction that runs after the turn writes one user and one project memory
  2. shop (ACP): a rewind -- two turns, rewindSession back to after the first, a new
     second turn (the rewound turn stays in the file on a dead branch); titled
  3. shop (ACP): /compress after two turns, then a third turn
  4. shop (ACP): a screenshot (ACP image block: sent to the model, not recorded) and a
     foreground Explore subagent (its own transcript under subagents/)
  5. api-gateway (headless `qwen -p`): an @-referenced image (recorded as inlineData), an
     edit and a failed read; no title
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import pqlib as S  # noqa: E402

QWEN = S.PEERS_BIN / "qwen"
MODEL = "qwen3-coder-plus"
SHOP = S.HOME / "shop"
GATEWAY = S.HOME / "api-gateway"
QHOME = S.HOME / ".qwen"
USER_MEM = QHOME / "memories"
SHOP_MEM = QHOME / "projects" / "-home-dev-shop" / "memory"

# Requests Qwen makes beside the conversation: follow-up suggestions after a turn and
# the managed-memory extraction agent. Answered by `when` turns (repeat) so they never
# take a conversation turn.
SUGGESTION = {"when": {"user": "[SUGGESTION MODE"}, "repeat": True, "text": "run the tests"}
EXTRACT = {"system": "managed memory extraction subagent"}
NOTHING_TO_SAVE = {"when": EXTRACT, "repeat": True, "text": "Nothing durable to save."}
# /compress: Qwen first asks in the main agent's own context (a forked request whose last
# user message is the summarizer instructions), falling back to a plain summarizer request.
SNAPSHOT = ("<analysis>The user explored the shop's tests.</analysis>\n<state_snapshot>\n"
            "<overall_goal>Understand the shop's tests.</overall_goal>\n"
            "<key_knowledge>tests/test_cart.py: TotalTest with test_plain and test_welcome10; "
            "run with python3 -m unittest -q.</key_knowledge>\n"
            "<current_plan>Add a VIP25 test.</current_plan>\n</state_snapshot>")
COMPRESS_FORKED = {"when": {"user": "You are the component that summarizes a conversation"},
                   "text": SNAPSHOT}
COMPRESS_PLAIN = {"when": {"system": "You are the component that summarizes a conversation"},
                  "text": SNAPSHOT}
# Before each prompt Qwen asks the model which saved memories are relevant.
RECALL = {"when": {"system": "You are selecting memories"}, "repeat": True,
          "tool_calls": [{"name": "respond_in_schema", "arguments": {"selected_memories": []}}]}


def home_config():
    S.write(QHOME / "settings.json", json.dumps({
        "security": {"auth": {"selectedType": "openai"}},
        "model": {"name": MODEL},
        "modelProviders": {
            "openai": [
                {"id": MODEL, "name": "Qwen3 Coder Plus (local gateway)",
                 "baseUrl": S.MODEL_URL, "envKey": "OPENAI_API_KEY",
                 "capabilities": {"vision": True},
                 "generationConfig": {"contextWindowSize": 262144, "modalities": {"image": True}}}
            ]
        },
        "general": {"checkpointing": {"enabled": False}},
        "ui": {"hideTips": True},
        "mcpServers": {
            "issues": {"command": "python3", "args": ["/home/dev/tools/issues-mcp/server.py"],
                       "env": {"ISSUES_TOKEN": "$ISSUES_TOKEN"}, "timeout": 30000,
                       "trust": False, "description": "Issue tracker (read-only)"},
            "docs": {"httpUrl": "https://mcp.docs.example.com/mcp",
                     "headers": {"Authorization": "Bearer $DOCS_MCP_TOKEN"}},
        },
        "mcp": {"excluded": ["issues", "docs"]},
    }, indent=2) + "\n")
    S.write(QHOME / "QWEN.md",
            "# Personal instructions\n\n"
            "- Prefer small, reviewable changes; explain the why in one sentence.\n"
            "- Run the project's tests before saying something works.\n\n"
            "## Qwen Added Memories\n"
            "- My editor is Helix (`hx`); suggest commands, not GUI steps.\n"
            "- The staging database listens on port 5433, not 5432.\n")
    S.write(QHOME / "skills" / "release-notes" / "SKILL.md",
            "---\nname: release-notes\n"
            "description: Draft release notes from the commits since the last tag.\n---\n\n"
            "1. Run `scripts/changelog.sh` to list the commits.\n"
            "2. Group them into Added / Fixed / Changed.\n")
    S.write(QHOME / "skills" / "release-notes" / "scripts" / "changelog.sh",
            "#!/bin/sh\ngit log --oneline \"$(git describe --tags --abbrev=0)\"..HEAD\n", 0o755)


def env() -> dict:
    return {
        "PATH": ":".join([str(S.PEERS_BIN), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(S.HOME),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": "/tmp",
        # the placeholder the local gateway accepts; never written to the sample
        "OPENAI_API_KEY": "sk-local-placeholder",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    }


class Acp:
    def __init__(self, cwd: Path, logs: Path, name: str):
        scratch = type("Logs", (), {"logs": logs})()
        self.peer = S.AcpPeer(["node", str(QWEN), "--acp"], env=env(), cwd=str(cwd),
                              scratch=scratch, name=name)
        res, err, _, _ = S.J.acp_initialize(self.peer, timeout=90)
        if err:
            raise SystemExit(f"qwen --acp initialize: {err}")
        self.cwd = cwd

    def req(self, method, params, timeout=120.0):
        res, err, _, _ = self.peer.request(method, params, timeout=timeout)
        if err:
            raise SystemExit(f"qwen --acp {method}: {err}\n" + "\n".join(self.peer.stderr_tail(20)))
        return res

    def new(self) -> str:
        sid = self.req("session/new", {"cwd": str(self.cwd), "mcpServers": []})["sessionId"]
        self.req("session/set_mode", {"sessionId": sid, "modeId": "default"})
        return sid

    def prompt(self, sid: str, text: str, image: str | None = None):
        blocks = [{"type": "text", "text": text}]
        if image:
            blocks.append({"type": "image", "data": image, "mimeType": "image/png"})
        res = self.req("session/prompt", {"sessionId": sid, "prompt": blocks}, timeout=180)
        if res.get("stopReason") != "end_turn":
            raise SystemExit(f"prompt ended {res}")
        time.sleep(0.5)

    def close(self):
        time.sleep(2.0)  # background work (memory extraction) after the last turn
        self.peer.close()


def call(name, **args):
    return {"name": name, "arguments": args}


OLD_TOTAL = '    return sum(i["price_cents"] * i.get("qty", 1) for i in items)\n'
NEW_TOTAL = ('    total = sum(i["price_cents"] * i.get("qty", 1) for i in items)\n'
             '    percent = DISCOUNTS.get((code or "").strip().upper(), 0)\n'
             '    return total - total * percent // 100\n')


def session_1(model: S.Model, logs: Path):
    model.script([
        SUGGESTION, RECALL,
        {"when": EXTRACT, "tool_calls": [
            call("read_file", file_path=f"{USER_MEM}/MEMORY.md"),
            call("read_file", file_path=f"{SHOP_MEM}/MEMORY.md")]},
        {"when": EXTRACT, "tool_calls": [
            call("write_file", file_path=f"{USER_MEM}/feedback/money-in-cents.md",
                 content="---\nname: Money in integer cents\n"
                         "description: Prices and totals are integer cents, never floats\n"
                         "type: feedback\n---\n\nAlways compute money in integer cents.\n\n"
                         "**Why:** the user said so while fixing discount codes.\n"
                         "**How to apply:** any price, discount or total arithmetic.\n"),
            call("write_file", file_path=f"{SHOP_MEM}/project/deploy-freeze.md",
                 content="---\nname: Deploy freeze\n"
                         "description: No production deploys of the shop until 2026-12-15\n"
                         "type: project\n---\n\nNo deploys to prod before 2026-12-15.\n\n"
                         "**Why:** the user asked for it while fixing discount codes.\n"
                         "**How to apply:** do not run deploy.sh against prod before then.\n"),
            call("write_file", file_path=f"{USER_MEM}/MEMORY.md",
                 content="- [Money in integer cents](feedback/money-in-cents.md) — never floats for prices\n"),
            call("write_file", file_path=f"{SHOP_MEM}/MEMORY.md",
                 content="- [Deploy freeze](project/deploy-freeze.md) — no prod deploys before 2026-12-15\n")]},
        {"when": EXTRACT, "text": "Saved one feedback memory (user) and one project memory."},
        NOTHING_TO_SAVE,
        {"reasoning": "Discount codes are ignored. Read the cart module and its tests first.",
         "text": "I'll read the cart module and its tests first.",
         "tool_calls": [call("read_file", file_path=f"{SHOP}/cart.py"),
                        call("read_file", file_path=f"{SHOP}/tests/test_cart.py")]},
        {"reasoning": "total_cents never looks at `code`. Confirm the failing test.",
         "text": "`total_cents` ignores its `code` argument. Let me confirm the failing test.",
         "tool_calls": [call("run_shell_command", command="python3 -m unittest -q",
                             description="Run the unit tests")]},
        {"reasoning": "Look the code up case-insensitively, strip spaces, integer cents.",
         "tool_calls": [call("edit", file_path=f"{SHOP}/cart.py", old_string=OLD_TOTAL,
                             new_string=NEW_TOTAL)]},
        {"tool_calls": [call("run_shell_command", command="python3 -m unittest -q",
                             description="Run the unit tests again")]},
        {"text": "Fixed. `total_cents` now looks the code up in `DISCOUNTS` (case-insensitive, "
                 "surrounding spaces ignored) and subtracts the percentage in integer cents. "
                 "Both tests pass."},
        {"reasoning": "Unknown codes map to 0 percent through dict.get.",
         "text": "No. An unknown or missing code falls back to 0 percent, so the total is "
                 "unchanged."},
    ], [MODEL])
    q = Acp(SHOP, logs, "qwen-session-1")
    sid = q.new()
    q.prompt(sid, "Checkout totals ignore discount codes like welcome10. Fix total_cents and make "
                  "the tests pass. Remember: money is always integer cents, and we don't deploy "
                  "the shop to prod before 2026-12-15.")
    q.prompt(sid, "Does an unknown code raise now?")
    q.req("renameSession", {"sessionId": sid, "title": "Fix discount codes in checkout"})
    q.close()
    model.check_used("qwen session 1")


def session_2(model: S.Model, logs: Path):
    model.script([
        SUGGESTION, NOTHING_TO_SAVE, RECALL,
        {"text": "Two options:\n\n1. Keep `DISCOUNTS` in `cart.py`: one place, reviewed with the code.\n"
                 "2. Move it to `discounts.json`: editable without a deploy, but needs loading "
                 "and validation.\n\nFor a shop this size I'd keep it in Python."},
        {"tool_calls": [call("write_file", file_path=f"{SHOP}/discounts.json",
                             content='{\n  "WELCOME10": 10,\n  "VIP25": 25\n}\n')]},
        {"text": "Wrote `discounts.json` with both codes; `cart.py` does not load it yet."},
        {"tool_calls": [call("read_file", file_path=f"{SHOP}/cart.py")]},
        {"tool_calls": [call("edit", file_path=f"{SHOP}/cart.py",
                             old_string='DISCOUNTS = {"WELCOME10": 10, "VIP25": 25}\n',
                             new_string='DISCOUNTS = {"VIP25": 25, "WELCOME10": 10}\n')]},
        {"text": "Kept the table in `cart.py` and sorted its keys."},
    ], [MODEL])
    q = Acp(SHOP, logs, "qwen-session-2")
    sid = q.new()
    q.prompt(sid, "Should the DISCOUNTS table move to a JSON file? Sketch both options.")
    q.prompt(sid, "Go with a JSON file: write discounts.json.")
    q.req("rewindSession", {"sessionId": sid, "targetTurnIndex": 1, "rewindFiles": True})
    q.prompt(sid, "Actually keep it in Python, but sort the keys.")
    q.req("renameSession", {"sessionId": sid, "title": "Where the discount table lives"})
    q.close()
    model.check_used("qwen session 2")


def session_3(model: S.Model, logs: Path):
    model.script([
        SUGGESTION, NOTHING_TO_SAVE, RECALL,
        {"tool_calls": [call("read_file", file_path=f"{SHOP}/tests/test_cart.py")]},
        {"text": "One test module, `tests/test_cart.py`, with a `TotalTest` case: `test_plain` "
                 "(no code) and `test_welcome10`."},
        {"tool_calls": [call("read_file", file_path=f"{SHOP}/README.md")]},
        {"text": "The README only says how to run the tests: `python3 -m unittest -q`."},
        COMPRESS_FORKED, COMPRESS_PLAIN,
        {"tool_calls": [call("read_file", file_path=f"{SHOP}/tests/test_cart.py")]},
        {"tool_calls": [call("edit", file_path=f"{SHOP}/tests/test_cart.py",
                             old_string='\n\nif __name__ == "__main__":\n',
                             new_string='\n    def test_vip25(self):\n'
                                        '        self.assertEqual(total_cents(ITEMS, "VIP25"), 1875)\n'
                                        '\n\nif __name__ == "__main__":\n')]},
        {"tool_calls": [call("run_shell_command", command="python3 -m unittest -q",
                             description="Run the unit tests")]},
        {"text": "Added `test_vip25` (25 % off 2500 is 1875); the suite passes."},
    ], [MODEL])
    q = Acp(SHOP, logs, "qwen-session-3")
    sid = q.new()
    q.prompt(sid, "How are the tests laid out?")
    q.prompt(sid, "And what does the README say about running them?")
    q.prompt(sid, "/compress")
    q.prompt(sid, "Now add a test for VIP25 and run the suite.")
    q.close()
    model.check_used("qwen session 3")


def session_4(model: S.Model, logs: Path):
    model.script([
        SUGGESTION, NOTHING_TO_SAVE, RECALL,
        {"reasoning": "A red square with a white cross: the remove-item icon.",
         "text": "It shows a red square with a white cross, the usual *remove item* icon. "
                 "Let me check whether anything in the shop handles removal.",
         "tool_calls": [call("agent", description="Find cart removal code",
                             prompt="Find any code in /home/dev/shop that removes an item from "
                                    "the cart. Report file and function names.",
                             subagent_type="Explore", run_in_background=False)]},
        {"tool_calls": [call("grep_search", pattern="remove|delete", path=str(SHOP))]},
        {"text": "No removal code: `cart.py` only defines `DISCOUNTS` and `total_cents`."},
        {"text": "Nothing in the shop removes items yet: `cart.py` only has `DISCOUNTS` and "
                 "`total_cents`. The icon needs a handler first."},
    ], [MODEL])
    q = Acp(SHOP, logs, "qwen-session-4")
    sid = q.new()
    q.prompt(sid, "What does this icon from the cart page mean?", image=S.tiny_png())
    q.close()
    model.check_used("qwen session 4")


def session_5(model: S.Model, logs: Path):
    model.script([
        SUGGESTION, NOTHING_TO_SAVE, RECALL,
        {"tool_calls": [call("read_file", file_path=f"{GATEWAY}/routes.py"),
                        call("read_file", file_path=f"{GATEWAY}/orders.py")]},
        {"text": "There is no `orders.py`; the orders service is external. Adding the route.",
         "tool_calls": [call("edit", file_path=f"{GATEWAY}/routes.py",
                             old_string='    "/users": "http://users.internal:8081",\n',
                             new_string='    "/users": "http://users.internal:8081",\n'
                                        '    "/orders": "http://orders.internal:8082",\n')]},
        {"text": "Added `/orders` -> `http://orders.internal:8082`."},
    ], [MODEL])
    # an @-reference to an image: the TUI/headless path records it as an inlineData part
    # (an ACP image block, session 4, is sent to the model but not recorded)
    (GATEWAY / "routes.png").write_bytes(base64.b64decode(S.tiny_png()))
    r = S.J.run_cmd(["node", str(QWEN), "--approval-mode", "yolo",
                     "Add an /orders route to the gateway, as sketched in @routes.png"],
                    env=env(), cwd=str(GATEWAY), timeout=180, scratch=None)
    (logs / "qwen-session-5.out").write_text(r["stdout"] + "\n----\n" + r["stderr"])
    if r["exit"] != 0:
        raise SystemExit(f"qwen -p exited {r['exit']}: {r['stderr'][-2000:]}")
    model.check_used("qwen session 5")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(S.REPO / "samples" / "qwen"))
    ap.add_argument("--keep-logs", help="copy the model request log and stderr here")
    ap.add_argument("--only", type=int, action="append", help="run only these sessions (debugging)")
    args = ap.parse_args()
    S.enter_namespace()
    if not QWEN.exists():
        raise SystemExit(f"{QWEN} missing: run scripts/judges/install.sh qwen")
    logs = Path("/tmp/asp-samples-qwen-logs")
    logs.mkdir(parents=True, exist_ok=True)
    S.make_project(SHOP, S.SHOP_FILES)
    S.make_project(GATEWAY, S.GATEWAY_FILES)
    home_config()
    model = S.Model(logs)
    steps = [session_1, session_2, session_3, session_4, session_5]
    try:
        for i, step in enumerate(steps, 1):
            if not args.only or i in args.only:
                step(model, logs)
    finally:
        model.close()
        if args.keep_logs:
            S.copy_tree(logs, Path(args.keep_logs))
    out = Path(args.out)
    # sessions/<pid>-<id>.json: the registry of running processes (`qwen sessions ps`),
    # left behind because the maker ends the agents with SIGTERM; each holds a local IPC
    # token, so it stays out of the sample.
    S.copy_tree(QHOME, out / ".qwen")
    S.rm_tree(out / ".qwen" / "sessions")
    S.log(f"wrote {out}")


if __name__ == "__main__":
    main()
