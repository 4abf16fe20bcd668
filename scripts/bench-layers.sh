#!/usr/bin/env bash
# The alternatives behind layout 2's choices (spec/aspstate.md §13), measured on one bundle
# written by asp-pack (layout 2, zstd) with the zstd command line:
#   - each update stream compressed alone vs against its native transcript (the layout);
#   - one frame per session (native transcript and update stream concatenated);
#   - every body as its own zstd -1/-3/-6/-9 frame (what zstd inside the zip, method 93, gives);
#   - every body Deflate -6 (layout 1 and `--compression deflate`).
# Usage: scripts/bench-layers.sh BUNDLE
set -euo pipefail
bundle=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
unzip -q "$bundle"
root=$(python3 -c "import json;print(json.load(open('index.json'))['manifests'][0]['digest'][7:])")
python3 - "$root" > layers.tsv <<'EOF'
import json, sys
m = json.load(open(f"blobs/sha256/{sys.argv[1]}"))
for l in m["layers"]:
    d = (l.get("annotations") or {}).get("vnd.asp.layer.dictionary", "-")
    print(l["mediaType"], l["digest"][7:], l["size"], d[7:] if d != "-" else "-", sep="\t")
EOF
mkdir -p raw
total_raw=0
while IFS=$'\t' read -r type digest size dict; do
  case "$type" in
    *state.manifest*|*layer-table*) continue ;;
  esac
  if [[ "$type" == *+zstd ]]; then
    if [[ "$dict" != - ]]; then
      zstd -q -d -f -o "raw/$dict" "blobs/sha256/$dict" 2>/dev/null || true
      zstd -q -d -f --long=27 --patch-from="raw/$dict" -o "raw/$digest" "blobs/sha256/$digest"
    else
      zstd -q -d -f -o "raw/$digest" "blobs/sha256/$digest"
    fi
  else
    cp "blobs/sha256/$digest" "raw/$digest"
  fi
done < layers.tsv

sum() { awk '{s+=$1} END {printf "%.1f MiB", s/1048576}'; }
echo "bodies, uncompressed:        $(stat -c %s raw/* | sum)"
echo "layers as written (layout 2): $(awk -F'\t' '$1 !~ /state.manifest|layer-table/ {print $3}' layers.tsv | sum)"
# Update streams: alone vs against their transcript.
alone=0; against=0
while IFS=$'\t' read -r type digest size dict; do
  [[ "$dict" == - ]] && continue
  a=$(zstd -q -3 -c "raw/$digest" | wc -c)
  alone=$((alone + a)); against=$((against + size))
done < layers.tsv
echo "update streams alone (zstd -3):           $(echo $alone | sum)"
echo "update streams against transcript (-3):   $(echo $against | sum)"
# One frame per session: transcript then stream.
one=0
while IFS=$'\t' read -r type digest size dict; do
  [[ "$dict" == - ]] && continue
  n=$(cat "raw/$dict" "raw/$digest" | zstd -q -3 --long=27 -c | wc -c)
  one=$((one + n))
done < layers.tsv
echo "one frame per session (native+stream):    $(echo $one | sum)"
for level in 1 3 6 9; do
  t0=$(date +%s.%N)
  s=$(for f in raw/*; do zstd -q -"$level" -c "$f" | wc -c; done | awk '{s+=$1} END {print s}')
  t1=$(date +%s.%N)
  printf 'every body alone, zstd -%s:              %s  (%.1f s, one process per body)\n' "$level" "$(echo "$s" | sum)" "$(echo "$t1 - $t0" | bc)"
done
s=$(for f in raw/*; do gzip -6 -c "$f" | wc -c; done | awk '{s+=$1} END {print s}')
echo "every body alone, Deflate -6:             $(echo "$s" | sum)"
