# Sourced by scripts/setup.d/*.sh: `npm_pinned TAG DIR PACKAGE VERSION` installs PACKAGE@VERSION into DIR/node_modules.
# Idempotent: a second run only checks the stamp the first one left.
npm_pinned() {
  local tag=$1 dir=$2 package=$3 version=$4
  local stamp="$dir/node_modules/.ollie-installed-$version"
  if [ ! -f "$stamp" ]; then
    echo "$tag: npm install $package@$version in $dir" >&2
    (cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error "$package@$version")
    touch "$stamp"
  fi
  echo "$tag: ready ($dir)" >&2
}
