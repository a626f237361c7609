#!/usr/bin/env bash
# Install the official TypeScript ACP SDK for tests/acp's second client (tests/acp/ts/node_modules).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/npm.sh
npm_pinned 40-acp tests/acp/ts @agentclientprotocol/sdk 2.4.0
