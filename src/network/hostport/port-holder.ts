// Holding a host port open: a socket bound to hostIP:hostPort in the shim's network namespace.
// The DNAT rules take the traffic before it reaches the socket; the socket is there so no other
// process on the node can take the port meanwhile (it would silently lose its traffic to the
// pod), and so a port already taken makes the pod fail at once instead of stealing it, as
// kubelet's hostport manager did. Node has no SCTP sockets, so SCTP ports are not held.
import * as dgram from 'node:dgram';
import * as net from 'node:net';
import type { HeldPortKey } from './hostport-rules';

export interface HeldPort {
  close(): Promise<void>;
}

export interface PortHolder {
  /** Binds the port; rejects (EADDRINUSE and the like) when it cannot. */
  hold(key: HeldPortKey): Promise<HeldPort>;
}

function bindAddress(key: HeldPortKey): string {
  if (key.hostIp !== '') return key.hostIp;
  return key.family === 4 ? '0.0.0.0' : '::';
}

function holdTcp(key: HeldPortKey): Promise<HeldPort> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => socket.destroy());
    server.once('error', reject);
    // ipv6Only keeps an IPv6 wildcard from also taking the IPv4 port, which the IPv4 key holds.
    server.listen({ port: key.hostPort, host: bindAddress(key), ipv6Only: key.family === 6, exclusive: true }, () => {
      server.off('error', reject);
      // A listening server has no further errors of its own to report.
      server.on('error', () => {});
      resolve({ close: () => new Promise<void>((done) => server.close(() => done())) });
    });
  });
}

function holdUdp(key: HeldPortKey): Promise<HeldPort> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket({ type: key.family === 4 ? 'udp4' : 'udp6', ipv6Only: key.family === 6 });
    socket.once('error', reject);
    socket.bind({ port: key.hostPort, address: bindAddress(key), exclusive: true }, () => {
      socket.off('error', reject);
      socket.on('error', () => {});
      // Nothing reads what arrives; drop it rather than let it queue.
      socket.on('message', () => {});
      resolve({ close: () => new Promise<void>((done) => socket.close(() => done())) });
    });
  });
}

/** Holds ports in the shim's own network namespace. */
export class LocalPortHolder implements PortHolder {
  hold(key: HeldPortKey): Promise<HeldPort> {
    return key.protocol === 'tcp' ? holdTcp(key) : holdUdp(key);
  }
}
