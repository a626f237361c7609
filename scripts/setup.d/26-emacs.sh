#!/usr/bin/env bash
# Emacs with eglot for the plain-LSP-client test (tests/editors/test_eglot.py), from Debian, installed only when missing.
set -euo pipefail
emacs --batch --eval "(require 'eglot)" >/dev/null 2>&1 && exit 0
source "$(dirname "$0")/../lib/apt.sh"
apt_install 26-emacs emacs-nox elpa-eglot
