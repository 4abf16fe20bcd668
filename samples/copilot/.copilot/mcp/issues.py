#!/usr/bin/env python3
# Placeholder for the local issue-tracker MCP server (the sample runs disable it).
