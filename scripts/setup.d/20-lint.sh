#!/usr/bin/env bash
# The Neovim plugin's lint gate (scripts/lint): luacheck, from Debian's lua-check, installed only when missing.
# ruff, pyright and import-linter come with the test extra; tsc with the VS Code extension's npm dev dependencies.
set -euo pipefail
command -v luacheck >/dev/null 2>&1 && exit 0
source "$(dirname "$0")/../lib/apt.sh"
apt_install 20-lint lua-check
