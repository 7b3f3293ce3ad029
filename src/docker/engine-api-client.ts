// The DockerClient over Docker's Engine API: every short request gets the same deadline
// (--runtime-request-timeout), the caller's cancellation is honoured, and every failure becomes
// one of the typed errors in ../errors. Every connection comes from one bounded pool
// (./socket-pool.ts). Short calls go on node:http (./json-request.ts), exec and attach on a
// connection of their own (./hijack.ts), and the streams (logs, events, pulls, imports) through
// docker-modem (dockerode's transport; dockerode itself gives only types, ./types.ts).
import type { Duplex, Readable } from 'node:stream';
// docker-modem is dockerode's own transport; requiring dockerode itself would also load its
// BuildKit session code (grpc-js, proto-loader, protobufjs) and tar helpers at start-up, which
// the shim never uses (about 120 ms of its start-up, measured).
import DockerModem from 'docker-modem';
import type { Endpoint } from '../config/endpoint';
import { readOpenFilesLimit } from '../kernel/open-files-limit';
import {
  CancelledError,
  DockerAuthError,
  DockerBadRequestError,
  DockerConflictError,
  DockerNotFoundError,
  DockerNotModifiedError,
  DockerServerError,
  DockerTimeoutError,
  DockerUnreachableError,
  ShimError,
  UnavailableError,
} from '../errors';
import type {
  ContainerCreateSpec,
  ContainerInspect,
  ContainerSummary,
  ContainerUpdateSpec,
  DockerEvent,
  DockerFilters,
  DockerInfo,
  DockerVersion,
  ExecCreateSpec,
  ExecInspect,
  ImageDeleteItem,
  ImageInspect,
  ImageSummary,
  PullProgress,
  RegistryAuth,
  SystemDataUsage,
} from './types';
import type { CallOptions, DockerClient, EventsOptions, EventsQuery, ImageImportQuery, LogsOptions, SessionOptions } from './client';
import { DockerSocketPool, dockerSocketCaps, type SocketUse } from './socket-pool';
import { hijackRequest, openHijack } from './hijack';
import { pathWithQuery, requestTarget, sendJsonRequest, type RequestTarget } from './json-request';
import { RequestDeadline } from '../util/request-deadline';
import { timerDelayMs } from '../util/timer-delay';

interface DialOptions {
  path: string;
  method: 'GET' | 'POST' | 'DELETE';
  query?: object;
  body?: unknown;
  statusCodes: Record<number, true | string>;
  /** Streams are not bound by the request timeout: only by the caller's signal. Only they go through the modem. */
  stream?: boolean;
  /** A short call's answer is not read (ping's "OK", the empty 204s): it resolves undefined. */
  answer?: 'none';
  /** Added to the request timeout, for calls that wait on purpose (stop's grace period). */
  extraTimeoutMs?: number;
  hijack?: boolean;
  /** A hijack for a user's streaming session: from the streams' budget. */
  userStream?: boolean;
  /** Waits for a connection ahead of the other calls (the liveness ping). */
  ahead?: boolean;
  /** A stream's registry credential. */
  auth?: RegistryAuth;
  /** A stream's request body sent as is (application/tar), instead of `body`'s JSON. */
  file?: Buffer;
  what: string;
}

/** What a request fails with: docker-modem's errors, and ./hijack.ts's and ./json-request.ts's made in their shape (or node:http's, with a code). */
interface ModemError extends Error {
  statusCode?: number;
  reason?: string;
  json?: { message?: string } | null;
  code?: string;
}

interface Modem {
  dial(options: Record<string, unknown>, cb: (err: ModemError | null, data: unknown) => void): void;
}

/** The endpoints are unix sockets and plain tcp (config/endpoint.ts): http agents serve both. */
function modemOptions(endpoint: Endpoint, agent: DockerModem.ConstructorOptions['agent']): DockerModem.ConstructorOptions {
  if (endpoint.kind === 'unix') return { socketPath: endpoint.path, agent };
  return { host: endpoint.host, port: endpoint.port, protocol: 'http', agent };
}

/** Which part of the pool a request's connection comes from: sessions and streams hold theirs as long as they like. */
function socketUseOf(o: DialOptions): SocketUse {
  if (o.hijack === true && o.userStream === true) return 'stream';
  return o.stream === true || o.hijack === true || (o.extraTimeoutMs ?? 0) > 0 ? 'session' : 'call';
}

