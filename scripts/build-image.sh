#!/usr/bin/env bash
# Builds the three images docker-compose.yml uses (cri-docker-shim, cri-docker-shim-node,
# cri-docker-shim-registry) from this checkout. The base is BASE_IMAGE when given (e.g.
# debian:trixie-slim where Docker Hub is reachable); otherwise one made from Debian's packages by
# scripts/build-base-image.sh, so no registry but Debian's and npm's is needed.
#   scripts/build-image.sh            # all three, tagged :latest (SHIM_TAG to change)
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${SHIM_TAG:-latest}
if [ -z "${BASE_IMAGE:-}" ]; then
  BASE_IMAGE=cri-docker-shim/debian:trixie
  BASE_IMAGE=$BASE_IMAGE scripts/build-base-image.sh
fi
# A host behind a TLS-inspecting proxy trusts its CA there; npm in the build stage needs it too.
extra_ca=$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true)
# Two builds of the same tags at once would race; one waits for the other (then hits its cache).
exec 9>"${TMPDIR:-/tmp}/cri-docker-shim-build-image.lock"
flock 9
# The build stage is tagged too (cri-docker-shim-build): the one a rebuild replaces is then left
# untagged with its label, and removed below with the others.
for target in build shim node registry; do
  name=cri-docker-shim; [ "$target" = shim ] || name=cri-docker-shim-$target
  printf 'build-image: %s:%s (target %s, base %s)\n' "$name" "$tag" "$target" "$BASE_IMAGE"
  docker build -q --force-rm --build-arg BASE_IMAGE="$BASE_IMAGE" --build-arg EXTRA_CA_CERTS="$extra_ca" --target "$target" -t "$name:$tag" . >/dev/null
done
# A rebuild leaves the images it replaced untagged; remove those (only ours, by their label).
docker image prune -f --filter label=io.cri-docker-shim.image >/dev/null
