#!/usr/bin/env python3
# Placeholder for the local issue-tracker MCP server (disabled in opencode.json).
