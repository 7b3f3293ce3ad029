#!/usr/bin/env bash
# Makes a Debian base image out of Debian's packages alone, for machines that cannot reach
# Docker Hub: debootstrap (minbase) into a cache directory, then `docker import`. The result
# stands in for debian:<suite>-slim as the Dockerfile's BASE_IMAGE. Idempotent: does nothing
# when the image exists; a half-made tree from an interrupted run is thrown away and redone.
#   scripts/build-base-image.sh                 # cri-docker-shim/debian:trixie
#   SUITE=bookworm scripts/build-base-image.sh  # another suite
set -euo pipefail
suite=${SUITE:-trixie}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
image=${BASE_IMAGE:-cri-docker-shim/debian:$suite}
cache=${BASE_CACHE_DIR:-/var/cache/cri-docker-shim/base}

say() { printf 'build-base-image: %s\n' "$*"; }

# Callers at once (the compose tests' image build, the .deb test) wait for one another.
exec 8>"${TMPDIR:-/tmp}/cri-docker-shim-build-base-image.lock"
flock 8
if docker image inspect "$image" >/dev/null 2>&1; then
  say "$image exists"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "build-base-image: run as root (debootstrap needs it)" >&2; exit 1; }
if ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

# The tree is made beside its final place and renamed when complete, so a tree that exists is whole.
tree=$cache/$suite
if [ ! -d "$tree" ]; then
  mkdir -p "$cache"
  work=$(mktemp -d "$cache/.$suite-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  say "debootstrap $suite from $mirror (a few minutes)"
  debootstrap --variant=minbase "$suite" "$work/tree" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  # What debian:*-slim leaves out: package caches and downloaded lists (the Dockerfile's apt-get
  # update fetches fresh ones), and documentation, manuals and translations, now and in every
  # package installed later (the copyright files stay).
  chroot "$work/tree" apt-get clean
  rm -rf "$work/tree"/var/lib/apt/lists/* "$work/tree"/var/cache/apt/*.bin "$work/tree"/var/log/*.log
  cat >"$work/tree/etc/dpkg/dpkg.cfg.d/slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
  find "$work/tree/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete
  rm -rf "$work/tree"/usr/share/man/* "$work/tree"/usr/share/info/*
  find "$work/tree/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  mv "$work/tree" "$tree"
fi

say "importing $tree as $image"
tar -C "$tree" --numeric-owner -c . | docker import --change 'CMD ["bash"]' - "$image" >/dev/null
say "$image ready ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%d MB", $1/1e6}'))"
