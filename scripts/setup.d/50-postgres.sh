#!/usr/bin/env bash
# Install Debian's PostgreSQL server for the team-store tests (tests/sessions, tests/teams start a throwaway
# cluster with its initdb + pg_ctl). Idempotent: nothing to do when initdb is already there.
set -euo pipefail
say() { echo "50-postgres: $*" >&2; }
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
  say "ready ($(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | head -1 || command -v initdb))"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  say "initdb not found and no apt-get: install PostgreSQL's server (initdb, pg_ctl) with your package manager"
  exit 1
fi
# The tests run throwaway clusters of their own (Debian also sets up its main cluster: they never use it).
source "$(dirname "$0")/../lib/apt.sh"
apt_install 50-postgres postgresql
say "ready ($(ls -d /usr/lib/postgresql/*/bin | head -1))"
