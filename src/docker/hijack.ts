// Exec and attach: the request that Docker answers by handing over its connection (101
// UPGRADED, or 200 with the stream as the body), made on a socket of our own rather than through
// docker-modem's hijack, so that the output is read into a few reused buffers: Node's stream
// reads allocate a fresh 64 KiB buffer per read, and on exec stdout those allocations cost the
// shim about a third of its CPU in garbage collection (~40 full collections per GiB).
//
// Reads are lent (`lendReads`, ../util/lent-reads.ts): each is a view of one of the connection's
// buffers, valid until its reader gives it back. At most LENT_READ_BUFFERS are lent at once: then
// the connection is not read (backpressure) until one comes back. Without a lending reader, the
// connection is a plain Duplex whose reads are copies.
import * as net from 'node:net';
import { Duplex } from 'node:stream';
import type { Endpoint } from '../config/endpoint';
import { type LentReader, READ_BUFFER_BYTES, ReadLender } from '../util/lent-reads';

/** Reads lent to the reader at once; the connection waits while all are out. */
export const LENT_READ_BUFFERS = 4;
/** An answer's head longer than this is refused (Docker's are a few hundred bytes). */
export const MAX_HIJACK_HEAD_BYTES = 16 * 1024;
/** Of an error answer's body, the first this many bytes are kept for its message. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

export interface HijackHead {
  statusCode: number;
  reason: string;
  /** Header names in lower case; a repeated header's last value. */
  headers: ReadonlyMap<string, string>;
  /** Where the body (the stream) starts in the bytes parsed. */
  bodyStart: number;
}

/** An answer that is not HTTP/1.x as Docker speaks it. */
export class HijackProtocolError extends Error {
  override readonly name = 'HijackProtocolError';
}

const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/;

/**
 * The answer's head at the start of `data`, or undefined while it is incomplete. Throws
 * HijackProtocolError for a head that is malformed or longer than MAX_HIJACK_HEAD_BYTES. Pure.
 */
export function parseHijackHead(data: Buffer): HijackHead | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) {
    if (data.length > MAX_HIJACK_HEAD_BYTES) throw new HijackProtocolError(`Docker's answer has no end of head in its first ${MAX_HIJACK_HEAD_BYTES} bytes`);
    return undefined;
  }
  if (end + 4 > MAX_HIJACK_HEAD_BYTES) throw new HijackProtocolError(`Docker's answer has a head over ${MAX_HIJACK_HEAD_BYTES} bytes`);
  const lines = data.toString('latin1', 0, end).split('\r\n');
  const status = STATUS_LINE.exec(lines[0]!);
  if (!status) throw new HijackProtocolError(`Docker's answer does not start with an HTTP/1.x status line: ${JSON.stringify(lines[0]!.slice(0, 80))}`);
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new HijackProtocolError(`Docker's answer has a malformed header line: ${JSON.stringify(line.slice(0, 80))}`);
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { statusCode: Number(status[1]), reason: status[2] ?? '', headers, bodyStart: end + 4 };
}

