#!/usr/bin/env bash
# Judge asp's Gemini writer with the real Gemini CLI (opt-in; not part of cargo test).
#
#   scripts/judge-gemini.sh [--keep] [--release]
#
# 1. packs samples/gemini and restores it into an empty scratch Gemini home (asp-unpack
#    --to gemini), then carries samples/state.aspstate (a Claude Code and a Codex session,
#    one with the non-UUID id `telegram:42`) into the same home, then the Gemini sessions
#    again without their chat files (rebuilt from their ACP streams, so kept beside the
#    restored ones as <id>~gemini), and samples/claude-code and samples/codex too when those
#    converters are in this build;
# 2. runs scripts/judges/judge.sh gemini on that home (a scratch copy, retention off, no
#    network): `gemini --list-sessions` per project and ACP `session/load` per session;
# 3. compares, per written session, what Gemini lists and replays with what the writer
#    intended: the replay Gemini's `streamHistory` produces for the file asp wrote
#    (user/thought/agent/tool_call counts per the JSONL log rules of
#    spec/harnesses/gemini.md §4 and §7.1), and, for carried sessions, that every tool call
#    and plan of the source stream is there.
#
# Needs node >= 20 and python >= 3.11, and the Gemini CLI from scripts/judges/install.sh
# (installed on first use). Exit 0 when every written session is listed (subagent chats
# excepted: Gemini never lists them) and replays exactly as intended.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
keep=0
profile=debug
for a in "$@"; do
  case "$a" in
    --keep) keep=1 ;;
    --release) profile=release ;;
    -h|--help) sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "judge-gemini.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

py="${PYTHON:-python3}"
"$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || { echo "judge-gemini.sh: need python >= 3.11 (set PYTHON=...)" >&2; exit 1; }
"$here/judges/install.sh" gemini >&2

cargo_flags=(-q -p asp-cli)
[ "$profile" = release ] && cargo_flags+=(--release)
(cd "$repo" && cargo build "${cargo_flags[@]}") >&2
bin="$repo/target/$profile"

scratch="$(mktemp -d "${TMPDIR:-/tmp}/asp-judge-gemini.XXXXXX")"
cleanup() { if [ "$keep" = 1 ]; then echo "kept $scratch" >&2; else rm -rf "$scratch"; fi; }
trap cleanup EXIT
home="$scratch/home"
mkdir -p "$home" "$scratch/answers" "$scratch/sources"

carry() { # $1 = label, $2 = bundle
  "$bin/asp-unpack" "$2" --to gemini --home "$home" --json >"$scratch/answers/$1.json" \
    2>"$scratch/answers/$1.log" || [ $? -eq 3 ]   # 3 = some things not taken
  "$bin/asp-unpack" "$2" --to-dir "$scratch/sources/$1" -q >/dev/null
}

"$bin/asp-pack" --from gemini --home "$repo/samples/gemini" -o "$scratch/gemini.aspstate" -q >&2
carry restored-gemini "$scratch/gemini.aspstate"
carry migrated-state "$repo/samples/state.aspstate"
# The same Gemini sessions without their chat files: rebuilt from the ACP streams alone (the
# writer other harnesses' sessions go through), into the same home, where each now meets a
# different version of itself and is kept beside it as <id>~gemini.
"$bin/asp-unpack" "$scratch/gemini.aspstate" --kinds sessions --to-dir "$scratch/rebuilt" -q >/dev/null
"$py" - "$scratch/rebuilt/sessions" <<'PY'
import json, shutil, sys
from pathlib import Path
for f in Path(sys.argv[1]).iterdir():
    if f.name.endswith(".native"):
        shutil.rmtree(f)
    elif f.suffix == ".json":
        s = json.loads(f.read_text()); s.pop("native", None); f.write_text(json.dumps(s, indent=2))
PY
"$bin/asp-pack" --from-dir "$scratch/rebuilt" -o "$scratch/rebuilt.aspstate" -q >&2
carry rebuilt-gemini "$scratch/rebuilt.aspstate"
for h in claude-code codex; do
  if "$bin/asp-pack" --from "$h" --home "$repo/samples/$h" -o "$scratch/$h.aspstate" -q >/dev/null 2>&1; then
    carry "migrated-$h" "$scratch/$h.aspstate"
  else
    echo "note: no $h converter in this build; samples/$h not carried" >&2
  fi
done

"$here/judges/judge.sh" gemini "$home" >"$scratch/judge.json"

"$py" - "$scratch" <<'PY'
import collections, json, sys
from pathlib import Path

scratch = Path(sys.argv[1])
home = scratch / "home" / ".gemini"
judge = json.loads((scratch / "judge.json").read_text())
KINDS = ["user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call", "tool_call_update"]

