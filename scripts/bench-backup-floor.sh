#!/usr/bin/env bash
# The least work a full `asp backup` or `asp-pack` must do, beside `restic backup`,
# `tar | zstd -3`, `asp backup` and `asp-pack` of the same Claude Code home (issue 13's "a
# full backup in at most half restic's time", issue 12's "asp-pack at most 2x tar | zstd";
# spec repository.md §8.2).
#
# A snapshot stores two bodies per session: the native transcript (for a byte-exact restore)
# and its ACP update stream (the portable form), each hashed and compressed. The floor below
# reads, hashes (sha256, `openssl dgst`, which uses the CPU's SHA extensions as asp does) and
# compresses exactly those bytes, the sessions' native files and update streams as
# `asp-unpack --to-dir` writes them from a bundle of the home, as one tar stream: no parsing, no
# conversion, no dictionary, no file per blob. Its CPU time (user and system of
# `openssl dgst -sha256` and of `zstd -L` reading the tar stream) over the cores is the floor: the wall
# time of a backup that did only that, perfectly spread. It is given for zstd -3 (the level
# asp stores at) and -1 (the fastest regular level). Whatever a backup does beyond it (parse
# the transcripts, write the streams, compress them against their transcripts, a file per
# blob) only adds to it.
#
# Each tool runs RUNS times (default 3), alternating; a fresh repository each time. Prints
# every wall time, then medians and ratios.
# Usage: scripts/bench-backup-floor.sh HOME [RUNS]   (HOME holds .claude; needs restic, zstd,
#        openssl, GNU tar and /usr/bin/time, bc, and target/release/{asp,asp-pack,asp-unpack})
set -euo pipefail
export LC_ALL=C
[ $# -ge 1 ] || { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
for tool in restic zstd openssl tar bc /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }
done
home=$(realpath "$1")
runs=${2:-3}
bin=$(realpath "$(dirname "$0")/../target/release")
work=$(mktemp -d "${TMPDIR:-/tmp}/asp-floor.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "preparing the update streams of $home …" >&2
"$bin/asp-pack" --from claude-code --home "$home" -q -o "$work/bundle.aspstate" >/dev/null
"$bin/asp-unpack" "$work/bundle.aspstate" --to-dir "$work/dir" >/dev/null
rm "$work/bundle.aspstate"
# Exactly the bodies the snapshot's sessions hold: each native file as the state names it
# (`<id>.native/**`) and each update stream (`<id>.jsonl`).
find "$work/dir/sessions" -path '*.native/*' -type f > "$work/files"
find "$work/dir/sessions" -maxdepth 1 -name '*.jsonl' -type f >> "$work/files"
bytes=$(tr '\n' '\0' < "$work/files" | du -cb --files0-from=- | tail -1 | cut -f1)
echo "floor input: $(wc -l < "$work/files") files, $((bytes >> 20)) MiB (natives and update streams)" >&2

# wall CMD...: its wall time; it must exit 0 or 3 (something the source had could not be
# kept, which a real home may give), else the script stops saying so.
wall() {
  local rc=0 out
  out=$(/usr/bin/time -f %e "$@" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
    echo "$* exited $rc: $out" >&2
    exit 1
  fi
  echo "$out" | tail -1
}
# consumer FILES CMD...: the CPU seconds of CMD reading the files as one tar stream (tar's own
# copying not counted: a backup reads each file once, as the consumer does from the pipe).
consumer() {
  local files=$1; shift
  tar -cf - -P --files-from="$files" | /usr/bin/time -f '%U %S' "$@" 2>&1 >/dev/null \
    | tail -1 | awk '{print $1 + $2}'
}
cores=$(nproc)
# floor LEVEL: seconds
floor() {
  local h z
  h=$(consumer "$work/files" openssl dgst -sha256)
  z=$(consumer "$work/files" zstd "-$1" -T1 -q)
  echo "  zstd -$1: hashing $h CPU s, compressing $z CPU s" >&2
  echo "($h + $z) / $cores" | bc -l | xargs printf %.2f
}
declare -a F R A F1 T P
for i in $(seq "$runs"); do
  F+=("$(floor 3)")
  F1+=("$(floor 1)")
  T+=("$(wall bash -o pipefail -c 'tar -C "$0" -cf - .claude | zstd -3 -q >/dev/null' "$home")")
  P+=("$(wall "$bin/asp-pack" --from claude-code --home "$home" -q -o "$work/bundle.aspstate")")
  rm -f "$work/bundle.aspstate"
  # A fresh repository per run, all removed at the end: right after thousands of files were
  # deleted, ext4 takes seconds of system time to create the next thousands (asp writes a
  # file per blob), which would charge one run's cleanup to the next.
  RESTIC_PASSWORD=bench restic init -q -r "$work/restic-$i" >/dev/null
  R+=("$(cd "$home" && RESTIC_PASSWORD=bench wall restic backup -q -r "$work/restic-$i" .claude)")
  A+=("$(wall "$bin/asp" backup --from claude-code --home "$home" --repo "$work/asp-$i" -q)")
  echo "run $i: floor ${F[-1]} s (zstd -1: ${F1[-1]} s), tar | zstd -3 ${T[-1]} s, asp-pack ${P[-1]} s, restic backup ${R[-1]} s, asp backup ${A[-1]} s" >&2
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
f=$(median "${F[@]}"); f1=$(median "${F1[@]}"); r=$(median "${R[@]}"); a=$(median "${A[@]}")
t=$(median "${T[@]}"); p=$(median "${P[@]}")
ratio() { echo "$1 / $2" | bc -l | xargs printf %.2f; }
echo "| $(basename "$home") | wall (median of $runs) | / restic backup | / tar \| zstd -3 |"
echo "|---|---|---|---|"
row() { echo "| $1 | $2 s | $(ratio "$2" "$r")x | $(ratio "$2" "$t")x |"; }
row "floor: hash and zstd -3 every byte of natives and streams, CPU over $cores cores" "$f"
row "floor: hash and zstd -1 every byte of natives and streams, CPU over $cores cores" "$f1"
row "\`restic backup\` (fresh repository)" "$r"
row "\`tar -cf - .claude \| zstd -3\`" "$t"
row "\`asp backup\` (fresh repository)" "$a"
row "\`asp-pack\`" "$p"
