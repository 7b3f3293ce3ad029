// Docker's short calls (every request but the streams and the hijacks) on node:http over the
// pool's agents, without docker-modem: its dial cost 60-85 us more CPU per request than a bare
// request on the same agent (its option handling, and util.inspect of every request's options
// for a debug log that is off), a fifth of what the shim spends on a lifecycle call's Docker
// side. The answer is read whole (an error answer's first MAX_ERROR_BODY_BYTES) and parsed
// here; an error answer gets the shape docker-modem gave it (./hijack.ts's answerError), which
// the client classifies by status and the daemon's message.
import * as http from 'node:http';
import type { Endpoint } from '../config/endpoint';
import { answerError, MAX_ERROR_BODY_BYTES } from './hijack';

interface JsonRequest {
  method: 'GET' | 'POST' | 'DELETE';
  /** With its query (pathWithQuery). */
  path: string;
  /** Sent as JSON; none when undefined. */
  body?: unknown;
  /** The statuses Docker may answer: true for success, else the words an error answer carries. */
  statusCodes: Readonly<Record<number, true | string>>;
  /** 'json': a success's body is the document answered; 'none': it is dropped unread (ping's "OK", the 204s). */
  answer: 'json' | 'none';
}

/** Where node:http connects to: the endpoint as request options. */
export type RequestTarget = { socketPath: string } | { host: string; port: number };

export function requestTarget(endpoint: Endpoint): RequestTarget {
  return endpoint.kind === 'unix' ? { socketPath: endpoint.path } : { host: endpoint.host, port: endpoint.port };
}

/** The request's path and its query as docker-modem writes it (objects as JSON, undefined left out). Pure. */
export function pathWithQuery(path: string, query: object | undefined): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) params.set(key, typeof value === 'object' ? JSON.stringify(value) : String(value));
  }
  return `${path}?${params.toString()}`;
}

/** Of an answer with `statusCode`, the bytes of its body worth keeping. Pure. */
export function answerBytesKept(statusCode: number, r: Pick<JsonRequest, 'statusCodes' | 'answer'>): number {
  if (r.statusCodes[statusCode] !== true) return MAX_ERROR_BODY_BYTES;
  return r.answer === 'json' ? Infinity : 0;
}

/** A success answer whose body is not the JSON document asked for. */
export class JsonAnswerError extends Error {
  override readonly name = 'JsonAnswerError';
}

/**
 * What Docker's answer comes to: the document (undefined for answer 'none'). Throws the error
 * answer's HijackAnswerError for a status not marked true in statusCodes, JsonAnswerError for a
 * success whose body is not JSON. Pure.
 */
export function readAnswer(statusCode: number, body: Buffer, r: Pick<JsonRequest, 'statusCodes' | 'answer'>): unknown {
  const expected = r.statusCodes[statusCode];
  if (expected !== true) throw answerError({ statusCode }, body.subarray(0, MAX_ERROR_BODY_BYTES), expected);
  if (r.answer === 'none') return undefined;
  const text = body.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new JsonAnswerError(`Docker answered ${statusCode} with ${body.length} bytes that are not JSON: ${JSON.stringify(text.slice(0, 80))}`);
  }
}

/** Sends the request's JSON body, if any: its bytes and headers. Pure. */
export function requestBody(body: unknown): { data: string | undefined; headers: http.OutgoingHttpHeaders } {
  if (body === undefined) return { data: undefined, headers: { 'Content-Length': 0 } };
  const data = JSON.stringify(body);
  return { data, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } };
}

const BODY_NONE = Buffer.alloc(0);

/**
 * Sends `r` to `target` on a connection of `agent` and resolves with readAnswer's document.
 * Rejects with readAnswer's errors, node:http's (a refused or reset connection: its `code`), one
 * with code ECONNRESET for a connection closed before the answer's end, or `signal`'s reason.
 * An error answer longer than MAX_ERROR_BODY_BYTES fails at that many, its connection closed.
 */
export function sendJsonRequest(target: RequestTarget, agent: http.Agent, r: JsonRequest, signal: AbortSignal | undefined): Promise<unknown> {
  return new Promise<unknown>((resolve, reject) => {
    let settled = false;
    /** `unfinished`: the connection is mid-request or mid-answer, and no use to anyone after. */
    const settle = (err: unknown, value: unknown, unfinished: boolean): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if (unfinished) req.destroy();
      if (err === undefined) resolve(value);
      else reject(err);
    };
    const onAbort = (): void => settle(signal!.reason ?? new Error('aborted'), undefined, true);
    const { data, headers } = requestBody(r.body);
    const req = http.request({ ...target, agent, method: r.method, path: r.path, headers });
    req.on('response', (res: http.IncomingMessage) => {
      const statusCode = res.statusCode ?? 0;
      const kept = answerBytesKept(statusCode, r);
      const chunks: Buffer[] = [];
      let bytes = 0;
      const answer = (unfinished: boolean): void => {
        if (settled) return;
        try {
          const body = chunks.length === 0 ? BODY_NONE : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
          settle(undefined, readAnswer(statusCode, body, r), unfinished);
        } catch (err) {
          settle(err, undefined, unfinished);
        }
      };
      if (kept === 0) res.resume();
      else
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          bytes += chunk.length;
          // The rest is not read: the connection goes with it.
          if (bytes >= kept) answer(true);
        });
      res.on('end', () => answer(false));
      res.on('error', (err) => settle(err, undefined, true));
      res.on('close', () => {
        if (!res.complete) settle(Object.assign(new Error('Docker closed the connection before the end of its answer'), { code: 'ECONNRESET' }), undefined, true);
      });
    });
    req.on('error', (err) => settle(err, undefined, true));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    req.end(data);
  });
}
