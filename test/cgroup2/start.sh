#!/bin/bash
# What the cgroup v2 lane runs in its guest at boot (from the lane's disk, /lane): the network for
# QEMU's port forwards, the busybox image, a reader of the guest's kernel files for the suite on
# the host (guest-files.js), and the shim's single executable on Docker with the systemd cgroup
# driver, with cri-dockerd's unit's --runtime-cgroups. Its output goes to the serial console.
set -u
. /lane/ports.env
up() { cut -d' ' -f1 /proc/uptime; }
mark() { echo "=== LANE $1 uptime=$(up)s"; }
mark start
# udev loads virtio_net from the root filesystem (the initrd has the disk's modules only), which
# can come after this unit starts.
for _ in $(seq 1 240); do [ -e /sys/class/net/eth0 ] && break; sleep 0.5; done
ip link set lo up; ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2
# No registry is reachable (QEMU's restrict=on): a name server that refuses at once makes the
# pull of the default pause image fail at once, so the shim makes it from its own program.
echo 'nameserver 127.0.0.1' > /etc/resolv.conf
mkdir -p /root/logs
node /lane/guest-files.js "$FILES_PORT" > /root/files.log 2>&1 &
for _ in $(seq 1 600); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
docker info 2>/dev/null | grep -E 'Server Version|Cgroup' || { mark docker-not-ready; exit 1; }
mark dockerd-ready
docker import /root/busybox.tar busybox:local >/dev/null && mark image
/lane/cri-docker-shim --container-runtime-endpoint "tcp://0.0.0.0:$CRI_PORT" \
  --streaming-bind-addr "0.0.0.0:$STREAM_PORT" --network-plugin= \
  --runtime-cgroups=/system.slice/cri-docker.service > /root/shim.log 2>&1 &
shim=$!
echo "$shim" > /root/shim.pid
mark "shim-started pid=$shim"
wait $shim
mark "shim-exited status=$?"
tail -20 /root/shim.log
