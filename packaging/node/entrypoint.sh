#!/bin/bash
# One node of the docker-compose test cluster: its own dockerd, a pod network, routes to the
# other nodes' pods, and the shim, kept running (a shim that exits is started again, as a
# service manager would; its pods stay, as they would on a real node).
#
# Everything is derived from the node's address on the cluster network, <prefix>.(10+N):
# node N serves pods from 10.244.N.0/24, so a node learns every peer's pod CIDR from the peer's
# address alone. Peers are found by the DNS alias all nodes share (PEER_ALIAS).
# Environment (set by docker-compose.yml):
#   NETWORK_PLUGIN  cni (default; a bridge conflist is written here) or kubenet (kubelet must then
#                   pass --pod-cidr, which the shim receives through UpdateRuntimeConfig)
#   CLUSTER_CIDR    all nodes' pod CIDRs together (10.244.0.0/16)
#   REGISTRY        host:port of the cluster's registry, trusted over plain http
#   PAUSE_IMAGE     the shim's --pod-infra-container-image
#   DOCKERD_ARGS, SHIM_ARGS   more flags for either (a compose override may add a runtime)
set -euo pipefail

log() { printf 'cluster-node: %s\n' "$*" >&2; }

network_plugin=${NETWORK_PLUGIN:-cni}
cluster_cidr=${CLUSTER_CIDR:-10.244.0.0/16}
peer_alias=${PEER_ALIAS:-cluster-node}
socket=/run/cri-docker-shim/cri-docker-shim.sock
cidr_prefix=${cluster_cidr%.*.*}            # 10.244

own_ip=$(ip -4 -o addr show dev eth0 | awk '{split($4, a, "/"); print a[1]; exit}')
index_of() { echo $(( ${1##*.} - 10 )); }    # the node number from an address on the cluster network
index=$(index_of "$own_ip")
[ "$index" -ge 1 ] && [ "$index" -le 240 ] || { log "address $own_ip is not <prefix>.11-250; give the node a static address"; exit 1; }
pod_cidr=$cidr_prefix.$index.0/24
log "node $(hostname) at $own_ip: pods on $pod_cidr, network plugin ${network_plugin:-none}"

# A container restarted in place keeps its files; the pid files of the last run name nobody now.
rm -f /var/run/docker.pid /run/docker/containerd/containerd.pid /var/run/docker/containerd/containerd.pid

# shellcheck disable=SC2086  # DOCKERD_ARGS is a list of flags
dockerd --exec-opt native.cgroupdriver=cgroupfs ${REGISTRY:+--insecure-registry "$REGISTRY"} \
  ${DOCKERD_ARGS:-} >/var/log/dockerd.log 2>&1 &
dockerd_pid=$!
for _ in $(seq 1 300); do docker info >/dev/null 2>&1 && break; sleep 0.2; done
docker info >/dev/null 2>&1 || { log "dockerd did not start:"; tail -n 30 /var/log/dockerd.log >&2; exit 1; }

# Pod traffic between nodes is routed, not masqueraded, so a pod sees its peer's own address.
# dockerd sets FORWARD's policy to DROP, so pod traffic is let through explicitly; traffic that
# leaves the cluster's pod range (to the registry, say) goes out as the node's address.
add_rule() { local table=$1 chain=$2; shift 2; iptables -t "$table" -C "$chain" "$@" 2>/dev/null || iptables -t "$table" -I "$chain" "$@"; }
add_rule filter FORWARD -s "$cluster_cidr" -j ACCEPT
add_rule filter FORWARD -d "$cluster_cidr" -j ACCEPT
sysctl -q -w net.ipv4.ip_forward=1

shim_flags=(--container-runtime-endpoint="unix://$socket" --network-plugin="$network_plugin")
if [ "$network_plugin" = cni ]; then
  add_rule nat POSTROUTING -s "$pod_cidr" ! -d "$cluster_cidr" -j MASQUERADE
  mkdir -p /etc/cni/net.d
  cat >/etc/cni/net.d/10-cluster.conflist <<JSON
{
  "cniVersion": "1.0.0",
  "name": "cluster",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$pod_cidr" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
JSON
elif [ "$network_plugin" = kubenet ]; then
  shim_flags+=(--non-masquerade-cidr="$cluster_cidr")
fi
[ -n "${PAUSE_IMAGE:-}" ] && shim_flags+=(--pod-infra-container-image="$PAUSE_IMAGE")

# Routes to the other nodes' pods, kept up to date as nodes come and go.
keep_routes() {
  while :; do
    for peer in $(getent ahostsv4 "$peer_alias" | awk '{print $1}' | sort -u); do
      [ "$peer" = "$own_ip" ] && continue
      ip route replace "$cidr_prefix.$(index_of "$peer").0/24" via "$peer" dev eth0 2>/dev/null || true
    done
    sleep 2
  done
}
keep_routes &
routes_pid=$!

stopping=
stop() {
  stopping=1
  log "stopping"
  [ -s /run/cri-docker-shim.pid ] && kill -TERM "$(cat /run/cri-docker-shim.pid)" 2>/dev/null || true
  kill -TERM "$routes_pid" 2>/dev/null || true
}
trap stop TERM INT

# shellcheck disable=SC2086  # SHIM_ARGS is a list of flags
while [ -z "$stopping" ]; do
  cri-docker-shim "${shim_flags[@]}" ${SHIM_ARGS:-} &
  echo $! >/run/cri-docker-shim.pid
  wait $! || true
  # `wait` also returns when a signal arrives; the shim may still be running then.
  while kill -0 "$(cat /run/cri-docker-shim.pid)" 2>/dev/null; do wait "$(cat /run/cri-docker-shim.pid)" || true; done
  [ -z "$stopping" ] && { log "shim exited; starting it again"; sleep 1; }
done
rm -f /run/cri-docker-shim.pid
# Pods go down with the node's dockerd; nothing of theirs outlives this container.
kill -TERM "$dockerd_pid" 2>/dev/null || true
wait "$dockerd_pid" || true
log "stopped"
