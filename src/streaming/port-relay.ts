// The helper port forward runs inside a pod's network namespace (nsenter --net, on the namespace
// the shim opened and checked): one per pod, however many connections and sessions. It only
// dials: for each request on its IPC channel ({ id, port }) it connects to 127.0.0.1:<port>
// there and hands the connected socket back over the channel (the descriptor itself), or says
// why it could not ({ id, error }). The bytes then flow between the shim and the pod's socket
// directly, not through this process. It exits when the shim closes the channel or is gone.
import * as net from 'node:net';

// Run by node as a script, or called by the single executable's main.ts (util/single-executable.ts).
export function runPortRelay(): void {
  const send = process.send?.bind(process);
  if (!send) {
    process.stderr.write('port-relay: must be started with an IPC channel\n');
    process.exit(2);
  }

  process.on('message', (msg: { id?: unknown; port?: unknown }) => {
    const { id, port } = msg;
    if (typeof id !== 'number' || typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) return;
    const socket = net.connect({ host: '127.0.0.1', port });
    // Nothing is read here: what the pod sends first stays in the socket for the shim.
    socket.pause();
    socket.once('connect', () => send({ id }, socket));
    socket.once('error', (err) => send({ id, error: `failed to connect to localhost:${port} in the pod's network namespace: ${err.message}` }));
  });
  process.on('disconnect', () => process.exit(0));
  send({ ready: true });
}

if (require.main === module) runPortRelay();
