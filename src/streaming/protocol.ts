// Protocol facts of Kubernetes' remote command and port-forward streaming, kept pure:
// version negotiation, the status document of the error stream, terminal resize messages.

/** SPDY sub-protocols for exec and attach, most preferred first. */
export const REMOTECOMMAND_SPDY_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'] as const;
export const PORTFORWARD_SPDY_PROTOCOLS = ['portforward.k8s.io'] as const;
/**
 * The WebSocket sub-protocol that tunnels SPDY port forward (client-go's
 * NewSPDYOverWebsocketDialer: the SPDY protocol behind a "SPDY/3.1+" prefix).
 */
export const PORTFORWARD_TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';
/**
 * WebSocket sub-protocols for port forward, most preferred first: the SPDY tunnel, then
 * kubelet's channel protocols (a client offering none at all gets the binary one, as from kubelet).
 */
export const PORTFORWARD_WS_PROTOCOLS = [PORTFORWARD_TUNNEL_PROTOCOL, 'v4.channel.k8s.io', 'v4.base64.channel.k8s.io'] as const;
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
function statusIsJson(protocol: string): boolean {
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
 * Parses one resize message: JSON {"Width": w, "Height": h}. A terminal's sizes are 16-bit and
 * not zero; anything else is not a size.
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
  const ok = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 0xffff;
  if (!ok(Width) || !ok(Height)) return undefined;
  return { width: Width, height: Height };
}

/**
 * The longest JSON message the splitter holds: a resize message is some 30 bytes, so this leaves
 * room for any spacing and field order a client may send.
 */
export const MAX_JSON_MESSAGE_BYTES = 4 * 1024;

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Splits a stream of concatenated JSON objects (Go's json.Encoder writes one per line) into whole
 * messages. It works on bytes: the four it looks for are ASCII, which UTF-8 never uses inside a
 * multi-byte character, so a character cut between chunks is joined again before it is decoded.
 * Its scanning state lives between pushes, so each byte is looked at once; bytes between objects
 * are dropped as they are seen. An object longer than `maxMessageBytes` closes the splitter: it
 * answers nothing more from then on.
 */
export class JsonMessageSplitter {
  /** The start of the object under way (its bytes from earlier chunks); made at the first need. */
  private held: Buffer | undefined;
  private heldBytes = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private closedFlag = false;
  /** Bytes looked at so far (how tests see the work is linear). */
  scannedBytes = 0;

  constructor(private readonly maxMessageBytes = MAX_JSON_MESSAGE_BYTES) {}

  /** Whether an object over the bound closed the splitter. */
  get closed(): boolean {
    return this.closedFlag;
  }

  /** The whole messages this chunk completes, as views of their bytes, in order. */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    if (this.closedFlag) return out;
    this.scannedBytes += chunk.length;
    // Where the object under way starts in this chunk: 0 if it began in an earlier one.
    let start = this.depth > 0 ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) this.inString = false;
        continue;
      }
      if (c === QUOTE) this.inString = true;
      else if (c === OPEN_BRACE) {
        if (this.depth === 0) start = i;
        this.depth++;
      } else if (c === CLOSE_BRACE && this.depth > 0) {
        this.depth--;
        if (this.depth > 0) continue;
        const length = this.heldBytes + i + 1 - start;
        if (length > this.maxMessageBytes) return this.close(out);
        if (this.heldBytes === 0) out.push(chunk.subarray(start, i + 1));
        else {
          // Its own copy: the held bytes are overwritten by the next object.
          const message = Buffer.allocUnsafe(length);
          this.held!.copy(message, 0, 0, this.heldBytes);
          chunk.copy(message, this.heldBytes, start, i + 1);
          out.push(message);
          this.heldBytes = 0;
        }
        start = -1;
      }
    }
    if (this.depth > 0) {
      if (this.heldBytes + chunk.length - start > this.maxMessageBytes) return this.close(out);
      // Copied: the chunk's memory may be reused by its owner once this returns.
      this.held ??= Buffer.allocUnsafe(this.maxMessageBytes);
      this.heldBytes += chunk.copy(this.held, this.heldBytes, start);
    }
    return out;
  }

  private close(complete: Buffer[]): Buffer[] {
    this.closedFlag = true;
    this.held = undefined;
    this.heldBytes = 0;
    return complete;
  }
}

/**
 * The client's resize channel read as terminal sizes: of the messages one chunk completes only
 * the last that is a size counts (the latest size wins, and each is decoded only if no later one
 * in the chunk is a size).
 */
export class ResizeReader {
  private readonly splitter: JsonMessageSplitter;

  constructor(maxMessageBytes = MAX_JSON_MESSAGE_BYTES) {
    this.splitter = new JsonMessageSplitter(maxMessageBytes);
  }

  /** A message over MAX_JSON_MESSAGE_BYTES closed the channel: nothing more is read. */
  get closed(): boolean {
    return this.splitter.closed;
  }

  get scannedBytes(): number {
    return this.splitter.scannedBytes;
  }

  /** The latest size this chunk completes, if any. */
  push(chunk: Buffer): TerminalSize | undefined {
    const messages = this.splitter.push(chunk);
    for (let i = messages.length - 1; i >= 0; i--) {
      const size = parseResize(messages[i]!.toString('utf8'));
      if (size) return size;
    }
    return undefined;
  }
}
