#!/bin/bash
# Makes (or keeps) the cgroup v2 lane's guest image: ../shared/ci/cgroup2-vm/build.sh's Debian
# trixie root (unified hierarchy, Docker with the systemd cgroup driver) into $VM_DIR, with its
# boot check replaced by guest-hook.sh, which runs what the lane puts on a second disk. The image
# is kept while a stamp of its inputs matches, so only a fresh machine pays the ~3 min build.
# Usage: test/cgroup2/build-guest.sh VM_DIR    (root; Debian's archive is the only network used)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=$(cd "$here/../../../shared/ci/cgroup2-vm" && pwd)
D=${1:?usage: build-guest.sh VM_DIR}
mkdir -p "$D"
# One builder at a time per VM_DIR (two lanes at once would build over each other).
exec 9>"$D/.build.lock"
flock 9
stamp=$(cat "$shared/build.sh" "$shared/guest/v2check.sh" "$here/guest-hook.sh" "$0" | sha256sum | cut -c1-16)
if [ -f "$D/root.img" ] && [ -f "$D/vmlinuz" ] && [ -f "$D/initrd.img" ] && [ "$(cat "$D/lane.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "cgroup2 lane: guest image $D/root.img is current ($stamp)"; exit 0
fi
rm -f "$D/lane.stamp"
missing=()
for c in qemu-system-x86_64:qemu-system-x86 qemu-img:qemu-utils mmdebstrap:mmdebstrap; do
  command -v "${c%%:*}" >/dev/null || missing+=("${c#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "cgroup2 lane: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
VM_DIR=$D bash "$shared/build.sh"
# The unit build.sh installed runs /usr/local/bin/v2check.sh at boot: ours instead, then the
# image again as build.sh makes it.
install -m755 "$here/guest-hook.sh" "$D/rootfs/usr/local/bin/v2check.sh"
rm -f "$D/root.img"; truncate -s 4G "$D/root.img"; mkfs.ext4 -q -F -L v2root -d "$D/rootfs" "$D/root.img"
# The root tree is only the image's source; the image is what boots.
rm -rf "$D/rootfs" "$D/bbroot"
echo "$stamp" > "$D/lane.stamp"
echo "cgroup2 lane: built $D/root.img ($stamp)"
