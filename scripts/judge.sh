#!/usr/bin/env bash
# Judge what asp writes into a harness, with the real harness (opt-in; not part of cargo test).
#
#   scripts/judge.sh <claude-code|codex|gemini|pi|qwen|all> [--keep] [--bin DIR] [--timeout S]
#
# One shape for every harness: asp restores the harness's own sample, rebuilds its sessions
# from their ACP streams beside them, carries every other harness's sample (the whole state,
# settings included) and samples/state.aspstate into homes of that harness; then the real
# harness lists and loads every session, and the verdict compares what it replays with what
# asp wrote. See scripts/judges/carry.py and scripts/judges/README.md. Needs node >= 20 and
# python >= 3.11; installs the pinned harness into ${ASP_PEERS_DIR:-~/.cache/asp-peers}.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${PYTHON:-python3}"
"$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null \
  || { echo "judge.sh: need python >= 3.11 (set PYTHON=...)" >&2; exit 2; }
exec "$py" "$here/judges/carry.py" "$@"