/** The request's bytes: a POST asking Docker to hand over the connection. Pure. */
export function hijackRequest(path: string, body: unknown): Buffer {
  const json = body === undefined ? '' : JSON.stringify(body);
  return Buffer.from(
    `POST ${path} HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n` +
      `Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
    'latin1',
  );
}

/** What an error answer fails with: the shape EngineApiClient classifies (docker-modem's). */
export interface HijackAnswerError extends Error {
  statusCode: number;
  reason: string;
  json: { message?: string } | null;
}

/** An error answer as docker-modem made it: its status, its words and its body's JSON message. Pure. */
export function answerError(head: Pick<HijackHead, 'statusCode'>, body: Buffer, statusText: string | undefined): HijackAnswerError {
  const text = body.toString('utf8');
  let json: { message?: string } | null = null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object') json = parsed as { message?: string };
  } catch {
    // Not JSON: the text is the message.
  }
  const err = new Error(`(HTTP code ${head.statusCode}) ${statusText ?? 'unexpected'} - ${json?.message ?? text}`) as HijackAnswerError;
  err.statusCode = head.statusCode;
  err.reason = statusText ?? 'unexpected';
  err.json = json;
  return err;
}

const noGiveBack = (): void => undefined;

/**
 * Docker's connection once handed over: writes go to Docker (stdin); reads are copies unless
 * a reader takes them lent (lendReads). Emits 'close' when the socket has closed.
 */
export class HijackedConnection extends Duplex {
  private reader: LentReader | undefined;
  private readonly lender = new ReadLender(LENT_READ_BUFFERS, () => this.resumeReading());
  private stopped = false;
  /** The stream's first bytes, read with the head: copied (the buffer is read into again). */
  private early: Buffer | undefined;
  private started = false;
  private ended = false;

  /** @internal made by openHijack */
  constructor(readonly socket: net.Socket) {
    super({ allowHalfOpen: true });
    socket.on('end', () => {
      this.ended = true;
      this.push(null);
    });
    socket.on('error', (err) => this.destroy(err));
    // After a clean end, closed once the reader has had all of it ('end'), as a net.Socket is.
    socket.on('close', () => (this.ended && !this.readableEnded ? this.once('end', () => this.destroy()) : this.destroy()));
  }

  /** @internal the buffer the next read goes into (net's onread.buffer). */
  nextBuffer(): Buffer {
    return this.lender.nextBuffer();
  }

  /** @internal starts the stream proper with the bytes that came after the head (copied), and the buffer they came in. */
  begin(early: Buffer, spare: Buffer): void {
    this.started = true;
    if (early.length > 0) this.early = early;
    this.lender.keep(spare);
  }

  /** From now on every read goes to `reader`, lent; the first bytes (read with the head) first. */
  lendReads(reader: LentReader): void {
    this.reader = reader;
    const early = this.early;
    this.early = undefined;
    if (early) reader(early, noGiveBack);
    // Flowing, so that the end of the output shows as 'end' (nothing else is pushed).
    this.resume();
    this.resumeReading();
  }

  /** @internal one read (net's onread.callback); false stops reading. */
  onRead(data: Buffer, buffer: Buffer): boolean {
    const reader = this.reader;
    if (!reader) {
      if (this.push(Buffer.from(data))) return true;
      this.stopped = true;
      return false;
    }
    reader(data, this.lender.lend(buffer));
    if (!this.lender.exhausted) return true;
    this.stopped = true;
    return false;
  }

  /** @internal reading stopped from the outside (before a reader, or push's backpressure). */
  stopReading(): void {
    this.stopped = true;
    this.socket.pause();
  }

  private resumeReading(): void {
    if (!this.started || !this.stopped || this.lender.exhausted || this.socket.destroyed) return;
    this.stopped = false;
    this.socket.resume();
  }

  override _read(): void {
    if (this.reader) return;
    const early = this.early;
    this.early = undefined;
    if (early && !this.push(early)) return;
    this.resumeReading();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.socket.write(chunk, done);
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, done: (err?: Error | null) => void): void {
    this.socket.cork();
    for (let i = 0; i < chunks.length - 1; i++) this.socket.write(chunks[i]!.chunk);
    this.socket.write(chunks[chunks.length - 1]!.chunk, done);
    this.socket.uncork();
  }

  override _final(done: (err?: Error | null) => void): void {
    // Closes the process's stdin; its output keeps coming.
    this.socket.end();
    done();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.socket.destroy();
    done(err);
  }
}

/**
 * Sends `request` on a new connection to `endpoint` and resolves with the connection once Docker
 * answered 101 or 200; rejects with a HijackAnswerError for any other status (the body's JSON
 * message), the socket's error, HijackProtocolError, or `signal`'s reason.
 */
export function openHijack(
  endpoint: Endpoint,
  request: Buffer,
  statusCodes: Readonly<Record<number, true | string>>,
  signal: AbortSignal | undefined,
): Promise<HijackedConnection> {
  return new Promise<HijackedConnection>((resolve, reject) => {
    let connection: HijackedConnection | undefined;
    let head: Buffer = Buffer.alloc(0);
    let failing: { head: HijackHead; body: Buffer[]; bytes: number } | undefined;
    let settled = false;
    const settle = (err: Error | undefined): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        socket.destroy();
        reject(err);
      } else resolve(connection!);
    };
    const onAbort = (): void => settle(signal!.reason instanceof Error ? signal!.reason : new Error('aborted'));
    const failWith = (f: { head: HijackHead; body: Buffer[] }): void => {
      const answer = statusCodes[f.head.statusCode];
      settle(answerError(f.head, Buffer.concat(f.body).subarray(0, MAX_ERROR_BODY_BYTES), typeof answer === 'string' ? answer : undefined));
    };
    const onRead = (n: number, buffer: Buffer): boolean => {
      const data = buffer.subarray(0, n);
      if (connection && !failing) return connection.onRead(data, buffer);
      if (failing) {
        failing.body.push(Buffer.from(data));
        failing.bytes += n;
        const length = Number(failing.head.headers.get('content-length'));
        if (failing.bytes >= MAX_ERROR_BODY_BYTES || (Number.isFinite(length) && failing.bytes >= length)) failWith(failing);
        return true;
      }
      head = Buffer.concat([head, data]);
      let parsed: HijackHead | undefined;
      try {
        parsed = parseHijackHead(head);
      } catch (err) {
        settle(err as Error);
        return false;
      }
      if (!parsed) return true;
      const rest = Buffer.from(head.subarray(parsed.bodyStart));
      if (statusCodes[parsed.statusCode] !== true) {
        failing = { head: parsed, body: [rest], bytes: rest.length };
        const length = Number(parsed.headers.get('content-length'));
        if (Number.isFinite(length) && rest.length >= length) failWith(failing);
        return true;
      }
      connection = new HijackedConnection(socket);
      connection.begin(rest, buffer);
      // Nothing is read until the connection has a reader (or is read as a stream).
      connection.stopReading();
      settle(undefined);
      return false;
    };
    const target = endpoint.kind === 'unix' ? { path: endpoint.path } : { host: endpoint.host, port: endpoint.port };
    const socket = net.connect({
      ...target,
      onread: { buffer: () => (connection ? connection.nextBuffer() : Buffer.allocUnsafeSlow(READ_BUFFER_BYTES)), callback: onRead },
    });
    socket.once('connect', () => socket.write(request));
    socket.once('error', (err) => settle(err));
    socket.once('close', () => {
      if (failing) failWith(failing);
      else settle(Object.assign(new Error('Docker closed the connection before answering'), { code: 'ECONNRESET' }));
    });
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}
