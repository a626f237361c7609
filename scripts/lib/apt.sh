# Sourced by scripts/setup.d/*.sh: `apt_install TAG PKG...` installs Debian packages quietly (sudo when not root).
apt_install() {
  local tag=$1
  shift
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "$tag: apt-get install $*" >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
