#!/usr/bin/env bash
# Judge the Claude Code converter with the real Claude Code (opt-in; downloads ~85 MB, or
# ~500 MB with --both).
#
#   scripts/judge-claude-code.sh [--both] [--keep]
#
# 1. packs samples/claude-code with asp-pack and unpacks it into an empty scratch home
#    (restored sessions), then unpacks samples/state.aspstate into the same home (a Codex
#    session and a Claude Code session without native files: migrated/composed sessions),
#    a Gemini-shaped session (tests/fixtures/claude-code/foreign-state) and, when this build
#    has a Codex converter, the Codex sample home's sessions too;
# 2. asks the real Claude Code, through its ACP adapter, to list and load every session in
#    that home (scripts/judges/judge_claude.py: @zed-industries/claude-agent-acp@0.23.1 =
#    Claude Code 2.1.83; with --both also @agentclientprotocol/claude-agent-acp@0.101.0 =
#    Claude Code 2.1.318);
# 3. compares, per session, the harness's replay with what asp wrote and with the source
#    session (scripts/judges/compare_claude_code.py). Exit 1 if anything differs.
#
# Nothing outside the scratch directory is written; the judge itself works on a copy of the
# scratch home. Peers are installed under ${ASP_PEERS_DIR:-~/.cache/asp-peers}.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
both=0 keep=0
for a in "$@"; do
  case "$a" in
    --both) both=1 ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "judge-claude-code.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done

peers="${ASP_PEERS_DIR:-$HOME/.cache/asp-peers}"
peers101="${ASP_PEERS_101_DIR:-$HOME/.cache/asp-peers-claude-acp-0.101.0}"

echo "== building asp" >&2
(cd "$root" && cargo build -q -p asp-cli)
bin="$root/target/debug"

echo "== installing the judge's Claude Code" >&2
ASP_PEERS_DIR="$peers" "$root/scripts/judges/install.sh" claude >&2
if [ "$both" = 1 ]; then
  mkdir -p "$peers101"
  [ -f "$peers101/package.json" ] || echo '{"name":"asp-peers-claude-acp","private":true}' > "$peers101/package.json"
  if [ "$(node -p 'try{require(process.argv[1]).version}catch(e){""}' "$peers101/node_modules/@agentclientprotocol/claude-agent-acp/package.json")" != "0.101.0" ]; then
    npm install --prefix "$peers101" --save-exact --no-audit --no-fund --loglevel=error \
      @agentclientprotocol/claude-agent-acp@0.101.0 >&2
  fi
fi

work="$(mktemp -d -t asp-judge-claude-code-XXXXXX)"
cleanup() { if [ "$keep" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi; }
trap cleanup EXIT
home="$work/home"
mkdir -p "$home"

# asp exits 3 when something was not carried (user rules, a local-scope MCP server, a note
# with no project): expected for these samples, and reported.
run() { "$@" || { rc=$?; [ "$rc" = 3 ] || exit "$rc"; }; }

echo "== packing samples/claude-code and unpacking it into an empty home" >&2
run "$bin/asp-pack" --from claude-code --home "$root/samples/claude-code" -o "$work/claude.aspstate" -q
run "$bin/asp-unpack" "$work/claude.aspstate" --to claude-code --home "$home" --json -q > "$work/answer-claude.json"
"$bin/asp-unpack" "$work/claude.aspstate" --to-dir "$work/src-claude" -q >/dev/null
sources=(--source "$work/src-claude:$work/answer-claude.json")

echo "== unpacking samples/state.aspstate (a Codex session, a Claude Code session without native files)" >&2
run "$bin/asp-unpack" "$root/samples/state.aspstate" --to claude-code --home "$home" --json -q > "$work/answer-state.json"
"$bin/asp-unpack" "$root/samples/state.aspstate" --to-dir "$work/src-state" -q >/dev/null
sources+=(--source "$work/src-state:$work/answer-state.json")

echo "== packing tests/fixtures/claude-code/foreign-state (a Gemini session with parallel, failed and unfinished tool calls)" >&2
run "$bin/asp-pack" --from-dir "$root/tests/fixtures/claude-code/foreign-state" -o "$work/foreign.aspstate" -q
run "$bin/asp-unpack" "$work/foreign.aspstate" --to claude-code --home "$home" --json -q > "$work/answer-foreign.json"
"$bin/asp-unpack" "$work/foreign.aspstate" --to-dir "$work/src-foreign" -q >/dev/null
sources+=(--source "$work/src-foreign:$work/answer-foreign.json")

if "$bin/asp-pack" --from codex --home "$root/samples/codex" -o "$work/codex.aspstate" -q --kinds sessions 2>/dev/null \
   || [ -f "$work/codex.aspstate" ]; then
  echo "== unpacking the Codex sample home's sessions" >&2
  run "$bin/asp-unpack" "$work/codex.aspstate" --to claude-code --home "$home" --json -q > "$work/answer-codex.json"
  "$bin/asp-unpack" "$work/codex.aspstate" --to-dir "$work/src-codex" -q >/dev/null
  sources+=(--source "$work/src-codex:$work/answer-codex.json")
else
  echo "== (this build has no Codex converter: Codex samples skipped)" >&2
fi

echo "== what asp reads back from the written home" >&2
run "$bin/asp-pack" --from claude-code --home "$home" -o "$work/written.aspstate" -q --kinds sessions
"$bin/asp-unpack" "$work/written.aspstate" --to-dir "$work/written" -q >/dev/null

judges=()
echo "== judging with Claude Code 2.1.83 (@zed-industries/claude-agent-acp@0.23.1)" >&2
ASP_PEERS_DIR="$peers" python3 "$root/scripts/judges/judge_claude.py" "$home" --no-raw > "$work/judge-zed.json"
judges+=(--judge "zed-0.23.1:$work/judge-zed.json")
if [ "$both" = 1 ]; then
  echo "== judging with Claude Code 2.1.318 (@agentclientprotocol/claude-agent-acp@0.101.0)" >&2
  ASP_PEERS_DIR="$peers101" python3 "$root/scripts/judges/judge_claude.py" "$home" --no-raw > "$work/judge-acp.json"
  judges+=(--judge "acp-0.101.0:$work/judge-acp.json")
fi

echo "== verdict" >&2
python3 "$root/scripts/judges/compare_claude_code.py" --written "$work/written" "${sources[@]}" "${judges[@]}"
