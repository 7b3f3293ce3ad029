// The floors' grpc-js servers (grpc-floor.ts starts them), in a file of their own so that their
// process loads grpc-js, the CRI contract and nothing of the bench's or the tests' (which would
// count in its RSS and CPU as if grpc-js cost them).
//
//   node dist/bench/grpc-floor-server.js --serve <unix socket> <Docker's unix socket>
// relays the raw side's Docker requests, one unary call each (the lifecycle rows' floor);
//   node dist/bench/grpc-floor-server.js --serve-kept <unix socket> <answers JSON file>
// answers kubelet's polled RPCs with the answers in the file (the kubelet loop's floor). On
// SIGUSR2 it runs one full collection, as the shim's heap trim does (the inspector's
// HeapProfiler.collectGarbage), and says `collected` on stdout: its RSS then is what a bare
// grpc-js server with the CRI services holds at idle.
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { criContract } from '../src/cri/contract';
import { inspectorCollector } from '../src/util/heap-trim';

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
export const FLOOR_SERVICE: grpc.ServiceDefinition = {
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

/** The polled RPCs the kept-answers floor answers, by service (kubelet-loop.ts's KubeletCall names). */
export const KEPT_CALLS = {
  runtime: ['ListPodSandbox', 'ListContainers', 'ListContainerStats', 'Status', 'Version'],
  images: ['ListImages', 'ImageFsInfo'],
} as const;

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

function serveKept(socket: string, answersFile: string): void {
  const answers = JSON.parse(fs.readFileSync(answersFile, 'utf8')) as Record<string, unknown>;
  const answering = (calls: readonly string[]): grpc.UntypedServiceImplementation =>
    Object.fromEntries(calls.map((call) => [call, (_c: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => callback(null, answers[call])]));
  const v1 = criContract().runtime.v1;
  const server = new grpc.Server({ 'grpc.enable_channelz': 0 });
  server.addService(v1.RuntimeService.service, answering(KEPT_CALLS.runtime));
  server.addService(v1.ImageService.service, answering(KEPT_CALLS.images));
  const collect = inspectorCollector();
  process.on('SIGUSR2', () => {
    if (!collect) return void process.stdout.write('no collection: this Node has no inspector\n');
    collect().then(
      () => process.stdout.write('collected\n'),
      (err: Error) => process.stdout.write(`no collection: ${err.message}\n`),
    );
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

if (require.main === module) {
  const [mode, socket, target] = process.argv.slice(2);
  if (!socket || !target || (mode !== '--serve' && mode !== '--serve-kept')) throw new Error('usage: grpc-floor-server.js --serve <socket> <docker socket> | --serve-kept <socket> <answers file>');
  if (mode === '--serve') serve(socket, target);
  else serveKept(socket, target);
}
