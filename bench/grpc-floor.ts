// The floor under the lifecycle rows: the raw side's Docker requests, each relayed by a bare
// grpc-js server in a process of its own (no CRI translation, no state, no log follower), so a
// row shows what one grpc-js hop in front of Docker costs before any of the shim's own work.
// A short call (RemoveContainer's ~5 ms delete) pays that hop in full: the client's and the
// server's grpc-js, HTTP/2 and protobuf-sized framing, in a process whose caches went cold while
// Docker worked. The shim can only come near this floor, never under it.
//
//   node dist/bench/grpc-floor.js --serve <unix socket> <Docker's unix socket>
// runs the relay; the bench starts it with startGrpcFloor() and times floorRound() (lifecycle.ts).
//
// The kubelet loop's floor is the same idea for the polled calls: a bare grpc-js server with the
// CRI services that answers each of kubelet's polled RPCs with the answer the shim gave it once
// (kept, as the shim keeps its list answers), so its CPU under the loop is what grpc-js and
// protobuf cost at kubelet's rates, without a cache, a stats read or a Docker request.
//   node dist/bench/grpc-floor.js --serve-kept <unix socket> <the shim's address>
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { criContract } from '../src/cri/contract';
import { criClient, type CriClient } from '../test/support/client';
import { tempDir } from '../test/support/temp';
import { startFloorProcess, stopFloorProcess } from './floor-process';
import { callKubelet, type KubeletCall } from './kubelet-loop';

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
  listen(server, socket);
}

/** Serves on `socket`, says `ready` on stdout once it listens, and ends on SIGTERM. */
function listen(server: grpc.Server, socket: string): void {
  server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => {
    if (err) throw err;
    process.stdout.write('ready\n');
  });
  process.on('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
}

/**
 * The polled RPCs, each asked once of the shim as kubelet asks it unfiltered (the loop's
 * filtered variants get the same answer: at steady state every pod is ready and every container
 * runs, so the lists are the same), by service.
 */
const KEPT: Record<'runtime' | 'images', readonly KubeletCall[]> = {
  runtime: ['ListPodSandbox', 'ListContainers', 'ListContainerStats', 'Status', 'Version'],
  images: ['ListImages', 'ImageFsInfo'],
};

async function serveKept(socket: string, shimAddress: string): Promise<void> {
  const shim = criClient(shimAddress);
  const answers = new Map<string, unknown>();
  for (const call of [...KEPT.runtime, ...KEPT.images]) answers.set(call, await callKubelet(shim, call));
  shim.close();
  const answering = (calls: readonly KubeletCall[]): grpc.UntypedServiceImplementation =>
    Object.fromEntries(calls.map((call) => [call, (_c: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => callback(null, answers.get(call))]));
  const v1 = criContract().runtime.v1;
  const server = new grpc.Server({ 'grpc.enable_channelz': 0 });
  server.addService(v1.RuntimeService.service, answering(KEPT.runtime));
  server.addService(v1.ImageService.service, answering(KEPT.images));
  listen(server, socket);
}

export interface KeptFloor {
  /** A CRI client of the floor (only kubelet's polled RPCs answer). */
  client: CriClient;
  pid: number;
  /** Ends the process and removes its temp dir. */
  stop(): Promise<void>;
}

/** Starts the kept-answers floor on a socket in a temp dir of its own, its answers asked of the shim at `shimAddress` first. */
export async function startKeptFloor(shimAddress: string): Promise<KeptFloor> {
  const dir = tempDir('kept-floor');
  const socket = path.join(dir, 'kept-floor.sock');
  const { child } = await startFloorProcess(__filename, ['--serve-kept', socket, shimAddress], 'the kept-answers grpc-js floor');
  const client = criClient(`unix://${socket}`);
  return {
    client,
    pid: child.pid!,
    stop: async () => {
      client.close();
      await stopFloorProcess(child);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface GrpcFloor {
  /** Relays one request; rejects unless Docker answered 2xx. */
  docker(r: RelayedRequest): Promise<RelayedAnswer>;
  /** Ends the process and removes its temp dir. */
  stop(): Promise<void>;
}

/** Starts the relay in a process of its own, on a socket in a temp dir of its own, for Docker at `dockerSocket`. */
export async function startGrpcFloor(dockerSocket: string): Promise<GrpcFloor> {
  const dir = tempDir('grpc-floor');
  const socket = path.join(dir, 'grpc-floor.sock');
  const { child } = await startFloorProcess(__filename, ['--serve', socket, dockerSocket], 'the grpc-js floor relay');
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
      await stopFloorProcess(child);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

if (require.main === module) {
  const [mode, socket, target] = process.argv.slice(2);
  if (!socket || !target || (mode !== '--serve' && mode !== '--serve-kept')) throw new Error('usage: grpc-floor.js --serve <socket> <docker socket> | --serve-kept <socket> <shim address>');
  if (mode === '--serve') serve(socket, target);
  else
    void serveKept(socket, target).catch((err: Error) => {
      process.stderr.write(`kept-answers floor: ${err.message}\n`);
      process.exit(1);
    });
}
