// The helper PortForward runs inside a pod's network namespace (under nsenter): it connects
// to 127.0.0.1:<port> there and copies stdin to the connection and the connection to stdout.
// A connection failure is one line on stderr and exit code 1.
import * as fs from 'node:fs';
import * as net from 'node:net';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  process.stderr.write(`port-relay: ${process.argv[2]} is not a port\n`);
  process.exit(2);
}
const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
socket.once('connect', () => {
  // Tells the shim the connection is up (fd 3 is a pipe it passed us).
  fs.writeSync(3, '1');
  fs.closeSync(3);
  process.stdin.pipe(socket);
  socket.pipe(process.stdout);
});
socket.once('error', (err) => {
  process.stderr.write(`failed to connect to localhost:${port} in the pod's network namespace: ${err.message}\n`);
  process.exit(1);
});
socket.once('close', () => process.stdout.end(() => process.exit(0)));
