#!/usr/bin/env bash
# Print commits since the last tag as "<short sha> <subject>".
set -euo pipefail
last_tag="$(git describe --tags --abbrev=0 2>/dev/null || true)"
if [[ -n "$last_tag" ]]; then
  git --no-pager log --no-merges --format='%h %s' "${last_tag}..HEAD"
else
  git --no-pager log --no-merges --format='%h %s'
fi
