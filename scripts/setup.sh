#!/usr/bin/env bash
# Sets up everything cri-docker-shim and its tests need on a Debian machine, installing only
# what is missing, then builds. Run as root. With --run, starts the shim with default flags
# afterwards (any further arguments are passed to it).
#   scripts/setup.sh            # install + build
#   scripts/setup.sh --run      # install + build + serve unix:///run/cri-docker-shim.sock
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }
need_root() { [ "$(id -u)" = 0 ] || { echo "setup: run as root (it installs packages and starts dockerd)" >&2; exit 1; }; }

# Debian packages: the Docker engine, and what the tests use (busybox, or a busybox-static already
# installed, and gcc for the offline test images, docker-registry and htpasswd for pull tests,
# CNI plugins and iptables, systemd's socket activator and unit checker; docker-compose and
# debootstrap for the packaging tests; strip and dpkg-shlibdeps for `npm run package`). Debian's
# nodejs only runs npm: the shim's Node is the one package.json pins, which npm ci brings.
packages=()
command -v npm >/dev/null || packages+=(nodejs npm)
command -v dockerd >/dev/null || packages+=(docker.io)
[ -x /bin/busybox ] || packages+=(busybox)
command -v gcc >/dev/null || packages+=(gcc libc6-dev)
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || [ -e /usr/lib/aarch64-linux-gnu/libc.a ] || packages+=(libc6-dev)
command -v docker-registry >/dev/null || packages+=(docker-registry)
command -v htpasswd >/dev/null || packages+=(apache2-utils)
[ -x /usr/lib/cni/bridge ] || packages+=(containernetworking-plugins)
command -v iptables >/dev/null || packages+=(iptables)
command -v tar >/dev/null || packages+=(tar)
command -v systemd-socket-activate >/dev/null || packages+=(systemd)
# The compose file and its images: docker-compose 1.29, and debootstrap for a base image made
# from Debian's packages (scripts/build-base-image.sh) where Docker Hub is out of reach.
command -v docker-compose >/dev/null || packages+=(docker-compose)
command -v debootstrap >/dev/null || packages+=(debootstrap)
# The single executable is a stripped copy of node; the .deb's library dependencies come from
# dpkg-shlibdeps (dpkg-deb itself is dpkg's).
command -v strip >/dev/null || packages+=(binutils)
command -v dpkg-shlibdeps >/dev/null || packages+=(dpkg-dev)
if [ ${#packages[@]} -gt 0 ]; then
  need_root
  say "installing ${packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

# The tests also build their busybox image from a static busybox, as on machines that have
# Debian's busybox-static instead of busybox (the two cannot be installed together). Unless
# busybox-static is the installed one, its binary is unpacked into a cache without installing
# it, beside the cache and then moved in, so an interrupted run leaves no torn copy. Best effort:
# the test fetches it itself when this could not, and says why it skips when it cannot either.
static_busybox=/var/cache/cri-docker-shim/busybox-static
if ! dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' \
   && [ ! -x "$static_busybox/bin/busybox" ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$(dirname "$static_busybox")"
  work=$(mktemp -d "$(dirname "$static_busybox")/.busybox-static-XXXXXX")
  if (cd "$work" && { apt-get download -qq busybox-static >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get download -qq busybox-static >/dev/null; }; }) \
     && dpkg-deb -x "$work"/busybox-static_*.deb "$work/tree" && [ -x "$work/tree/bin/busybox" ] \
     && rm -rf "$static_busybox" && mv "$work/tree" "$static_busybox"; then
    say "unpacked busybox-static into $static_busybox for the test images"
  else
    say "could not fetch busybox-static; the test of images built from it will try again, or be skipped"
  fi
  rm -rf "$work"
fi

# Docker: start the daemon if it is not answering (there may be no systemd).
if ! docker info >/dev/null 2>&1; then
  need_root
  if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
    say "starting docker.service"
    systemctl start docker
  else
    say "starting dockerd (log: /var/log/dockerd.log)"
    nohup dockerd >>/var/log/dockerd.log 2>&1 &
  fi
  for _ in $(seq 1 150); do docker info >/dev/null 2>&1 && break; sleep 0.2; done
  docker info >/dev/null 2>&1 || { echo "setup: dockerd did not come up; see /var/log/dockerd.log" >&2; exit 1; }
fi
say "docker $(docker version -f '{{.Server.Version}}') is running"

# Node dependencies, only when package-lock.json changed since the last install, or when npm ci
# left out the project's Node (an optional dependency it could not fetch).
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ] \
   || [ ! -x "node_modules/node-linux-$(node -p process.arch)/bin/node" ]; then
  say "installing node dependencies"
  npm ci --no-audit --no-fund --loglevel=error
fi
say "building"
npm run --silent build

# A pod network for the default --network-plugin=cni, for development and test machines only
# (setup.sh is their set-up; a package never writes one), and only where there is no CNI config
# at all: Debian's bridge, portmap, firewall and bandwidth plugins, pods on 10.88.0.0/16 behind a
# cni0 bridge. The firewall plugin lets pod traffic through the FORWARD chain, whose policy Docker
# sets to DROP. The shim, like kubelet, takes the first file in lexical order, so the name sorts
# after any cluster's (10-flannel.conflist, 10-calico.conflist): a cluster's network installed
# later wins. An earlier setup's 10-cri-docker-shim.conflist is renamed to sort last too.
conf_dir=/etc/cni/net.d
default_conf="$conf_dir/99-cri-docker-shim.conflist"
if [ -f "$conf_dir/10-cri-docker-shim.conflist" ] && [ ! -e "$default_conf" ]; then
  need_root
  mv "$conf_dir/10-cri-docker-shim.conflist" "$default_conf"
  say "renamed the default pod network to $default_conf, so that a cluster's own sorts first"
fi
if [ -z "$(ls -A "$conf_dir" 2>/dev/null | grep -E '\.(conf|conflist|json)$')" ]; then
  need_root
  mkdir -p "$conf_dir"
  install -m 0644 packaging/cni/99-cri-docker-shim.conflist "$default_conf"
  say "wrote a default pod network to $default_conf (10.88.0.0/16 on bridge cni0)"
fi

if [ "${1:-}" = "--run" ]; then
  shift
  say "starting cri-docker-shim $*"
  # On the project's Node (scripts/project-node.mjs): main.js's shebang looks it up on PATH.
  PATH="$PWD/node_modules/node-linux-$(node -p process.arch)/bin:$PATH" exec dist/src/main.js "$@"
fi
