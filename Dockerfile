# cri-docker-shim images, on Debian trixie; every layer comes from Debian's packages and the npm
# registry. Debian's nodejs and npm only run npm in the build stage: the shim's Node is the one
# package.json pins (24.x), which npm ci brings, and the runtime stages carry that one.
#   target shim      the shim alone, next to a Docker engine it reaches through a socket
#   target node      the shim plus its own dockerd: one node of the docker-compose test cluster
#   target registry  Debian's docker-registry, the cluster's local registry
# Anywhere: `docker build --target shim .`. Without Docker Hub: scripts/build-image.sh makes the
# base from Debian's packages (debootstrap) and passes it as BASE_IMAGE.
ARG BASE_IMAGE=debian:trixie-slim

FROM ${BASE_IMAGE} AS build
# gcc and libc6-dev build the shim's static programs: pause (src/pause), the default pause image
# a node makes for itself when no registry has it, and port-relay (src/streaming), which dials
# inside pods for port forward.
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      nodejs npm ca-certificates gcc libc6-dev >/dev/null && apt-get clean && rm -rf /var/lib/apt/lists/*
# Behind a TLS-inspecting proxy npm needs the proxy's CA: PEM text in EXTRA_CA_CERTS (the build
# stage only; scripts/build-image.sh passes the host's /usr/local/share/ca-certificates).
ARG EXTRA_CA_CERTS=
RUN printf '%s\n' "$EXTRA_CA_CERTS" >/etc/ssl/build-extra-ca.pem
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/build-extra-ca.pem
WORKDIR /src
# Dependencies first, from the lock file alone, so a source change reuses this layer.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY tsconfig.json ./
COPY proto ./proto
COPY scripts ./scripts
COPY src ./src
# The project's own build (tsc compiles src, test and bench together, then the command is
# bundled with its code cache, made by the project's Node, the runtime's own); only dist/src
# goes into the image, with the static programs (dist/pause, dist/port-relay), and the
# production node_modules, the project's Node among them (an optional dependency, which prune keeps).
COPY test ./test
COPY bench ./bench
RUN npm run build && npm prune --omit=dev --no-audit --no-fund --loglevel=error \
 && test -x dist/pause/pause && test -x dist/port-relay/port-relay \
 && mkdir /out && cp -r package.json node_modules proto /out/ && mkdir /out/dist && cp -r dist/src dist/pause dist/port-relay /out/dist/
# Labelled and tagged (cri-docker-shim-build, by scripts/build-image.sh) like the others, so the
# stage's image a rebuild replaces is removed too: untagged and unlabelled, each rebuild kept one
# (~670 MB, tens of thousands of files in Docker's store).
LABEL io.cri-docker-shim.image=build

FROM ${BASE_IMAGE} AS shim
# Marks the images a rebuild replaces, so scripts/build-image.sh can remove those left untagged.
LABEL io.cri-docker-shim.image=shim
# iptables/ip/sysctl for host ports and kubenet, Debian's CNI plugins in /usr/lib/cni (the
# shim's default --cni-bin-dir searches there). No Debian nodejs.
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      iptables iproute2 procps containernetworking-plugins >/dev/null \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
COPY --from=build /out /opt/cri-docker-shim
# The built command itself (its shebang carries the shim's Node flags), as `cri-docker-shim`, and
# the project's Node (this CPU's node-linux-*, the one npm ci installed) as `node`, which that
# shebang and the health check look up on PATH.
RUN ln -s /opt/cri-docker-shim/dist/src/main.js /usr/local/bin/cri-docker-shim \
 && ln -s /opt/cri-docker-shim/node_modules/node-linux-*/bin/node /usr/local/bin/node \
 && mkdir -p /etc/cni/net.d /var/lib/cri-docker-shim /var/log/pods /run/cri-docker-shim
ENTRYPOINT ["/usr/local/bin/cri-docker-shim"]
HEALTHCHECK --interval=10s --timeout=6s --start-period=20s --retries=3 \
  CMD ["node", "/opt/cri-docker-shim/dist/src/tools/health-check.js", "--endpoint", "unix:///run/cri-docker-shim/cri-docker-shim.sock"]
CMD ["--container-runtime-endpoint=unix:///run/cri-docker-shim/cri-docker-shim.sock"]

FROM shim AS node
LABEL io.cri-docker-shim.image=node
# Its own Docker engine (Debian's docker.io, and docker-cli, which it only recommends) beside
# the shim; the entrypoint starts both.
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      docker.io docker-cli ca-certificates >/dev/null \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
COPY packaging/node/entrypoint.sh /usr/local/bin/cluster-node
VOLUME /var/lib/docker
ENTRYPOINT ["/usr/local/bin/cluster-node"]
CMD []

FROM ${BASE_IMAGE} AS registry
LABEL io.cri-docker-shim.image=registry
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      docker-registry >/dev/null && apt-get clean && rm -rf /var/lib/apt/lists/*
COPY packaging/registry/config.yml /etc/docker/registry/config.yml
EXPOSE 5000
ENTRYPOINT ["/usr/bin/docker-registry", "serve", "/etc/docker/registry/config.yml"]
