// Protocol facts of Kubernetes' remote command and port-forward streaming, kept pure:
// version negotiation, the status document of the error stream, terminal resize messages.

/** SPDY sub-protocols for exec and attach, most preferred first. */
export const REMOTECOMMAND_SPDY_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'] as const;
export const PORTFORWARD_SPDY_PROTOCOLS = ['portforward.k8s.io'] as const;
/** WebSocket sub-protocols for exec and attach, most preferred first. */
export const REMOTECOMMAND_WS_PROTOCOLS = [
  'v5.channel.k8s.io',
  'v4.channel.k8s.io',
  'v4.base64.channel.k8s.io',
  'v3.channel.k8s.io',
  'v2.channel.k8s.io',
  'channel.k8s.io',
  'base64.channel.k8s.io',
] as const;

export const PROTOCOL_HEADER = 'x-stream-protocol-version';

/**
 * The protocol to speak: the first we support among those the client offers. The header may
 * repeat or hold a comma-separated list. undefined when nothing matches.
 */
export function negotiate(offered: readonly string[], supported: readonly string[]): string | undefined {
  const wanted = new Set(offered.flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== ''));
  return supported.find((p) => wanted.has(p));
}

/** Version 4 and later carry a metav1.Status on the error stream; older ones plain text. */
export function statusIsJson(protocol: string): boolean {
  return /^v[4-9]\./.test(protocol);
}

/** Older protocols have no resize stream. */
export function supportsResize(protocol: string): boolean {
  return /^v[3-9]\./.test(protocol);
}

export function isBase64WebSocket(protocol: string): boolean {
  return protocol.includes('base64');
}

/** How a command ended, as the error stream reports it. */
export type Outcome = { kind: 'success' } | { kind: 'exit'; code: number } | { kind: 'error'; message: string };

/** The error stream's content for an outcome; empty for success on the text protocols. */
export function encodeOutcome(outcome: Outcome, protocol: string): Buffer {
  if (!statusIsJson(protocol)) {
    if (outcome.kind === 'success') return Buffer.alloc(0);
    return Buffer.from(outcome.kind === 'exit' ? `command terminated with non-zero exit code: ${outcome.code}` : outcome.message);
  }
  return Buffer.from(JSON.stringify(statusDocument(outcome)));
}

export function statusDocument(outcome: Outcome): Record<string, unknown> {
  const base = { kind: 'Status', apiVersion: 'v1', metadata: {} };
  switch (outcome.kind) {
    case 'success':
      return { ...base, status: 'Success' };
    case 'exit':
      return {
        ...base,
        status: 'Failure',
        message: `command terminated with non-zero exit code: ${outcome.code}`,
        reason: 'NonZeroExitCode',
        details: { causes: [{ reason: 'ExitCode', message: String(outcome.code) }] },
      };
    case 'error':
      return { ...base, status: 'Failure', message: outcome.message, reason: 'InternalError', code: 500 };
  }
}

export interface TerminalSize {
  width: number;
  height: number;
}

/**
 * Parses one resize message: JSON {"Width": w, "Height": h}. Sizes are 16-bit on the terminal
 * side; anything else is not a size.
 */
export function parseResize(text: string): TerminalSize | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof doc !== 'object' || doc === null) return undefined;
  const { Width, Height } = doc as { Width?: unknown; Height?: unknown };
  const ok = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 0xffff;
  if (!ok(Width) || !ok(Height)) return undefined;
  return { width: Width, height: Height };
}

/** Splits a stream of concatenated JSON objects (Go's json.Encoder writes one per line) into whole messages. */
export class JsonMessageSplitter {
  private pending = '';

  push(chunk: string): string[] {
    this.pending += chunk;
    const out: string[] = [];
    let depth = 0;
    let start = -1;
    let inString = false;
    let escaped = false;
    let consumed = 0;
    for (let i = 0; i < this.pending.length; i++) {
      const c = this.pending[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (c === '\\') escaped = true;
        else if (c === '"') inString = false;
        continue;
      }
      if (c === '"') inString = true;
      else if (c === '{') {
        if (depth === 0) start = i;
        depth++;
      } else if (c === '}' && depth > 0) {
        depth--;
        if (depth === 0) {
          out.push(this.pending.slice(start, i + 1));
          consumed = i + 1;
        }
      }
    }
    this.pending = this.pending.slice(consumed);
    if (this.pending.length > 64 * 1024) this.pending = '';
    return out;
  }
}
