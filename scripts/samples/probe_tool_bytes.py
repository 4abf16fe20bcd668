#!/usr/bin/env python3
"""What Pi and Qwen Code write when a shell tool prints bytes that are not UTF-8.

    scripts/samples/probe_tool_bytes.py

Runs one real turn per harness (scripted model, private namespace as in pqlib.py):
the model calls the shell tool with `printf 'caf\\xe9 \\xff\\xfe ok\\n'` (Latin-1 é and two
bytes that are never UTF-8), and prints the stored tool-result text of each harness as
Python repr, plus whether the session file itself is valid UTF-8."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import pqlib as S  # noqa: E402

CMD = "printf 'caf\\xe9 \\xff\\xfe ok\\n'"


def main():
    S.enter_namespace()
    import make_pi as P
    import make_qwen as Q
    logs = Path("/tmp/asp-probe-bytes-logs")
    logs.mkdir(parents=True, exist_ok=True)
    S.make_project(P.SHOP, S.SHOP_FILES)
    P.home_config()
    Q.home_config()
    model = S.Model(logs)
    out = {}
    try:
        model.script([{"tool_calls": [{"name": "bash", "arguments": {"command": CMD}}]},
                      {"text": "done"}])
        pi = P.Pi(P.SHOP, logs, "pi")
        pi.prompt("print the bytes")
        f = Path(pi.file)
        pi.close()
        raw = f.read_bytes()
        res = [json.loads(x) for x in raw.decode("utf-8", "replace").splitlines()
               if '"toolResult"' in x]
        out["pi"] = {"file_is_utf8": _utf8(raw),
                     "tool_result_text": res[0]["message"]["content"][0]["text"] if res else None}
        model.script([Q.SUGGESTION, Q.NOTHING_TO_SAVE, Q.RECALL,
                      {"tool_calls": [{"name": "run_shell_command",
                                       "arguments": {"command": CMD, "description": "print"}}]},
                      {"text": "done"}])
        r = S.J.run_cmd(["node", str(Q.QWEN), "--approval-mode", "yolo", "print the bytes"],
                        env=Q.env(), cwd=str(P.SHOP), timeout=120, scratch=None)
        chats = sorted((Q.QHOME / "projects" / "-home-dev-shop" / "chats").glob("*.jsonl"))
        raw = chats[-1].read_bytes() if chats else b""
        recs = [json.loads(x) for x in raw.decode("utf-8", "replace").splitlines()
                if '"tool_result"' in x and '"functionResponse"' in x]
        fr = recs[0]["message"]["parts"][0]["functionResponse"]["response"] if recs else None
        out["qwen"] = {"exit": r["exit"], "file_is_utf8": _utf8(raw), "functionResponse": fr,
                       "resultDisplay": (recs[0].get("toolCallResult") or {}).get("resultDisplay")
                       if recs else None}
    finally:
        model.close()
    for k, v in out.items():
        print(k, json.dumps(v, ensure_ascii=True))


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


if __name__ == "__main__":
    main()