/**
 * A read that failed before any answer because its connection was reset: on a kept connection
 * this is the server having closed it as the request went out (a restarted dockerd, a proxy's
 * idle timeout), and the read is asked again once, on another. Reads only: a POST may have been
 * carried out before the reset.
 */
function isResetRead(err: ModemError, o: DialOptions): boolean {
  return o.method === 'GET' && o.stream !== true && err.statusCode === undefined && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
}

/** The daemon's own words from an error answer, without docker-modem's "(HTTP code …)" wrapping. */
function daemonMessage(err: ModemError): string {
  const fromJson = err.json && typeof err.json === 'object' ? err.json.message : undefined;
  if (fromJson) return fromJson.trim();
  const m = /^\(HTTP code \d+\) [^-]*- (.*)$/s.exec(err.message);
  return (m ? m[1]! : err.message).trim();
}

/**
 * Daemon words for "it is not there" that come with a status other than 404. Docker 20.10
 * answers a removal that lost a race with another removal of the same image 500 "unrecognized
 * image ID sha256:…" (later versions answer the same words with 404); "No such …" is Docker's
 * own 404 wording, matched too so that no status code it may come with hides it.
 */
const GONE_ANSWERS: readonly RegExp[] = [/^unrecognized image\b/, /^No such (image|container)\b/i];

/** Whether an error answer means the object is gone, whatever status it came with. */
function isGoneAnswer(statusCode: number, daemonWords: string): boolean {
  return statusCode === 404 || GONE_ANSWERS.some((re) => re.test(daemonWords));
}

/** Image lists asked in all when Docker answers one not found (listImages). */
export const IMAGE_LIST_ATTEMPTS = 3;

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ETIMEDOUT', 'ENOTFOUND']);

export class EngineApiClient implements DockerClient {
  readonly endpoint: string;
  /** The streams' transport, on the sessions' part of the pool. */
  private readonly modem: Modem;
  private readonly target: RequestTarget;

  /** `sockets`: the pool (by default one sized from this process's descriptor limit). */
  constructor(
    private readonly endpointAddress: Endpoint,
    private readonly requestTimeoutMs: number,
    readonly sockets: DockerSocketPool = new DockerSocketPool(dockerSocketCaps(readOpenFilesLimit().soft)),
  ) {
    this.endpoint = endpointAddress.url;
    this.modem = new DockerModem(modemOptions(endpointAddress, sockets.agentFor('session'))) as unknown as Modem;
    this.target = requestTarget(endpointAddress);
  }

  /** Closes the pool's kept connections (shutdown). */
  close(): void {
    this.sockets.close();
  }

  /** Classifies anything a request throws into our typed errors; `timedOut`: its deadline passed. */
  private classify(err: unknown, what: string, timedOut: boolean, caller: AbortSignal | undefined): Error {
    if (err instanceof ShimError) return err;
    if (caller?.aborted) {
      const reason: unknown = caller.reason;
      if (reason instanceof ShimError) return reason;
      return new CancelledError(`${what}: cancelled`, { cause: err });
    }
    if (timedOut) {
      return new DockerTimeoutError(
        `Docker did not answer ${what} within ${this.requestTimeoutMs / 1000}s (--runtime-request-timeout)`,
        { cause: err },
      );
    }
    const e = err as ModemError;
    if (e && typeof e.statusCode === 'number') {
      const msg = daemonMessage(e);
      if (isGoneAnswer(e.statusCode, msg)) return new DockerNotFoundError(msg, { cause: err });
      switch (e.statusCode) {
        case 409:
          return new DockerConflictError(msg, { cause: err });
        case 304:
          return new DockerNotModifiedError(`${what}: not modified`, { cause: err });
        case 400:
          return new DockerBadRequestError(msg, { cause: err });
        case 401:
        case 403:
          return new DockerAuthError(msg, { cause: err });
        default:
          return new DockerServerError(`${what}: Docker answered ${e.statusCode}: ${msg}`, e.statusCode, { cause: err });
      }
    }
    if (e && typeof e.code === 'string' && UNREACHABLE_CODES.has(e.code)) {
      return new DockerUnreachableError(`cannot reach Docker at ${this.endpoint}: ${e.code} (${e.message})`, { cause: err });
    }
    if (e && (e.name === 'AbortError' || e.code === 'ABORT_ERR')) {
      return new DockerUnreachableError(`${what}: connection to Docker at ${this.endpoint} was closed`, { cause: err });
    }
    return new DockerServerError(`${what}: ${e?.message ?? String(err)}`, 0, { cause: err });
  }

