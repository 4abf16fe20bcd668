#!/usr/bin/env bash
# How much smaller Claude Code transcripts get when each is compressed against a dictionary
# taken from another transcript of the same project (spec/aspstate.md §13.1, "the gap to
# tar | zstd"), measured with the zstd command line on a Claude Code home (the bench's
# generated stores: target/tmp/stores/claude-64M after
# `cargo bench -p asp-cli --bench stores -- --generate-only`).
#
# Three rules for a project's dictionary, each printed with the sum of the project's
# transcripts compressed at -3 against it (the dictionary's own transcript alone), beside the
# sum of every transcript alone and `tar | zstd -3` of all of them:
#   largest  the project's largest transcript under 8 MiB, whole (`--patch-from`, `--long=27`);
#   oldest   the first 1 MiB of the project's oldest transcript (first line's `timestamp`) of
#            at least 1 MiB (`-D`: a prepared raw-content dictionary, no long matching);
#   least-id the first 1 MiB of the transcript of at least 1 MiB with the least session id.
# Usage: scripts/bench-project-dictionary.sh HOME
set -euo pipefail
home=$(realpath "$1")
python3 - "$home" <<'PY'
import glob, json, os, shutil, subprocess, sys, tempfile
root = os.path.join(sys.argv[1], ".claude", "projects")
PREFIX = 1 << 20
tmp = tempfile.mkdtemp()
def zsize(args, path):
    return len(subprocess.run(["zstd", "-3", "-q", "-c", *args, path],
                              check=True, capture_output=True).stdout)
def first_time(path):
    with open(path, "rb") as f:
        for line in f:
            try:
                t = json.loads(line).get("timestamp")
            except ValueError:
                continue
            if t:
                return t
    return "~"
projects = []
for project in sorted(os.listdir(root)):
    files = sorted(glob.glob(os.path.join(root, project, "*.jsonl")))
    projects.append([(f, os.path.getsize(f)) for f in files])
alone = {f: zsize([], f) for p in projects for f, _ in p}
def against(choose, args_of):
    total = 0
    for p in projects:
        d = choose(p)
        for f, _ in p:
            total += alone[f] if d is None or f == d[0] else zsize(args_of(d[1]), f)
    return total
def largest(p):
    small = [(s, f) for f, s in p if s < 8 << 20]
    return (max(small)[1], max(small)[1]) if len(p) > 1 and small else None
def prefix_of(pick):
    def choose(p):
        big = [f for f, s in p if s >= PREFIX]
        if not big:
            return None
        f = pick(big)
        out = os.path.join(tmp, os.path.basename(os.path.dirname(f)))
        with open(f, "rb") as src, open(out, "wb") as dst:
            dst.write(src.read(PREFIX))
        return (f, out)
    return choose
mib = lambda b: b / (1 << 20)
base = sum(alone.values())
listing = os.path.join(tmp, "files")
with open(listing, "w") as out:
    out.writelines(f + "\n" for p in projects for f, _ in p)
tar = subprocess.run(["sh", "-c", 'tar -cf - -T "$1" | zstd -3 -q -c | wc -c', "sh", listing],
                     check=True, capture_output=True, text=True).stdout.strip()
print(f"{len(alone)} transcripts in {len(projects)} projects")
print(f"each alone, zstd -3:         {mib(base):7.2f} MiB")
for name, choose, args in [
    ("largest (whole, --long)", largest, lambda d: ["--long=27", "--patch-from=" + d]),
    ("oldest (first 1 MiB, -D)", prefix_of(lambda b: min(b, key=first_time)), lambda d: ["-D", d]),
    ("least id (first 1 MiB, -D)", prefix_of(min), lambda d: ["-D", d]),
]:
    t = against(choose, args)
    print(f"{name:28} {mib(t):7.2f} MiB ({t / base:.3f}x)")
print(f"all in one tar | zstd -3:    {mib(int(tar)):7.2f} MiB")
shutil.rmtree(tmp)
PY
