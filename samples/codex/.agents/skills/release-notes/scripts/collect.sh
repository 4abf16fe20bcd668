#!/bin/sh
# Print one line per commit since the most recent tag (or all commits if there is no tag).
set -e
last_tag=$(git describe --tags --abbrev=0 2>/dev/null || true)
if [ -n "$last_tag" ]; then
  git log --no-merges --format='%h %s' "$last_tag"..HEAD
else
  git log --no-merges --format='%h %s'
fi
