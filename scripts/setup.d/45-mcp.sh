#!/usr/bin/env bash
# Install the npm reference MCP filesystem server for tests/mcp/test_reference_server.py (tests/mcp/npm/node_modules).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/npm.sh
npm_pinned 45-mcp tests/mcp/npm @modelcontextprotocol/server-filesystem 2026.8.31