  private async dial<T>(o: DialOptions, opts: CallOptions | undefined): Promise<T> {
    const caller = opts?.signal;
    if (caller?.aborted) throw this.classify(caller.reason, o.what, false, caller);
    // The deadline runs while the call waits for a connection too.
    const deadline = new RequestDeadline(o.stream ? undefined : timerDelayMs(this.requestTimeoutMs + (o.extraTimeoutMs ?? 0)), caller);
    const signal = deadline.signal;
    const use = socketUseOf(o);
    let release: () => void;
    try {
      release = await this.sockets.take(use, signal, o.ahead === true);
    } catch (err) {
      deadline.end();
      throw this.classify(err, o.what, deadline.timedOut, caller);
    }
    let data: T;
    try {
      try {
        data = await this.dialOnce<T>(use, o, signal);
      } catch (err) {
        if (!isResetRead(err as ModemError, o) || signal?.aborted) throw err;
        data = await this.dialOnce<T>(use, o, signal);
      }
    } catch (err) {
      release();
      deadline.end();
      throw this.classify(err, o.what, deadline.timedOut, caller);
    }
    deadline.end();
    if (o.stream === true) this.sockets.releaseWhenClosed(data as object, release);
    else release();
    return data;
  }

  private dialOnce<T>(use: SocketUse, o: DialOptions, signal: AbortSignal | undefined): Promise<T> {
    // Exec and attach on a connection of our own, whose reads are lent (./hijack.ts).
    if (o.hijack === true) return openHijack(this.endpointAddress, hijackRequest(pathWithQuery(o.path, o.query), o.body), o.statusCodes, signal) as Promise<T>;
    if (o.stream !== true) {
      const request = { method: o.method, path: pathWithQuery(o.path, o.query), body: o.body, statusCodes: o.statusCodes, answer: o.answer ?? 'json' } as const;
      return sendJsonRequest(this.target, this.sockets.agentFor(use), request, signal) as Promise<T>;
    }
    const hasQuery = o.query !== undefined;
    const options: Record<string, unknown> = {};
    if (o.query) options._query = o.query;
    if (o.body !== undefined) options._body = o.body;
    return new Promise<T>((resolve, reject) => {
      this.modem.dial(
        {
          path: hasQuery ? `${o.path}?` : o.path,
          method: o.method,
          options,
          statusCodes: o.statusCodes,
          isStream: true,
          abortSignal: signal,
          authconfig: o.auth,
          file: o.file,
        },
        (err, data) => (err ? reject(err) : resolve(data as T)),
      );
    });
  }

  async ping(opts?: CallOptions): Promise<void> {
    await this.dial<unknown>({ path: '/_ping', method: 'GET', statusCodes: { 200: true, 500: 'server error' }, answer: 'none', ahead: true, what: 'ping' }, opts);
  }

  version(opts?: CallOptions): Promise<DockerVersion> {
    return this.dial({ path: '/version', method: 'GET', statusCodes: { 200: true, 500: 'server error' }, what: 'version' }, opts);
  }

  info(opts?: CallOptions): Promise<DockerInfo> {
    return this.dial({ path: '/info', method: 'GET', statusCodes: { 200: true, 500: 'server error' }, what: 'info' }, opts);
  }

  listContainers(
    query: { all: boolean; filters?: DockerFilters; size?: boolean },
    opts?: CallOptions,
  ): Promise<ContainerSummary[]> {
    return this.dial(
      {
        path: '/containers/json',
        method: 'GET',
        query: { all: query.all, size: query.size === true, filters: JSON.stringify(query.filters ?? {}) },
        statusCodes: { 200: true, 400: 'bad parameter', 500: 'server error' },
        what: 'list containers',
      },
      opts,
    );
  }

  inspectContainer(id: string, opts?: CallOptions): Promise<ContainerInspect> {
    return this.dial(
      {
        path: `/containers/${encodeURIComponent(id)}/json`,
        method: 'GET',
        statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
        what: `inspect container ${id}`,
      },
      opts,
    );
  }

