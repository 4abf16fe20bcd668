#!/usr/bin/env python3
"""Make samples/pi/ with the real Pi (@mariozechner/pi-coding-agent 0.73.1).

    scripts/samples/make_pi.py [--out samples/pi] [--keep-logs DIR]

Needs root (a private mount + network namespace, see pqlib.py) and the pinned
package from `scripts/judges/install.sh pi`. Pi runs in RPC mode (`pi --mode rpc`, the
mode pi-acp drives for ACP clients such as Zed) against the scripted model, with
HOME=/home/dev. Branch navigation (/tree) and labels go through Pi's own extension API
(pi_driver_extension.ts, loaded with -e, not installed into the sample).

The sample home gets: ~/.pi/agent/{settings.json, models.json, AGENTS.md, auth.json,
skills/, prompts/, sessions/} and ~/.agents/skills/. Everything except sessions/ and
auth.json (which Pi creates, empty) is written here before Pi runs, as a user would have
it. Sessions, in order:

  1. shop: fix discount codes -- thinking, parallel reads, a failing test run, an edit,
     a thinking-level change, a model change, a failing deploy run, a label, a user `!`
     bash command, a name (session_info)
  2. shop: where the discount table lives -- a /tree branch with a branch summary, so
     the file holds two leaves; named
  3. shop: a /fork of session 2 (new file, header parentSession); named
  4. shop: compaction (/compact) in the middle of a session
  5. shop: a screenshot (image) in the prompt; no name
  6. api-gateway: a skill invocation, a write, a read of a missing file, an API error
     (stopReason "error") and a retry by the user; no name
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import pqlib as S  # noqa: E402

PI = S.PEERS_BIN / "pi"
MODEL_A = "qwen3-coder:30b"
MODEL_B = "gpt-oss:20b"
SHOP = S.HOME / "shop"
GATEWAY = S.HOME / "api-gateway"
AGENT = S.HOME / ".pi" / "agent"
SUMMARY = {"system": "context summarization assistant"}


def home_config():
    S.write(AGENT / "models.json", json.dumps({
        "providers": {
            "ollama": {
                "baseUrl": S.MODEL_URL,
                "api": "openai-completions",
                "apiKey": "ollama",
                "compat": {"supportsDeveloperRole": False},
                "models": [
                    {"id": MODEL_A, "name": "Qwen3 Coder 30B (local)", "reasoning": True,
                     "input": ["text", "image"], "contextWindow": 65536, "maxTokens": 8192},
                    {"id": MODEL_B, "name": "gpt-oss 20B (local)", "reasoning": True,
                     "input": ["text"], "contextWindow": 131072, "maxTokens": 8192},
                ],
            }
        }
    }, indent=2) + "\n")
    S.write(AGENT / "settings.json", json.dumps({
        "defaultProvider": "ollama",
        "defaultModel": MODEL_A,
        "defaultThinkingLevel": "medium",
        "theme": "dark",
        "quietStartup": True,
        "enableInstallTelemetry": False,
        "treeFilterMode": "no-tools",
    }, indent=2) + "\n")
    # Project setting of the shop (not part of the sample home): keep so little recent
    # context that /compact in session 4 cuts exactly at its second prompt.
    S.write(SHOP / ".pi" / "settings.json",
            json.dumps({"compaction": {"keepRecentTokens": 50}}, indent=2) + "\n")
    S.write(AGENT / "AGENTS.md",
            "# Personal instructions\n\n"
            "- Prefer small, reviewable changes; explain the why in one sentence.\n"
            "- Money is always integer cents, never floats.\n"
            "- Run the project's tests before saying something works.\n")
    S.write(AGENT / "skills" / "route-check" / "SKILL.md",
            "---\nname: route-check\n"
            "description: Check a new gateway route against the routing rules before adding it.\n"
            "---\n\n# Route check\n\n"
            "1. Prefixes must not shadow each other (longest prefix first).\n"
            "2. Every upstream is an `http://<service>.internal:<port>` URL.\n"
            "3. Add a line to README.md for each new route.\n")
    S.write(AGENT / "skills" / "route-check" / "scripts" / "list-routes.sh",
            "#!/bin/sh\ngrep -o '\"/[a-z]*\"' routes.py\n", 0o755)
    S.write(AGENT / "prompts" / "review.md",
            "---\ndescription: Review the working tree before a commit\n---\n"
            "Review `git diff` for correctness and missing tests. $ARGUMENTS\n")
    S.write(S.HOME / ".agents" / "skills" / "commit-style" / "SKILL.md",
            "---\nname: commit-style\n"
            "description: How commit messages are written in these repositories.\n---\n\n"
            "Subject in the imperative, at most 60 characters; body says why.\n")


def env() -> dict:
    return {
        "PATH": ":".join([str(S.PEERS_BIN), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(S.HOME),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "TMPDIR": "/tmp",
    }


class Pi(S.PiRpc):
    def __init__(self, cwd: Path, logdir: Path, name: str, extra: list[str] = ()):
        super().__init__(["node", str(PI), "--mode", "rpc", "--no-themes",
                          "-e", str(S.HERE / "pi_driver_extension.ts"), *extra],
                         env(), str(cwd), logdir, name)
        st = self.send({"type": "get_state"})
        self.file = st.get("sessionFile")

    def state(self):
        st = self.send({"type": "get_state"})
        self.file = st.get("sessionFile")
        return st

    def entries(self) -> list[dict]:
        self.state()
        return [json.loads(x) for x in Path(self.file).read_text().splitlines() if x.strip()]

    def command(self, text: str):
        """An extension command: answered once it ran, no agent turn."""
        self.send({"type": "prompt", "message": text})
        time.sleep(0.3)

    def find(self, role: str, contains: str) -> str:
        for e in self.entries():
            m = e.get("message") or {}
            if e.get("type") == "message" and m.get("role") == role:
                c = m.get("content")
                text = c if isinstance(c, str) else " ".join(
                    b.get("text", "") for b in c if isinstance(b, dict))
                if contains in text:
                    return e["id"]
        raise SystemExit(f"no {role} entry containing {contains!r}")


def call(name, **args):
    return {"name": name, "arguments": args}


OLD_TOTAL = '    return sum(i["price_cents"] * i.get("qty", 1) for i in items)\n'
NEW_TOTAL = ('    total = sum(i["price_cents"] * i.get("qty", 1) for i in items)\n'
             '    percent = DISCOUNTS.get((code or "").strip().upper(), 0)\n'
             '    return total - total * percent // 100\n')


def session_1(model: S.Model, logs: Path):
    model.script([
        {"reasoning": "Discount codes are ignored. I need the cart module and its tests before touching anything.",
         "text": "I'll read the cart module and its tests first.",
         "tool_calls": [call("read", path="cart.py"), call("read", path="tests/test_cart.py")]},
        {"reasoning": "total_cents never looks at `code`. Confirm the failing test before editing.",
         "text": "`total_cents` ignores its `code` argument. Let me confirm the failing test.",
         "tool_calls": [call("bash", command="python3 -m unittest -q")]},
        {"reasoning": "Look the code up case-insensitively, strip spaces, integer cents.",
         "tool_calls": [call("edit", path="cart.py", edits=[{"oldText": OLD_TOTAL, "newText": NEW_TOTAL}])]},
        {"tool_calls": [call("bash", command="python3 -m unittest -q")]},
        {"text": "Fixed. `total_cents` now looks the code up in `DISCOUNTS` (case-insensitive, "
                 "surrounding spaces ignored) and subtracts the percentage in integer cents. "
                 "Both tests pass."},
        {"reasoning": "An unknown code maps to 0 percent via dict.get default; None becomes an empty string.",
         "text": "No. An unknown or missing code falls back to 0 percent, so the total is unchanged; "
                 "`None` is treated as an empty code."},
        {"reasoning": "Try the deploy script in a dry mode; rsync needs -n for that.",
         "tool_calls": [call("bash", command="sh deploy.sh --dry-run")]},
        {"text": "The deploy script failed: it does not understand `--dry-run`, and `rsync` is not "
                 "installed here anyway. I left it unchanged; it needs a `-n` pass-through first."},
    ], [MODEL_A, MODEL_B])
    pi = Pi(SHOP, logs, "pi-session-1")
    pi.prompt("Checkout totals ignore discount codes like welcome10. Fix total_cents and make the tests pass.")
    pi.send({"type": "set_thinking_level", "level": "high"})
    pi.prompt("Does an unknown code raise an error now?")
    pi.send({"type": "set_model", "provider": "ollama", "modelId": MODEL_B})
    pi.prompt("Try the deploy script in dry-run mode.")
    first = pi.find("user", "Checkout totals ignore")
    pi.command(f"/asp-label {first} discount-fix")
    pi.send({"type": "bash", "command": "git status --short"})
    pi.send({"type": "set_session_name", "name": "Fix discount codes in checkout"})
    model.check_used("pi session 1")
    pi.close()


def session_2_and_3(model: S.Model, logs: Path):
    model.script([
        {"reasoning": "Two options: keep the dict in cart.py or load a JSON file at import.",
         "text": "Two options:\n\n1. Keep `DISCOUNTS` in `cart.py`: one place, reviewed with the code.\n"
                 "2. Move it to `discounts.json`: editable without a deploy, but needs loading "
                 "and validation.\n\nFor a shop this size I'd keep it in Python."},
        {"tool_calls": [call("write", path="discounts.json",
                             content='{\n  "WELCOME10": 10,\n  "VIP25": 25\n}\n')]},
        {"text": "Wrote `discounts.json` with both codes. `cart.py` still has its own copy; "
                 "the next step would be loading the file in `cart.py`."},
        {"when": SUMMARY,
         "text": "## Goal\nDecide where the discount table lives.\n\n## Progress\n"
                 "- Wrote discounts.json with WELCOME10 and VIP25 (not yet loaded by cart.py).\n\n"
                 "## Next Steps\n- Abandoned: keep the table in Python instead."},
        {"reasoning": "Sort the keys so diffs stay small.",
         "tool_calls": [call("edit", path="cart.py", edits=[{
             "oldText": 'DISCOUNTS = {"WELCOME10": 10, "VIP25": 25}\n',
             "newText": 'DISCOUNTS = {"VIP25": 25, "WELCOME10": 10}\n'}])]},
        {"text": "Kept the table in `cart.py` and sorted its keys. `discounts.json` from the other "
                 "branch is still on disk; delete it if you don't want it."},
    ])
    pi = Pi(SHOP, logs, "pi-session-2")
    pi.prompt("Should the DISCOUNTS table move to a JSON file? Sketch both options.")
    pi.prompt("Go with a JSON file: write discounts.json.")
    target = pi.find("assistant", "Two options")
    pi.command(f"/asp-tree {target} summarize")
    pi.prompt("Actually keep it in Python, but sort the keys.")
    pi.send({"type": "set_session_name", "name": "Where the discount table lives"})
    model.check_used("pi session 2")

    # 3: /fork at the last prompt: a new file with the path up to before that prompt
    model.script([
        {"text": "Added a docstring above `DISCOUNTS` that lists each code and its percentage.",
         "tool_calls": [call("edit", path="cart.py", edits=[{
             "oldText": 'DISCOUNTS = {"VIP25": 25, "WELCOME10": 10}\n',
             "newText": '# Percent off per discount code (VIP25: 25 %, WELCOME10: 10 %).\n'
                        'DISCOUNTS = {"VIP25": 25, "WELCOME10": 10}\n'}])]},
        {"text": "Done: the comment above `DISCOUNTS` lists both codes."},
    ])
    fork_at = pi.find("user", "Actually keep it in Python")
    pi.send({"type": "fork", "entryId": fork_at})
    pi.prompt("Keep it in Python and document the codes in a comment instead.")
    pi.send({"type": "set_session_name", "name": "Document the discount codes (fork)"})
    model.check_used("pi session 3")
    pi.close()


def session_4(model: S.Model, logs: Path):
    model.script([
        {"tool_calls": [call("read", path="tests/test_cart.py")]},
        {"text": "There is one test module, `tests/test_cart.py`, with a `TotalTest` case: "
                 "`test_plain` (no code) and `test_welcome10`."},
        {"tool_calls": [call("read", path="README.md")]},
        {"text": "The README only says how to run the tests: `python3 -m unittest -q`."},
        {"when": SUMMARY,
         "text": "## Goal\nUnderstand the shop's tests.\n\n## Progress\n"
                 "- tests/test_cart.py has TotalTest with test_plain and test_welcome10.\n"
                 "- README: run tests with python3 -m unittest -q.\n\n"
                 "## Next Steps\n- Add a VIP25 test."},
        {"tool_calls": [call("edit", path="tests/test_cart.py", edits=[{
            "oldText": '\n\nif __name__ == "__main__":\n',
            "newText": '\n    def test_vip25(self):\n        self.assertEqual(total_cents(ITEMS, "VIP25"), 1875)\n'
                       '\n\nif __name__ == "__main__":\n'}])]},
        {"tool_calls": [call("bash", command="python3 -m unittest -q")]},
        {"text": "Added `test_vip25` (25 % off 2500 is 1875); it runs with the others."},
    ])
    pi = Pi(SHOP, logs, "pi-session-4")
    pi.prompt("How are the tests laid out?")
    pi.prompt("And what does the README say about running them?")
    pi.send({"type": "compact", "customInstructions": "Keep what the tests cover."}, timeout=120)
    pi.prompt("Now add a test for VIP25 and run the suite.")
    model.check_used("pi session 4")
    pi.close()


def session_5(model: S.Model, logs: Path):
    model.script([
        {"reasoning": "The image is a red square with a white cross: a close or remove icon.",
         "text": "It shows a red square with a white cross, the usual *remove item* icon. In the "
                 "cart it should call the remove handler; nothing in `cart.py` handles removal yet."},
    ])
    pi = Pi(SHOP, logs, "pi-session-5")
    # session 1 switched to a text-only model, and Pi remembers the last model in
    # settings.json: switch back to the one that takes images
    pi.send({"type": "set_model", "provider": "ollama", "modelId": MODEL_A})
    pi.prompt("What does this icon from the cart page mean?",
              images=[{"type": "image", "data": S.tiny_png(), "mimeType": "image/png"}])
    model.check_used("pi session 5")
    pi.close()


def session_6(model: S.Model, logs: Path):
    model.script([
        {"reasoning": "Follow the route-check skill: look at the routes first.",
         "tool_calls": [call("read", path="routes.py"), call("read", path="orders.py")]},
        {"text": "There is no `orders.py` yet; the orders service is external. Adding the route.",
         "tool_calls": [call("edit", path="routes.py", edits=[{
             "oldText": '    "/users": "http://users.internal:8081",\n',
             "newText": '    "/users": "http://users.internal:8081",\n'
                        '    "/orders": "http://orders.internal:8082",\n'}])]},
        {"tool_calls": [call("write", path="ROUTES.md",
                             content="# Routes\n\n- /cart -> shop\n- /users -> users\n- /orders -> orders\n")]},
        {"text": "Added `/orders` -> `http://orders.internal:8082` and listed all routes in `ROUTES.md`."},
        {"error": {"status": 400, "message": "Invalid request: tool_choice \"required\" is not supported by this model"}},
        {"text": "Yes: `/orders` does not share a prefix with `/cart` or `/users`, so the order "
                 "of `ROUTES` does not matter for it."},
    ])
    pi = Pi(GATEWAY, logs, "pi-session-6")
    pi.prompt("/skill:route-check Add an /orders route to the gateway.")
    pi.prompt("Is the route order still right?")
    pi.prompt("Is the route order still right? (retry)")
    model.check_used("pi session 6")
    pi.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(S.REPO / "samples" / "pi"))
    ap.add_argument("--keep-logs", help="copy the model request log and stderr here")
    args = ap.parse_args()
    S.enter_namespace()
    if not PI.exists():
        raise SystemExit(f"{PI} missing: run scripts/judges/install.sh pi")
    logs = Path("/tmp/asp-samples-pi-logs")
    logs.mkdir(parents=True, exist_ok=True)
    S.make_project(SHOP, S.SHOP_FILES)
    S.make_project(GATEWAY, S.GATEWAY_FILES)
    home_config()
    model = S.Model(logs)
    try:
        session_1(model, logs)
        session_2_and_3(model, logs)
        session_4(model, logs)
        session_5(model, logs)
        session_6(model, logs)
    finally:
        model.close()
        if args.keep_logs:
            S.copy_tree(logs, Path(args.keep_logs))
    out = Path(args.out)
    keep = out / "EXPECTED.md"
    expected = keep.read_text() if keep.exists() else None
    S.copy_tree(S.HOME / ".pi", out / ".pi")
    S.copy_tree(S.HOME / ".agents", out / ".agents")
    if expected is not None:
        keep.write_text(expected)
    S.log(f"wrote {out}")


if __name__ == "__main__":
    main()
