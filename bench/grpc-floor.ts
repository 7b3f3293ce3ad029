// The floor under the lifecycle rows: the raw side's Docker requests, each relayed by a bare
// grpc-js server in a process of its own (no CRI translation, no state, no log follower), so a
// row shows what one grpc-js hop in front of Docker costs before any of the shim's own work.
// A short call (RemoveContainer's ~5 ms delete) pays that hop in full: the client's and the
// server's grpc-js, HTTP/2 and protobuf-sized framing, in a process whose caches went cold while
// Docker worked. The shim can only come near this floor, never under it.
//
// The kubelet loop's floor is the same idea for the polled calls: a bare grpc-js server with the
// CRI services that answers each of kubelet's polled RPCs with the answer the shim gave it once
// (kept, as the shim keeps its list answers), so its CPU under the loop is what grpc-js and
// protobuf cost at kubelet's rates, without a cache, a stats read or a Docker request; and its
// RSS after a full collection, what such a server holds at idle.
//
// The servers are grpc-floor-server.ts, each in a process of its own; this file starts them,
// from the bench's process.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { criClient, type CriClient } from '../test/support/client';
import { tempDir } from '../test/support/temp';
import { startFloorProcess, stopFloorProcess } from './floor-process';
import { FLOOR_SERVICE, KEPT_CALLS, type RelayedAnswer, type RelayedRequest } from './grpc-floor-server';
import { callKubelet } from './kubelet-loop';
import { memoryBytes } from './procfs';

export type { RelayedAnswer, RelayedRequest } from './grpc-floor-server';

const SERVER_JS = path.join(__dirname, 'grpc-floor-server.js');

export interface KeptFloor {
  /** A CRI client of the floor (only kubelet's polled RPCs answer). */
  client: CriClient;
  pid: number;
  /** The floor process's RSS after one full collection (asked of it with SIGUSR2). */
  collectedRssBytes(): Promise<number>;
  /** Ends the process and removes its temp dir. */
  stop(): Promise<void>;
}

/**
 * Starts the kept-answers floor on a socket in a temp dir of its own. Its answers are asked of
 * the shim at `shimAddress` first (each polled RPC once, as kubelet asks it unfiltered: at steady
 * state the loop's filtered variants get the same answer) and handed to it in a file.
 */
export async function startKeptFloor(shimAddress: string): Promise<KeptFloor> {
  const dir = tempDir('kept-floor');
  const socket = path.join(dir, 'kept-floor.sock');
  const answersFile = path.join(dir, 'answers.json');
  const shim = criClient(shimAddress);
  try {
    const answers: Record<string, unknown> = {};
    for (const call of [...KEPT_CALLS.runtime, ...KEPT_CALLS.images]) answers[call] = await callKubelet(shim, call);
    fs.writeFileSync(answersFile, JSON.stringify(answers));
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  } finally {
    shim.close();
  }
  const { child } = await startFloorProcess(SERVER_JS, ['--serve-kept', socket, answersFile], 'the kept-answers grpc-js floor');
  const client = criClient(`unix://${socket}`);
  return {
    client,
    pid: child.pid!,
    collectedRssBytes: async () => {
      const said = new Promise<string>((resolve) => child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())));
      child.kill('SIGUSR2');
      const line = await said;
      if (line !== 'collected') throw new Error(`the kept-answers floor did not collect: ${line}`);
      return memoryBytes(child.pid!);
    },
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
  const { child } = await startFloorProcess(SERVER_JS, ['--serve', socket, dockerSocket], 'the grpc-js floor relay');
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
