#!/usr/bin/env bash
# Run a real-harness judge on a native store (opt-in; see README.md here).
#
#   scripts/judges/judge.sh <claude|codex|gemini|opencode|copilot|pi|qwen> <home> [--keep] [--no-raw] [--timeout S] ...
#
# <home> is a HOME holding the store (~/.claude, ~/.codex, ~/.gemini,
# ~/.local/share/opencode, ~/.copilot, ~/.pi/agent, ~/.qwen) or the store dir itself. The judge works on a scratch copy
# (never on <home>) and prints one JSON report on stdout; progress/noise goes to stderr.
# Needs the packages from install.sh (ASP_PEERS_DIR, default ~/.cache/asp-peers).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() { sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
harness="$1"; shift
case "$harness" in
  claude|codex|gemini|opencode|copilot|pi|qwen) ;;
  -h|--help) usage ;;
  *) echo "judge.sh: unknown harness '$harness'" >&2; usage ;;
esac

py="${PYTHON:-python3}"
"$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null \
  || { echo "judge.sh: need python >= 3.11 (set PYTHON=...)" >&2; exit 1; }
exec "$py" "$here/judge_$harness.py" "$@"
