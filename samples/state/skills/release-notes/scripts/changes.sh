#!/bin/sh
set -eu
last=$(git describe --tags --abbrev=0)
git log --merges --format='%s' "$last"..HEAD