  async createContainer(spec: ContainerCreateSpec, opts?: CallOptions): Promise<string> {
    const { name, ...body } = spec;
    const res = await this.dial<{ Id: string }>(
      {
        path: '/containers/create',
        method: 'POST',
        query: name ? { name } : {},
        body,
        statusCodes: { 201: true, 400: 'bad parameter', 404: 'no such image', 409: 'conflict', 500: 'server error' },
        what: `create container ${name ?? ''}`.trim(),
      },
      opts,
    );
    return res.Id;
  }

  async startContainer(id: string, opts?: CallOptions): Promise<void> {
    await this.dial(
      {
        path: `/containers/${encodeURIComponent(id)}/start`,
        method: 'POST',
        statusCodes: { 204: true, 304: 'container already started', 404: 'no such container', 500: 'server error' },
        answer: 'none',
        what: `start container ${id}`,
      },
      opts,
    );
  }

  async stopContainer(id: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    const grace = Math.max(0, Math.floor(timeoutSeconds));
    try {
      await this.dial(
        {
          path: `/containers/${encodeURIComponent(id)}/stop`,
          method: 'POST',
          query: { t: grace },
          statusCodes: { 204: true, 304: 'container already stopped', 404: 'no such container', 500: 'server error' },
          extraTimeoutMs: grace * 1000,
          answer: 'none',
          what: `stop container ${id}`,
        },
        opts,
      );
    } catch (err) {
      if (err instanceof DockerNotModifiedError) return;
      throw err;
    }
  }

  async killContainer(id: string, signal: string, opts?: CallOptions): Promise<void> {
    await this.dial(
      {
        path: `/containers/${encodeURIComponent(id)}/kill`,
        method: 'POST',
        query: { signal },
        statusCodes: { 204: true, 404: 'no such container', 409: 'container is not running', 500: 'server error' },
        answer: 'none',
        what: `kill container ${id}`,
      },
      opts,
    );
  }

  async removeContainer(id: string, query: { force: boolean; removeVolumes: boolean }, opts?: CallOptions): Promise<void> {
    await this.dial(
      {
        path: `/containers/${encodeURIComponent(id)}`,
        method: 'DELETE',
        query: { force: query.force, v: query.removeVolumes },
        statusCodes: { 204: true, 400: 'bad parameter', 404: 'no such container', 409: 'conflict', 500: 'server error' },
        answer: 'none',
        what: `remove container ${id}`,
      },
      opts,
    );
  }

  async updateContainer(id: string, spec: ContainerUpdateSpec, opts?: CallOptions): Promise<void> {
    await this.dial(
      {
        path: `/containers/${encodeURIComponent(id)}/update`,
        method: 'POST',
        body: spec,
        statusCodes: { 200: true, 400: 'bad parameter', 404: 'no such container', 500: 'server error' },
        answer: 'none',
        what: `update container ${id}`,
      },
      opts,
    );
  }

  containerLogs(id: string, query: LogsOptions): Promise<Readable> {
    return this.dial(
      {
        path: `/containers/${encodeURIComponent(id)}/logs`,
        method: 'GET',
        query: {
          follow: query.follow,
          stdout: query.stdout,
          stderr: query.stderr,
          since: query.since ?? 0,
          timestamps: query.timestamps === true,
          tail: query.tail ?? 'all',
        },
        statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
        stream: true,
        what: `logs of container ${id}`,
      },
      { signal: query.signal },
    );
  }

  async createExec(containerId: string, spec: ExecCreateSpec, opts?: CallOptions): Promise<string> {
    const res = await this.dial<{ Id: string }>(
      {
        path: `/containers/${encodeURIComponent(containerId)}/exec`,
        method: 'POST',
        body: spec,
        statusCodes: { 201: true, 404: 'no such container', 409: 'container is paused or not running', 500: 'server error' },
        what: `exec in container ${containerId}`,
      },
      opts,
    );
    return res.Id;
  }

  startExec(execId: string, query: { tty: boolean; stdin: boolean }, opts?: SessionOptions): Promise<Duplex> {
    return this.dial(
      {
        path: `/exec/${encodeURIComponent(execId)}/start`,
        method: 'POST',
        body: { Detach: false, Tty: query.tty },
        statusCodes: { 101: true, 200: true, 404: 'no such exec instance', 409: 'container is paused or stopped', 500: 'server error' },
        stream: true,
        hijack: true,
        userStream: opts?.userStream,
        what: `start exec ${execId}`,
      },
      opts,
    );
  }

