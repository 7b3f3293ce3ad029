// One hop between two Node processes on a unix socket, as the shim stands between kubelet and
// Docker: the round trip of a small unary call, each call after a pause (`--gap`, ms) in which
// both processes sleep, as they do while Docker works on a lifecycle call. Four pairs, client ->
// server: bare sockets (an echo), node:http2 on both ends (gRPC's framing and trailers written
// by hand), a node:http2 client in front of a grpc-js server (kubelet's client is not grpc-js:
// the server's share alone), and grpc-js on both ends (the lifecycle floor's hop,
// grpc-floor.ts). The short lifecycle calls' target (1.1 of Docker's ~5 ms) leaves a hop ~0.5 ms.
//   node dist/bench/hop.js [--gap=10] [--calls=200]
// The same file is the server side: node dist/bench/hop.js --serve=<kind> <unix socket>.
import * as http2 from 'node:http2';
import * as net from 'node:net';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { removePaths } from '../test/support/cleanup';
import { tempDir } from '../test/support/temp';
import { countOption, runAsProgram } from './entry';
import { startFloorProcess, stopFloorProcess } from './floor-process';
import { percentile } from './stats';

type Kind = 'net' | 'http2' | 'grpc-js';

/** The pairs measured, client first. */
export const HOP_PAIRS: readonly (readonly [Kind, Kind])[] = [
  ['net', 'net'],
  ['http2', 'http2'],
  ['http2', 'grpc-js'],
  ['grpc-js', 'grpc-js'],
];

/** About a short CRI request's or answer's size. */
const MESSAGE = Buffer.alloc(80, 1);
const PATH = '/cds.bench.Hop/Call';
const asIs = (b: Buffer): Buffer => b;
const HOP_SERVICE: grpc.ServiceDefinition = {
  Call: { path: PATH, requestStream: false, responseStream: false, requestSerialize: asIs, requestDeserialize: asIs, responseSerialize: asIs, responseDeserialize: asIs },
};

/** A gRPC length-prefixed message (uncompressed). */
function grpcFrame(message: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

function serve(kind: Kind, socket: string): void {
  const ready = (): boolean => process.stdout.write('ready\n');
  if (kind === 'net') {
    const server = net.createServer((s) => s.on('data', (d) => s.write(d))).listen(socket, ready);
    process.on('SIGTERM', () => server.close(() => process.exit(0)));
  } else if (kind === 'http2') {
    const server = http2.createServer();
    server.on('stream', (stream) => {
      stream.on('data', () => undefined);
      stream.on('end', () => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(grpcFrame(MESSAGE));
      });
    });
    server.listen(socket, ready);
    process.on('SIGTERM', () => server.close(() => process.exit(0)));
  } else {
    const server = new grpc.Server();
    server.addService(HOP_SERVICE, { Call: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => callback(null, MESSAGE) });
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => {
      if (err) throw err;
      ready();
    });
    process.on('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
  }
}

interface HopClient {
  call(): Promise<void>;
  close(): void;
}

async function connect(kind: Kind, socket: string): Promise<HopClient> {
  if (kind === 'net') {
    const s = net.connect(socket);
    await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
    let answered: (() => void) | undefined;
    s.on('data', () => answered?.());
    return { call: () => new Promise<void>((resolve) => ((answered = resolve), s.write(MESSAGE))), close: () => s.destroy() };
  }
  if (kind === 'http2') {
    const session = http2.connect('http://localhost', { createConnection: () => net.connect(socket) });
    return {
      call: () =>
        new Promise<void>((resolve, reject) => {
          const stream = session.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc', te: 'trailers' });
          stream.on('data', () => undefined);
          stream.on('error', reject);
          stream.on('close', resolve);
          stream.end(grpcFrame(MESSAGE));
        }),
      close: () => session.close(),
    };
  }
  const Client = grpc.makeGenericClientConstructor(HOP_SERVICE, 'Hop');
  const client = new Client(`unix://${socket}`, grpc.credentials.createInsecure());
  const method = (client as unknown as Record<'Call', (m: Buffer, cb: (err: grpc.ServiceError | null) => void) => void>).Call.bind(client);
  return { call: () => new Promise<void>((resolve, reject) => method(MESSAGE, (err) => (err ? reject(err) : resolve()))), close: () => client.close() };
}

export interface HopRow {
  client: Kind;
  server: Kind;
  /** Round trips, µs. */
  p50Us: number;
  p90Us: number;
}

async function measurePair(client: Kind, server: Kind, gapMs: number, calls: number): Promise<HopRow> {
  const dir = tempDir('hop');
  const socket = path.join(dir, 'hop.sock');
  const { child } = await startFloorProcess(__filename, [`--serve=${server}`, socket], `the ${server} hop server`);
  try {
    const c = await connect(client, socket);
    try {
      for (let i = 0; i < 20; i++) await c.call();
      const us: number[] = [];
      for (let i = 0; i < calls; i++) {
        await new Promise((resolve) => setTimeout(resolve, gapMs));
        const t0 = process.hrtime.bigint();
        await c.call();
        us.push(Number(process.hrtime.bigint() - t0) / 1000);
      }
      return { client, server, p50Us: Math.round(percentile(us, 0.5)), p90Us: Math.round(percentile(us, 0.9)) };
    } finally {
      c.close();
    }
  } finally {
    await stopFloorProcess(child);
    removePaths(dir);
  }
}

export async function main(argv: readonly string[]): Promise<number> {
  const served = argv.find((a) => a.startsWith('--serve='))?.slice('--serve='.length);
  if (served !== undefined) {
    if (served !== 'net' && served !== 'http2' && served !== 'grpc-js') throw new Error(`--serve: ${served} is none of net, http2, grpc-js`);
    serve(served, argv[argv.length - 1]!);
    return new Promise<number>(() => undefined);
  }
  const gapMs = countOption(argv, 'gap', 10);
  const calls = countOption(argv, 'calls', 200);
  process.stdout.write(`one hop's round trip, ${calls} calls each ${gapMs} ms apart (µs)\n| client -> server | p50 | p90 |\n| --- | ---: | ---: |\n`);
  for (const [client, server] of HOP_PAIRS) {
    const row = await measurePair(client, server, gapMs, calls);
    process.stdout.write(`| ${row.client} -> ${row.server} | ${row.p50Us} | ${row.p90Us} |\n`);
  }
  return 0;
}

runAsProgram(module, 'hop', main);
