#!/usr/bin/env bash
# The Neovim plugin's lint gate (scripts/lint): luacheck, from Debian's lua-check, installed only when missing.
# ruff, pyright and import-linter come with the test extra; tsc with the VS Code extension's npm dev dependencies.
set -euo pipefail
command -v luacheck >/dev/null 2>&1 && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "20-lint: apt-get install lua-check" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends lua-check >/dev/null
