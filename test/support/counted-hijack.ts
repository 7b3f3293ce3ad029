// Docker's hijacked connection (src/docker/hijack.ts) to a stand-in on a unix socket that answers
// 101 and then writes what the test says, its lent reads counted: how many reads, and into how
// many distinct buffers (one per read when the reader cannot give them back for reuse).
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { hijackRequest, openHijack, type HijackedConnection } from '../../src/docker/hijack';

export interface ReadCount {
  reads: number;
  buffers: number;
}

/** Runs `use` on the connection; `write` writes the stream after the 101 and ends it. Clean-up after. */
export async function withCountedHijack<T>(write: (socket: net.Socket) => void, use: (connection: HijackedConnection, count: () => ReadCount) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'counted-hijack-'));
  const server = net.createServer((socket) =>
    socket.once('data', () => {
      socket.write('HTTP/1.1 101 UPGRADED\r\n\r\n');
      write(socket);
      socket.end();
    }),
  );
  await new Promise<void>((resolve) => server.listen(path.join(dir, 'docker.sock'), resolve));
  try {
    const connection = await openHijack({ kind: 'unix', path: path.join(dir, 'docker.sock'), url: 'unix://x' }, hijackRequest('/x', {}), { 101: true }, undefined);
    const buffers = new Set<ArrayBufferLike>();
    let reads = 0;
    const lendReads = connection.lendReads.bind(connection);
    connection.lendReads = (reader) =>
      lendReads((data, giveBack) => {
        reads++;
        buffers.add(data.buffer);
        reader(data, giveBack);
      });
    try {
      return await use(connection, () => ({ reads, buffers: buffers.size }));
    } finally {
      connection.destroy();
    }
  } finally {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