  inspectExec(execId: string, opts?: CallOptions): Promise<ExecInspect> {
    return this.dial(
      {
        path: `/exec/${encodeURIComponent(execId)}/json`,
        method: 'GET',
        statusCodes: { 200: true, 404: 'no such exec instance', 500: 'server error' },
        what: `inspect exec ${execId}`,
      },
      opts,
    );
  }

  async resizeExec(execId: string, size: { width: number; height: number }, opts?: CallOptions): Promise<void> {
    await this.dial(
      {
        path: `/exec/${encodeURIComponent(execId)}/resize`,
        method: 'POST',
        query: { h: size.height, w: size.width },
        statusCodes: { 200: true, 201: true, 404: 'no such exec instance', 500: 'server error' },
        answer: 'none',
        what: `resize exec ${execId}`,
      },
      opts,
    );
  }

  attachContainer(id: string, query: { stdin: boolean; stdout: boolean; stderr: boolean }, opts?: SessionOptions): Promise<Duplex> {
    return this.dial(
      {
        path: `/containers/${encodeURIComponent(id)}/attach`,
        method: 'POST',
        query: { stream: true, stdin: query.stdin, stdout: query.stdout, stderr: query.stderr },
        statusCodes: { 101: true, 200: true, 400: 'bad parameter', 404: 'no such container', 409: 'container is paused', 500: 'server error' },
        stream: true,
        hijack: true,
        userStream: opts?.userStream,
        what: `attach to container ${id}`,
      },
      opts,
    );
  }

  async resizeContainer(id: string, size: { width: number; height: number }, opts?: CallOptions): Promise<void> {
    await this.dial(
      {
        path: `/containers/${encodeURIComponent(id)}/resize`,
        method: 'POST',
        query: { h: size.height, w: size.width },
        statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
        answer: 'none',
        what: `resize container ${id}`,
      },
      opts,
    );
  }

