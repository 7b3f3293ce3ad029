// The CRI gRPC server: binds the endpoint (a unix socket, mode 0660, replacing a stale one
// left by a crashed run; tcp; or a socket systemd passed us), serves both CRI services, and
// stops gracefully.
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { ListenEndpoint } from '../config/endpoint';
import { activatedSocketFd, forgetActivationEnv } from '../config/socket-activation';
import { criContract } from '../cri/contract';
import type { ImageServiceImpl, RuntimeServiceImpl } from '../cri/types';
import type { Logger } from '../util/logger';
import { buildServiceHandlers, NO_RPC_RECORDER, type RpcRecorder } from './adapter';
import { holdUntilReady, type StartupGate } from './startup-gate';

class EndpointInUseError extends Error {}

/**
 * The calls whose answers the recorder is told have been written out (RpcRecorder.answerWritten):
 * ExecSync's, up to 16 MiB each and made afresh for each call. Such an answer is live until
 * grpc-js has written it (its copy into the frame too), which for 20 of them at once came up to
 * 8 s after the last handler returned: a collection of the heap in that time (../util/heap-trim.ts)
 * kept up to 180 MiB of them, garbage from then on, that nothing collected (issue 42).
 */
const WATCHED_ANSWERS: ReadonlySet<string> = new Set(['/runtime.v1.RuntimeService/ExecSync']);

/**
 * grpc-js sends a unary call's status once its message's write has completed: the status going
 * out says that the answer has been written. Every other call is passed on as it is, so it
 * costs no intercepting call of its own.
 */
function answerWrittenInterceptor(written: (rpc: string) => void): grpc.ServerInterceptor {
  return (method, call) => {
    // grpc-js's type names its class, but it only chains the call it is handed on (getServerInterceptingCall).
    if (!WATCHED_ANSWERS.has(method.path)) return call as grpc.ServerInterceptingCall;
    const rpc = method.path.slice(method.path.lastIndexOf('/') + 1);
    const responder = new grpc.ResponderBuilder()
      .withSendStatus((status, next) => {
        next(status);
        written(rpc);
      })
      .build();
    return new grpc.ServerInterceptingCall(call, responder);
  };
}

