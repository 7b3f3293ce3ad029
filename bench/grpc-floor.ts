// The floor under the lifecycle rows: the raw side's Docker requests, each relayed by a bare
// grpc-js server in a process of its own (no CRI translation, no state, no log follower), so a
// row shows what one grpc-js hop in front of Docker costs before any of the shim's own work.
// A short call (RemoveContainer's ~5 ms delete) pays that hop in full: the client's and the
// server's grpc-js, HTTP/2 and protobuf-sized framing, in a process whose caches went cold while
// Docker worked. The shim can only come near this floor, never under it.
//
//   node dist/bench/grpc-floor.js --serve <unix socket> <Docker's unix socket>
// runs the relay; the bench starts it with startGrpcFloor() and times floorRound() (lifecycle.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';

/** One Docker request as the raw side makes it. */
export interface RelayedRequest {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  body?: unknown;
}

export interface RelayedAnswer {
  status: number;
  body: string;
}

const json = {
  serialize: (v: unknown): Buffer => Buffer.from(JSON.stringify(v)),
  deserialize: (b: Buffer): unknown => JSON.parse(b.toString()) as unknown,
};

/** The relay's one method; its messages are JSON (as small as the CRI calls' protobuf). */
const FLOOR_SERVICE: grpc.ServiceDefinition = {
  Docker: {
    path: '/cds.bench.Floor/Docker',
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
  },
};

/** Sends one request to Docker on a kept-alive connection, as the shim's short calls do. */
function dockerRequest(agent: http.Agent, socketPath: string, r: RelayedRequest): Promise<RelayedAnswer> {
  return new Promise((resolve, reject) => {
    const data = r.body === undefined ? undefined : JSON.stringify(r.body);
    const headers = data === undefined ? { 'content-length': 0 } : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) };
    const req = http.request({ socketPath, agent, method: r.method, path: r.path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(data);
  });
}

function serve(socket: string, dockerSocket: string): void {
  const agent = new http.Agent({ keepAlive: true });
  const server = new grpc.Server();
  server.addService(FLOOR_SERVICE, {
    Docker: (call: grpc.ServerUnaryCall<RelayedRequest, RelayedAnswer>, callback: grpc.sendUnaryData<RelayedAnswer>) => {
      dockerRequest(agent, dockerSocket, call.request).then(
        (answer) => callback(null, answer),
        (err: Error) => callback({ code: grpc.status.UNAVAILABLE, details: err.message }),
      );
    },
  });
  server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => {
    if (err) throw err;
    process.stdout.write('ready\n');
  });
  process.on('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
}

export interface GrpcFloor {
  /** Relays one request; rejects unless Docker answered 2xx. */
  docker(r: RelayedRequest): Promise<RelayedAnswer>;
  stop(): Promise<void>;
}

/** Starts the relay in a process of its own, on a socket in `dir`, for Docker at `dockerSocket`. */
export async function startGrpcFloor(dir: string, dockerSocket: string): Promise<GrpcFloor> {
  const socket = path.join(dir, 'grpc-floor.sock');
  const child: ChildProcess = spawn(process.execPath, [__filename, '--serve', socket, dockerSocket], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the grpc-js floor relay exited ${code} before it was ready`)));
    child.stdout!.once('data', () => resolve());
  });
  child.removeAllListeners('exit');
  const Client = grpc.makeGenericClientConstructor(FLOOR_SERVICE, 'Floor');
  const client = new Client(`unix://${socket}`, grpc.credentials.createInsecure(), { 'grpc.enable_channelz': 0, 'grpc.enable_retries': 0 });
  const call = client['Docker'] as (req: RelayedRequest, cb: (err: grpc.ServiceError | null, res: RelayedAnswer) => void) => void;
  return {
    docker: (r) =>
      new Promise((resolve, reject) =>
        call.call(client, r, (err, answer) => {
          if (err) return reject(err);
          if (answer.status < 200 || answer.status > 299) return reject(new Error(`${r.method} ${r.path}: Docker answered ${answer.status} ${answer.body}`));
          resolve(answer);
        }),
      ),
    stop: async () => {
      client.close();
      const exited = new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
      child.kill('SIGTERM');
      await exited;
      fs.rmSync(socket, { force: true });
    },
  };
}

if (require.main === module && process.argv[2] === '--serve') {
  const [socket, dockerSocket] = process.argv.slice(3);
  if (!socket || !dockerSocket) throw new Error('usage: grpc-floor.js --serve <socket> <docker socket>');
  serve(socket, dockerSocket);
}
