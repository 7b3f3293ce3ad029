// Turns our promise-returning RPC implementations into grpc-js handlers: one debug log line
// per call with its duration, the call told to the RpcRecorder (every call passes here, so this
// is the one place RPCs are timed for metrics), errors mapped through toGrpcStatus,
// cancellation surfaced as an AbortSignal, and UNIMPLEMENTED (naming the RPC) for every method
// we have not built.
import * as grpc from '@grpc/grpc-js';
import { checkRequestBounds } from '../cri/bounds';
import type { CallContext, ServerStreamImpl, UnaryImpl } from '../cri/types';
import { CancelledError, DeadlineExceededError, type GrpcStatus, toGrpcStatus, UnimplementedError } from '../errors';
import type { Logger } from '../util/logger';
import { whenRoomIn } from '../util/stream-room';

type AnyUnary = UnaryImpl<unknown, unknown>;
type AnyStream = ServerStreamImpl<unknown, unknown>;

/**
 * A client whose deadline passes cancels the call a moment before our own deadline timer would
 * fire; a cancel this close to the deadline is reported as the deadline passing.
 */
const DEADLINE_SLACK_MS = 250;

type ServerCall = grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>;

/** The client's deadline in ms since the epoch; grpc-js says Infinity (or nothing usable) for none. */
function deadlineMs(call: ServerCall): number | undefined {
  const raw = call.getDeadline();
  const ms = raw instanceof Date ? raw.getTime() : raw;
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

/**
 * A call's context. Its AbortSignal, and what feeds it (a `cancelled` listener, a deadline
 * timer), are made when the handler first reads `signal`: Version and the cached reads never
 * do. Measured on a grpc-js server answering Version, 20k calls from a client process: our
 * layer cost ~25 us of server CPU per call with them made up front, ~6 with them lazy (grpc-js
 * alone ~74). A cancel or deadline that came before the first read is seen then
 * (`call.cancelled`, the clock), so the signal says the same as if it had been watching from
 * the start.
 */
class LazyCallContext implements CallContext {
  private controller: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private finished = false;
  private readonly deadlineAt: number | undefined;

  constructor(
    readonly method: string,
    private readonly call: ServerCall,
  ) {
    this.deadlineAt = deadlineMs(call);
  }

  get deadline(): Date | undefined {
    return this.deadlineAt === undefined ? undefined : new Date(this.deadlineAt);
  }

  get signal(): AbortSignal {
    this.controller ??= this.watch();
    return this.controller.signal;
  }

  /** Why the call is over before its handler starts, if it is: then no handler should start. */
  givenUp(): Error | undefined {
    if (this.controller) return this.controller.signal.aborted ? (this.controller.signal.reason as Error) : undefined;
    if (this.call.cancelled) return this.cancelReason();
    // Already past (the call waited in a queue behind others).
    if (this.deadlineAt !== undefined && this.deadlineAt <= Date.now()) return this.deadlinePassed();
    return undefined;
  }

  /** The handler has settled: a cancel or deadline after this means nothing. */
  finish(): void {
    this.finished = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private watch(): AbortController {
    const controller = new AbortController();
    // A signal first read once the call was answered (a handler's background work) never aborts.
    if (this.finished) return controller;
    const early = this.givenUp();
    if (early) {
      controller.abort(early);
      return controller;
    }
    // grpc-js may report a cancel for a call we already answered; that one means nothing.
    this.call.on('cancelled', () => {
      if (!this.finished) controller.abort(this.cancelReason());
    });
    if (this.deadlineAt !== undefined) {
      this.timer = setTimeout(() => controller.abort(this.deadlinePassed()), this.deadlineAt - Date.now());
      this.timer.unref();
    }
    return controller;
  }

  private cancelReason(): Error {
    const nearDeadline = this.deadlineAt !== undefined && Date.now() >= this.deadlineAt - DEADLINE_SLACK_MS;
    return nearDeadline ? this.deadlinePassed() : new CancelledError(`${this.method}: cancelled by the client`);
  }

  private deadlinePassed(): DeadlineExceededError {
    return new DeadlineExceededError(`${this.method}: the request's deadline passed`);
  }
}

function toServiceError({ code, details }: GrpcStatus): Partial<grpc.ServiceError> {
  return { code, details, message: details };
}

interface InFlightTracker {
  begin(): () => void;
}

/** Told of every finished call: the RPC's name (e.g. `RunPodSandbox`), its status code, its time. */
export interface RpcRecorder {
  observe(rpc: string, code: grpc.status, seconds: number): void;
  /**
   * Told once the answer of a call whose answers are watched (../grpc/grpc-server.ts:
   * ExecSync's) has been written out, which is later than `observe`: that is told when the
   * handler settled, before grpc-js has written anything.
   */
  answerWritten?(rpc: string): void;
}

export const NO_RPC_RECORDER: RpcRecorder = { observe: () => undefined };

/** What every handler needs besides the call: where to log, in-flight counting, the recorder. */
interface CallSinks {
  log: Logger;
  inFlight: InFlightTracker;
  recorder: RpcRecorder;
}

/**
 * Builds the grpc-js implementation of one service from a definition (which lists every RPC
 * of the contract) and our implementation (which may lack some).
 */
export function buildServiceHandlers(
  serviceName: string,
  definition: grpc.ServiceDefinition,
  impl: Record<string, unknown>,
  log: Logger,
  inFlight: InFlightTracker,
  recorder: RpcRecorder = NO_RPC_RECORDER,
): grpc.UntypedServiceImplementation {
  const handlers: grpc.UntypedServiceImplementation = {};
  const sinks: CallSinks = { log, inFlight, recorder };
  for (const [name, method] of Object.entries(definition)) {
    const rpc = { name, fullName: `${serviceName}/${name}` };
    const fn = impl[name];
    if (method.responseStream) {
      handlers[name] = streamHandler(rpc, typeof fn === 'function' ? (fn as AnyStream) : undefined, sinks);
    } else {
      handlers[name] = unaryHandler(rpc, typeof fn === 'function' ? (fn as AnyUnary) : undefined, sinks);
    }
  }
  return handlers;
}

/**
 * The handler's promise, started once the request's fields are within their size bounds (see
 * ../cri/bounds.ts) and its caller is still waiting: a call given up before its handler starts
 * does no work at all. An unbuilt RPC fails with UNIMPLEMENTED.
 */
function started<T>(rpc: RpcName, request: unknown, ctx: LazyCallContext, fn: ((req: unknown) => Promise<T>) | undefined): Promise<T> {
  try {
    if (!fn) throw notBuilt(rpc.fullName);
    const givenUp = ctx.givenUp();
    if (givenUp) throw givenUp;
    checkRequestBounds(request);
    return fn(request);
  } catch (err) {
    return Promise.reject(err);
  }
}

function notBuilt(fullName: string): UnimplementedError {
  return new UnimplementedError(`${fullName} is not implemented by cri-docker-shim`);
}

/** An RPC's bare name (the metrics label) and its full name (logs and messages). */
interface RpcName {
  name: string;
  fullName: string;
}

function unaryHandler(rpc: RpcName, fn: AnyUnary | undefined, sinks: CallSinks): grpc.handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    const startedAt = process.hrtime.bigint();
    const done = sinks.inFlight.begin();
    const ctx = new LazyCallContext(rpc.fullName, call);
    started(rpc, call.request, ctx, fn && ((req) => fn(req, ctx))).then(
      (res) => {
        ctx.finish();
        callEnded(sinks, rpc, startedAt, undefined);
        done();
        callback(null, res);
      },
      (err: unknown) => {
        ctx.finish();
        const status = callEnded(sinks, rpc, startedAt, err);
        done();
        callback(toServiceError(status));
      },
    );
  };
}