def render(content):
    """partListUnionToString (verbose), as Gemini's replay renders message content."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(render(p) for p in content)
    if not isinstance(content, dict):
        return ""
    p = content
    if "thought" in p: return f"[Thought: {str(p['thought']).lower()}]"
    if "fileData" in p: return "[File Data]"
    if "functionCall" in p: return f"[Function Call: {p['functionCall'].get('name')}]"
    if "functionResponse" in p: return f"[Function Response: {p['functionResponse'].get('name')}]"
    if "inlineData" in p: return "[Media]"
    return p.get("text") or ""

def replay(path):
    """loadConversationRecord: the surviving messages and the metadata."""
    meta, order, msgs = {}, [], {}
    def put(m):
        if isinstance(m, dict) and isinstance(m.get("id"), str):
            if m["id"] not in msgs: order.append(m["id"])
            msgs[m["id"]] = m
    text = path.read_text()
    if path.suffix == ".json":
        try:
            doc = json.loads(text)
            meta = {k: v for k, v in doc.items() if k != "messages"}
            for m in doc.get("messages") or []: put(m)
            return meta, [msgs[i] for i in order]
        except ValueError:
            pass
    for line in text.splitlines():
        if not line.strip(): continue
        try: r = json.loads(line)
        except ValueError: continue
        if not isinstance(r, dict): continue
        if isinstance(r.get("$rewindTo"), str):
            cut = order.index(r["$rewindTo"]) if r["$rewindTo"] in order else 0
            for i in order[cut:]: msgs.pop(i, None)
            del order[cut:]
        elif isinstance(r.get("id"), str): put(r)
        elif isinstance(r.get("$set"), dict):
            s = dict(r["$set"])
            if isinstance(s.get("messages"), list):
                order.clear(); msgs.clear()
                for m in s.pop("messages"): put(m)
            meta.update(s)
        elif isinstance(r.get("sessionId"), str) and isinstance(r.get("projectHash"), str):
            for m in r.get("messages") or []: put(m)
            meta.update({k: v for k, v in r.items() if k != "messages"})
    return meta, [msgs[i] for i in order]

def intended(messages):
    """What Gemini's streamHistory replays for these messages."""
    c = collections.Counter()
    for m in messages:
        s = render(m.get("content"))
        if m.get("type") == "user":
            if s.strip(): c["user_message_chunk"] += 1
        elif m.get("type") == "gemini":
            c["agent_thought_chunk"] += len(m.get("thoughts") or [])
            if s.strip(): c["agent_message_chunk"] += 1
            c["tool_call"] += len(m.get("toolCalls") or [])
    return c

def source_counts(label, sid):
    """Tool calls and plans in the carried stream, to check none was lost."""
    d = scratch / "sources" / label / "sessions"
    for f in d.glob("*.json"):
        if json.loads(f.read_text())["id"] == sid:
            calls, plans = set(), 0
            for line in f.with_suffix(".jsonl").read_text().splitlines():
                u = json.loads(line)["update"]
                if u["sessionUpdate"] in ("tool_call", "tool_call_update"): calls.add(u["toolCallId"])
                if u["sessionUpdate"] == "plan": plans += 1
            return len(calls), plans
    return None

files = {}
for f in list(home.glob("tmp/*/chats/*.json*")) + list(home.glob("tmp/*/chats/*/*.json*")):
    meta, msgs = replay(f)
    if meta.get("sessionId"):
        files.setdefault(meta["sessionId"], []).append((f, meta, msgs))
judged = {s["id"]: s for s in judge.get("sessions", []) if s.get("id")}

rows, failures = [], 0
for answer in sorted((scratch / "answers").glob("*.json")):
    label = answer.stem
    a = json.loads(answer.read_text())
    for old, new in sorted(a.get("sessions", {}).items()):
        versions = files.get(new, [])
        if not versions:
            rows.append((label, old, new, "MISSING", "no chat file with this session id")); failures += 1
            continue
        # The file Gemini resumes: the latest listable one.
        f, meta, msgs = sorted(versions, key=lambda v: str(v[1].get("lastUpdated")))[-1]
        want = intended(msgs)
        if meta.get("kind") == "subagent":
            rows.append((label, old, new, "ok", f"subagent chat {f.relative_to(home)}: never listed by Gemini (by design); {dict(want)} in the file"))
            continue
        j = judged.get(new)
        if not j or not j.get("listed"):
            rows.append((label, old, new, "FAIL", f"not listed ({(j or {}).get('load', {}).get('error')})")); failures += 1
            continue
        load = j.get("load") or {}
        got = collections.Counter({k: v for k, v in (load.get("counts") or {}).items() if k in KINDS})
        ok = load.get("ok") and got == want
        note = ""
        src = source_counts(label, old) if not label.startswith("restored") else None
        if src:
            calls, plans = src
            if want["tool_call"] < calls:
                ok = False; note = f"; source had {calls} tool calls"
            else:
                note = f"; source: {calls} tool calls + {plans} plans"
        detail = f"title {j.get('title')!r}; replayed {dict(sorted(got.items()))}" + (
            "" if got == want else f" but intended {dict(sorted(want.items()))}") + note
        rows.append((label, old, new, "ok" if ok else "FAIL", detail))
        failures += 0 if ok else 1

print(f"Gemini CLI {judge.get('package')} judged {len(judged)} sessions in {judge.get('seconds_total')} s; "
      f"errors: {judge.get('errors') or 'none'}")
for label, old, new, verdict, detail in rows:
    ids = old if old == new else f"{old} -> {new}"
    print(f"{verdict:7} {label:16} {ids}\n        {detail}")
print(f"{len(rows) - failures} of {len(rows)} written sessions as intended")
sys.exit(1 if failures else 0)
PY
