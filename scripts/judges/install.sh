#!/usr/bin/env bash
# Install the pinned real-harness packages used by the opt-in judges.
#
#   scripts/judges/install.sh [all|claude|codex|gemini|opencode|copilot|pi|qwen ...]
#
# Installs into ${ASP_PEERS_DIR:-$HOME/.cache/asp-peers} with `npm install --prefix`
# (never globally). Idempotent: a package whose pinned version is already installed
# there is skipped. Costs ~1.6 GB on disk / ~480 MB download for `all` (see README.md);
# Copilot CLI unpacks another ~235 MB into $PEERS_DIR/copilot-cache on its first run.
set -euo pipefail

PEERS_DIR="${ASP_PEERS_DIR:-$HOME/.cache/asp-peers}"

# harness -> pinned packages (the versions the judges and the specs were measured with)
pkgs_for() {
  case "$1" in
    claude)   echo "@zed-industries/claude-agent-acp@0.23.1" ;;
    codex)    echo "@openai/codex@0.171.0 @zed-industries/codex-acp@0.16.0" ;;
    gemini)   echo "@google/gemini-cli@0.61.0" ;;
    opencode) echo "opencode-ai@1.18.33" ;;
    # pi-acp 0.0.24, not newer: 0.0.34 hangs on load with pi 0.73 (peers.md 8)
    pi)       echo "@mariozechner/pi-coding-agent@0.73.1 pi-acp@0.0.24" ;;
    # declares node >= 22 but lists and loads on node 20 (npm only warns: EBADENGINE)
    qwen)     echo "@qwen-code/qwen-code@0.24.4" ;;
    copilot)  echo "@github/copilot@1.0.102" ;;
    all)      echo "$(pkgs_for claude) $(pkgs_for codex) $(pkgs_for gemini) $(pkgs_for opencode) $(pkgs_for copilot) $(pkgs_for pi) $(pkgs_for qwen)" ;;
    *) echo "install.sh: unknown harness '$1' (want all|claude|codex|gemini|opencode|copilot|pi|qwen)" >&2; return 2 ;;
  esac
}

command -v npm >/dev/null || { echo "install.sh: npm not found (node >= 20 needed)" >&2; exit 1; }

[ $# -eq 0 ] && set -- all
want=()
for h in "$@"; do
  for p in $(pkgs_for "$h"); do want+=("$p"); done
done

mkdir -p "$PEERS_DIR"
# A package.json of our own keeps npm from walking up to some parent project.
[ -f "$PEERS_DIR/package.json" ] || echo '{"name":"asp-peers","private":true}' > "$PEERS_DIR/package.json"

installed_version() { # $1 = package name; prints the installed version or nothing
  local pj="$PEERS_DIR/node_modules/$1/package.json"
  [ -f "$pj" ] && node -e 'process.stdout.write(require(process.argv[1]).version||"")' "$pj" 2>/dev/null || true
}

missing=()
for spec in "${want[@]}"; do
  name="${spec%@*}"; ver="${spec##*@}"
  if [ "$(installed_version "$name")" = "$ver" ]; then
    echo "ok       $spec (already in $PEERS_DIR)"
  else
    missing+=("$spec")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install  ${missing[*]} -> $PEERS_DIR"
  # All specs in one call: npm would otherwise drop earlier non-saved installs.
  npm install --prefix "$PEERS_DIR" --save-exact --no-audit --no-fund --loglevel=warn "${missing[@]}"
  for spec in "${missing[@]}"; do
    name="${spec%@*}"; ver="${spec##*@}"
    got="$(installed_version "$name")"
    [ "$got" = "$ver" ] || { echo "install.sh: $name is '$got', wanted $ver" >&2; exit 1; }
    echo "ok       $spec"
  done
fi
echo "bin dir: $PEERS_DIR/node_modules/.bin"
