// A child process that floods streaming sessions with tiny frames, so that the test process's
// own event loop (which measures CRI calls meanwhile) is not what slows down. Run by
// startFrameFlood (./frame-flood.ts): argv[2] is a FloodPlan as JSON. It prints one FloodEvent
// as JSON a line: ready once every connection is upgraded, closed as the shim ends one, done
// once it flooded for `ms`; then holds its connections until its stdin ends.
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { ControlType, encodeControl, encodeData } from '../../src/streaming/spdy/framing';
import { rawUpgrade, RawSpdyClient, upgradeRequest, webSocketUpgradeHeaders } from './streaming-clients';

export type FloodKind = 'spdy-unknown-stream' | 'spdy-ping' | 'spdy-valid-stream' | 'ws-ping';

export interface FloodPlan {
  kind: FloodKind;
  /** One streaming URL (an exec of a command that reads stdin) per connection. */
  urls: string[];
  ms: number;
}

export type FloodEvent =
  | { event: 'ready' }
  /** The shim ended connection `index`: with GOAWAY `status` (SPDY), or closed it (undefined). */
  | { event: 'closed'; index: number; status: number | undefined }
  /** Bytes written, per connection. */
  | { event: 'done'; sent: number[] };

const say = (e: FloodEvent): boolean => process.stdout.write(`${JSON.stringify(e)}\n`);

/** Bytes of tiny frames written at once: one write carries thousands of frames. */
const BATCH_BYTES = 64 * 1024;

function repeat(frame: Buffer): Buffer {
  return Buffer.concat(Array.from({ length: Math.floor(BATCH_BYTES / frame.length) }, () => frame));
}

/** A client's masked WebSocket frame with an empty payload. */
function maskedEmpty(opcode: number): Buffer {
  return Buffer.concat([Buffer.from([0x80 | opcode, 0x80]), randomBytes(4)]);
}

async function wsUpgrade(url: string): Promise<Socket> {
  return (await upgradeRequest(url, 'GET', webSocketUpgradeHeaders('v4.channel.k8s.io'))).socket;
}

interface Flooder {
  socket: Socket;
  batch: Buffer;
}

async function connect(kind: FloodKind, url: string, index: number): Promise<Flooder> {
  if (kind === 'ws-ping') {
    const socket = await wsUpgrade(url);
    // What the shim sends is read (a client that does not read is another case) and dropped.
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.once('close', () => say({ event: 'closed', index, status: undefined }));
    return { socket, batch: repeat(maskedEmpty(0x9)) };
  }
  const socket = await rawUpgrade(url, 'v4.channel.k8s.io');
  const client = new RawSpdyClient(socket);
  socket.once('close', () => say({ event: 'closed', index, status: client.goAwayStatus }));
  let batch: Buffer;
  if (kind === 'spdy-valid-stream') {
    await client.open({ streamType: 'error' }, { fin: true });
    const stdin = await client.open({ streamType: 'stdin' });
    await client.open({ streamType: 'stdout' }, { fin: true });
    batch = repeat(encodeData(stdin, 0, Buffer.from('x')));
  } else if (kind === 'spdy-ping') {
    const id = Buffer.alloc(4);
    id.writeUInt32BE(1, 0);
    batch = repeat(encodeControl(ControlType.Ping, 0, id));
  } else batch = repeat(encodeData(999, 0, Buffer.from('x')));
  return { socket, batch };
}

async function flood(f: Flooder, until: number): Promise<number> {
  let sent = 0;
  while (Date.now() < until && !f.socket.destroyed && f.socket.writable) {
    sent += f.batch.length;
    if (f.socket.write(f.batch)) continue;
    // Room, the end of the flood or the connection's end, whichever comes first.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(0, until - Date.now()));
      function done(): void {
        clearTimeout(timer);
        f.socket.off('drain', done).off('close', done);
        resolve();
      }
      f.socket.once('drain', done).once('close', done);
    });
  }
  return sent;
}

async function main(): Promise<void> {
  const plan = JSON.parse(process.argv[2]!) as FloodPlan;
  const flooders = await Promise.all(plan.urls.map((url, i) => connect(plan.kind, url, i)));
  say({ event: 'ready' });
  const until = Date.now() + plan.ms;
  const sent = await Promise.all(flooders.map((f) => flood(f, until)));
  // Connections the shim ended early: the flood still lasts `ms`, for the CRI calls timed meanwhile.
  await new Promise((r) => setTimeout(r, Math.max(0, until - Date.now())));
  say({ event: 'done', sent });
  process.stdin.resume();
  process.stdin.once('end', () => {
    for (const f of flooders) f.socket.destroy();
  });
}

void main().catch((err: unknown) => {
  process.stderr.write(`flooder: ${String(err)}\n`);
  process.exit(1);
});
