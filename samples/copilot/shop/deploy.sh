#!/bin/sh
# Copy the app to the server.
set -eu
flags=""
[ "${1:-}" = --dry-run ] && flags=--dry-run
rsync -a --delete $flags ./ shop@prod.example.com:/srv/shop/
