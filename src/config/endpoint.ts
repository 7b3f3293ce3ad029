// Endpoints are written as URLs: unix:///path/to.sock, tcp://host:port (and http://, which
// Docker also accepts for DOCKER_HOST). A bare absolute path means a unix socket.
export type Endpoint =
  | { kind: 'unix'; path: string; url: string }
  | { kind: 'tcp'; host: string; port: number; url: string };

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
