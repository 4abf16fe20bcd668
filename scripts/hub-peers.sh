#!/usr/bin/env bash
# Put `asp hub` in front of the real ACP agents and export their sessions by replay (opt-in).
#
#   scripts/hub-peers.sh [claude|codex-acp|gemini|opencode ...]     (default: all four)
#
# Needs the pinned packages first: scripts/judges/install.sh (node >= 20, python >= 3.11).
# Builds `asp`, then runs scripts/hub_peers.py for each peer on the repository's own sample
# homes (OpenCode: an `opencode export` fixture, imported with the real `opencode import`).
# Each peer gets a JSON report in $ASP_HUB_PEERS_OUT (default: a fresh temp dir); a peer
# passes when the hub exported every session with exactly the updates the peer replays
# directly, and none of the replay reached the client. Exit status 1 if any peer fails.
# The same checks run as `cargo test -p asp-cli --test hub_peers -- --ignored`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

home_for() {
  case "$1" in
    claude)    echo "samples/claude-code" ;;
    codex-acp) echo "samples/codex" ;;
    gemini)    echo "samples/gemini" ;;
    opencode)  echo "tests/fixtures/peers/opencode-export.json" ;;
    *) echo "hub-peers.sh: unknown peer '$1' (want claude|codex-acp|gemini|opencode)" >&2; return 2 ;;
  esac
}

[ $# -eq 0 ] && set -- claude codex-acp gemini opencode
for p in "$@"; do home_for "$p" >/dev/null; done

cargo build --quiet --bin asp
asp="${CARGO_TARGET_DIR:-$root/target}/debug/asp"
out="${ASP_HUB_PEERS_OUT:-$(mktemp -d -t asp-hub-peers-XXXXXX)}"
mkdir -p "$out"
py="${PYTHON:-python3}"

failed=()
for p in "$@"; do
  echo "== $p ($(home_for "$p"))" >&2
  if "$py" scripts/hub_peers.py "$p" "$(home_for "$p")" --asp "$asp" >"$out/$p.json" 2>"$out/$p.stderr.log"; then
    status=ok
  else
    status=FAILED
    failed+=("$p")
  fi
  "$py" - "$out/$p.json" "$status" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"   {sys.argv[2]}: no report ({e})"); sys.exit(0)
rows = r.get("sessions") or []
print(f"   {sys.argv[2]}: {len(rows)} session(s) exported in {r.get('export_seconds')} s, "
      f"leaked to client: {r.get('leaked_to_client')}, advertised: {json.dumps(r.get('advertised'))}")
for s in rows:
    print(f"     {'same' if s['same'] else 'DIFFERS'}  {s['id']}  hub {s['hub_count']} / direct {s['direct_count']}  {s.get('title')!r}")
for e in r.get("errors") or []:
    print(f"     error: {json.dumps(e)[:400]}")
PY
done
echo "reports: $out" >&2
[ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]}" >&2; exit 1; }
