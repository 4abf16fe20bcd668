#!/bin/sh
# Reading a repository of 30 snapshots (issue 13: `asp sessions` < 200 ms, one session
# restored < 100 ms). Copies STORE (a Claude Code home made by the bench's generator, e.g.
# target/tmp/stores/claude-1G), backs it up, then 29 times appends a record to one transcript
# and backs up again; then times `asp sessions` and `asp restore --session` with perf stat.
#
#   scripts/bench-repo-reads.sh target/tmp/stores/claude-1G [ASP_BINARY_DIR]
set -eu
store=$(realpath "$1")
bin=$(realpath "${2:-target/release}")
work=$(mktemp -d "${TMPDIR:-/tmp}/asp-repo-reads.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -a "$store" "$work/home"
repo="$work/repo"
"$bin/asp" backup --from claude-code --home "$work/home" --repo "$repo" -q
transcripts=$(find "$work/home/.claude/projects" -mindepth 2 -maxdepth 2 -name '*.jsonl' | sort)
i=0
for t in $(echo "$transcripts" | awk 'NR % 60 == 1' | head -29); do
  i=$((i + 1))
  # The last record again under a new uuid: a turn appended.
  python3 - "$t" "$i" <<'PY'
import re, sys
path, n = sys.argv[1], int(sys.argv[2])
last = open(path, encoding="utf-8").read().splitlines()[-1]
again = re.sub(r'"uuid":"[0-9a-f-]{36}"', '"uuid":"00000000-0000-4000-8000-%012x"' % n, last, count=1)
open(path, "a", encoding="utf-8").write(again + "\n")
PY
  sleep 0.01
  "$bin/asp" backup --from claude-code --home "$work/home" --repo "$repo" -q
done
echo "snapshots: $("$bin/asp" snapshots --repo "$repo" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')"
echo "repository: $(du -sh --apparent-size "$repo" | cut -f1)"
id=$(basename "$(echo "$transcripts" | head -1)" .jsonl)
perf stat -r 10 -- "$bin/asp" sessions --repo "$repo" >/dev/null 2>"$work/sessions.txt" || true
grep -E 'task-clock|elapsed' "$work/sessions.txt"
mkdir -p "$work/empty"
# Once to see it works: the session's transcript is written.
"$bin/asp" restore --repo "$repo" --session "$id" --to claude-code --home "$work/empty"
find "$work/empty" -name "$id.jsonl" | grep -q . || { echo "restore wrote no $id.jsonl" >&2; exit 1; }
perf stat -r 10 -- sh -c "rm -rf '$work/empty'/.claude*; '$bin/asp' restore --repo '$repo' --session '$id' --to claude-code --home '$work/empty' -q >/dev/null" 2>"$work/restore.txt" || true
grep -E 'task-clock|elapsed' "$work/restore.txt"
