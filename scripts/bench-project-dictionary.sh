#!/usr/bin/env bash
# How much smaller Claude Code transcripts get when each is compressed against another
# transcript of the same project (spec/aspstate.md §13.1, "the gap to tar | zstd"), measured
# with the zstd command line on a Claude Code home (the bench's generated stores:
# target/tmp/stores/claude-64M after `cargo bench -p asp-cli --bench stores -- --generate-only`).
# For each project the dictionary is its largest transcript under 8 MiB (a stand-in for any
# rule a writer could follow); every other transcript of the project is compressed at -3
# alone and with `--patch-from` that dictionary; it prints both sums and, beside them,
# `tar | zstd -3` of the same transcripts.
# Usage: scripts/bench-project-dictionary.sh HOME
set -euo pipefail
home=$(realpath "$1")
python3 - "$home" <<'PY'
import glob, os, subprocess, sys
root = os.path.join(sys.argv[1], ".claude", "projects")
def zsize(args, path):
    return len(subprocess.run(["zstd", "-3", "-q", "-c", *args, path],
                              check=True, capture_output=True).stdout)
alone = against = dicts = raw = 0
others = []
for project in sorted(os.listdir(root)):
    files = sorted(glob.glob(os.path.join(root, project, "*.jsonl")))
    sized = [(os.path.getsize(f), f) for f in files]
    small = [s for s in sized if s[0] < 8 << 20]
    if len(files) < 2 or not small:
        continue
    dsize, dfile = max(small)
    dicts += zsize([], dfile)
    for size, f in sized:
        if f == dfile:
            continue
        raw += size
        others.append(f)
        alone += zsize([], f)
        against += zsize(["--long=27", "--patch-from=" + dfile], f)
tar = subprocess.run("tar -cf - " + " ".join(f"'{o}'" for o in others) + " | zstd -3 -q -c | wc -c",
                     shell=True, check=True, capture_output=True, text=True).stdout.strip()
mib = lambda b: b / (1 << 20)
print(f"{len(others)} transcripts, {mib(raw):.1f} MiB raw (dictionaries apart: {mib(dicts):.1f} MiB at -3)")
print(f"each alone, zstd -3:                    {mib(alone):.2f} MiB")
print(f"each against its project's dictionary:  {mib(against):.2f} MiB ({against / alone:.2f}x)")
print(f"all in one tar | zstd -3:               {mib(int(tar)):.2f} MiB")
PY