const SOCKET_MODE = 0o660;
/** kubelet sends pulls and big lists; match its own 16 MiB message limit. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export class CriServer {
  private readonly server: grpc.Server;
  private inFlight = 0;
  private drained: (() => void) | undefined;
  private boundSocket: string | undefined;
  /** The listener on a socket systemd passed us (grpc-js cannot bind a descriptor itself). */
  private activated: net.Server | undefined;
  boundAddress = '';

  /**
   * With a gate, calls outside `gate.open` wait for `gate.ready` (see startup-gate.ts). The
   * recorder hears of every call (metrics).
   */
  constructor(
    runtime: RuntimeServiceImpl,
    images: ImageServiceImpl,
    private readonly log: Logger,
    gate?: StartupGate,
    recorder: RpcRecorder = NO_RPC_RECORDER,
  ) {
    if (gate) {
      runtime = holdUntilReady(runtime, gate);
      images = holdUntilReady(images, gate);
    }
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      // Channelz keeps per-call statistics nobody reads here; off, a call costs less.
      'grpc.enable_channelz': 0,
      interceptors: recorder.answerWritten ? [answerWrittenInterceptor(recorder.answerWritten.bind(recorder))] : [],
    });
    const contract = criContract().runtime.v1;
    const tracker = { begin: () => this.begin() };
    this.server.addService(
      contract.RuntimeService.service,
      buildServiceHandlers('runtime.v1.RuntimeService', contract.RuntimeService.service, runtime as Record<string, unknown>, log, tracker, recorder),
    );
    this.server.addService(
      contract.ImageService.service,
      buildServiceHandlers('runtime.v1.ImageService', contract.ImageService.service, images as Record<string, unknown>, log, tracker, recorder),
    );
  }

  private begin(): () => void {
    this.inFlight++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.inFlight--;
      if (this.inFlight === 0) this.drained?.();
    };
  }

  async listen(endpoint: ListenEndpoint): Promise<void> {
    if (endpoint.kind === 'fd') {
      await this.serveActivatedSocket(activatedSocketFd(process.env, process.pid, endpoint.name));
      forgetActivationEnv(process.env);
      this.boundAddress = endpoint.url;
    } else if (endpoint.kind === 'unix') {
      await prepareSocketPath(endpoint.path, this.log);
      // Create the socket already restricted, so there is no moment it is world-writable.
      const previous = process.umask(0o117);
      try {
        await this.bind(`unix://${endpoint.path}`);
      } finally {
        process.umask(previous);
      }
      fs.chmodSync(endpoint.path, SOCKET_MODE);
      this.boundSocket = endpoint.path;
      this.boundAddress = endpoint.url;
    } else {
      const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host;
      const port = await this.bind(`${host}:${endpoint.port}`);
      this.boundAddress = `tcp://${host}:${port}`;
    }
    this.log.info({ endpoint: this.boundAddress }, 'CRI server listening');
  }

  /**
   * Accepts on the descriptor and hands each connection to grpc-js. The socket file, its mode
   * and its owner are the .socket unit's business; we never remove it.
   */
  private serveActivatedSocket(fd: number): Promise<void> {
    const injector = this.server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    const listener = net.createServer((connection) => injector.injectConnection(connection));
    this.activated = listener;
    return new Promise((resolve, reject) => {
      listener.once('error', (err) => reject(new EndpointInUseError(`cannot serve on passed socket fd ${fd}: ${err.message}`)));
      listener.listen({ fd }, () => resolve());
    });
  }

  private bind(address: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, port) =>
        err ? reject(new EndpointInUseError(`cannot listen on ${address}: ${err.message}`)) : resolve(port),
      );
    });
  }

  /**
   * Stops accepting calls, lets in-flight ones finish for up to graceMs, then cuts the rest
   * off. The socket file is removed either way.
   */
  async stop(graceMs: number): Promise<void> {
    const waitForCalls = new Promise<'drained' | 'timeout'>((resolve) => {
      if (this.inFlight === 0) return resolve('drained');
      this.drained = () => resolve('drained');
      setTimeout(() => resolve('timeout'), graceMs).unref();
    });
    // Stop accepting first; connections already queued on a passed socket wait for the next shim.
    this.activated?.close();
    this.activated = undefined;
    const shutdown = new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
    const outcome = await waitForCalls;
    if (outcome === 'timeout') {
      this.log.warn({ inFlight: this.inFlight, graceMs }, 'in-flight calls did not finish in time; cutting them off');
      this.server.forceShutdown();
    }
    await Promise.race([shutdown, new Promise((r) => setTimeout(r, 1000).unref())]);
    this.server.forceShutdown();
    if (this.boundSocket) {
      fs.rmSync(this.boundSocket, { force: true });
      this.boundSocket = undefined;
    }
  }
}

/**
 * Makes sure a socket can be created at `socketPath`: the directory exists; an old socket
 * nobody answers on (a crashed run) is removed; a live one, or a non-socket file, is an error.
 */
async function prepareSocketPath(socketPath: string, log: Logger): Promise<void> {
  fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o750 });
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(socketPath);
  } catch {
    return;
  }
  if (!stat.isSocket()) {
    throw new EndpointInUseError(`${socketPath} exists and is not a socket; refusing to replace it`);
  }
  if (await socketAnswers(socketPath)) {
    throw new EndpointInUseError(`${socketPath} is in use by a running server`);
  }
  log.warn({ socket: socketPath }, 'removing stale socket left by an earlier run');
  fs.rmSync(socketPath, { force: true });
}

function socketAnswers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const conn = net.connect(socketPath);
    const finish = (answer: boolean): void => {
      conn.destroy();
      resolve(answer);
    };
    conn.once('connect', () => finish(true));
    conn.once('error', () => finish(false));
    conn.setTimeout(1000, () => finish(false));
  });
}
