#!/usr/bin/env bash
# Pre-deploy checks for the API gateway. Usage: check.sh [staging|production]
set -euo pipefail

env="${1:-staging}"
case "$env" in
  staging|production) ;;
  *) echo "unknown environment: $env" >&2; exit 2 ;;
esac

root="$(git rev-parse --show-toplevel)"
cd "$root"

echo "== config lint ($env)"
npx --no-install yaml-lint "config/$env.yaml" config/limits.yaml

echo "== migrations"
pending="$(ls migrations/pending 2>/dev/null | wc -l | tr -d ' ')"
if [ "$pending" != "0" ]; then
  echo "pending migrations: $pending" >&2
  exit 1
fi
echo "none pending"

echo "== rate limits vs $env"
git diff --stat "origin/deploy/$env" -- config/limits.yaml || true

echo "all checks passed for $env"
