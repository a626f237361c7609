#!/usr/bin/env bash
# tmux for the Neovim TUI test (tests/editors/test_nvim_tui.py), from Debian, installed only when missing.
set -euo pipefail
command -v tmux >/dev/null 2>&1 && exit 0
source "$(dirname "$0")/../lib/apt.sh"
apt_install 25-tmux tmux
