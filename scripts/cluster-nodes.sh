#!/usr/bin/env bash
# Sets the test cluster's size: writes docker-compose.override.yml (which docker-compose reads
# beside docker-compose.yml) with nodes 3..N, each like node-1 but with its own name, address
# (<CLUSTER_NET>.(10+n)), pod CIDR (10.244.n.0/24, derived from the address) and socket
# directory (./.cluster/node-n). N=2 removes the file: the two nodes of docker-compose.yml.
# A docker-compose.override.yml of the user's own is left alone (the script says so and stops).
#   scripts/cluster-nodes.sh 4 && docker-compose up -d
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: scripts/cluster-nodes.sh N   (number of nodes, 2 to 240)}
[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le 240 ] || { echo "cluster-nodes: N must be 2..240" >&2; exit 2; }
out=docker-compose.override.yml
marker="# Written by scripts/cluster-nodes.sh"
# An override of the user's own (say, one giving the nodes a runc wrapper) is never replaced.
if [ -e "$out" ] && ! head -n 1 "$out" | grep -q "^$marker"; then
  echo "cluster-nodes: $out is not this script's; merge by hand, or list both files in COMPOSE_FILE" >&2
  exit 1
fi
if [ "$n" -eq 2 ]; then
  rm -f "$out"
  echo "cluster-nodes: 2 nodes (docker-compose.yml alone)"
  exit 0
fi
{
  echo "$marker $n: nodes 3..$n beside docker-compose.yml's two."
  echo "services:"
  for i in $(seq 3 "$n"); do
    cat <<YAML
  node-$i:
    extends: { service: node-1 }
    hostname: node-$i
    networks:
      cluster:
        ipv4_address: \${CLUSTER_NET:-10.247.0}.$((10 + i))
        aliases: [cluster-node]
    volumes:
      - /var/lib/docker
      - \${CLUSTER_DIR:-./.cluster}/node-$i:/run/cri-docker-shim
YAML
  done
} >"$out"
echo "cluster-nodes: $n nodes ($out)"
