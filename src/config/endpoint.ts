// Endpoints are written as URLs: unix:///path/to.sock, tcp://host:port (and http://, which
// Docker also accepts for DOCKER_HOST). A bare absolute path means a unix socket. The CRI
// server may also take its socket from systemd: fd:// (see ./socket-activation.ts).
export type Endpoint =
  | { kind: 'unix'; path: string; url: string }
  | { kind: 'tcp'; host: string; port: number; url: string };

/** Where Docker listens unless --docker-endpoint or DOCKER_HOST says otherwise. */
export const DEFAULT_DOCKER_ENDPOINT = 'unix:///var/run/docker.sock';

/** A socket systemd opened for us; `name` picks one by its FileDescriptorName=. */
type ActivatedEndpoint = { kind: 'fd'; name: string | undefined; url: string };

/** Where the CRI server listens. */
export type ListenEndpoint = Endpoint | ActivatedEndpoint;

export function parseEndpoint(text: string): Endpoint {
  const raw = text.trim();
  if (raw.startsWith('/')) return { kind: 'unix', path: raw, url: `unix://${raw}` };
  const unix = /^unix:\/\/(\/.+)$/.exec(raw);
  if (unix) return { kind: 'unix', path: unix[1]!, url: raw };
  const tcp = /^(?:tcp|http):\/\/(\[[0-9a-fA-F:]+\]|[^:/\s]+):(\d{1,5})\/?$/.exec(raw);
  if (tcp) {
    const port = Number(tcp[2]);
    if (port < 1 || port > 65535) throw new Error(`port ${port} in ${JSON.stringify(text)} is out of range`);
    return { kind: 'tcp', host: tcp[1]!.replace(/^\[|\]$/g, ''), port, url: raw };
  }
  throw new Error(`${JSON.stringify(text)} is not unix:///absolute/path or tcp://host:port`);
}

/** As parseEndpoint, and fd:// or fd://NAME for a socket passed by systemd. */
export function parseListenEndpoint(text: string): ListenEndpoint {
  const raw = text.trim();
  const fd = /^fd:\/\/([A-Za-z0-9_.-]{0,255})$/.exec(raw);
  if (fd) return { kind: 'fd', name: fd[1] === '' ? undefined : fd[1], url: raw };
  if (raw.startsWith('fd://')) throw new Error(`${JSON.stringify(text)} is not fd:// or fd://NAME (a socket's FileDescriptorName)`);
  return parseEndpoint(raw);
}
