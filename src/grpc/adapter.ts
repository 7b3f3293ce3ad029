// Turns our promise-returning RPC implementations into grpc-js handlers: one debug log line
// per call with its duration, errors mapped through toGrpcStatus, cancellation surfaced as an
// AbortSignal, and UNIMPLEMENTED (naming the RPC) for every method we have not built.
import * as grpc from '@grpc/grpc-js';
import { checkRequestBounds } from '../cri/bounds';
import type { CallContext, ServerStreamImpl, UnaryImpl } from '../cri/types';
import { CancelledError, DeadlineExceededError, toGrpcStatus, UnimplementedError } from '../errors';
import type { Logger } from '../util/logger';

type AnyUnary = UnaryImpl<unknown, unknown>;
type AnyStream = ServerStreamImpl<unknown, unknown>;

/**
 * A client whose deadline passes cancels the call a moment before our own deadline timer would
 * fire; a cancel this close to the deadline is reported as the deadline passing.
 */
const DEADLINE_SLACK_MS = 250;

/** A call's context, and `finish` to call once the handler has settled. */
function callContext(
  method: string,
  call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>,
): { ctx: CallContext; finish: () => void } {
  const controller = new AbortController();
  const raw = call.getDeadline();
  const deadline = raw instanceof Date ? raw : Number.isFinite(raw) && raw > 0 ? new Date(raw) : undefined;
  const deadlinePassed = (): DeadlineExceededError => new DeadlineExceededError(`${method}: the request's deadline passed`);
  let finished = false;
  let timer: NodeJS.Timeout | undefined;
  // grpc-js may report a cancel for a call we already answered; that one means nothing.
  call.on('cancelled', () => {
    if (finished) return;
    const nearDeadline = deadline !== undefined && Date.now() >= deadline.getTime() - DEADLINE_SLACK_MS;
    controller.abort(nearDeadline ? deadlinePassed() : new CancelledError(`${method}: cancelled by the client`));
  });
  if (deadline) {
    timer = setTimeout(() => controller.abort(deadlinePassed()), Math.max(deadline.getTime() - Date.now(), 0));
    timer.unref();
  }
  const finish = (): void => {
    finished = true;
    if (timer) clearTimeout(timer);
  };
  return { ctx: { method, signal: controller.signal, deadline }, finish };
}

function toServiceError(err: unknown): Partial<grpc.ServiceError> {
  const { code, details } = toGrpcStatus(err);
  return { code, details, message: details };
}

export interface InFlightTracker {
  begin(): () => void;
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
): grpc.UntypedServiceImplementation {
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(definition)) {
    const fullName = `${serviceName}/${name}`;
    const fn = impl[name];
    if (method.responseStream) {
      handlers[name] = streamHandler(fullName, typeof fn === 'function' ? (fn as AnyStream) : undefined, log, inFlight);
    } else {
      handlers[name] = unaryHandler(fullName, typeof fn === 'function' ? (fn as AnyUnary) : undefined, log, inFlight);
    }
  }
  return handlers;
}

/** The request, once its fields are within their size bounds (see ../cri/bounds.ts). */
function checkedRequest(request: unknown): Promise<unknown> {
  try {
    checkRequestBounds(request);
    return Promise.resolve(request);
  } catch (err) {
    return Promise.reject(err);
  }
}

function notBuilt(fullName: string): UnimplementedError {
  return new UnimplementedError(`${fullName} is not implemented by cri-docker-shim`);
}

function unaryHandler(
  fullName: string,
  fn: AnyUnary | undefined,
  log: Logger,
  inFlight: InFlightTracker,
): grpc.handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    const started = process.hrtime.bigint();
    const done = inFlight.begin();
    const { ctx, finish } = callContext(fullName, call);
    const run = fn ? checkedRequest(call.request).then((req) => fn(req, ctx)) : Promise.reject(notBuilt(fullName));
    run.finally(finish).then(
      (res) => {
        logCall(log, fullName, started, undefined);
        done();
        callback(null, res);
      },
      (err: unknown) => {
        logCall(log, fullName, started, err);
        done();
        callback(toServiceError(err));
      },
    );
  };
}

function streamHandler(
  fullName: string,
  fn: AnyStream | undefined,
  log: Logger,
  inFlight: InFlightTracker,
): grpc.handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    const started = process.hrtime.bigint();
    const done = inFlight.begin();
    const { ctx, finish } = callContext(fullName, call);
    const send = Object.assign((res: unknown): boolean => !call.cancelled && call.write(res), {
      drained: (): Promise<void> => waitForDrain(call, ctx.signal),
    });
    const run = fn ? checkedRequest(call.request).then((req) => fn(req, send, ctx)) : Promise.reject(notBuilt(fullName));
    run.finally(finish).then(
      () => {
        logCall(log, fullName, started, undefined);
        done();
        call.end();
      },
      (err: unknown) => {
        logCall(log, fullName, started, err);
        done();
        // grpc-js turns an 'error' on a server stream into the call's status, sent after the
        // messages already written; destroy() would drop the status and leave the client waiting.
        call.emit('error', Object.assign(new Error(toGrpcStatus(err).details), toServiceError(err)));
      },
    );
  };
}

/** Settles when the call's write buffer has emptied, or the call ended or was cancelled. */
function waitForDrain(call: grpc.ServerWritableStream<unknown, unknown>, signal: AbortSignal): Promise<void> {
  if (!call.writableNeedDrain || call.cancelled || signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      call.off('drain', done);
      call.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    call.once('drain', done);
    call.once('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

function logCall(log: Logger, method: string, started: bigint, err: unknown): void {
  const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
  if (err === undefined) {
    log.debug({ rpc: method, durationMs }, 'rpc ok');
  } else {
    const { code, details } = toGrpcStatus(err);
    log.debug({ rpc: method, durationMs, code: grpc.status[code], error: details }, 'rpc failed');
  }
}