function streamHandler(rpc: RpcName, fn: AnyStream | undefined, sinks: CallSinks): grpc.handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    const startedAt = process.hrtime.bigint();
    const done = sinks.inFlight.begin();
    const ctx = new LazyCallContext(rpc.fullName, call);
    const send = Object.assign((res: unknown): boolean => !call.cancelled && call.write(res), {
      drained: (): Promise<void> => waitForDrain(call, ctx.signal),
    });
    started(rpc, call.request, ctx, fn && ((req) => fn(req, send, ctx))).then(
      () => {
        ctx.finish();
        callEnded(sinks, rpc, startedAt, undefined);
        done();
        call.end();
      },
      (err: unknown) => {
        ctx.finish();
        const status = callEnded(sinks, rpc, startedAt, err);
        done();
        // grpc-js turns an 'error' on a server stream into the call's status, sent after the
        // messages already written; destroy() would drop the status and leave the client waiting.
        call.emit('error', Object.assign(new Error(status.details), toServiceError(status)));
      },
    );
  };
}

/** Settles when the call's write buffer has emptied, or the call ended or was cancelled. */
function waitForDrain(call: grpc.ServerWritableStream<unknown, unknown>, signal: AbortSignal): Promise<void> {
  if (!call.writableNeedDrain || call.cancelled || signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => whenRoomIn(call, resolve, signal));
}

/**
 * Logs the finished call (its fields built only when debug is on) and tells the recorder; for
 * a failed call, returns its status.
 */
function callEnded({ log, recorder }: CallSinks, rpc: RpcName, startedAt: bigint, err: undefined): undefined;
function callEnded({ log, recorder }: CallSinks, rpc: RpcName, startedAt: bigint, err: unknown): GrpcStatus;
function callEnded({ log, recorder }: CallSinks, rpc: RpcName, startedAt: bigint, err: unknown): GrpcStatus | undefined {
  const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
  if (err === undefined) {
    recorder.observe(rpc.name, grpc.status.OK, seconds);
    if (log.isLevelEnabled('debug')) log.debug({ rpc: rpc.fullName, durationMs: seconds * 1e3 }, 'rpc ok');
    return undefined;
  }
  const status = toGrpcStatus(err);
  recorder.observe(rpc.name, status.code, seconds);
  if (log.isLevelEnabled('debug')) {
    log.debug({ rpc: rpc.fullName, durationMs: seconds * 1e3, code: grpc.status[status.code], error: status.details }, 'rpc failed');
  }
  return status;
}
