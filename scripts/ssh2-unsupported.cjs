// Stands in for ssh2 in the bundle (scripts/bundle.mjs). docker-modem loads ssh2 at once for
// ssh:// Docker hosts, which the shim does not accept (src/config/endpoint.ts); ssh2 is the
// largest part of docker-modem's load time.
class Client {
  constructor() {
    throw new Error('ssh:// Docker endpoints are not supported by cri-docker-shim');
  }
}
module.exports = { Client };
