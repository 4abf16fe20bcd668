#!/bin/sh
# Sample stand-in for the bundled helper: print the curated skill names.
printf '%s\n' release-notes sql-style
