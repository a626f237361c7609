#!/usr/bin/env bash
# Install the official TypeScript ACP SDK for tests/acp's second client (tests/acp/ts/node_modules).
# Idempotent: a second run only checks the stamp.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=tests/acp/ts
SDK_VERSION=2.4.0
say() { echo "40-acp: $*" >&2; }
stamp="$DIR/node_modules/.ollie-installed-$SDK_VERSION"
if [ ! -f "$stamp" ]; then
  say "npm install @agentclientprotocol/sdk@$SDK_VERSION in $DIR"
  (cd "$DIR" && npm install --no-save --no-audit --no-fund --loglevel=error "@agentclientprotocol/sdk@$SDK_VERSION")
  touch "$stamp"
fi
say "ready ($DIR)"
