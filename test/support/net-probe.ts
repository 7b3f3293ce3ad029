// Small network probes the integration tests share: a loopback port nothing listens on, and an
// HTTP GET with a short timeout (for host ports and pods' servers).
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
