#!/usr/bin/env bash
# Install the npm reference MCP filesystem server for tests/mcp/test_reference_server.py (tests/mcp/npm/node_modules).
# Idempotent: a second run only checks the stamp.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=tests/mcp/npm
VERSION=2026.8.31
say() { echo "45-mcp: $*" >&2; }
stamp="$DIR/node_modules/.ollie-installed-$VERSION"
if [ ! -f "$stamp" ]; then
  say "npm install @modelcontextprotocol/server-filesystem@$VERSION in $DIR"
  (cd "$DIR" && npm install --no-save --no-audit --no-fund --loglevel=error "@modelcontextprotocol/server-filesystem@$VERSION")
  touch "$stamp"
fi
say "ready ($DIR)"
