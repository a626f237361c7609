#!/usr/bin/env bash
# The interpreters and tools the execute server's tests cover beyond the base machine:
# lua, expect and ripgrep (file_grep's fast path). Installed from Debian only when missing.
set -euo pipefail
want=()
command -v lua >/dev/null 2>&1 || command -v lua5.4 >/dev/null 2>&1 || want+=(lua5.4)
command -v expect >/dev/null 2>&1 || want+=(expect)
command -v rg >/dev/null 2>&1 || want+=(ripgrep)
[ ${#want[@]} -eq 0 ] && exit 0
source "$(dirname "$0")/../lib/apt.sh"
apt_install 10-tools "${want[@]}"
