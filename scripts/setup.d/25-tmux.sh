#!/usr/bin/env bash
# tmux for the Neovim TUI test (tests/editors/test_nvim_tui.py), from Debian, installed only when missing.
set -euo pipefail
command -v tmux >/dev/null 2>&1 && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "25-tmux: apt-get install tmux" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends tmux >/dev/null
