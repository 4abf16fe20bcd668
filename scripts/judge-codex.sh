#!/usr/bin/env bash
# Judge the Codex converter with the real Codex (opt-in; not part of `cargo test`).
#
#   scripts/judge-codex.sh [--keep] [--skip-acp] [--timeout S]
#
# Builds asp, unpacks samples into empty scratch Codex homes (a restored Codex backup, the
# migrated sessions of samples/state.aspstate, and samples/claude-code once a claude-code
# converter is built in), and checks that `codex app-server` lists every written thread and
# reads back every turn, and that codex-acp replays every tool call. See scripts/judge_codex.py.
#
# Runs the native linux-x64 binaries that the npm packages @openai/codex@0.171.0 and
# @zed-industries/codex-acp@0.16.0 ship, from ASP_PEERS_DIR (default ~/.cache/asp-peers); no
# credentials, no network (only scratch homes are touched). Install them with:
#   npm install --prefix ~/.cache/asp-peers @openai/codex@0.171.0 @zed-industries/codex-acp@0.16.0
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command -v python3 >/dev/null || { echo "judge-codex: python3 is needed" >&2; exit 2; }
(cd "$root" && cargo build --quiet --bin asp-pack --bin asp-unpack)
exec python3 "$root/scripts/judge_codex.py" --bin "$root/target/debug" "$@"