  /**
   * A list has nothing to be "not found", yet Docker's containerd image store reads each image's
   * config as it lists, and an image removed meanwhile fails the whole list with 404 ("failed to
   * read config content: … not found"; seen on 28.5 while another client removed an image). So a
   * not-found answer (isGoneAnswer: a 404, or Docker's "gone" words) is asked again, up to
   * IMAGE_LIST_ATTEMPTS lists in all, and past that is unavailable (kubelet asks again), never
   * NOT_FOUND.
   */
  async listImages(query: { all?: boolean; filters?: DockerFilters; digests?: boolean }, opts?: CallOptions): Promise<ImageSummary[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.dial<ImageSummary[]>(
          {
            path: '/images/json',
            method: 'GET',
            query: { all: query.all === true, digests: query.digests !== false, filters: JSON.stringify(query.filters ?? {}) },
            statusCodes: { 200: true, 400: 'bad parameter', 500: 'server error' },
            what: 'list images',
          },
          opts,
        );
      } catch (err) {
        if (!(err instanceof DockerNotFoundError)) throw err;
        if (attempt === IMAGE_LIST_ATTEMPTS) {
          throw new UnavailableError(`Docker could not list its images (${IMAGE_LIST_ATTEMPTS} tries, each answered not found): ${err.message}`, { cause: err });
        }
      }
    }
  }

  inspectImage(ref: string, opts?: CallOptions): Promise<ImageInspect> {
    return this.dial(
      {
        path: `/images/${encodeURIComponent(ref)}/json`,
        method: 'GET',
        statusCodes: { 200: true, 404: 'no such image', 500: 'server error' },
        what: `inspect image ${ref}`,
      },
      opts,
    );
  }

  async pullImage(
    ref: string,
    auth: RegistryAuth | undefined,
    onProgress: (p: PullProgress) => void,
    opts?: CallOptions,
  ): Promise<void> {
    const stream = await this.dial<Readable>(
      {
        path: '/images/create',
        method: 'POST',
        query: { fromImage: ref },
        statusCodes: { 200: true, 404: 'repository does not exist or no read access', 500: 'server error' },
        stream: true,
        auth,
        what: `pull ${ref}`,
      },
      opts,
    );
    await readJsonLines<PullProgress>(stream, opts?.signal, (msg) => {
      if (msg.error || msg.errorDetail) {
        throw new DockerServerError(`pull ${ref}: ${msg.errorDetail?.message ?? msg.error}`, 500);
      }
      onProgress(msg);
    }).catch((err: unknown) => {
      throw this.classify(err, `pull ${ref}`, false, opts?.signal);
    });
  }

  removeImage(ref: string, query: { force: boolean; noprune: boolean }, opts?: CallOptions): Promise<ImageDeleteItem[]> {
    return this.dial(
      {
        path: `/images/${encodeURIComponent(ref)}`,
        method: 'DELETE',
        query: { force: query.force, noprune: query.noprune },
        statusCodes: { 200: true, 404: 'no such image', 409: 'conflict', 500: 'server error' },
        what: `remove image ${ref}`,
      },
      opts,
    );
  }

  async importImage(layer: Buffer, query: ImageImportQuery, opts?: CallOptions): Promise<void> {
    const what = `import ${query.repo}:${query.tag}`;
    const stream = await this.dial<Readable>(
      {
        path: '/images/create',
        method: 'POST',
        query: { fromSrc: '-', repo: query.repo, tag: query.tag, changes: query.changes },
        file: layer,
        statusCodes: { 200: true, 400: 'bad parameter', 500: 'server error' },
        stream: true,
        what,
      },
      opts,
    );
    // Docker answers 200 at once and reports a failed import in the stream.
    await readJsonLines<PullProgress>(stream, opts?.signal, (msg) => {
      if (msg.error || msg.errorDetail) throw new DockerServerError(`${what}: ${msg.errorDetail?.message ?? msg.error}`, 500);
    }).catch((err: unknown) => {
      throw this.classify(err, what, false, opts?.signal);
    });
  }

  systemDataUsage(opts?: CallOptions): Promise<SystemDataUsage> {
    return this.dial({ path: '/system/df', method: 'GET', statusCodes: { 200: true, 500: 'server error' }, what: 'system df' }, opts);
  }

  async *events(query: EventsQuery, opts?: EventsOptions): AsyncIterable<DockerEvent> {
    const q: Record<string, string | number> = { filters: JSON.stringify(query.filters ?? {}) };
    if (query.since !== undefined) q.since = query.since;
    if (query.until !== undefined) q.until = query.until;
    const stream = await this.dial<Readable>(
      { path: '/events', method: 'GET', query: q, statusCodes: { 200: true, 400: 'bad parameter', 500: 'server error' }, stream: true, what: 'events' },
      opts,
    );
    opts?.onSubscribed?.();
    const queue: DockerEvent[] = [];
    let wake: (() => void) | undefined;
    let finished: { err?: unknown } | undefined;
    const done = readJsonLines<DockerEvent>(stream, opts?.signal, (ev) => {
      queue.push(ev);
      wake?.();
    }).then(
      () => void (finished = {}),
      (err: unknown) => void (finished = { err }),
    );
    void done.finally(() => wake?.());
    try {
      for (;;) {
        while (queue.length > 0) yield queue.shift()!;
        if (finished) {
          if (finished.err !== undefined && !opts?.signal?.aborted) throw this.classify(finished.err, 'events', false, undefined);
          return;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      stream.destroy();
    }
  }
}

/** Reads newline-delimited JSON from a stream, calling onMessage for each parsed line. */
function readJsonLines<T>(stream: Readable, signal: AbortSignal | undefined, onMessage: (msg: T) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let buffered = '';
    const fail = (err: unknown): void => {
      stream.destroy();
      reject(err);
    };
    const onAbort = (): void => fail(signal?.reason ?? new CancelledError('cancelled'));
    if (signal) {
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
    }
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line === '') continue;
        try {
          onMessage(JSON.parse(line) as T);
        } catch (err) {
          fail(err);
          return;
        }
      }
    });
    stream.on('error', fail);
    stream.on('end', () => {
      signal?.removeEventListener('abort', onAbort);
      const rest = buffered.trim();
      if (rest !== '') {
        try {
          onMessage(JSON.parse(rest) as T);
        } catch (err) {
          reject(err);
          return;
        }
      }
      resolve();
    });
  });
}

