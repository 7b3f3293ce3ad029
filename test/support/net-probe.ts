// Small network probes the integration tests share: a loopback port nothing listens on, an HTTP
// GET with a short timeout (for host ports and pods' servers), the TCP ports a process listens on.
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';

/** A port on 127.0.0.1 that nothing listens on right now. */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** GET http://host:port/path; the body, whatever the status. Fails after 3 s without an answer. */
export function httpGet(host: string, port: number, urlPath = '/'): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host, port, path: urlPath, timeout: 3000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${host}:${port} within 3 s`)));
    req.on('error', reject);
  });
}

/** The TCP ports process `pid` listens on (its sockets in LISTEN state, IPv4 and IPv6), sorted. */
export function listeningTcpPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed between the listing and the read
    }
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    for (const row of fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const cols = row.trim().split(/\s+/);
      if (cols.length < 10 || cols[3] !== '0A' || !inodes.has(cols[9]!)) continue;
      ports.add(parseInt(cols[1]!.split(':')[1]!, 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}
